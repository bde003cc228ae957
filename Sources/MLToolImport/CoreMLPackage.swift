import Foundation
import MLToolCore

/// An `.mlpackage` directory: `Manifest.json` names the root model item (its `path` relative to `Data/`), usually
/// `com.apple.CoreML/model.mlmodel`; an ML Program's weights are in `weights/weight.bin` beside it, referred to as
/// `@model_path/weights/weight.bin`.
///
/// Every path the package names must stay inside it: a manifest path that is absolute or has a `..` component is
/// refused, and so are blob file names that do; every file of the package (Manifest.json included) is opened with
/// `ContainedFile`, which refuses a symlink anywhere on the way and a file with more than one hard link.
struct CoreMLPackage {
    let root: String
    /// The specification file (the root model item), for messages.
    let specPath: String
    /// Its bytes, read through `ContainedFile`.
    let specData: Data
    /// `@model_path` relative to `root`: the directory holding the specification.
    let modelDirectory: String

    init(path: String) throws {
        root = (path as NSString).standardizingPath
        let manifestPath = (root as NSString).appendingPathComponent("Manifest.json")
        let data = try Self.read(root: root, "Manifest.json", file: root, place: "Manifest.json", missing: "no Manifest.json in the package (or it cannot be read)")
        guard let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw ImportError.malformed(file: manifestPath, reason: "not a JSON object")
        }
        guard let rootID = json["rootModelIdentifier"] as? String else {
            throw ImportError.invalid(file: manifestPath, place: "rootModelIdentifier", expected: "a string", actual: "none")
        }
        guard let items = json["itemInfoEntries"] as? [String: Any], let item = items[rootID] as? [String: Any] else {
            throw ImportError.invalid(file: manifestPath, place: "itemInfoEntries", expected: "an entry '\(rootID)' (the root model)",
                                      actual: "none")
        }
        guard let relative = item["path"] as? String, !relative.isEmpty else {
            throw ImportError.invalid(file: manifestPath, place: "itemInfoEntries['\(rootID)'].path", expected: "a path", actual: "none")
        }
        let place = "itemInfoEntries['\(rootID)'].path"
        let spec = try Self.inside("Data", relative, file: manifestPath, place: place)
        specPath = (root as NSString).appendingPathComponent(spec)
        specData = try Self.read(root: root, spec, file: manifestPath, place: place, missing: "no such file")
        modelDirectory = (spec as NSString).deletingLastPathComponent
    }

    /// `base`/`relative`, after checking that `relative` is relative and has no `..` component.
    static func inside(_ base: String, _ relative: String, file: String, place: String) throws -> String {
        guard !relative.hasPrefix("/") else {
            throw ImportError.refused(file: file, place: place, reason: "absolute path '\(relative)' (paths must stay inside the package)")
        }
        guard !relative.split(separator: "/").contains("..") else {
            throw ImportError.refused(file: file, place: place, reason: "path '\(relative)' leaves the package")
        }
        return (base as NSString).appendingPathComponent(relative)
    }

    /// The bytes of `relative` (inside the package), or the refusal naming `file` and `place`.
    static func read(root: String, _ relative: String, file: String, place: String, missing: String) throws -> Data {
        do {
            return try ContainedFile.read(directory: root, relative: relative)
        } catch {
            let full = (root as NSString).appendingPathComponent(relative)
            if error.isRefusal { throw ImportError.refused(file: file, place: place, reason: error.reason) }
            if case .missing = error { throw ImportError.unreadable(file: full, reason: missing) }
            throw ImportError.unreadable(file: full, reason: error.reason)
        }
    }

    /// The weight file a MIL blob value names (`@model_path/…`), checked to stay inside the package, and read.
    func blobFile(_ name: String, file: String, place: String) throws -> CoreMLBlobFile {
        let prefix = "@model_path/"
        guard name.hasPrefix(prefix) else {
            throw ImportError.invalid(file: file, place: place, expected: "a file name starting with @model_path/", actual: "'\(name)'")
        }
        let relative = try Self.inside(modelDirectory, String(name.dropFirst(prefix.count)), file: file, place: place)
        let data = try Self.read(root: root, relative, file: file, place: place, missing: "no such weight file (or it cannot be read)")
        return try CoreMLBlobFile(path: (root as NSString).appendingPathComponent(relative), data: data)
    }
}

/// A MIL weight file (`weight.bin`, MILBlob storage version 2), read whole: a 64-byte header (blob count, version),
/// then blobs each announced by 64-byte metadata (sentinel 0xDEADBEEF, data type, size in bytes, data offset,
/// padding bits) at the offset a `blobFileValue` gives. Every offset and size is checked against the file.
final class CoreMLBlobFile {
    let path: String
    let bytes: Data

    /// MILBlob BlobDataType codes → MIL DataType codes (the element types `CoreMLProgram` decodes).
    static let blobTypes: [UInt32: Int32] = [1: 10, 2: 11, 3: 31, 4: 21, 5: 13, 6: 22, 7: 32, 8: 25, 9: 37, 10: 36, 11: 35,
                                             12: 39, 13: 38, 14: 23, 15: 33]

    init(path: String, data: Data) throws {
        self.path = path
        bytes = data
        guard data.count >= 64 else {
            throw ImportError.invalid(file: path, place: "header (byte 0)", expected: "64 bytes", actual: "\(data.count) bytes")
        }
        let version = u32(4)
        guard version == 2 else {
            throw ImportError.invalid(file: path, place: "header version (byte 4)", expected: "2", actual: "\(version)")
        }
    }

    private func u32(_ at: Int) -> UInt32 {
        bytes.withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt32.self)) }
    }

    private func u64(_ at: Int) -> UInt64 {
        bytes.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: UInt64.self)) }
    }

    /// The data of the blob whose metadata is at `offset`: its MIL data type and bytes.
    func blob(at offset: UInt64, place: String) throws -> (dataType: Int32, data: Data) {
        let size = UInt64(bytes.count)
        guard offset <= size, size - offset >= 64 else {
            throw ImportError.invalid(file: path, place: "\(place): blob metadata at byte \(offset)", expected: "64 bytes inside the file",
                                      actual: "a file of \(size) bytes")
        }
        let at = Int(offset)
        let sentinel = u32(at)
        guard sentinel == 0xDEAD_BEEF else {
            throw ImportError.invalid(file: path, place: "\(place): blob metadata sentinel at byte \(offset)", expected: "0xDEADBEEF",
                                      actual: "0x" + String(sentinel, radix: 16, uppercase: true))
        }
        let type = u32(at + 4), count = u64(at + 8), start = u64(at + 16)
        guard let dataType = Self.blobTypes[type] else {
            throw ImportError.invalid(file: path, place: "\(place): blob data type at byte \(offset + 4)", expected: "a known MILBlob type",
                                      actual: "\(type)")
        }
        guard start <= size, count <= size - start else {
            throw ImportError.invalid(file: path, place: "\(place): blob data at byte \(start) (metadata at byte \(offset))",
                                      expected: "\(count) bytes inside the file", actual: "a file of \(size) bytes")
        }
        return (dataType, bytes.subdata(in: Int(start)..<Int(start + count)))
    }
}
