import MLToolCore
import MLToolEngine

extension Engine {
    /// Runs a batch of preprocessed images (each `height`×`width`×`channels` floats, HWC) into `input` and returns
    /// `output` split into one row per image.
    func rows(_ inputs: [[Float]], input: String, height: Int, width: Int, channels: Int, output: String) throws -> [[Float]] {
        guard !inputs.isEmpty else { return [] }
        let shape = [inputs.count, height, width, channels]
        // One copy per image (a flattening `joined()` goes element by element).
        var data = [Float]()
        data.reserveCapacity(inputs.reduce(0) { $0 + $1.count })
        for x in inputs { data.append(contentsOf: x) }
        let out = try run([input: Tensor(shape: shape, data: data)], outputs: [output])
        guard let t = out[output] else { return [] }
        let per = t.count / inputs.count
        return (0..<inputs.count).map { Array(t.data[($0 * per)..<(($0 + 1) * per)]) }
    }
}
