import CHDF5
import Foundation
import MLToolCore

/// A read-only view of an HDF5 file that follows only hard links and reads only data stored inside the file.
///
/// Every path is opened one component at a time; a soft link, an external link (or any user-defined link) on the
/// way is refused, and so are datasets with external raw storage and virtual datasets. libhdf5 (serial) is not
/// thread-safe, so all work happens inside `HDF5File.read(path:_:)`, which holds a process-wide lock and closes
/// every handle it opened when the body returns.
final class HDF5File {
    /// An open group or dataset and its path from the root ("/model_weights/conv1").
    struct Object {
        fileprivate let id: hid_t
        let path: String
    }

    /// The file as named in error messages (its last path component).
    let name: String
    private let fileID: hid_t
    private var opened: [hid_t] = []
    /// The root group "/".
    private(set) var root = Object(id: -1, path: "/")

    /// The largest dataset read, in elements (4 GiB of float32): a bound on what a hostile file can make us allocate.
    static let maxElements = 1 << 30
    /// The most strings in one attribute, and the most bytes of fixed-length text.
    static let maxStrings = 1 << 20
    static let maxTextBytes = 1 << 28
    private static let lock = NSLock()
    /// libhdf5 must not tear itself down at process exit: after some malformed files its shutdown cannot finish and
    /// prints "HDF5: infinite loop closing library" (HDFGroup/hdf5#6677). mltool only reads, and every file it opens
    /// is closed inside `read`, so there is nothing to flush; the OS reclaims the rest. It must run before any other
    /// HDF5 call, so every entry point below evaluates it first (under the lock).
    private static let noTeardownAtExit: Void = { _ = H5dont_atexit() }()

    /// Opens `path` read-only, runs `body`, then closes everything; errors are `ImportError`s naming the file.
    static func read<T>(path: String, _ body: (HDF5File) throws -> T) throws -> T {
        lock.lock()
        defer { lock.unlock() }
        _ = noTeardownAtExit
        let file = try HDF5File(path: path)
        defer { file.close() }
        return try body(file)
    }

    /// Whether `path` is an HDF5 file (its signature at offset 0, 512, 1024, ...).
    static func isHDF5(path: String) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        _ = noTeardownAtExit
        shim_H5_silence_errors()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            return false
        }
        return H5Fis_hdf5(path) > 0
    }

    private init(path: String) throws {
        name = URL(fileURLWithPath: path).lastPathComponent
        shim_H5_silence_errors()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw ImportError.unreadable(file: name, reason: "no such file")
        }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw ImportError.unreadable(file: name, reason: "permission denied")
        }
        guard H5Fis_hdf5(path) > 0 else { throw ImportError.malformed(file: name, reason: "not an HDF5 file") }
        let fapl = shim_H5P_read_only_access()
        let fid = H5Fopen(path, shim_H5F_ACC_RDONLY(), fapl >= 0 ? fapl : hid_t(H5P_DEFAULT))
        if fapl >= 0 { H5Pclose(fapl) }
        guard fid >= 0 else { throw ImportError.malformed(file: name, reason: "HDF5 file cannot be opened (truncated or corrupt)") }
        fileID = fid
        let rid = H5Gopen2(fid, "/", hid_t(H5P_DEFAULT))
        guard rid >= 0 else {
            H5Fclose(fid)
            throw ImportError.malformed(file: name, reason: "HDF5 root group cannot be opened")
        }
        opened.append(rid)
        root = Object(id: rid, path: "/")
    }

    private func close() {
        for id in opened.reversed() { H5Oclose(id) }
        opened.removeAll()
        H5Fclose(fileID)
    }

    // MARK: - Links and objects

    /// Whether `parent` has a child `path`, following hard links only (a soft or external link on the way throws).
    func exists(_ path: String, in parent: Object) throws -> Bool {
        var current = parent
        let parts = try components(path, in: parent)
        for (i, part) in parts.enumerated() {
            guard try checkedLink(part, in: current) else { return false }
            if i + 1 < parts.count { current = try openChecked(part, in: current) }
        }
        return true
    }

    /// Opens the group or dataset `path` below `parent` (components separated by "/"), checking every link.
    func open(_ path: String, in parent: Object) throws -> Object {
        var current = parent
        for part in try components(path, in: parent) {
            guard try checkedLink(part, in: current) else {
                throw ImportError.invalid(file: name, place: join(current.path, part), expected: "an HDF5 group or dataset",
                                          actual: "nothing")
            }
            current = try openChecked(part, in: current)
        }
        return current
    }

    /// Whether `parent` is a group (as opposed to a dataset).
    func isGroup(_ object: Object) -> Bool { H5Iget_type(object.id) == H5I_GROUP }

    private func components(_ path: String, in parent: Object) throws -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for part in parts where part.isEmpty || part == "." || part == ".." {
            throw ImportError.invalid(file: name, place: join(parent.path, path), expected: "a plain HDF5 path",
                                      actual: "'\(path)'")
        }
        return parts
    }

    /// False when the link does not exist; throws for every kind of link other than a hard link.
    private func checkedLink(_ part: String, in parent: Object) throws -> Bool {
        let type = shim_H5L_type(parent.id, part)
        if type < 0 { return false }
        let place = join(parent.path, part)
        switch H5L_type_t(rawValue: type) {
        case H5L_TYPE_HARD:
            return true
        case H5L_TYPE_SOFT:
            let (_, target) = linkTarget(part, in: parent)
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 soft link to '\(target)'; only hard links are followed")
        case H5L_TYPE_EXTERNAL:
            let (file, object) = linkTarget(part, in: parent)
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 external link to '\(file)' object '\(object)'; links out of the file are never followed")
        default:
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 user-defined link (type \(type)); only hard links are followed")
        }
    }

    private func linkTarget(_ part: String, in parent: Object) -> (file: String, object: String) {
        var file = [CChar](repeating: 0, count: 1024), object = [CChar](repeating: 0, count: 1024)
        let rc = file.withUnsafeMutableBufferPointer { f in
            object.withUnsafeMutableBufferPointer { o in
                shim_H5L_target(parent.id, part, f.baseAddress, f.count, o.baseAddress, o.count)
            }
        }
        guard rc == 0 else { return ("?", "?") }
        return (Self.string(file), Self.string(object))
    }

    private func openChecked(_ part: String, in parent: Object) throws -> Object {
        let id = H5Oopen(parent.id, part, hid_t(H5P_DEFAULT))
        let path = join(parent.path, part)
        guard id >= 0 else { throw ImportError.malformed(file: name, reason: "HDF5 object \(path) cannot be opened") }
        opened.append(id)
        let kind = H5Iget_type(id)
        guard kind == H5I_GROUP || kind == H5I_DATASET else {
            throw ImportError.invalid(file: name, place: path, expected: "an HDF5 group or dataset", actual: "another object")
        }
        return Object(id: id, path: path)
    }

    private func join(_ a: String, _ b: String) -> String { a == "/" ? "/" + b : a + "/" + b }

    // MARK: - Datasets

    /// A numeric dataset (floats of any size, or integers such as Keras's Normalization count) converted to
    /// float32 by libhdf5, with its shape. Refuses external raw storage and virtual datasets.
    func readFloats(_ dataset: Object) throws -> (shape: [Int], data: [Float]) {
        guard H5Iget_type(dataset.id) == H5I_DATASET else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "a dataset", actual: "a group")
        }
        let plist = H5Dget_create_plist(dataset.id)
        guard plist >= 0 else { throw ImportError.malformed(file: name, reason: "\(dataset.path): no creation properties") }
        defer { H5Pclose(plist) }
        let external = H5Pget_external_count(plist)
        guard external == 0 else {
            throw ImportError.refused(file: name, place: dataset.path,
                                      reason: "dataset with external raw storage (\(external) file\(external == 1 ? "" : "s")); data outside the file is never read")
        }
        let layout = H5Pget_layout(plist)
        guard layout != H5D_VIRTUAL else {
            throw ImportError.refused(file: name, place: dataset.path,
                                      reason: "virtual dataset (mapped from other datasets or files); only data stored in the file is read")
        }
        guard layout == H5D_CONTIGUOUS || layout == H5D_CHUNKED || layout == H5D_COMPACT else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "contiguous, chunked or compact layout",
                                      actual: "layout \(layout.rawValue)")
        }

        let type = H5Dget_type(dataset.id)
        guard type >= 0 else { throw ImportError.malformed(file: name, reason: "\(dataset.path): no datatype") }
        defer { H5Tclose(type) }
        guard H5Tget_class(type) == H5T_FLOAT || H5Tget_class(type) == H5T_INTEGER else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "numbers",
                                      actual: Self.className(H5Tget_class(type)))
        }
        let shape = try dims(H5Dget_space(dataset.id), place: dataset.path)
        let count = try elementCount(shape, place: dataset.path)
        guard count <= Self.maxElements else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "at most \(Self.maxElements) elements",
                                      actual: "\(count)")
        }
        // Without filters (compression) the file must hold every byte the shape needs: a dataset that declares more
        // (never written, or sparse chunks) would otherwise make us allocate fill values for a size the file never had.
        if H5Pget_nfilters(plist) == 0 {
            let (need, overflow) = count.multipliedReportingOverflow(by: H5Tget_size(type))
            let stored = H5Dget_storage_size(dataset.id)
            guard !overflow, stored >= hsize_t(need) else {
                throw ImportError.invalid(file: name, place: dataset.path,
                                          expected: "\(overflow ? "more" : "\(need)") stored bytes for shape \(KerasGraphBuilder.format(shape))",
                                          actual: "\(stored)")
            }
        }
        var status: herr_t = 0
        let data = [Float](unsafeUninitializedCapacity: count) { buf, done in
            if count > 0 {
                status = H5Dread(dataset.id, shim_H5T_NATIVE_FLOAT(), H5S_ALL, H5S_ALL, hid_t(H5P_DEFAULT), buf.baseAddress)
            }
            if status < 0 { buf.initialize(repeating: 0) }
            done = count
        }
        guard status >= 0 else { throw ImportError.malformed(file: name, reason: "\(dataset.path): data cannot be read (truncated or corrupt)") }
        return (shape, data)
    }

    /// The dimensions of a simple dataspace (closes `space`); a scalar space has shape [].
    private func dims(_ space: hid_t, place: String) throws -> [Int] {
        guard space >= 0 else { throw ImportError.malformed(file: name, reason: "\(place): no dataspace") }
        defer { H5Sclose(space) }
        if H5Sget_simple_extent_type(space) == H5S_NULL { return [0] }
        let rank = H5Sget_simple_extent_ndims(space)
        guard rank >= 0, rank <= 32 else {
            throw ImportError.invalid(file: name, place: place, expected: "rank ≤ 32", actual: "\(rank)")
        }
        var d = [hsize_t](repeating: 0, count: Int(rank))
        if rank > 0 { _ = H5Sget_simple_extent_dims(space, &d, nil) }
        return try d.map {
            guard $0 <= hsize_t(Int.max) else {
                throw ImportError.invalid(file: name, place: place, expected: "dimensions that fit in Int", actual: "\($0)")
            }
            return Int($0)
        }
    }

    /// The element count of `shape`, overflow-checked.
    private func elementCount(_ shape: [Int], place: String) throws -> Int {
        do {
            return try Checked.elementCount(shape, file: name, what: place)
        } catch {
            throw ImportError.invalid(file: name, place: place, expected: "a size that fits in Int",
                                      actual: KerasGraphBuilder.format(shape))
        }
    }

    /// A readable name for an HDF5 type class.
    private static func className(_ c: H5T_class_t) -> String {
        switch c {
        case H5T_INTEGER: return "integers"
        case H5T_FLOAT: return "floats"
        case H5T_STRING: return "strings"
        case H5T_COMPOUND: return "compound values"
        case H5T_REFERENCE: return "references"
        case H5T_ENUM: return "enum values"
        case H5T_VLEN: return "variable-length sequences"
        case H5T_ARRAY: return "arrays"
        default: return "HDF5 type class \(c.rawValue)"
        }
    }

    // MARK: - Attributes

    /// Whether `object` has an attribute `attribute`.
    func hasAttribute(_ attribute: String, of object: Object) -> Bool {
        H5Aexists(object.id, attribute) > 0
    }

    /// A scalar (or one-element) string attribute, variable-length or fixed-length.
    func string(_ attribute: String, of object: Object) throws -> String {
        let values = try strings(attribute, of: object)
        guard values.count == 1 else {
            throw ImportError.invalid(file: name, place: "\(object.path) attribute '\(attribute)'",
                                      expected: "one string", actual: "\(values.count) values")
        }
        return values[0]
    }

    /// A string attribute as an array (a scalar gives one element; an empty numeric array, as h5py writes for `[]`,
    /// gives none).
    func strings(_ attribute: String, of object: Object) throws -> [String] {
        let place = "\(object.path) attribute '\(attribute)'"
        guard H5Aexists(object.id, attribute) > 0 else {
            throw ImportError.invalid(file: name, place: place, expected: "the attribute", actual: "nothing")
        }
        let attr = H5Aopen(object.id, attribute, hid_t(H5P_DEFAULT))
        guard attr >= 0 else { throw ImportError.malformed(file: name, reason: "\(place) cannot be opened") }
        defer { H5Aclose(attr) }
        let count = try elementCount(dims(H5Aget_space(attr), place: place), place: place)
        let type = H5Aget_type(attr)
        guard type >= 0 else { throw ImportError.malformed(file: name, reason: "\(place): no datatype") }
        defer { H5Tclose(type) }
        if count == 0 { return [] }
        guard H5Tget_class(type) == H5T_STRING else {
            throw ImportError.invalid(file: name, place: place, expected: "strings",
                                      actual: Self.className(H5Tget_class(type)))
        }
        guard count <= Self.maxStrings else {
            throw ImportError.invalid(file: name, place: place, expected: "at most \(Self.maxStrings) strings", actual: "\(count)")
        }
        let memType = H5Tcopy(shim_H5T_C_S1())
        guard memType >= 0 else { throw ImportError.malformed(file: name, reason: "\(place): string type") }
        defer { H5Tclose(memType) }
        H5Tset_cset(memType, H5Tget_cset(type))

        if H5Tis_variable_str(type) > 0 {
            H5Tset_size(memType, shim_H5T_VARIABLE())
            var pointers = [UnsafeMutablePointer<CChar>?](repeating: nil, count: count)
            let rc = pointers.withUnsafeMutableBufferPointer { H5Aread(attr, memType, $0.baseAddress) }
            defer { for p in pointers where p != nil { H5free_memory(p) } }
            guard rc >= 0 else { throw ImportError.malformed(file: name, reason: "\(place) cannot be read") }
            return pointers.map { $0.map { String(cString: $0) } ?? "" }
        }
        // Fixed-length: `size` bytes per string, NUL-padded (no terminator when the string fills its size).
        let size = H5Tget_size(type)
        guard size > 0, size <= Self.maxTextBytes else {
            throw ImportError.invalid(file: name, place: place, expected: "a string size ≤ \(Self.maxTextBytes) bytes",
                                      actual: "\(size)")
        }
        let (total, overflow) = count.multipliedReportingOverflow(by: size)
        guard !overflow, total <= Self.maxTextBytes else {
            throw ImportError.invalid(file: name, place: place, expected: "at most \(Self.maxTextBytes) bytes of text",
                                      actual: overflow ? "more" : "\(total) bytes")
        }
        H5Tset_size(memType, size)
        H5Tset_strpad(memType, H5T_STR_NULLPAD)
        var bytes = [UInt8](repeating: 0, count: total)
        let rc = bytes.withUnsafeMutableBytes { H5Aread(attr, memType, $0.baseAddress) }
        guard rc >= 0 else { throw ImportError.malformed(file: name, reason: "\(place) cannot be read") }
        return (0..<count).map { i in
            let slice = bytes[(i * size)..<((i + 1) * size)]
            let end = slice.firstIndex(of: 0) ?? slice.endIndex
            return String(decoding: slice[slice.startIndex..<end], as: UTF8.self)
        }
    }

    private static func string(_ chars: [CChar]) -> String {
        let bytes = chars.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        return String(decoding: bytes, as: UTF8.self)
    }
}
