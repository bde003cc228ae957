import Foundation
import MLToolCore
import MLToolData

/// A standard normal sample (Box–Muller on SplitMix64).
func gaussian(_ rng: inout SplitMix64) -> Float {
    let u1 = max(Double(rng.next() >> 11) / Double(1 << 53), 1e-300), u2 = Double(rng.next() >> 11) / Double(1 << 53)
    return Float((-2 * log(u1)).squareRoot() * cos(2 * Double.pi * u2))
}

/// Gaussian blobs: `classes` random centres at distance `spread`, unit noise.
func blobs(rows: Int, cols: Int, classes: Int, spread: Float, seed: UInt64) -> (x: [Float], labels: [Int]) {
    var rng = SplitMix64(seed: seed)
    let centres = (0..<(classes * cols)).map { _ in gaussian(&rng) * spread }
    var x = [Float](repeating: 0, count: rows * cols), labels = [Int](repeating: 0, count: rows)
    for r in 0..<rows {
        let y = r % classes
        labels[r] = y
        for j in 0..<cols { x[r * cols + j] = centres[y * cols + j] + gaussian(&rng) }
    }
    return (x, labels)
}

/// The JSON written by Tests/Fixtures/train/make_fixtures.py.
struct LogRegFixture: Decodable {
    struct Case: Decodable {
        var name: String
        var l2: Double
        var balanced: Bool
        var weighted: Bool
        var weights: [Double]
        var bias: [Double]
        var probabilities: [Double]
        var objective: Double
    }
    var rows: Int
    var cols: Int
    var classes: Int
    var raw: [Float]
    var x: [Float]
    var labels: [Int]
    var sampleWeights: [Float]
    var scalerMean: [Double]
    var scalerScale: [Double]
    var cases: [Case]

    static let shared: LogRegFixture? = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures/train/logreg.json")
        guard let data = try? Data(contentsOf: url) else { return nil }
        return try? JSONDecoder().decode(LogRegFixture.self, from: data)
    }()
}

/// A random sparse problem: each column non-zero with probability `density`, or `leak` in the columns of the row's
/// class; values uniform in [offset, offset + 1); rows L2-normalised (like TF-IDF text) when `normalise`.
func sparseProblem(rows: Int, cols: Int, classes: Int, seed: UInt64, density: Float, leak: Float, offset: Float,
                   normalise: Bool) throws -> (CSRMatrix, [Int]) {
    var rng = SplitMix64(seed: seed)
    var offsets = [0], columns: [Int32] = [], values: [Float] = [], labels: [Int] = []
    for r in 0..<rows {
        let y = r % classes
        labels.append(y)
        var row: [Float] = []
        for c in 0..<cols where rng.nextUnit() < density || (c % classes == y && rng.nextUnit() < leak) {
            columns.append(Int32(c)); row.append(rng.nextUnit() + offset)
        }
        let norm = normalise ? row.reduce(0) { $0 + $1 * $1 }.squareRoot() : 1
        values += normalise ? row.map { $0 / max(norm, 1e-6) } : row
        offsets.append(columns.count)
    }
    return (try CSRMatrix(rows: rows, cols: cols, rowOffsets: offsets, columns: columns, values: values), labels)
}
