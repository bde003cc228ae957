import Foundation
#if canImport(Glibc)
import Glibc
#endif
import MLToolCore
import Testing
@testable import MLToolTrain

/// The out-of-core head: rows in a scratch file, read a block at a time, must give the bits the in-memory fit gives.
@Suite struct FeatureRowFileTests {
    static func folder() -> String {
        let d = NSTemporaryDirectory() + "mltool-rows-test-\(getpid())-\(UInt64.random(in: 0..<UInt64.max))"
        try? FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    static func file(_ x: [Float], cols: Int, in dir: String) throws -> FeatureRowFile {
        let f = try FeatureRowFile(directory: dir, cols: cols)
        try x.withUnsafeBufferPointer { try f.append($0.baseAddress!, count: x.count / cols) }
        return f
    }

    /// Training rows then validation rows in one file; the L2 search on the validation rows, then a warm-started
    /// refit on all rows (what `mltool train` does): weights, bias, history and choice equal the in-memory fit's,
    /// bit for bit. Sizes cover one row group, several groups with a ragged last block, and wide rows.
    @Test(arguments: [(90, 30, 7, 3), (3000, 500, 120, 10), (700, 64, 1280, 5)])
    func fileFitIsBitIdenticalToMemory(train n: Int, validation v: Int, cols d: Int, classes k: Int) throws {
        let dir = Self.folder(); defer { try? FileManager.default.removeItem(atPath: dir) }
        let data = blobs(rows: n + v, cols: d, classes: k, spread: 0.6, seed: UInt64(n + d))
        let s = try Standardizer.fit(x: Array(data.x[0..<(n * d)]), rows: n, cols: d)
        let x = try s.applied(data.x, rows: n + v)
        let yTrain = Array(data.labels[0..<n]), yValidation = Array(data.labels[n...])
        var options = LogisticRegressionOptions()
        options.maxIterations = 30
        let memory = try LogisticRegression.fit(
            x: Array(x[0..<(n * d)]), rows: n, cols: d, labels: yTrain, classes: k,
            validation: (Array(x[(n * d)...]), v, yValidation), options: options, progress: nil)
        let rows = try Self.file(x, cols: d, in: dir)
        #expect(rows.rows == n + v)
        let onDisk = try LogisticRegression.fit(
            file: rows, rows: 0..<n, labels: yTrain, classes: k, validation: (n..<(n + v), yValidation),
            options: options, progress: nil)
        #expect(onDisk.weights == memory.weights && onDisk.bias == memory.bias)
        #expect(onDisk.chosenL2 == memory.chosenL2 && onDisk.iterations == memory.iterations)
        #expect(onDisk.history.map(\.loss) == memory.history.map(\.loss))
        #expect(onDisk.validationAccuracy == memory.validationAccuracy)

        var refit = options
        refit.l2 = .fixed(memory.chosenL2)
        let a = try LogisticRegression.fit(x: x, rows: n + v, cols: d, labels: data.labels, classes: k, validation: nil,
                                           options: refit, warmStart: memory, progress: nil)
        let b = try LogisticRegression.fit(file: rows, rows: 0..<(n + v), labels: data.labels, classes: k,
                                           validation: nil, options: refit, warmStart: onDisk, progress: nil)
        #expect(a.weights == b.weights && a.bias == b.bias && a.iterations == b.iterations)
    }

    /// μ and σ from the file (two passes, blocks of 1,024 rows) and the in-place standardisation equal the
    /// in-memory ones exactly, on rows whose count is not a multiple of the block.
    @Test func standardizerFromFileMatchesMemory() throws {
        let dir = Self.folder(); defer { try? FileManager.default.removeItem(atPath: dir) }
        let n = 2500, d = 33
        var data = blobs(rows: n, cols: d, classes: 4, spread: 3, seed: 5).x
        for r in 0..<n { data[r * d + 7] = 2.5 }  // a constant column: σ = 1
        let rows = try Self.file(data, cols: d, in: dir)
        let memory = try Standardizer.fit(x: Array(data[0..<(2000 * d)]), rows: 2000, cols: d)
        let onDisk = try Standardizer.fit(file: rows, rows: 2000)
        #expect(onDisk == memory)
        #expect(onDisk.std[7] == 1)
        try onDisk.apply(file: rows, rows: 0..<n)
        var back = [Float](repeating: 0, count: n * d)
        try back.withUnsafeMutableBufferPointer { try rows.read(rows: 0..<n, into: $0.baseAddress!) }
        let expected = try memory.applied(data, rows: n)
        #expect(back == expected)
    }

    /// The scratch file is unlinked at once (nothing to leave behind); rows outside the file are refused by name.
    @Test func fileIsUnlinkedAndRangesAreChecked() throws {
        let dir = Self.folder(); defer { try? FileManager.default.removeItem(atPath: dir) }
        let rows = try Self.file([1, 2, 3, 4, 5, 6], cols: 3, in: dir)
        #expect(!FileManager.default.fileExists(atPath: rows.path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).isEmpty)
        var out = [Float](repeating: 0, count: 6)
        #expect(throws: TrainError.self) {
            try out.withUnsafeMutableBufferPointer { try rows.read(rows: 1..<3, into: $0.baseAddress!) }
        }
        #expect(throws: TrainError.shapeMismatch(what: "training rows", expected: "a non-empty part of the file's 2 rows",
                                                 actual: "rows 0..<5")) {
            try LogisticRegression.fit(file: rows, rows: 0..<5, labels: [0, 1, 0, 1, 0], classes: 2, validation: nil,
                                       options: LogisticRegressionOptions(), progress: nil)
        }
        #expect(throws: TrainError.self) { try FeatureRowFile(directory: "/proc/no-such-folder", cols: 3) }
    }

    /// A value that is not finite is refused with its row and column, as the in-memory fit refuses it.
    @Test func nonFiniteRowsAreRefusedWithTheirPlace() throws {
        let dir = Self.folder(); defer { try? FileManager.default.removeItem(atPath: dir) }
        var x = [Float](repeating: 1, count: 5 * 4)
        x[2 * 4 + 3] = .nan
        let rows = try Self.file(x, cols: 4, in: dir)
        #expect(throws: TrainError.nonFiniteValue(what: "features", row: 2, column: 3, value: "nan")) {
            try Standardizer.fit(file: rows, rows: 5)
        }
    }

    /// The file shrinks under a fit (an I/O error after the rows were written): the fit stops and throws the read
    /// error naming the file and the byte, instead of training on garbage.
    @Test func aReadErrorDuringTheFitIsReported() throws {
        let dir = Self.folder(); defer { try? FileManager.default.removeItem(atPath: dir) }
        let n = 600, d = 16
        let data = blobs(rows: n, cols: d, classes: 3, spread: 1, seed: 3)
        let rows = try Self.file(data.x, cols: d, in: dir)
        #expect(ftruncate(rows.fd, off_t(300 * d * 4)) == 0)
        do {
            _ = try LogisticRegression.fit(file: rows, rows: 0..<n, labels: data.labels, classes: 3, validation: nil,
                                           options: LogisticRegressionOptions(), progress: nil)
            Issue.record("the fit returned a model from a truncated file")
        } catch let TrainError.io(file, operation, offset, reason) {
            #expect(file == rows.path && operation == "read")
            #expect(offset >= 300 * d * 4, "offset \(offset)")
            #expect(reason.contains("the file ends at byte"), "\(reason)")
        }
    }
}
