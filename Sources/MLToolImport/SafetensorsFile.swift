import Foundation
import MLToolCore
import MLToolFormat

/// A safetensors file (Hugging Face's weight format), read with every size checked before it is used.
///
///     bytes 0..<8        N: the header's length, little-endian UInt64; N ≤ `maxHeaderBytes` and 8 + N ≤ file size
///     bytes 8..<8+N      the header: one UTF-8 JSON object starting with `{` (trailing spaces allowed), nesting ≤ 3,
///                        no key twice:
///                          "NAME": {"dtype": D, "shape": [d0, d1, …], "data_offsets": [begin, end]}  per tensor
///                          "__metadata__": {"key": "string value", …}                                  optional
///     bytes 8+N..<end    the data buffer; a tensor's bytes are [8+N+begin, 8+N+end)
///
/// Rules (as the reference implementation's, plus names for every refusal): D is in `dtypes`; every dimension ≥ 0;
/// elements(shape) × size(D) = end − begin, overflow-checked; the tensors, in order of `begin`, cover the data buffer
/// exactly: the first begins at 0, each begins where the previous ends (no holes, no overlap), the last ends at the
/// end of the file; no other field in an entry. Errors are `ImportError`s naming the file and the byte offset (exit 65).
public struct SafetensorsFile: Sendable {
    /// The largest header accepted: 100,000,000 bytes, the reference implementation's cap.
    public static let maxHeaderBytes = 100_000_000

    /// The element types of safetensors and their sizes in bytes (the one table; names as the format writes them).
    public static let dtypes: [String: Int] = [
        "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
        "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8,
    ]

    /// One tensor of the file.
    public struct Entry: Sendable, Equatable {
        public var name: String
        public var dtype: String
        public var shape: [Int]
        /// The tensor's bytes in the file (absolute offsets).
        public var bytes: Range<Int>
    }

    public let file: String
    /// The tensors in order of their data.
    public let entries: [Entry]
    /// The header's `__metadata__` (string to string), empty when absent.
    public let metadata: [String: String]
    let data: [UInt8]
    /// The header's bytes, to find where it names a tensor when an error needs the place.
    let header: [UInt8]

    /// Reads the safetensors file at `path` (the whole file: the weights are used at once).
    public init(path: String) throws {
        let bytes: Data
        do { bytes = try Data(contentsOf: URL(fileURLWithPath: path), options: .mappedIfSafe) } catch {
            throw ImportError.unreadable(file: path, reason: error.localizedDescription)
        }
        try self.init(bytes: [UInt8](bytes), file: path)
    }

    public init(bytes: [UInt8], file: String) throws {
        self.file = file
        data = bytes
        guard bytes.count >= 8 else {
            throw ImportError.invalid(file: file, place: "byte 0: header length", expected: "8 bytes",
                                      actual: "a file of \(bytes.count) bytes")
        }
        let declared = (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[$1]) << (8 * UInt64($1)) }
        guard declared <= UInt64(Self.maxHeaderBytes) else {
            throw ImportError.invalid(file: file, place: "byte 0: header length",
                                      expected: "at most \(Self.maxHeaderBytes) bytes", actual: "\(declared)")
        }
        let headerLength = Int(declared)
        guard headerLength <= bytes.count - 8 else {
            throw ImportError.invalid(file: file, place: "byte 0: header length",
                                      expected: "at most the \(bytes.count - 8) bytes after it", actual: "\(headerLength)")
        }
        let h = Array(bytes[8..<(8 + headerLength)])
        header = h
        (entries, metadata) = try Self.parse(header: h, file: file, dataStart: 8 + headerLength, fileSize: bytes.count)
    }

    /// The tensor named `name`, or throws naming it.
    public func entry(_ name: String) throws -> Entry {
        guard let e = entries.first(where: { $0.name == name }) else {
            throw ImportError.invalid(file: file, place: "tensor '\(name)'", expected: "a tensor of that name",
                                      actual: "none among \(entries.count) tensors")
        }
        return e
    }

    /// The tensor's values as Float (F32, F16, BF16 and F64 are converted; other types are refused by name).
    public func floats(_ entry: Entry) throws -> [Float] {
        let width: Int
        switch entry.dtype {
        case "F32": width = 4
        case "F16", "BF16": width = 2
        case "F64": width = 8
        default:
            throw ImportError.invalid(file: file, place: "byte \(Self.offset(ofKey: entry.name, in: header)): tensor '\(entry.name)' dtype",
                                      expected: "F32, F16, BF16 or F64", actual: entry.dtype)
        }
        let count = entry.bytes.count / width
        return data.withUnsafeBytes { raw in
            guard let start = raw.baseAddress else { return [] }
            let base = start + entry.bytes.lowerBound
            switch entry.dtype {
            case "F32":
                return (0..<count).map { Float(bitPattern: UInt32(littleEndian: base.loadUnaligned(fromByteOffset: 4 * $0, as: UInt32.self))) }
            case "F16":
                return (0..<count).map { Float(Float16(bitPattern: UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self)))) }
            case "BF16":
                return (0..<count).map { Float(bitPattern: UInt32(UInt16(littleEndian: base.loadUnaligned(fromByteOffset: 2 * $0, as: UInt16.self))) << 16) }
            default:
                return (0..<count).map { Float(Double(bitPattern: UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8 * $0, as: UInt64.self)))) }
            }
        }
    }

    // MARK: - The header

    private static func parse(header: [UInt8], file: String, dataStart: Int, fileSize: Int)
        throws -> ([Entry], [String: String]) {
        let h = HeaderErrors(header: header, file: file)
        var metadata: [String: String] = [:]
        var entries: [Entry] = []
        for (name, value) in try topLevel(header, h).sorted(by: { $0.key < $1.key }) {
            if name == "__metadata__" {
                guard let m = value.object else {
                    throw h.invalid(key: name, "__metadata__", "an object of strings", value.kind)
                }
                for (k, v) in m {
                    guard let s = v.string else {
                        throw h.invalid(key: name, "__metadata__['\(k)']", "a string", v.kind)
                    }
                    metadata[k] = s
                }
                continue
            }
            entries.append(try entry(name, value, h, dataStart: dataStart, fileSize: fileSize))
        }
        // Equal begins only happen with empty tensors; order them by end so that the cover check still holds.
        entries.sort { ($0.bytes.lowerBound, $0.bytes.upperBound, $0.name) < ($1.bytes.lowerBound, $1.bytes.upperBound, $1.name) }
        try checkCover(entries, h, dataStart: dataStart, fileSize: fileSize)
        return (entries, metadata)
    }

    /// The errors of a header, at a byte offset or where it names a tensor.
    private struct HeaderErrors {
        let header: [UInt8]
        let file: String

        func invalid(_ at: Int, _ place: String, _ expected: String, _ actual: String) -> ImportError {
            .invalid(file: file, place: "byte \(8 + at): \(place)", expected: expected, actual: actual)
        }

        // Where the header names a tensor is looked up only for an error: a scan per key would be quadratic.
        func invalid(key: String, _ place: String, _ expected: String, _ actual: String) -> ImportError {
            .invalid(file: file, place: "byte \(SafetensorsFile.offset(ofKey: key, in: header)): \(place)", expected: expected, actual: actual)
        }
    }

    /// The header's top-level object, after the nesting and key checks that bound its parse.
    private static func topLevel(_ header: [UInt8], _ h: HeaderErrors) throws -> [String: JSONValue] {
        guard header.first == UInt8(ascii: "{") else {
            throw h.invalid(0, "header", "a JSON object starting with '{'",
                            header.first.map { "byte 0x\(String($0, radix: 16))" } ?? "an empty header")
        }
        if let at = header.withUnsafeBytes({ InputLimits.firstTooDeepJSON($0, limit: 3) }) {
            throw h.invalid(at, "header", "nesting at most 3 deep (tensors, their fields, shapes)", "deeper nesting")
        }
        if let problem = header.withUnsafeBytes({ JSONKeyCheck.firstProblem($0) }) {
            throw h.invalid(problem.offset, "header", "valid JSON", problem.reason)
        }
        switch JSONValue.parse(header, depth: 3) {
        case let .failure(problem):
            throw h.invalid(problem.offset, "header", "UTF-8 JSON nested at most 3 deep (tensors, their fields, shapes)",
                            problem.reason)
        case let .success(value):
            guard let object = value.object else { throw h.invalid(0, "header", "a JSON object", value.kind) }
            return object
        }
    }

    /// One tensor's entry: dtype, shape and data offsets, its byte count checked against them and the file.
    private static func entry(_ name: String, _ value: JSONValue, _ h: HeaderErrors, dataStart: Int, fileSize: Int) throws -> Entry {
        let place = "tensor '\(name)'"
        guard let fields = value.object else {
            throw h.invalid(key: name, place, "an object with dtype, shape and data_offsets", value.kind)
        }
        if let extra = fields.keys.sorted().first(where: { !["dtype", "shape", "data_offsets"].contains($0) }) {
            throw h.invalid(key: name, place + " field '\(extra)'", "only dtype, shape and data_offsets", "'\(extra)'")
        }
        guard let dtype = fields["dtype"]?.string else {
            throw h.invalid(key: name, place + " dtype", "a string", fields["dtype"]?.kind ?? "nothing")
        }
        guard let size = dtypes[dtype] else {
            throw h.invalid(key: name, place + " dtype", "one of \(dtypes.keys.sorted().joined(separator: ", "))", "\"\(dtype)\"")
        }
        guard let shape = fields["shape"]?.integers, shape.allSatisfy({ $0 >= 0 }) else {
            throw h.invalid(key: name, place + " shape", "an array of integers ≥ 0", describe(fields["shape"]))
        }
        guard let offsets = fields["data_offsets"]?.integers, offsets.count == 2, offsets[0] >= 0,
              offsets[0] <= offsets[1] else {
            throw h.invalid(key: name, place + " data_offsets", "[begin, end] with 0 ≤ begin ≤ end",
                            describe(fields["data_offsets"]))
        }
        var bytes = size
        for d in shape {
            let (product, overflow) = bytes.multipliedReportingOverflow(by: d)
            guard !overflow else {
                throw h.invalid(key: name, place + " shape", "a byte count that fits in 64 bits", "\(shape) of \(dtype)")
            }
            bytes = product
        }
        guard bytes == offsets[1] - offsets[0] else {
            throw h.invalid(key: name, place + " data_offsets", "\(bytes) bytes (\(shape) × \(size) of \(dtype))",
                            "\(offsets[1] - offsets[0]) bytes [\(offsets[0]), \(offsets[1]))")
        }
        let dataSize = fileSize - dataStart
        guard offsets[1] <= dataSize else {
            throw h.invalid(key: name, place + " data_offsets", "an end within the \(dataSize) data bytes",
                            "end \(offsets[1]) (byte \(dataStart + offsets[1]) of a \(fileSize)-byte file)")
        }
        return Entry(name: name, dtype: dtype, shape: shape, bytes: (dataStart + offsets[0])..<(dataStart + offsets[1]))
    }

    /// The tensors, in order, cover the data to the end of the file with no hole and no overlap.
    private static func checkCover(_ entries: [Entry], _ h: HeaderErrors, dataStart: Int, fileSize: Int) throws {
        var next = dataStart
        for e in entries {
            guard e.bytes.lowerBound == next else {
                let what = e.bytes.lowerBound < next ? "overlaps the tensor before it" : "leaves a hole before it"
                throw h.invalid(key: e.name, "tensor '\(e.name)' data_offsets",
                                "a begin of \(next - dataStart) (the end of the tensor before it)",
                                "\(e.bytes.lowerBound - dataStart): \(what)")
            }
            next = e.bytes.upperBound
        }
        guard next == fileSize else {
            throw ImportError.invalid(file: h.file, place: "byte \(next): data buffer",
                                      expected: "the tensors to cover the data to the end of the file (\(fileSize) bytes)",
                                      actual: "\(fileSize - next) bytes no tensor holds")
        }
    }

    /// The absolute byte offset at which `header` names `key` (8 when it cannot be found plainly written).
    static func offset(ofKey key: String, in header: [UInt8]) -> Int {
        8 + (JSONValue.offset(ofKey: key, in: header) ?? 0)
    }

    /// A field's value for an error: the integers of an array of integers, else what kind of value it is.
    private static func describe(_ v: JSONValue?) -> String {
        guard let v else { return "nothing" }
        guard let ints = v.integers else { return v.kind == "an array" ? "an array holding something else" : v.kind }
        let text = "\(ints)"
        return text.count > 80 ? String(text.prefix(80)) + "…" : text
    }
}
