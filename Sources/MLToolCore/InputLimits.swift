import Foundation

/// The limits that keep a hostile input from costing unbounded time or memory, defined once (docs/SECURITY.md,
/// "Resource limits" lists them with the checks that enforce them). A limit a user could legitimately need to raise
/// reads an environment variable once, at first use; a value that is not a positive integer leaves the default.
public enum InputLimits {
    /// The most pixels (width × height, from the header, before any pixel buffer is allocated) of an image:
    /// 64,000,000, or `MLTOOL_MAX_PIXELS`. `mltool train --max-pixels` overrides it per run.
    public static let maxImagePixels = environment("MLTOOL_MAX_PIXELS", default: 64_000_000)

    /// The longest line of a table (CSV, TSV, JSON Lines), in bytes: 16 MiB, or `MLTOOL_MAX_LINE_BYTES`. Checked
    /// while the file is read, so a longer line is refused after at most this many bytes of it were read.
    public static let maxLineBytes = environment("MLTOOL_MAX_LINE_BYTES", default: 16 << 20)

    /// The largest data file read whole into memory at once (a text document, an image, a COCO or VOC annotation
    /// file), in bytes: 256 MiB, or `MLTOOL_MAX_FILE_BYTES`. Checked against the file's size before it is read.
    /// Line-oriented files (tables, CoNLL corpora, YOLO labels) are read line by line under `maxLineBytes` instead,
    /// and models are memory-mapped.
    public static let maxFileBytes = environment("MLTOOL_MAX_FILE_BYTES", default: 256 << 20)

    /// The longest recording, in seconds, as its header declares it (checked before any sample is decoded): one
    /// hour, or `MLTOOL_MAX_AUDIO_SECONDS`.
    public static let maxAudioSeconds = environment("MLTOOL_MAX_AUDIO_SECONDS", default: 3600)

    /// The deepest nesting of arrays and objects in any JSON mltool reads: 512 (Foundation's parser stops there too,
    /// without saying where; `firstTooDeepJSON` does).
    public static let maxJSONDepth = 512

    /// The deepest nesting of messages in a protobuf file (ONNX, Core ML): 100, as Google's protobuf parsers.
    /// protobuf-c recurses without a limit, and a few megabytes of Core ML pipelines nested in pipelines overflow
    /// its stack; `ProtobufWire` refuses them first.
    public static let maxProtobufDepth = 100

    /// The most field occurrences in one protobuf message: 4,194,304 (2^22). protobuf-c keeps about 40 bytes per
    /// occurrence while it unpacks, so this bounds that at 160 MiB; writers pack repeated numbers into one field,
    /// so real models stay orders of magnitude below it.
    public static let maxProtobufFieldsPerMessage = 1 << 22

    /// The byte offset of the first `[` or `{` (outside strings) nested deeper than `limit`, or nil. Only scans: a
    /// grammar error is left to the parser, and the scan never reads out of bounds.
    public static func firstTooDeepJSON(_ b: UnsafeRawBufferPointer, limit: Int = maxJSONDepth) -> Int? {
        var depth = 0, i = 0
        let n = b.count
        while i < n {
            switch b[i] {
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth &+= 1
                if depth > limit { return i }
            case UInt8(ascii: "]"), UInt8(ascii: "}"):
                if depth > 0 { depth &-= 1 }
            case UInt8(ascii: "\""):
                i &+= 1
                while i < n, b[i] != UInt8(ascii: "\"") { i &+= b[i] == UInt8(ascii: "\\") ? 2 : 1 }
            default:
                break
            }
            i &+= 1
        }
        return nil
    }

    static func environment(_ name: String, default value: Int) -> Int {
        guard let text = ProcessInfo.processInfo.environment[name], let v = Int(text), v > 0 else { return value }
        return v
    }
}
