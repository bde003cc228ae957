import Foundation
import Testing
import MLToolCore
import MLToolTestSupport
@testable import MLToolImport

/// A small valid safetensors file built in code: three tensors and a `__metadata__`.
enum SafetensorsFixture {
    static let file = "corrupt.safetensors"
    static let header = #"{"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"#
        + #""b":{"dtype":"F16","shape":[4],"data_offsets":[24,32]},"c":{"dtype":"I64","shape":[1],"data_offsets":[32,40]}}"#

    /// a = 0…5 (F32), b = 1, 2, 3, 4 (F16), c = 7 (I64).
    static let data: [UInt8] = {
        var d: [UInt8] = []
        for v in 0..<6 { withUnsafeBytes(of: Float(v).bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        for v in 1...4 { withUnsafeBytes(of: Float16(Float(v)).bitPattern.littleEndian) { d.append(contentsOf: $0) } }
        withUnsafeBytes(of: Int64(7).littleEndian) { d.append(contentsOf: $0) }
        return d
    }()

    /// The file: the header's length, the header, the data.
    static func bytes(header: String = header, data: [UInt8] = data, declared: UInt64? = nil) -> [UInt8] {
        let h = Array(header.utf8)
        var b: [UInt8] = []
        withUnsafeBytes(of: (declared ?? UInt64(h.count)).littleEndian) { b.append(contentsOf: $0) }
        return b + h + data
    }

    /// The absolute byte offset of the first `text` in `header`.
    static func offset(of text: String, in header: String = header) -> Int {
        guard let r = header.range(of: text) else { return -1 }
        return 8 + header.utf8.distance(from: header.startIndex, to: r.lowerBound)
    }

    /// The absolute byte offset at which the fixture's header names `key`.
    static func offset(ofKey key: String) -> Int { offset(of: "\"\(key)\":") }
}

/// The hostile safetensors corpus: each case damages the fixture in one way and names the place its error must give.
enum SafetensorsCorruption: String, CaseIterable, Sendable {
    case tooShort, headerTooLarge, headerPastEnd, emptyHeader, notAnObject, deepNesting, duplicateName, badUTF8
    case unknownDType, dtypeNotString, negativeDim, fractionalDim, booleanDim, shapeNotArray, sizeMismatch
    case overflowingShape, overflowingBytes, offsetsReversed, offsetsOneNumber, offsetsPastEnd, overlap, hole
    case trailingBytes, holeAtStart, extraField, metadataNotString, entryNotObject

    typealias F = SafetensorsFixture

    func replacing(_ a: String, _ b: String) -> String {
        precondition(F.header.contains(a), "\(a) not in the fixture header")
        return F.header.replacingOccurrences(of: a, with: b)
    }

    var bytes: [UInt8] {
        switch self {
        case .tooShort: return [1, 0, 0, 0, 0]
        case .headerTooLarge: return F.bytes(declared: 100_000_001)
        case .headerPastEnd: return F.bytes(declared: UInt64(F.bytes().count - 7))
        case .emptyHeader: return F.bytes(header: "", data: [])
        case .notAnObject: return F.bytes(header: "[1,2]", data: [])
        case .deepNesting: return F.bytes(header: replacing(#""shape":[4]"#, #""shape":[[[[4]]]]"#))
        case .duplicateName: return F.bytes(header: replacing(#""c":{"#, #""a":{"#))
        case .badUTF8:
            var b = F.bytes(header: replacing(#""format":"pt""#, #""format":"p\#u{e9}""#))
            if let i = b.firstIndex(of: 0xC3) { b[i] = 0xFF }
            return b
        case .unknownDType: return F.bytes(header: replacing(#""dtype":"F16""#, #""dtype":"F33""#))
        case .dtypeNotString: return F.bytes(header: replacing(#""dtype":"F16""#, #""dtype":16  "#))
        case .negativeDim: return F.bytes(header: replacing(#""shape":[2,3]"#, #""shape":[-2,3]"#))
        case .fractionalDim: return F.bytes(header: replacing(#""shape":[4]"#, #""shape":[4.5]"#))
        case .booleanDim: return F.bytes(header: replacing(#""shape":[1]"#, #""shape":[true]"#))
        case .shapeNotArray: return F.bytes(header: replacing(#""shape":[4]"#, #""shape":"4""#))
        case .sizeMismatch: return F.bytes(header: replacing(#""shape":[2,3]"#, #""shape":[2,4]"#))
        case .overflowingShape:
            return F.bytes(header: replacing(#""shape":[2,3]"#, #""shape":[4611686018427387904,4]"#))
        case .overflowingBytes:
            return F.bytes(header: replacing(#""shape":[2,3]"#, #""shape":[2305843009213693952,1]"#))
        case .offsetsReversed: return F.bytes(header: replacing("[24,32]", "[32,24]"))
        case .offsetsOneNumber: return F.bytes(header: replacing("[32,40]", "[32]"))
        case .offsetsPastEnd: return F.bytes(header: replacing("[32,40]", "[1032,1040]"))
        case .overlap: return F.bytes(header: replacing("[24,32]", "[20,28]"))
        case .hole: return F.bytes(header: replacing("[32,40]", "[36,44]"), data: F.data + [0, 0, 0, 0])
        case .trailingBytes: return F.bytes(data: F.data + [0])
        case .holeAtStart:
            return F.bytes(header: replacing("[0,24]", "[4,28]").replacingOccurrences(of: "[24,32]", with: "[28,36]")
                .replacingOccurrences(of: "[32,40]", with: "[36,44]"), data: [0, 0, 0, 0] + F.data)
        case .extraField: return F.bytes(header: replacing(#""dtype":"I64""#, #""dtype":"I64","stride":1"#))
        case .metadataNotString: return F.bytes(header: replacing(#""format":"pt""#, #""format":1   "#))
        case .entryNotObject:
            return F.bytes(header: replacing(#""c":{"dtype":"I64","shape":[1],"data_offsets":[32,40]}"#, #""c":[32,40]"#),
                           data: Array(F.data.prefix(32)))
        }
    }

    /// The start of the error's text after the file name: the byte offset and what is wrong there.
    var place: String {
        let a = F.offset(ofKey: "a"), b = F.offset(ofKey: "b"), c = F.offset(ofKey: "c")
        switch self {
        case .tooShort, .headerTooLarge, .headerPastEnd: return "byte 0: header length"
        case .emptyHeader, .notAnObject: return "byte 8: header"
        case .deepNesting: return "byte \(F.offset(of: "[[[[4", in: replacing(#""shape":[4]"#, #""shape":[[[[4]]]]"#)) + 1): header"
        case .duplicateName: return "byte \(c): header"
        case .badUTF8: return "byte 8: header"
        case .unknownDType, .dtypeNotString: return "byte \(b): tensor 'b' dtype"
        case .negativeDim, .sizeMismatch, .overflowingShape, .overflowingBytes:
            return self == .sizeMismatch ? "byte \(a): tensor 'a' data_offsets" : "byte \(a): tensor 'a' shape"
        case .fractionalDim, .shapeNotArray: return "byte \(b): tensor 'b' shape"
        case .booleanDim: return "byte \(c): tensor 'c' shape"
        case .offsetsReversed: return "byte \(b): tensor 'b' data_offsets"
        case .offsetsOneNumber, .offsetsPastEnd, .hole: return "byte \(c): tensor 'c' data_offsets"
        case .overlap: return "byte \(b): tensor 'b' data_offsets"
        case .trailingBytes: return "byte \(8 + F.header.utf8.count + 40): data buffer"
        case .holeAtStart: return "byte \(a): tensor 'a' data_offsets"
        case .extraField: return "byte \(c): tensor 'c' field 'stride'"
        case .metadataNotString: return "byte \(F.offset(ofKey: "__metadata__")): __metadata__['format']"
        case .entryNotObject: return "byte \(c): tensor 'c'"
        }
    }
}

@Suite struct SafetensorsTests {
    typealias F = SafetensorsFixture

    @Test func readsTheFixture() throws {
        let s = try SafetensorsFile(bytes: F.bytes(), file: F.file)
        #expect(s.entries.map(\.name) == ["a", "b", "c"])
        #expect(s.metadata == ["format": "pt"])
        #expect(try s.entry("a").shape == [2, 3])
        #expect(try s.floats(s.entry("a")) == [0, 1, 2, 3, 4, 5])
        #expect(try s.floats(s.entry("b")) == [1, 2, 3, 4])
        #expect(throws: ImportError.self) { try s.floats(s.entry("c")) }
        #expect(throws: ImportError.self) { try s.entry("d") }
    }

    /// Each corruption is refused with an `ImportError` (exit 65) whose text is `file: byte N: place…`.
    @Test(arguments: SafetensorsCorruption.allCases)
    func corruptionIsRefusedWithItsPlace(_ c: SafetensorsCorruption) {
        do {
            _ = try SafetensorsFile(bytes: c.bytes, file: F.file)
            Issue.record("\(c): accepted")
        } catch let e as ImportError {
            #expect(e.exitStatus == .dataError, "\(c)")
            #expect(e.description.hasPrefix(F.file + ": " + c.place), "\(c): \(e.description)")
        } catch {
            Issue.record("\(c): threw \(type(of: error)): \(error)")
        }
    }

    /// Every proper prefix of the fixture is refused with an ImportError (the tensors no longer cover the data).
    @Test func everyPrefixIsRefused() {
        let full = F.bytes()
        for n in 0..<full.count {
            do {
                _ = try SafetensorsFile(bytes: Array(full.prefix(n)), file: F.file)
                Issue.record("prefix of \(n) bytes accepted")
            } catch is ImportError {
            } catch {
                Issue.record("prefix of \(n) bytes: \(type(of: error)): \(error)")
            }
        }
    }

    /// The real MiniLM file (Tests/Fixtures/minilm/fetch_minilm.py) against numpy's view of the same bytes: every
    /// tensor's dtype, shape, first values and sum.
    @Test func miniLMAgreesWithNumPy() throws {
        let path = SharedDatasets.repository.appendingPathComponent(".build/minilm/model.safetensors").path
        guard FileManager.default.fileExists(atPath: path) else {
            return Oracles.missing("\(path) (python3 Tests/Fixtures/minilm/fetch_minilm.py)")
        }
        let s = try SafetensorsFile(path: path)
        guard let answer = try JSONOracle.call("Tests/Fixtures/minilm/safetensors_oracle.py", ["path": path],
                                               missing: "numpy (pip install numpy)"),
              let tensors = answer["tensors"] as? [String: [String: Any]] else { return }
        #expect(s.entries.count == tensors.count)
        #expect(s.entries.count == 104)   // measured: 6 embedding tensors, 6 × 16 per layer, the pooler (2)
        for e in s.entries {
            let want = try #require(tensors[e.name], "\(e.name) not in numpy's header")
            #expect(want["dtype"] as? String == e.dtype && want["shape"] as? [Int] == e.shape, "\(e.name)")
            guard let first = want["first"] as? [Double], let sum = want["sum"] as? Double else { continue }
            let values = try s.floats(e)
            assertClose(Array(values.prefix(8)), first, rtol: 1e-12, atol: 0, e.name)   // the JSON text of the oracle rounds the last bit
            assertClose([values.reduce(0.0) { $0 + Double($1) }], [sum], rtol: 1e-9, atol: 1e-9, e.name + " sum")
        }
    }
}
