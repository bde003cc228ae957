// The mltool model file, version 1 (normative spec: docs/FORMAT.md). Summary:
//
//   [0, 128)            header: magic 89 4D 4C 54 0D 0A 1A 0A ("\x89MLT\r\n\x1a\n"), u32 version = 1, u32 flags = 0,
//                       u64 file_length, metadata_offset (= 128), metadata_length, data_offset, data_length,
//                       trailer_offset, tensor_count, metadata_xxh64, data_xxh64, 32 zero bytes, header_xxh64
//                       (over bytes [0, 120)). All integers little-endian.
//   [128, 128 + M)      metadata: UTF-8 JSON {"metadata": ModelMetadata, "tensors": [{name, dtype, shape, quant?,
//                       offset, length}]}, keys sorted, no whitespace, no duplicate keys, nesting ≤ 512;
//                       tensor offsets relative to data_offset; unknown keys ignored.
//   zero padding to data_offset = align64(128 + M), align64(x) = (x + 63) & ~63
//   [data_offset, +D)   tensor bytes in table order, each at align64(previous end), zero padding between;
//                       D = align64(end of last tensor). Row-major, little-endian; palettes packed LSB-first.
//   [F - 16, F)         trailer: "MLTEND\r\n", u64 file_xxh64 over bytes [0, F - 8).
//
// Checksums: XXH64, seed 0, per section (header, metadata, data) and over the whole file; all verified on load.
// Validation is total: sizes overflow-checked, sections placed exactly, no holes or overlaps, non-zero padding
// rejected, unique names (1-1024 bytes), rank ≤ 8, length = ceil(elements · bits / 8), quant params consistent with
// the dtype, graph names resolvable, a word tagger's five tensors of the right dtype and shape with sorted keys, a
// detector's decoder and NMS settings within section 4.4's ranges and naming graph outputs.
// Caps: metadata ≤ 256 MiB, ≤ 1,000,000 tensors, ≤ 1,000,000 nodes.
// Version changes only for structural changes; unknown versions are rejected.
// Reading maps the file (PROT_READ, MAP_PRIVATE): tensors are views into the mapping, no copy.
// Writing is atomic (temp file in the target directory, fsync, rename, fsync of the directory) and refuses to
// replace any of the command's inputs (same device and inode).

import Foundation
import MLToolCore

/// Reads, validates, serializes and writes mltool model files (docs/FORMAT.md).
public enum ModelFile {
    /// Reads the model at `path`: memory-maps it, verifies every checksum and validates every rule of the format.
    /// The returned tensors are views into the mapping, which lives as long as any of them; its pages, all read for
    /// the checksums, go back to the kernel once they match (`TensorBytes.releasePages`), so a reader that copies
    /// or packs tensors one by one holds one of them in the file's pages at a time, not the whole file.
    /// Recorded relative paths (docs/FORMAT.md, "Paths") are resolved against the file's directory.
    public static func read(path: String) throws -> Model {
        let storage = try FileStorage(mapping: path, populate: true)
        var model = try decode(storage, file: path).model
        storage.releasePages(storage.bytes)
        model.metadata = model.metadata.resolvingPaths(forFileAt: path)
        return model
    }

    /// Reads a model from bytes in memory, with the same checks as `read(path:)`; `name` is used in errors.
    public static func read(bytes: [UInt8], name: String) throws -> Model {
        try decode(FileStorage(copying: bytes), file: name).model
    }

    /// The file bytes of `model`, deterministic: the same model always gives the same bytes. Throws when the model
    /// breaks a rule of the format (duplicate names, wrong byte lengths, bad quantization parameters, ...).
    public static func serialize(_ model: Model) throws -> [UInt8] {
        try serialize(model, file: "(model being written)")
    }

    /// Writes `model` to `path` atomically. Refuses (exit status 73) when `path` is the same file as one of
    /// `inputs`, including through hard or symbolic links; replacing any other existing file is fine. The file
    /// records no absolute path: `provenance` says what it keeps (docs/FORMAT.md, "Paths").
    public static func write(_ model: Model, to path: String, inputs: [String] = [],
                             provenance: ProvenancePolicy = .current) throws {
        try AtomicFile.refuseOverwriting(path, inputs: inputs)
        try AtomicFile.write(try serialize(model, asWrittenTo: path, provenance: provenance), to: path, inputs: inputs)
    }

    /// The bytes `write(model, to: path, provenance:)` writes there: the model with the paths it records made
    /// relative to `path` (what a report of the file's size must count).
    public static func serialize(_ model: Model, asWrittenTo path: String,
                                 provenance: ProvenancePolicy = .current) throws -> [UInt8] {
        var recorded = model
        recorded.metadata = model.metadata.recordingPaths(forFileAt: path, policy: provenance)
        return try serialize(recorded, file: path)
    }

    /// The sections of the valid model file at `path` and its tensor bytes per dtype (for `mltool info`).
    public static func layout(path: String) throws -> FileLayout {
        let d = try decode(FileStorage(mapping: path, populate: true), file: path)
        let h = d.header
        var perDType: [DType: Int] = [:]
        for t in d.model.tensors { perDType[t.dtype, default: 0] += t.bytes.count }
        return FileLayout(
            sections: [
                .init(name: "header", offset: 0, length: FileHeader.size),
                .init(name: "metadata", offset: Int(h.metadataOffset), length: Int(h.metadataLength)),
                .init(name: "data", offset: Int(h.dataOffset), length: Int(h.dataLength)),
                .init(name: "trailer", offset: Int(h.trailerOffset), length: FileHeader.trailerSize),
            ],
            bytesPerDType: perDType, fileSize: Int(h.fileLength))
    }

    // MARK: - Reading

    struct Decoded {
        var header: FileHeader
        var model: Model
    }

    /// Checks, in the order of docs/FORMAT.md section 7, and builds the model with tensors viewing `storage`.
    static func decode(_ storage: FileStorage, file: String) throws -> Decoded {
        let h = try checkFrame(storage.bytes, file: file)
        let model = try decodeSections(storage, header: h, file: file)
        return Decoded(header: h, model: model)
    }

    /// Rules 1-8: magic, version, header fields, length, trailer, caps, section placement, all checksums.
    static func checkFrame(_ raw: UnsafeRawBufferPointer, file: String) throws -> FileHeader {
        try checkMagicAndVersion(raw, file: file)
        let h = try checkHeader(raw, file: file)
        try checkLengthAndTrailer(raw, h, file: file)
        try checkCaps(h, file: file)
        try checkPlacement(raw, h, file: file)
        try checkSectionHashes(raw, h, file: file)
        return h
    }

    /// 1-2. Magic and version first, so that a text file or a newer model gets the plain message.
    private static func checkMagicAndVersion(_ raw: UnsafeRawBufferPointer, file: String) throws {
        let size = raw.count
        let magic = FileHeader.magic
        let head = Array(raw.prefix(magic.count))
        guard head == Array(magic.prefix(head.count)) else {
            throw FormatError.badMagic(file: file, offset: 0, expected: magic, actual: head)
        }
        if size >= 12 {
            let version = UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
            guard version == FileHeader.currentVersion else {
                throw FormatError.unsupportedVersion(file: file, version: version, supported: FileHeader.currentVersion)
            }
        }
        guard size >= FileHeader.minimumFileSize else {
            throw FormatError.truncated(file: file, expected: UInt64(FileHeader.minimumFileSize), actual: size)
        }
    }

    /// 3. Header checksum, then its fixed fields.
    private static func checkHeader(_ raw: UnsafeRawBufferPointer, file: String) throws -> FileHeader {
        let h = FileHeader(decoding: raw)
        let headerHash = XXH64.hash(UnsafeRawBufferPointer(rebasing: raw[0..<FileHeader.hashedSize]))
        guard headerHash == h.headerHash else {
            throw FormatError.checksumMismatch(file: file, section: "header", offset: 0, stored: h.headerHash,
                                               computed: headerHash)
        }
        guard h.flags == 0 else {
            throw FormatError.invalidField(file: file, offset: 12, field: "flags", expected: "0", actual: "\(h.flags)")
        }
        guard h.reservedIsZero else {
            throw FormatError.invalidField(file: file, offset: 88, field: "reserved", expected: "32 zero bytes",
                                           actual: "non-zero bytes")
        }
        return h
    }

    /// 4-5. Length, then the trailer and the whole-file checksum.
    private static func checkLengthAndTrailer(_ raw: UnsafeRawBufferPointer, _ h: FileHeader, file: String) throws {
        let size = raw.count
        guard h.fileLength <= UInt64(size) else {
            throw FormatError.truncated(file: file, expected: h.fileLength, actual: size)
        }
        guard h.fileLength == UInt64(size) else {
            throw FormatError.invalidField(file: file, offset: 16, field: "file_length", expected: "\(size) (the file size)",
                                           actual: "\(h.fileLength)")
        }
        let trailerAt = size - FileHeader.trailerSize
        let end = Array(raw[trailerAt..<(trailerAt + 8)])
        guard end == FileHeader.endMagic else {
            throw FormatError.badMagic(file: file, offset: trailerAt, expected: FileHeader.endMagic, actual: end)
        }
        let storedFileHash = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: size - 8, as: UInt64.self))
        let fileHash = XXH64.hash(UnsafeRawBufferPointer(rebasing: raw[0..<(size - 8)]))
        guard fileHash == storedFileHash else {
            throw FormatError.checksumMismatch(file: file, section: "file", offset: 0, stored: storedFileHash,
                                               computed: fileHash)
        }
    }

    /// 6. Caps.
    private static func checkCaps(_ h: FileHeader, file: String) throws {
        guard h.metadataLength <= UInt64(FileHeader.maxMetadataLength) else {
            throw FormatError.capExceeded(file: file, what: "metadata_length", limit: FileHeader.maxMetadataLength,
                                          actual: h.metadataLength)
        }
        guard h.metadataLength >= UInt64(FileHeader.minMetadataLength) else {
            throw FormatError.invalidField(file: file, offset: 32, field: "metadata_length",
                                           expected: "≥ \(FileHeader.minMetadataLength)", actual: "\(h.metadataLength)")
        }
        guard h.tensorCount <= UInt64(FileHeader.maxTensorCount) else {
            throw FormatError.capExceeded(file: file, what: "tensor_count", limit: FileHeader.maxTensorCount,
                                          actual: h.tensorCount)
        }
    }

    /// 7. Sections inside the file, then exactly where the format puts them, with zero padding between.
    private static func checkPlacement(_ raw: UnsafeRawBufferPointer, _ h: FileHeader, file: String) throws {
        let limit = UInt64(raw.count - FileHeader.trailerSize)
        let sections = [("metadata", h.metadataOffset, h.metadataLength), ("data", h.dataOffset, h.dataLength)]
        for (name, offset, length) in sections {
            let (sectionEnd, o) = offset.addingReportingOverflow(length)
            guard !o, sectionEnd <= limit else {
                throw FormatError.sectionOutOfBounds(file: file, section: name, offset: offset, length: length, limit: limit)
            }
        }
        func placed(_ section: String, _ field: String, _ actual: UInt64, _ expected: UInt64) throws {
            guard actual == expected else {
                throw FormatError.sectionMisplaced(file: file, section: section, field: field, expected: expected,
                                                   actual: actual)
            }
        }
        try placed("metadata", "metadata_offset", h.metadataOffset, UInt64(FileHeader.size))
        try placed("data", "data_offset", h.dataOffset, FileHeader.align(h.metadataOffset + h.metadataLength) ?? 0)
        try placed("data", "data_length mod 64", h.dataLength % UInt64(FileHeader.alignment), 0)
        try placed("trailer", "trailer_offset", h.trailerOffset, h.dataOffset + h.dataLength)
        try placed("trailer", "trailer_offset", h.trailerOffset, limit)
        try requireZero(raw, from: Int(h.metadataOffset) + Int(h.metadataLength), to: Int(h.dataOffset), file: file)
    }

    /// 8. Section checksums.
    private static func checkSectionHashes(_ raw: UnsafeRawBufferPointer, _ h: FileHeader, file: String) throws {
        let metaStart = Int(h.metadataOffset), metaLength = Int(h.metadataLength)
        let dataStart = Int(h.dataOffset), dataLength = Int(h.dataLength)
        let metadata = UnsafeRawBufferPointer(rebasing: raw[metaStart..<(metaStart + metaLength)])
        let data = UnsafeRawBufferPointer(rebasing: raw[dataStart..<(dataStart + dataLength)])
        let hashed = [("metadata", metaStart, h.metadataHash, metadata), ("data", dataStart, h.dataHash, data)]
        for (name, at, stored, bytes) in hashed {
            let computed = XXH64.hash(bytes)
            guard computed == stored else {
                throw FormatError.checksumMismatch(file: file, section: name, offset: at, stored: stored, computed: computed)
            }
        }
    }

    /// Rules 9-12 on a file whose frame passed `checkFrame`: the JSON, the tensor table against the data section,
    /// and the names the graph uses.
    static func decodeSections(_ storage: FileStorage, header h: FileHeader, file: String) throws -> Model {
        let raw = storage.bytes
        let metaStart = Int(h.metadataOffset), metaLength = Int(h.metadataLength)
        let dataStart = Int(h.dataOffset), dataLength = Int(h.dataLength)
        let metadata = UnsafeRawBufferPointer(rebasing: raw[metaStart..<(metaStart + metaLength)])
        let data = UnsafeRawBufferPointer(rebasing: raw[dataStart..<(dataStart + dataLength)])
        // 9. JSON.
        if let problem = JSONKeyCheck.firstProblem(metadata) {
            throw FormatError.badMetadata(file: file, offset: metaStart + problem.offset, reason: problem.reason)
        }
        let document: MetadataDocument
        do {
            let json = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: metadata.baseAddress!), count: metaLength,
                            deallocator: .none)
            document = try MetadataDocument.decoder().decode(MetadataDocument.self, from: json)
        } catch {
            // Foundation says only "not valid JSON" for an integer too large for its signed field: find it.
            if let problem = JSONKeyCheck.firstProblem(metadata, unsignedKeys: ["seed"]) {
                throw FormatError.badMetadata(file: file, offset: metaStart + problem.offset, reason: problem.reason)
            }
            throw FormatError.badMetadata(file: file, offset: metaStart, reason: describe(error))
        }
        guard document.tensors.count == Int(h.tensorCount) else {
            throw FormatError.invalidField(file: file, offset: 64, field: "tensor_count",
                                           expected: "\(document.tensors.count) (entries in the tensor table)",
                                           actual: "\(h.tensorCount)")
        }
        // 10-11. Tensor table against the data section.
        var tensors: [StoredTensor] = []
        tensors.reserveCapacity(document.tensors.count)
        var firstIndex: [String: Int] = [:]
        var expected = 0
        for (i, e) in document.tensors.enumerated() {
            let (dtype, bits) = try validate(e, index: i, firstIndex: &firstIndex, file: file)
            if e.offset != expected {
                if e.offset < expected {
                    let prev = document.tensors[i - 1]
                    throw FormatError.overlap(file: file, tensor: e.name, previous: prev.name, offset: e.offset,
                                              previousEnd: prev.offset + prev.length)
                }
                throw FormatError.hole(file: file, tensor: e.name, offset: e.offset, expected: expected)
            }
            guard e.length <= dataLength - e.offset else {
                throw FormatError.sectionOutOfBounds(file: file, section: "tensor '\(e.name)'", offset: UInt64(e.offset),
                                                     length: UInt64(e.length), limit: UInt64(dataLength))
            }
            let end = e.offset + e.length
            let view = UnsafeRawBufferPointer(rebasing: data[e.offset..<end])
            try validatePackedTail(e, bits: bits, bytes: view, file: file)
            tensors.append(StoredTensor(name: e.name, dtype: dtype, shape: e.shape, quant: e.quant,
                                        bytes: TensorBytes(view: view, owner: storage)))
            let next = FileHeader.align(UInt64(end)).map { Int($0) } ?? Int.max
            try requireZero(raw, from: dataStart + end, to: dataStart + min(next, dataLength), file: file)
            expected = next
        }
        guard dataLength == expected else {
            throw FormatError.hole(file: file, tensor: "", offset: dataLength, expected: expected)
        }
        // 12. Names the graph and metadata refer to.
        try validateReferences(document.metadata, tensorNames: firstIndex, file: file)
        // 13. Word taggers.
        try validateTagger(document.metadata, tensors: tensors, file: file)
        // 14. Detectors.
        try validateDetection(document.metadata, file: file)
        // 15. Tree ensembles.
        try validateTabular(document.metadata, tensors: tensors, file: file)
        // 16. Sound classifiers.
        try validateSound(document.metadata, file: file)
        return Model(metadata: document.metadata, tensors: tensors)
    }

    /// Throws `nonZeroPadding` at the first non-zero byte of `raw[from..<to]`.
    static func requireZero(_ raw: UnsafeRawBufferPointer, from: Int, to: Int, file: String) throws {
        var i = from
        while i < to {
            guard raw[i] == 0 else { throw FormatError.nonZeroPadding(file: file, offset: i) }
            i &+= 1
        }
    }

    /// A one-line reason for a JSON decoding error: the coding path and what went wrong.
    static func describe(_ error: Error) -> String {
        func path(_ c: DecodingError.Context) -> String {
            let p = c.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
            return (p.isEmpty ? "" : "\(p.hasPrefix(".") ? String(p.dropFirst()) : p): ") + c.debugDescription
        }
        switch error {
        case let DecodingError.keyNotFound(key, c): return path(c) + " (missing key '\(key.stringValue)')"
        case let DecodingError.typeMismatch(_, c), let DecodingError.valueNotFound(_, c),
             let DecodingError.dataCorrupted(c): return path(c)
        default: return "\(error)"
        }
    }

    // MARK: - Writing

    static func serialize(_ model: Model, file: String) throws -> [UInt8] {
        guard model.tensors.count <= FileHeader.maxTensorCount else {
            throw FormatError.capExceeded(file: file, what: "tensor count", limit: FileHeader.maxTensorCount,
                                          actual: UInt64(model.tensors.count))
        }
        var entries: [TensorEntry] = []
        entries.reserveCapacity(model.tensors.count)
        var firstIndex: [String: Int] = [:]
        var offset = 0
        for (i, t) in model.tensors.enumerated() {
            let e = TensorEntry(name: t.name, dtype: t.dtype.name, shape: t.shape, quant: t.quant, offset: offset,
                                length: t.bytes.count)
            let (_, bits) = try validate(e, index: i, firstIndex: &firstIndex, file: file)
            try validatePackedTail(e, bits: bits, bytes: t.bytes.buffer, file: file)
            entries.append(e)
            offset = try Checked.alignUp(offset + e.length, to: FileHeader.alignment, file: file)
        }
        try validateReferences(model.metadata, tensorNames: firstIndex, file: file)
        try validateTagger(model.metadata, tensors: model.tensors, file: file)
        try validateDetection(model.metadata, file: file)
        try validateTabular(model.metadata, tensors: model.tensors, file: file)
        let json: [UInt8]
        do {
            let document = MetadataDocument(metadata: model.metadata, tensors: entries)
            json = [UInt8](try MetadataDocument.encoder().encode(document))
        } catch {
            throw FormatError.badMetadata(file: file, offset: FileHeader.size, reason: "cannot encode: \(error)")
        }
        guard json.count <= FileHeader.maxMetadataLength else {
            throw FormatError.capExceeded(file: file, what: "metadata_length", limit: FileHeader.maxMetadataLength,
                                          actual: UInt64(json.count))
        }
        return assemble(metadataJSON: json, tensorCount: entries.count, dataLength: offset) { out, dataStart in
            for (t, e) in zip(model.tensors, entries) {
                out.append(contentsOf: repeatElement(0, count: dataStart + e.offset - out.count))
                out.append(contentsOf: t.bytes.buffer)
            }
        }
    }

    /// A complete file: header, `json`, zero padding, the data section that `appendData` appends (given the data
    /// section's absolute offset; it must append at most `dataLength` bytes, the rest is zero-filled) and the
    /// trailer, with every checksum computed.
    static func assemble(metadataJSON json: [UInt8], tensorCount: Int, dataLength: Int,
                         appendData: (inout [UInt8], Int) -> Void) -> [UInt8] {
        let dataStart = (FileHeader.size + json.count + FileHeader.alignment - 1) & ~(FileHeader.alignment - 1)
        let fileLength = dataStart + dataLength + FileHeader.trailerSize
        var out = [UInt8]()
        out.reserveCapacity(fileLength)
        out.append(contentsOf: repeatElement(0, count: FileHeader.size))
        out.append(contentsOf: json)
        out.append(contentsOf: repeatElement(0, count: dataStart - out.count))
        appendData(&out, dataStart)
        out.append(contentsOf: repeatElement(0, count: max(0, dataStart + dataLength - out.count)))
        var h = FileHeader()
        h.fileLength = UInt64(fileLength)
        h.metadataLength = UInt64(json.count)
        h.dataOffset = UInt64(dataStart)
        h.dataLength = UInt64(dataLength)
        h.trailerOffset = UInt64(dataStart + dataLength)
        h.tensorCount = UInt64(tensorCount)
        h.metadataHash = XXH64.hash(json)
        h.dataHash = out.withUnsafeBytes {
            XXH64.hash(UnsafeRawBufferPointer(rebasing: $0[dataStart..<(dataStart + dataLength)]))
        }
        out.replaceSubrange(0..<FileHeader.size, with: h.encoded())
        out.append(contentsOf: FileHeader.endMagic)
        let fileHash = XXH64.hash(out)
        withUnsafeBytes(of: fileHash.littleEndian) { out.append(contentsOf: $0) }
        return out
    }
}
