import CMLToolHDF5Sandbox
import Foundation
import MLToolCore
import MLToolFormat

/// A read-only view of an HDF5 file that follows only hard links and reads only data stored inside the file.
///
/// libhdf5 never runs in this process: every file is read by its own sandboxed child (`HDF5Sandbox`), which can
/// read that one file and nothing else, under CPU, memory and time limits. A crash or hang of libhdf5 on a hostile
/// file ends that child, and the read fails with an `ImportError` naming the file. The child reports facts (link
/// kinds, type classes, dimensions, stored sizes); the decisions and every message are made here, on values checked
/// again. Every path is opened one component at a time; a soft link, an external link (or any user-defined link)
/// on the way is refused, and so are datasets with external raw storage and virtual datasets.
final class HDF5File {
    /// An open group or dataset and its path from the root ("/model_weights/conv1").
    struct Object {
        fileprivate let handle: UInt32
        fileprivate let group: Bool
        let path: String
    }

    /// The file as named in error messages (its last path component).
    let name: String
    private let sandbox: HDF5Sandbox
    /// The root group "/".
    let root = Object(handle: 0, group: true, path: "/")

    /// The largest dataset read, in elements (4 GiB of float32): a bound on what a hostile file can make us allocate.
    static let maxElements = 1 << 30
    /// The most strings in one attribute, and the most bytes of text.
    static let maxStrings = 1 << 20
    static let maxTextBytes = 1 << 28

    /// Opens `path` in a sandboxed reader, runs `body`, then ends the reader. Errors are `ImportError`s naming the
    /// file; when the reader failed (crash, hang, limit), that failure is the error, whatever `body` made of it.
    static func read<T>(path: String, limits: HDF5Sandbox.Limits? = nil, _ body: (HDF5File) throws -> T) throws -> T {
        let file = try HDF5File(path: path, limits: limits)
        defer { file.sandbox.finish() }
        return try file.run(body)
    }

    /// `body` on this file; when the reader failed (crash, hang, limit), that failure is the error, whatever `body`
    /// made of it.
    private func run<T>(_ body: (HDF5File) throws -> T) throws -> T {
        let result: T
        do {
            result = try body(self)
        } catch {
            throw sandbox.failure ?? error
        }
        if let failure = sandbox.failure { throw failure }
        return result
    }

    /// `read`, with no libhdf5 and no child: `replies` play the sandboxed reader's part, byte for byte as it would
    /// write them to the socket, and the parent's requests are read and dropped. For fuzzing the parent's side of the
    /// sandbox (the checks of every reply), which is the trust boundary inside the mltool process.
    static func replaying<T>(replies: [UInt8], file: String, _ body: (HDF5File) throws -> T) throws -> T {
        var ends: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw ImportError.isolation(file: file, reason: "socketpair: \(String(cString: strerror(errno)))")
        }
        let peer = ends[1], done = DispatchSemaphore(value: 0)
        Thread { [replies] in playChild(peer: peer, replies: replies); done.signal() }.start()
        defer { done.wait() }
        let limits = HDF5Sandbox.Limits(timeout: 10, cpuSeconds: 0, extraAddressSpace: 0)
        let sandbox = HDF5Sandbox(replaying: ends[0], file: file, limits: limits)
        defer { sandbox.finish() }   // closes the parent's end, which ends the child's part
        let file = try HDF5File(name: file, sandbox: sandbox)
        return try file.run(body)
    }

    /// The child's part in `replaying`: writes `replies` (then end of file) and reads and drops the requests until
    /// the parent closes its end.
    private static func playChild(peer: Int32, replies: [UInt8]) {
        defer { Glibc.close(peer) }
        var sent = 0, writing = true
        var scratch = [UInt8](repeating: 0, count: 1 << 16)
        if replies.isEmpty { writing = false; Glibc.shutdown(peer, Int32(SHUT_WR)) }
        while true {
            var poller = pollfd(fd: peer, events: Int16(POLLIN) | (writing ? Int16(POLLOUT) : 0), revents: 0)
            if Glibc.poll(&poller, 1, -1) < 0 {
                if errno == EINTR { continue }
                return
            }
            if poller.revents & Int16(POLLIN) != 0 {
                let n = scratch.withUnsafeMutableBytes { Glibc.read(peer, $0.baseAddress, $0.count) }
                if n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN) { return }
            } else if poller.revents & Int16(POLLHUP | POLLERR) != 0 {
                return
            }
            if writing && poller.revents & Int16(POLLOUT) != 0 {
                let n = replies.withUnsafeBytes { b in
                    Glibc.send(peer, b.baseAddress.map { $0 + sent }, min(b.count - sent, 1 << 16), Int32(MSG_NOSIGNAL))
                }
                if n > 0 { sent += n }
                if n < 0 && errno != EINTR && errno != EAGAIN { writing = false }
                if sent == replies.count { writing = false; Glibc.shutdown(peer, Int32(SHUT_WR)) }
            }
        }
    }

    /// Whether `path` is an HDF5 file: the format signature at byte 0, 512, 1024, 2048, … (where libhdf5 looks for
    /// it), read here without libhdf5.
    static func isHDF5(path: String) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { return false }
        return hasSignature(fd: fd, size: Int(info.st_size))
    }

    private static func hasSignature(fd: Int32, size: Int) -> Bool {
        let signature = FileKind.hdf5Signature
        return FileKind.hdf5SignatureOffsets(fileSize: size).contains { offset in
            var bytes = [UInt8](repeating: 0, count: signature.count)
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress, $0.count, off_t(offset)) }
            return n == signature.count && bytes == signature
        }
    }

    private init(path: String, limits: HDF5Sandbox.Limits?) throws {
        name = URL(fileURLWithPath: path).lastPathComponent
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
            throw ImportError.unreadable(file: name, reason: "no such file")
        }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw ImportError.unreadable(file: name, reason: errno == EACCES ? "permission denied" : String(cString: strerror(errno)))
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw ImportError.unreadable(file: name, reason: "not a regular file")
        }
        let size = Int(info.st_size)
        guard Self.hasSignature(fd: fd, size: size) else { throw ImportError.malformed(file: name, reason: "not an HDF5 file") }
        sandbox = try HDF5Sandbox(fd: fd, fileSize: size, file: name, limits: limits ?? .default(fileSize: size))
        try openRoot()
    }

    /// Over a sandbox that replays canned replies (`HDF5Sandbox(replaying:)`).
    private init(name: String, sandbox: HDF5Sandbox) throws {
        self.name = name
        self.sandbox = sandbox
        try openRoot()
    }

    /// Asks the reader to open the file and its root group.
    private func openRoot() throws {
        let name = self.name
        try sandbox.request(.init(op: Int32(MLT_H5_OP_OPEN_FILE))) { reply in
            if try reply.flag("opened") { return }
            let reason = try reply.u8("reason") == 2 ? "HDF5 root group cannot be opened"
                : "HDF5 file cannot be opened (truncated or corrupt)"
            throw ImportError.malformed(file: name, reason: reason)
        }
    }

    // MARK: - Links and objects

    /// Whether `parent` has a child `path`, following hard links only (a soft or external link on the way throws).
    func exists(_ path: String, in parent: Object) throws -> Bool {
        try walk(path, in: parent, openLast: false) != nil
    }

    /// Opens the group or dataset `path` below `parent` (components separated by "/"), checking every link.
    func open(_ path: String, in parent: Object) throws -> Object {
        guard let object = try walk(path, in: parent, openLast: true) else {
            // Unreachable: a missing component throws when the last one is to be opened.
            throw ImportError.invalid(file: name, place: join(parent.path, path), expected: "an HDF5 group or dataset",
                                      actual: "nothing")
        }
        return object
    }

    /// `open`, or nil when a component of `path` does not exist (one request instead of `exists` then `open`).
    func openIfPresent(_ path: String, in parent: Object) throws -> Object? {
        try walk(path, in: parent, openLast: true, missingIsNil: true)
    }

    /// `openIfPresent` for each path, pipelined (the reader works on the next while this process reads the last).
    func openIfPresent(_ paths: [String], in parent: Object) throws -> [Object?] {
        let parts = try paths.map { try components($0, in: parent) }
        let requests = parts.map {
            HDF5Sandbox.Request(op: Int32(MLT_H5_OP_WALK), handle: parent.handle, a: 1, text: $0.joined(separator: "/"))
        }
        return try sandbox.exchange(requests) { i, reply in
            try walkOutcome(&reply, parts[i], in: parent, openLast: true, missingIsNil: true)
        }
    }

    /// Whether `object` is a group (as opposed to a dataset).
    func isGroup(_ object: Object) -> Bool { object.group }

    private func components(_ path: String, in parent: Object) throws -> [String] {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        for part in parts where part.isEmpty || part == "." || part == ".." || part.utf8.contains(0) {
            throw ImportError.invalid(file: name, place: join(parent.path, path), expected: "a plain HDF5 path",
                                      actual: "'\(path)'")
        }
        return parts
    }

    /// Follows `path` below `parent` in the reader: nil when a component does not exist and `openLast` is false
    /// (an existence check) or `missingIsNil`; the opened object otherwise. Any link other than a hard link throws.
    private func walk(_ path: String, in parent: Object, openLast: Bool, missingIsNil: Bool = false) throws -> Object? {
        let parts = try components(path, in: parent)
        let request = HDF5Sandbox.Request(op: Int32(MLT_H5_OP_WALK), handle: parent.handle, a: openLast ? 1 : 0,
                                          text: parts.joined(separator: "/"))
        return try sandbox.request(request) { reply in
            try walkOutcome(&reply, parts, in: parent, openLast: openLast, missingIsNil: missingIsNil)
        }
    }

    /// The object a walk reply names, as `walk` describes.
    private func walkOutcome(_ reply: inout Reply, _ parts: [String], in parent: Object, openLast: Bool,
                             missingIsNil: Bool) throws -> Object? {
        let outcome = try reply.u8("outcome")
        let index = Int(try reply.u32("component"))
        guard index < parts.count else { throw sandbox.fail(malformed: "component \(index) of \(parts.count)") }
        let place = parts[...index].reduce(parent.path) { join($0, $1) }
        switch Int32(outcome) {
        case Int32(MLT_H5_WALK_FOUND):
            let handle = try reply.u32("handle")
            let kind = try reply.u8("kind")
            guard index == parts.count - 1 else { throw sandbox.fail(malformed: "found at component \(index)") }
            // An existence check opens nothing: the object is only a token that it exists.
            if !openLast { return Object(handle: UInt32.max, group: false, path: place) }
            guard kind == 1 || kind == 2, handle != UInt32.max else { throw sandbox.fail(malformed: "object kind \(kind)") }
            return Object(handle: handle, group: kind == 1, path: place)
        case Int32(MLT_H5_WALK_MISSING):
            if !openLast || missingIsNil { return nil }
            throw ImportError.invalid(file: name, place: place, expected: "an HDF5 group or dataset", actual: "nothing")
        case Int32(MLT_H5_WALK_SOFT):
            let target = try reply.string("soft link target")
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 soft link to '\(target)'; only hard links are followed")
        case Int32(MLT_H5_WALK_EXTERNAL):
            let file = try reply.string("external file"), object = try reply.string("external object")
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 external link to '\(file)' object '\(object)'; links out of the file are never followed")
        case Int32(MLT_H5_WALK_USER):
            let type = try reply.i32("link type")
            throw ImportError.refused(file: name, place: place,
                                      reason: "HDF5 user-defined link (type \(type)); only hard links are followed")
        case Int32(MLT_H5_WALK_OPEN_FAILED):
            throw ImportError.malformed(file: name, reason: "HDF5 object \(place) cannot be opened")
        case Int32(MLT_H5_WALK_NOT_OBJECT):
            throw ImportError.invalid(file: name, place: place, expected: "an HDF5 group or dataset", actual: "another object")
        default:
            throw sandbox.fail(malformed: "walk outcome \(outcome)")
        }
    }

    private func join(_ a: String, _ b: String) -> String { a == "/" ? "/" + b : a + "/" + b }

    // MARK: - Datasets

    /// A numeric dataset (floats of any size, or integers such as Keras's Normalization count) converted to
    /// float32 by libhdf5, with its shape. Refuses external raw storage and virtual datasets.
    func readFloats(_ dataset: Object) throws -> (shape: [Int], data: [Float]) {
        guard !dataset.group else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "a dataset", actual: "a group")
        }
        let request = HDF5Sandbox.Request(op: Int32(MLT_H5_OP_READ), handle: dataset.handle, a: UInt64(Self.maxElements))
        return try sandbox.request(request) { reply in try readOutcome(&reply, dataset) }
    }

    /// `readFloats(open(path, in: parent))` for each item, one request each, pipelined. The first error is thrown.
    func readFloats(_ items: [(path: String, parent: Object)]) throws -> [(shape: [Int], data: [Float])] {
        let parts = try items.map { try components($0.path, in: $0.parent) }
        let requests = items.indices.map { i in
            HDF5Sandbox.Request(op: Int32(MLT_H5_OP_WALK_READ), handle: items[i].parent.handle, b: UInt64(Self.maxElements),
                                text: parts[i].joined(separator: "/"))
        }
        return try sandbox.exchange(requests) { i, reply in
            guard let dataset = try walkOutcome(&reply, parts[i], in: items[i].parent, openLast: true, missingIsNil: false) else {
                throw sandbox.fail(malformed: "no object for \(items[i].path)")
            }
            guard !dataset.group else {
                throw ImportError.invalid(file: name, place: dataset.path, expected: "a dataset", actual: "a group")
            }
            return try readOutcome(&reply, dataset)
        }
    }

    /// The values a read reply carries, after checking every fact it states, as `readFloats` describes.
    private func readOutcome(_ reply: inout Reply, _ dataset: Object) throws -> (shape: [Int], data: [Float]) {
        guard try reply.flag("is dataset") else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "a dataset", actual: "a group")
        }
        guard try reply.flag("creation properties") else {
            throw ImportError.malformed(file: name, reason: "\(dataset.path): no creation properties")
        }
        let external = try reply.i32("external count")
        let layout = try reply.i32("layout")
        let typeClass = try reply.i32("type class")
        let typeSize = try reply.u64("type size")
        let filters = try reply.i32("filters")
        let stored = try reply.u64("stored bytes")
        guard external == 0 else {
            throw ImportError.refused(file: name, place: dataset.path,
                                      reason: "dataset with external raw storage (\(external) file\(external == 1 ? "" : "s")); data outside the file is never read")
        }
        guard layout != Int32(MLT_H5_LAYOUT_VIRTUAL) else {
            throw ImportError.refused(file: name, place: dataset.path,
                                      reason: "virtual dataset (mapped from other datasets or files); only data stored in the file is read")
        }
        guard [MLT_H5_LAYOUT_CONTIGUOUS, MLT_H5_LAYOUT_CHUNKED, MLT_H5_LAYOUT_COMPACT].map(Int32.init).contains(layout) else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "contiguous, chunked or compact layout",
                                      actual: "layout \(layout)")
        }
        guard typeClass >= 0 else { throw ImportError.malformed(file: name, reason: "\(dataset.path): no datatype") }
        guard typeClass == Int32(MLT_H5_CLASS_FLOAT) || typeClass == Int32(MLT_H5_CLASS_INTEGER) else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "numbers", actual: Self.className(typeClass))
        }
        let shape = try reply.dims(place: dataset.path)
        let count = try elementCount(shape, place: dataset.path)
        guard count <= Self.maxElements else {
            throw ImportError.invalid(file: name, place: dataset.path, expected: "at most \(Self.maxElements) elements",
                                      actual: "\(count)")
        }
        // Without filters (compression) the file must hold every byte the shape needs: a dataset that declares more
        // (never written, or sparse chunks) would otherwise make us allocate fill values for a size the file never had.
        if filters == 0 {
            let (need, overflow) = UInt64(count).multipliedReportingOverflow(by: typeSize)
            guard !overflow, stored >= need else {
                throw ImportError.invalid(file: name, place: dataset.path,
                                          expected: "\(overflow ? "more" : "\(need)") stored bytes for shape \(KerasGraphBuilder.format(shape))",
                                          actual: "\(stored)")
            }
        }
        switch try reply.u8("data") {
        case 1:
            let sent = try reply.u64("value count")
            guard sent == UInt64(count) else { throw sandbox.fail(malformed: "\(sent) values for shape \(shape)") }
        return (shape, try reply.values(count: count))
        case 2:
            throw ImportError.malformed(file: name, reason: "\(dataset.path): data cannot be read (truncated or corrupt)")
        case 4:
            throw ImportError.invalid(file: name, place: dataset.path, expected: "values that fit the HDF5 reader's memory limit",
                                      actual: "\(count) float32 values")
        default:
            throw sandbox.fail(malformed: "no data for an acceptable dataset \(dataset.path)")
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
    private static func className(_ c: Int32) -> String {
        classNames[c] ?? "HDF5 type class \(c)"
    }

    private static let classNames: [Int32: String] = [
        Int32(MLT_H5_CLASS_INTEGER): "integers", Int32(MLT_H5_CLASS_FLOAT): "floats", Int32(MLT_H5_CLASS_STRING): "strings",
        Int32(MLT_H5_CLASS_COMPOUND): "compound values", Int32(MLT_H5_CLASS_REFERENCE): "references",
        Int32(MLT_H5_CLASS_ENUM): "enum values", Int32(MLT_H5_CLASS_VLEN): "variable-length sequences",
        Int32(MLT_H5_CLASS_ARRAY): "arrays",
    ]

    // MARK: - Attributes

    /// Whether `object` has an attribute `attribute`. A reader failure reads as false here and is thrown by `read`.
    func hasAttribute(_ attribute: String, of object: Object) -> Bool {
        guard !attribute.utf8.contains(0) else { return false }
        let request = HDF5Sandbox.Request(op: Int32(MLT_H5_OP_HAS_ATTRIBUTE), handle: object.handle, text: attribute)
        return (try? sandbox.request(request) { reply in try reply.flag("exists") }) ?? false
    }

    /// `strings`, or nil when `object` has no attribute `attribute` (one request instead of two).
    func optionalStrings(_ attribute: String, of object: Object) throws -> [String]? {
        try readStrings(attribute, of: [object], optional: true)[0]
    }

    /// `optionalStrings` of each object, pipelined.
    func optionalStrings(_ attribute: String, ofEach objects: [Object]) throws -> [[String]?] {
        try readStrings(attribute, of: objects, optional: true)
    }

    /// `string`, or nil when `object` has no attribute `attribute`.
    func optionalString(_ attribute: String, of object: Object) throws -> String? {
        guard let values = try optionalStrings(attribute, of: object) else { return nil }
        guard values.count == 1 else {
            throw ImportError.invalid(file: name, place: "\(object.path) attribute '\(attribute)'",
                                      expected: "one string", actual: "\(values.count) values")
        }
        return values[0]
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
        try readStrings(attribute, of: [object], optional: false)[0] ?? []
    }

    private func readStrings(_ attribute: String, of objects: [Object], optional: Bool) throws -> [[String]?] {
        guard !attribute.utf8.contains(0) else {
            throw ImportError.invalid(file: name, place: "\(objects.first?.path ?? "/") attribute '\(attribute)'",
                                      expected: "the attribute", actual: "nothing")
        }
        let requests = objects.map {
            HDF5Sandbox.Request(op: Int32(MLT_H5_OP_STRINGS), handle: $0.handle, a: UInt64(Self.maxStrings),
                                b: UInt64(Self.maxTextBytes), text: attribute)
        }
        return try sandbox.exchange(requests) { i, reply in
            try stringsOutcome(&reply, attribute, of: objects[i], optional: optional)
        }
    }

    private func stringsOutcome(_ reply: inout Reply, _ attribute: String, of object: Object, optional: Bool) throws -> [String]? {
        let place = "\(object.path) attribute '\(attribute)'"
        guard try reply.flag("exists") else {
            if optional { return nil }
            throw ImportError.invalid(file: name, place: place, expected: "the attribute", actual: "nothing")
        }
        guard try reply.flag("opened") else { throw ImportError.malformed(file: name, reason: "\(place) cannot be opened") }
        let count = try elementCount(reply.dims(place: place), place: place)
        let typeClass = try reply.i32("type class")
        let variable = try reply.flag("variable length")
        let size = try reply.u64("type size")
        guard typeClass >= 0 else { throw ImportError.malformed(file: name, reason: "\(place): no datatype") }
        let data = try reply.u8("data")
        if count == 0 { return [] }
        guard typeClass == Int32(MLT_H5_CLASS_STRING) else {
            throw ImportError.invalid(file: name, place: place, expected: "strings", actual: Self.className(typeClass))
        }
        guard count <= Self.maxStrings else {
            throw ImportError.invalid(file: name, place: place, expected: "at most \(Self.maxStrings) strings", actual: "\(count)")
        }
        if !variable {
            guard size > 0, size <= UInt64(Self.maxTextBytes) else {
                throw ImportError.invalid(file: name, place: place, expected: "a string size ≤ \(Self.maxTextBytes) bytes",
                                          actual: "\(size)")
            }
            let (total, overflow) = UInt64(count).multipliedReportingOverflow(by: size)
            guard !overflow, total <= UInt64(Self.maxTextBytes) else {
                throw ImportError.invalid(file: name, place: place, expected: "at most \(Self.maxTextBytes) bytes of text",
                                          actual: overflow ? "more" : "\(total) bytes")
            }
        }
        switch data {
        case 1:
            let sent = Int(try reply.u32("string count"))
            guard sent == count else { throw sandbox.fail(malformed: "\(sent) strings for \(count)") }
            return try (0..<count).map { _ in try reply.string("string") }
        case 2:
            throw ImportError.malformed(file: name, reason: "\(place) cannot be read")
        case 3:
            throw ImportError.invalid(file: name, place: place, expected: "at most \(Self.maxTextBytes) bytes of text",
                                      actual: "more")
        default:
            throw sandbox.fail(malformed: "no data for an acceptable attribute \(place)")
        }
    }
}
