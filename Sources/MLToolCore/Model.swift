/// A whole model: metadata plus its tensors, in table order. Importers and trainers build one; MLToolFormat writes
/// and reads it; the engine runs its graph.
public struct Model: @unchecked Sendable {
    public var metadata: ModelMetadata
    public var tensors: [StoredTensor]

    public init(metadata: ModelMetadata, tensors: [StoredTensor]) {
        self.metadata = metadata
        self.tensors = tensors
    }

    /// The tensor named `name`, if the model has one.
    public func tensor(named name: String) -> StoredTensor? {
        tensors.first { $0.name == name }
    }

    /// All tensors by name (names are unique in a valid model).
    public var tensorsByName: [String: StoredTensor] {
        Dictionary(tensors.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
    }

    /// Number of stored parameters (elements of every tensor).
    public var parameterCount: Int { tensors.reduce(0) { $0 + $1.elementCount } }
}
