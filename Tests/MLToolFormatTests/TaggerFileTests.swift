import Foundation
import Testing
import MLToolCore
@testable import MLToolFormat

extension TestModels {
    static func bytes<T>(_ values: [T]) -> TensorBytes {
        TensorBytes(copying: values.withUnsafeBytes { Array($0) })
    }

    /// A small word tagger: 3 tags, 4 feature keys (two of them above 2^63, read as unsigned), 2 lexicon words.
    static func tagger() -> Model {
        var meta = ModelMetadata(task: .wordTagger, labels: ["DET", "NOUN", "VERB"],
                                 provenance: Provenance(toolVersion: "test", seed: 1))
        meta.tagger = TaggerConfig(tokenizer: WordTokenizerConfig(splitHyphens: true, clitics: ["'s", "n't"],
                                                                  splits: ["cannot": [3, 3]], keep: ["e.g."]))
        let keys: [UInt64] = [1, 5, 0x8000_0000_0000_0001, 0xFFFF_FFFF_FFFF_FFFE]
        let tensors = [
            StoredTensor(name: "tagger.keys", dtype: .i64, shape: [4], bytes: bytes(keys)),
            StoredTensor(name: "tagger.weights", tensor: Tensor(shape: [4, 3], data: (0..<12).map { Float($0) - 5 })),
            StoredTensor(name: "tagger.transitions", tensor: Tensor(shape: [5, 3], data: (0..<15).map { Float($0) * 0.25 })),
            StoredTensor(name: "tagger.lexicon.keys", dtype: .i64, shape: [2], bytes: bytes([7, 9] as [UInt64])),
            StoredTensor(name: "tagger.lexicon.values", dtype: .i32, shape: [2, 2], bytes: bytes([3, 0, 4, 0] as [Int32])),
        ]
        return Model(metadata: meta, tensors: tensors)
    }
}

/// Damaged word-tagger files (docs/FORMAT.md rule 13), each with the exact error the reader must give.
enum TaggerCorruption: String, CaseIterable, Sendable {
    case missingConfig, oneLabel, duplicateLabel, missingKeysTensor, missingLexiconValues
    case keysWrongDType, keysRank2, weightsWrongShape, weightsIntegerDType, transitionsWrongShape, transitionsF16
    case lexiconValuesWrongShape, keysUnsorted, keysZero, keysRepeated, lexiconKeysUnsorted

    static let file = "tagger.mlt"

    var expected: FormatError {
        let f = Self.file
        func graph(_ field: String, _ reason: String) -> FormatError {
            .badGraph(file: f, node: "tagger", field: field, reason: reason)
        }
        func tensor(_ name: String, _ field: String, _ expected: String, _ actual: String) -> FormatError {
            .badTensor(file: f, tensor: name, field: field, expected: expected, actual: actual)
        }
        let floating = "f32, f16, int8, palette1, palette2, palette4, palette6, palette8"
        switch self {
        case .missingConfig: return graph("tagger", "missing for task wordTagger")
        case .oneLabel: return graph("labels", "only 1 label; need at least 2")
        case .duplicateLabel: return graph("labels", "'NOUN' occurs twice")
        case .missingKeysTensor: return graph("keysTensor", "no stored tensor named 'tagger.features'")
        case .missingLexiconValues: return graph("lexiconValuesTensor", "no stored tensor named 'lex'")
        case .keysWrongDType: return tensor("tagger.keys", "dtype", "i64", "i32")
        case .keysRank2: return tensor("tagger.keys", "shape", "[F]", "[2, 2]")
        case .weightsWrongShape: return tensor("tagger.weights", "shape", "[4, 3]", "[3, 4]")
        case .weightsIntegerDType: return tensor("tagger.weights", "dtype", floating, "i32")
        case .transitionsWrongShape: return tensor("tagger.transitions", "shape", "[5, 3]", "[3, 5]")
        case .transitionsF16: return tensor("tagger.transitions", "dtype", "f32", "f16")
        case .lexiconValuesWrongShape: return tensor("tagger.lexicon.values", "shape", "[2, 2]", "[4]")
        case .keysUnsorted:
            return tensor("tagger.keys", "values", "non-zero and strictly increasing (unsigned)",
                          "element 2 is 3 after 5")
        case .keysZero:
            return tensor("tagger.keys", "values", "non-zero and strictly increasing (unsigned)", "element 0 is 0 after 0")
        case .keysRepeated:
            return tensor("tagger.keys", "values", "non-zero and strictly increasing (unsigned)",
                          "element 1 is 1 after 1")
        case .lexiconKeysUnsorted:
            return tensor("tagger.lexicon.keys", "values", "non-zero and strictly increasing (unsigned)",
                          "element 1 is 2 after 7")
        }
    }

    /// The damaged file, built from the valid one by editing its table or its data (checksums resealed).
    func apply(to base: [UInt8]) throws -> [UInt8] {
        func table(_ edit: (inout MetadataDocument) -> Void) throws -> [UInt8] { try TestModels.editTable(base, edit) }
        /// Overwrites the u64 `value` at element `index` of the tensor at table position `t`.
        func setElement(_ t: Int, _ index: Int, _ value: UInt64) throws -> [UInt8] {
            let h = base.withUnsafeBytes { FileHeader(decoding: $0) }
            let json = Data(base[Int(h.metadataOffset)..<Int(h.metadataOffset + h.metadataLength)])
            let doc = try MetadataDocument.decoder().decode(MetadataDocument.self, from: json)
            var b = base
            TestModels.setU64(&b, Int(h.dataOffset) + doc.tensors[t].offset + 8 * index, value)
            return TestModels.reseal(b)
        }
        switch self {
        case .missingConfig: return try table { $0.metadata.tagger = nil }
        case .oneLabel: return try table { $0.metadata.labels = ["DET"] }
        case .duplicateLabel: return try table { $0.metadata.labels = ["DET", "NOUN", "NOUN"] }
        case .missingKeysTensor: return try table { $0.metadata.tagger?.keysTensor = "tagger.features" }
        case .missingLexiconValues: return try table { $0.metadata.tagger?.lexiconValuesTensor = "lex" }
        case .keysWrongDType: return try table { $0.tensors[0].dtype = "i32"; $0.tensors[0].shape = [8] }
        case .keysRank2: return try table { $0.tensors[0].shape = [2, 2] }
        case .weightsWrongShape: return try table { $0.tensors[1].shape = [3, 4] }
        case .weightsIntegerDType: return try table { $0.tensors[1].dtype = "i32" }
        case .transitionsWrongShape: return try table { $0.tensors[2].shape = [3, 5] }
        case .transitionsF16: return try table { $0.tensors[2].dtype = "f16"; $0.tensors[2].shape = [5, 6] }
        case .lexiconValuesWrongShape: return try table { $0.tensors[4].shape = [4] }
        case .keysUnsorted: return try setElement(0, 2, 3)
        case .keysZero: return try setElement(0, 0, 0)
        case .keysRepeated: return try setElement(0, 1, 1)
        case .lexiconKeysUnsorted: return try setElement(3, 1, 2)
        }
    }
}

@Suite struct TaggerFileTests {
    static let base: [UInt8] = (try? ModelFile.serialize(TestModels.tagger())) ?? []

    @Test func taggerRoundTripsBitForBit() throws {
        let m = TestModels.tagger()
        let bytes = try ModelFile.serialize(m)
        let back = try ModelFile.read(bytes: bytes, name: "tagger")
        #expect(sameModel(back, m))
        #expect(back.metadata.tagger?.tokenizer.splits == ["cannot": [3, 3]])
        #expect(try ModelFile.serialize(back) == bytes)
    }

    @Test(arguments: TaggerCorruption.allCases)
    func corruptTaggerThrowsItsOwnError(_ corruption: TaggerCorruption) throws {
        let bytes = try corruption.apply(to: Self.base)
        #expect(bytes != Self.base)
        do {
            _ = try ModelFile.read(bytes: bytes, name: TaggerCorruption.file)
            Issue.record("\(corruption): read succeeded")
        } catch let error as FormatError {
            #expect(error == corruption.expected, "\(corruption): got \(error)")
            #expect(error.exitStatus == .dataError)
        }
    }

    @Test func writerRefusesABrokenTagger() {
        var m = TestModels.tagger()
        m.metadata.labels = ["DET", "NOUN"]
        #expect(throws: FormatError.badTensor(file: "(model being written)", tensor: "tagger.weights", field: "shape",
                                              expected: "[4, 2]", actual: "[4, 3]")) {
            try ModelFile.serialize(m)
        }
    }

    @Test func everyPrefixOfATaggerIsRejected() {
        let b = Self.base
        #expect(!b.isEmpty)
        for n in 0..<b.count {
            #expect(throws: FormatError.self, "prefix \(n)") { try ModelFile.read(bytes: Array(b[0..<n]), name: "p") }
        }
    }
}
