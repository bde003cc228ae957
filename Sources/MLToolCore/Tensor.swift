/// A dense float32 tensor in row-major order: what the engine computes on and what importers produce.
public struct Tensor: Equatable, Sendable {
    public var shape: [Int]
    public var data: [Float]

    /// Creates a tensor; `data.count` must equal the product of `shape`.
    public init(shape: [Int], data: [Float]) {
        precondition(shape.reduce(1, *) == data.count, "Tensor: \(data.count) values for shape \(shape)")
        self.shape = shape
        self.data = data
    }

    public init(zeros shape: [Int]) {
        self.shape = shape
        self.data = [Float](repeating: 0, count: shape.reduce(1, *))
    }

    public var count: Int { data.count }
    public var rank: Int { shape.count }
}
