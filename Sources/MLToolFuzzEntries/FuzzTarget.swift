import Foundation
import MLToolCore
import MLToolData
import MLToolEngine
import MLToolFormat
import MLToolHTTP
import MLToolImport

/// The fuzz targets of mltool: one per reader of outside bytes, defined here once. The libFuzzer executable
/// (`fuzz/Package.swift`, `mltool-fuzz`) runs the target named by `MLTOOL_FUZZ_TARGET`; `FuzzRegressionTests` replays
/// every committed seed and regression input (`Tests/Fixtures/fuzz/<name>/{seeds,regressions}/`) through the same
/// entry; `fuzz/run.sh` lists the targets (name and dictionary) from the executable itself.
///
/// An entry takes the fuzzer's bytes, hands them to the real reader and swallows the errors readers throw for bad
/// input: a reader that traps, overflows, reads out of bounds, leaks or hangs on some input is what the fuzzer finds.
public struct FuzzTarget: Sendable {
    /// The name used on the command line, in `Tests/Fixtures/fuzz/<name>/` and in `.build/fuzz-*/<name>/`.
    public let name: String
    /// The libFuzzer dictionary, `fuzz/dicts/<dictionary>.dict`.
    public let dictionary: String
    /// One execution. Returns whether the reader accepted the input (for tests and statistics only).
    public let run: @Sendable ([UInt8]) -> Bool

    public static let all: [FuzzTarget] = [
        FuzzTarget(name: "native-model", dictionary: "native-model", run: FuzzEntries.nativeModel),
        FuzzTarget(name: "engine", dictionary: "native-model", run: FuzzEntries.engine),
        FuzzTarget(name: "onnx", dictionary: "protobuf", run: FuzzEntries.onnx),
        FuzzTarget(name: "coreml", dictionary: "protobuf", run: FuzzEntries.coreML),
        FuzzTarget(name: "tflite", dictionary: "tflite", run: FuzzEntries.tflite),
        FuzzTarget(name: "coreml-package", dictionary: "coreml-package", run: FuzzEntries.coreMLPackage),
        FuzzTarget(name: "keras-config", dictionary: "json", run: FuzzEntries.kerasConfig),
        FuzzTarget(name: "hdf5-replies", dictionary: "hdf5-replies", run: FuzzEntries.hdf5Replies),
        FuzzTarget(name: "keras-h5", dictionary: "hdf5", run: FuzzEntries.kerasH5),
        FuzzTarget(name: "image", dictionary: "image", run: FuzzEntries.image),
        FuzzTarget(name: "table", dictionary: "table", run: FuzzEntries.table),
        FuzzTarget(name: "annotations", dictionary: "annotations", run: FuzzEntries.annotations),
        FuzzTarget(name: "conll", dictionary: "conll", run: FuzzEntries.conll),
        FuzzTarget(name: "feature-cache", dictionary: "feature-cache", run: FuzzEntries.featureCache),
        FuzzTarget(name: "request-body", dictionary: "request-body", run: FuzzEntries.requestBody),
        FuzzTarget(name: "safetensors", dictionary: "safetensors", run: FuzzEntries.safetensors),
        FuzzTarget(name: "tokenizer-json", dictionary: "tokenizer-json", run: FuzzEntries.tokenizerJSON),
    ]

    public static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// The entry functions. Inputs that must be files are written to one temporary file per process (the same path
/// every time); its folder is removed at exit only by the OS's /tmp cleaning, so keep it small.
public enum FuzzEntries {
    /// The per-process scratch folder (`$TMPDIR/mltool-fuzz-<pid>`), created on first use.
    static let scratch: String = {
        let base = getenv("TMPDIR").map { String(cString: $0) }.flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        let dir = base + "/mltool-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }()

    /// Writes `bytes` to `scratch/name` (replacing it) and returns the path.
    static func file(_ name: String, _ bytes: some Collection<UInt8>) -> String {
        let path = scratch + "/" + name
        let dir = (path as NSString).deletingLastPathComponent
        if !FileManager.default.fileExists(atPath: dir) {
            try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        }
        // A plain truncating write: FileManager.createFile writes a temporary file, syncs and renames it, which was
        // a tenth of a `coreml-package` execution (three files each).
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return path }
        let all = Array(bytes)
        var done = 0
        all.withUnsafeBytes { raw in
            guard let base = raw.baseAddress else { return }
            while done < raw.count {
                let n = write(fd, base + done, raw.count - done)
                if n <= 0 { break }
                done += n
            }
        }
        close(fd)
        return path
    }

    /// Runs `body`; any thrown error is a refusal (false), printed when MLTOOL_FUZZ_VERBOSE is set.
    static func accepts(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return true
        } catch {
            if verbose { FileHandle.standardError.write(Data("refused: \(error)\n".utf8)) }
            return false
        }
    }

    static let verbose = getenv("MLTOOL_FUZZ_VERBOSE") != nil

    /// The native `.bin` reader (every checksum and rule of docs/FORMAT.md), from memory: the bytes as they are,
    /// then with every checksum the header and trailer hold recomputed (`withChecksumsFixed`), so that mutations get
    /// past the checksums to the metadata JSON, the tensor table and the validation rules.
    @Sendable public static func nativeModel(_ bytes: [UInt8]) -> Bool {
        let raw = accepts { _ = try ModelFile.read(bytes: bytes, name: "fuzz.bin") }
        let fixed = accepts { _ = try ModelFile.read(bytes: withChecksumsFixed(bytes), name: "fuzz.bin") }
        return raw || fixed
    }

    /// Inputs of at most this many elements are run through a compiled model; larger ones are checked and compiled only.
    static let engineRunElements = 1 << 16

    /// What `mltool predict` and `mltool bench` do with a model file from elsewhere, past the reader: a native model
    /// that `ModelFile.read` accepts (checksums repaired as in `nativeModel`) compiled by the engine — graph passes,
    /// shape inference, weights packed, int8 and palette weights checked and kept (`QuantizedWeights`,
    /// `PaletteWeights`), the plan and its arena — then every declared input shape through the checks `bench` runs
    /// (`GraphInput.runShape`, batch 1: the element count overflow-checked, its floats against this machine's
    /// memory), whatever the declared dimensions (negative, huge, overflowing); the model is then run once, on one
    /// thread, on zeros of those shapes when every input has at most `engineRunElements` elements (larger ones would
    /// make each fuzz execution slow, not reach other code).
    @Sendable public static func engine(_ bytes: [UInt8]) -> Bool {
        guard let model = try? ModelFile.read(bytes: withChecksumsFixed(bytes), name: "fuzz.bin") else { return false }
        return accepts {
            let engine = try Engine(model: model, threads: 1)
            var inputs: [String: Tensor] = [:], small = true
            for input in model.metadata.graph?.inputs ?? [] {
                let (shape, n) = try input.runShape(batch: 1, file: "fuzz.bin")
                small = small && n <= engineRunElements
                if small { inputs[input.name] = Tensor(shape: shape, data: [Float](repeating: 0, count: n)) }
            }
            guard small, Set(inputs.keys) == Set(engine.inputNames) else { return }
            _ = try engine.run(inputs)
        }
    }

    /// `bytes` with the header's metadata, data and header XXH64s and the trailer's file XXH64 recomputed over the
    /// ranges the header claims (those that lie inside the bytes; docs/FORMAT.md sections 2 and 3).
    public static func withChecksumsFixed(_ bytes: [UInt8]) -> [UInt8] {
        var b = bytes
        guard b.count >= 128 else { return b }
        func u64(_ o: Int) -> UInt64 { (0..<8).reduce(UInt64(0)) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) } }
        func store(_ v: UInt64, at o: Int) { for i in 0..<8 { b[o + i] = UInt8(truncatingIfNeeded: v >> (8 * UInt64(i))) } }
        for (offsetField, lengthField, sumField) in [(24, 32, 72), (40, 48, 80)] {
            let o = u64(offsetField), n = u64(lengthField)
            if o <= UInt64(b.count), n <= UInt64(b.count) - o {
                store(XXH64.hash(Array(b[Int(o)..<Int(o + n)])), at: sumField)
            }
        }
        store(XXH64.hash(Array(b[0..<120])), at: 120)
        if b.count >= 128 + 16 { store(XXH64.hash(Array(b[0..<(b.count - 8)])), at: b.count - 8) }
        return b
    }

    /// `mltool import model.safetensors`: the safetensors reader (header length, JSON header, dtypes, shapes, the
    /// data offsets' cover of the data), then every float tensor converted as the BERT importer reads it.
    @Sendable public static func safetensors(_ bytes: [UInt8]) -> Bool {
        accepts {
            let file = try SafetensorsFile(bytes: bytes, file: "fuzz.safetensors")
            for e in file.entries where ["F32", "F16", "BF16", "F64"].contains(e.dtype) { _ = try file.floats(e) }
        }
    }

    /// A Hugging Face tokenizer.json as `mltool import` of a BERT encoder reads it (`WordPieceTokenizer`), then the
    /// tokenizer it gives run on a text with accents, punctuation, CJK, a control character and a special token.
    @Sendable public static func tokenizerJSON(_ bytes: [UInt8]) -> Bool {
        accepts {
            let t = try WordPieceTokenizer(tokenizerJSON: bytes, file: "fuzz.json")
            _ = t.ids("Hello, wörld!\u{7} 中文 [MASK] unaffable")
        }
    }

    /// `mltool import x.onnx`: protobuf-c's unpacking, then the importer (graph building, folding, checks).
    @Sendable public static func onnx(_ bytes: [UInt8]) -> Bool {
        let path = file("model.onnx", bytes)
        return accepts { _ = try ONNXImporter.importModel(path: path, options: ImportOptions()) }
    }

    /// `mltool import x.tflite`: the FlatBuffer reader (offsets, vtables, vector lengths), the schema subset and the
    /// graph builder (weight layouts, folded DEQUANTIZE, operator options). In memory: the reader takes bytes.
    @Sendable public static func tflite(_ bytes: [UInt8]) -> Bool {
        accepts { _ = try TFLiteImporter.importModel(bytes: bytes, file: "model.tflite") }
    }

    /// `mltool import x.mlmodel`: protobuf-c's unpacking of the Core ML specification, then the importer.
    @Sendable public static func coreML(_ bytes: [UInt8]) -> Bool {
        let path = file("model.mlmodel", bytes)
        return accepts { _ = try CoreMLImporter.importModel(path: path) }
    }

    /// `mltool import x.mlpackage`: the package reader (Manifest.json, the paths it names, kept inside the package),
    /// the specification and the ML Program's `weight.bin` blobs (offsets, sizes, sentinels). The bytes are a small
    /// archive (`packageParts`): a 2-byte little-endian length and Manifest.json, a 4-byte length and the
    /// specification, then weight.bin; they are written at the layout coremltools writes, and whatever paths the
    /// (mutated) manifest names are the reader's to refuse.
    @Sendable public static func coreMLPackage(_ bytes: [UInt8]) -> Bool {
        let (manifest, spec, weights) = packageParts(bytes)
        let root = "package/m.mlpackage"
        _ = file(root + "/Manifest.json", manifest)
        _ = file(root + "/Data/com.apple.CoreML/model.mlmodel", spec)
        _ = file(root + "/Data/com.apple.CoreML/weights/weight.bin", weights)
        return accepts { _ = try CoreMLImporter.importModel(path: scratch + "/" + root) }
    }

    /// Splits a `coreml-package` input into manifest, specification and weights (lengths past the end are cut).
    public static func packageParts(_ b: [UInt8]) -> (manifest: ArraySlice<UInt8>, spec: ArraySlice<UInt8>, weights: ArraySlice<UInt8>) {
        func length(_ at: Int, _ width: Int) -> Int {
            guard at + width <= b.count else { return 0 }
            return (0..<width).reduce(0) { $0 | Int(b[at + $1]) << (8 * $1) }
        }
        let m = min(length(0, 2), max(0, b.count - 2))
        let specAt = min(b.count, 2 + m)
        let s = min(length(specAt, 4), max(0, b.count - specAt - 4))
        let specStart = min(b.count, specAt + 4)
        return (b[min(2, b.count)..<specAt], b[specStart..<(specStart + s)], b[(specStart + s)...])
    }

    /// The Keras `model_config` JSON (the text the HDF5 reader hands over) through its parser.
    @Sendable public static func kerasConfig(_ bytes: [UInt8]) -> Bool {
        accepts { _ = try KerasModelConfig.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.h5") }
    }

    /// `mltool import x.h5`, whole: the signature check, the sandboxed libhdf5 child (forked per execution), the
    /// parent's checks of its replies and the Keras importer. Slow (a fork and libhdf5 per execution). The sandbox's
    /// deadline is 0.5 s here (`MLTOOL_HDF5_TIMEOUT`, restored afterwards) instead of 30, or the seconds in
    /// `MLTOOL_FUZZ_HDF5_TIMEOUT` (fuzz/run.sh sets 0.15): libhdf5 1.10 loops on some mutated files (in its global
    /// heap's object walk), which the deadline contains as a refusal; a seed imports in about 0.04 s. At 2 s those
    /// loops were four fifths of the target's CPU time, at 0.5 s still half (perf, session 26).
    @Sendable public static func kerasH5(_ bytes: [UInt8]) -> Bool {
        let path = file("model.h5", bytes)
        let previous = getenv("MLTOOL_HDF5_TIMEOUT").map { String(cString: $0) }
        setenv("MLTOOL_HDF5_TIMEOUT", getenv("MLTOOL_FUZZ_HDF5_TIMEOUT").map { String(cString: $0) } ?? "0.5", 1)
        defer { if let previous { setenv("MLTOOL_HDF5_TIMEOUT", previous, 1) } else { unsetenv("MLTOOL_HDF5_TIMEOUT") } }
        return accepts { _ = try KerasImporter.importModel(path: path, options: ImportOptions()) }
    }

    /// The parent side of the HDF5 sandbox: `bytes` are the child's replies, fed to the real Keras import over the
    /// real reply parser (no child runs; the parent's requests are read and dropped).
    @Sendable public static func hdf5Replies(_ bytes: [UInt8]) -> Bool {
        accepts { _ = try KerasImporter.importModel(replayingReplies: bytes, file: "fuzz.h5") }
    }

    /// JPEG and PNG decoding as every command decodes a photo (libjpeg-turbo, libpng, EXIF orientation), with a
    /// 4-megapixel cap so that one execution stays fast; then the header-only size reader on the same bytes.
    @Sendable public static func image(_ bytes: [UInt8]) -> Bool {
        let decoded = accepts { _ = try ImageDecoder.decode(bytes: bytes, name: "fuzz", maxPixels: 1 << 22) }
        let path = file("image", bytes)
        _ = accepts { _ = try ImageDecoder.size(path: path) }
        return decoded
    }

    /// A text-classifier table as `mltool train table` reads it: the first byte picks CSV, TSV or JSON Lines (by
    /// the file's extension, as the CLI does), the rest is the file.
    @Sendable public static func table(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first else { return false }
        let ext = ["csv", "tsv", "jsonl"][Int(first) % 3]
        let path = file("table." + ext, bytes.dropFirst())
        return accepts { _ = try TextDataset.load(path) }
    }

    /// Detection annotations, as `mltool train` finds them: the first byte picks Create ML JSON, CSV, Pascal VOC
    /// XML or YOLO labels; the rest is that file, beside one real 8 × 6 photo `a.png` (and `classes.txt` for YOLO).
    @Sendable public static func annotations(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first else { return false }
        let body = bytes.dropFirst()
        let root = annotationFolder
        switch first % 4 {
        case 0:
            let path = file("det/json/annotations.json", body)
            return accepts { _ = try DetectionDataset.load(path) }
        case 1:
            let path = file("det/csv/annotations.csv", body)
            return accepts { _ = try DetectionDataset.load(path) }
        case 2:
            _ = file("det/voc/annotations/a.xml", body)
            return accepts { _ = try DetectionDataset.load(root + "/voc") }
        default:
            _ = file("det/yolo/labels/a.txt", body)
            return accepts { _ = try DetectionDataset.load(root + "/yolo") }
        }
    }

    /// The annotation folders' fixed parts: the photo each format refers to.
    static let annotationFolder: String = {
        let photo = (try? PNGEncoder.encode(RGBImage(width: 8, height: 6, pixels: [UInt8](repeating: 128, count: 8 * 6 * 3)))) ?? []
        for place in ["json/a.png", "csv/a.png", "voc/images/a.png", "yolo/images/a.png"] { _ = file("det/" + place, photo) }
        _ = file("det/yolo/classes.txt", Array("cat\ndog\n".utf8))
        return scratch + "/det"
    }()

    /// Tagged corpora as `mltool train sentences.conllu` reads them (UTF-8 check, format detection by content):
    /// the first byte picks the file's extension (.conllu, .conll, .json, .txt) and the CoNLL-U tag column.
    @Sendable public static func conll(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first else { return false }
        let ext = ["conllu", "conll", "json", "txt"][Int(first) % 4]
        let column: TagColumn = [.upos, .xpos, .misc("NE")][Int(first / 4) % 3]
        let path = file("corpus." + ext, bytes.dropFirst())
        return accepts { _ = try TaggedCorpus.load(path, tagColumn: column) }
    }

    /// A request body `mltool serve` parses itself: the first byte picks a multipart/form-data body (boundary
    /// `fuzz-boundary`, as a client's Content-Type gives it), a JSON text body (`{"text": …}` / `{"texts": […]}`) or
    /// a JSON rows body (`{"row": …}` / `{"rows": […]}`), with the server's default limits; the rest is the body.
    @Sendable public static func requestBody(_ bytes: [UInt8]) -> Bool {
        guard let first = bytes.first else { return false }
        let body = Array(bytes.dropFirst())
        switch first % 3 {
        case 0: return accepts { _ = try MultipartBody(body, boundary: "fuzz-boundary") }
        case 1: return accepts { _ = try TextBody(body, maxTextBytes: 100_000, maxTexts: 256) }
        default: return accepts { _ = try RowsBody(body, maxRows: 4096) }
        }
    }

    /// A feature-cache entry under the key the seeds are filed under (`featureCacheKey`), as `FeatureCache.get`
    /// decodes it.
    @Sendable public static func featureCache(_ bytes: [UInt8]) -> Bool {
        FeatureCache.decode(bytes, key: featureCacheKey) != nil
    }

    /// The key of the feature-cache seeds (SHA-256 of the empty string).
    public static let featureCacheKey = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
}
