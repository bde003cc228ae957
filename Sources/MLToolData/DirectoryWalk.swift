import Foundation

/// The sorted, hidden-file-free folder walk that image and text data sets share.
public enum DirectoryWalk {
    /// The entries of `dir` not starting with ".", sorted.
    static func listing(_ dir: String) throws -> [String] {
        do {
            return try FileManager.default.contentsOfDirectory(atPath: dir).filter { !$0.hasPrefix(".") }.sorted()
        } catch {
            throw DataError.cannotRead(file: dir, reason: "cannot list the folder")
        }
    }

    static func isDirectory(_ path: String) -> Bool {
        var d: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }

    /// `paths` with every folder replaced by the files below it (sorted, hidden ones skipped) that `keep` accepts;
    /// plain files are kept as given, in order.
    public static func expand(_ paths: [String], keep: (String) -> Bool = { _ in true }) throws -> [String] {
        var out = [String]()
        for p in paths {
            if isDirectory(p) {
                var dir = Substring(p)
                while dir.count > 1 && dir.hasSuffix("/") { dir = dir.dropLast() }
                out += try files(under: String(dir), depth: 0).filter(keep)
            } else {
                out.append(p)
            }
        }
        return out
    }

    /// Files below `dir`, sorted, depth-first; nesting is capped so a symlink loop cannot recurse forever.
    static func files(under dir: String, depth: Int) throws -> [String] {
        guard depth < 32 else { return [] }
        var out = [String]()
        for name in try listing(dir) {
            let p = dir + "/" + name
            if isDirectory(p) { out += try files(under: p, depth: depth + 1) } else { out.append(p) }
        }
        return out
    }
}
