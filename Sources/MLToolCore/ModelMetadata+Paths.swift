import Foundation

/// What a written model file records of where it came from (docs/FORMAT.md, "Paths"; docs/SECURITY.md).
public enum ProvenancePolicy: String, Sendable {
    /// Sources, the holdout's root and the command's absolute words relative to the model file's directory: no
    /// absolute path of the machine that wrote the file, and the same bytes from any working directory.
    case relative
    /// No sources, no command, no holdout root (`--no-provenance`): only the tool version, the seed and the
    /// holdout's paths inside its data folder.
    case none

    /// `MLTOOL_PROVENANCE` (`none` or `relative`), read when a file is written; `relative` when unset.
    public static var current: ProvenancePolicy {
        ProcessInfo.processInfo.environment["MLTOOL_PROVENANCE"].flatMap(ProvenancePolicy.init(rawValue:)) ?? .relative
    }
}

/// Path arithmetic on text (no file system access), for the paths a model records.
public enum RecordedPath {
    /// `path` made absolute against `base` (the working directory when nil) and standardized (`.`, `..`, `//`).
    public static func absolute(_ path: String, base: String? = nil) -> String {
        let joined = path.hasPrefix("/") ? path : (base ?? FileManager.default.currentDirectoryPath) + "/" + path
        var parts: [Substring] = []
        for c in joined.split(separator: "/") where c != "." {
            if c == ".." { if !parts.isEmpty { parts.removeLast() } } else { parts.append(c) }
        }
        return "/" + parts.joined(separator: "/")
    }

    /// The relative path from directory `base` to `path` (both made absolute first), climbing with `..`; "." for
    /// `base` itself.
    public static func relative(_ path: String, from base: String) -> String {
        let p = absolute(path).split(separator: "/"), b = absolute(base).split(separator: "/")
        var common = 0
        while common < p.count, common < b.count, p[common] == b[common] { common += 1 }
        let parts = Array(repeating: "..", count: b.count - common) + p[common...].map(String.init)
        return parts.isEmpty ? "." : parts.joined(separator: "/")
    }

    /// The directory that holds the file at `path`, absolute.
    public static func directory(of path: String) -> String {
        (absolute(path) as NSString).deletingLastPathComponent
    }
}

extension ModelMetadata {
    /// This metadata as it is recorded in a model file written at `path` under `policy` (docs/FORMAT.md,
    /// "Paths"): no absolute path remains. In memory, relative paths are relative to the working directory; in the
    /// file, sources, the holdout root and the command's absolute words are relative to the file's directory.
    /// Holdout and calibration items stay relative to the root (an absolute one is made so first).
    public func recordingPaths(forFileAt path: String, policy: ProvenancePolicy = .current) -> ModelMetadata {
        let home = RecordedPath.directory(of: path)
        var md = self
        if var split = md.split {
            let root = split.root.map { RecordedPath.absolute($0) }
            func recorded(_ item: SplitManifest.Item) -> SplitManifest.Item {
                var item = item
                // A text record keeps its "#row=N" suffix; only the file part is a path.
                let marker = item.path.range(of: "#row=", options: .backwards)
                let file = marker.map { String(item.path[..<$0.lowerBound]) } ?? item.path
                let suffix = marker.map { String(item.path[$0.lowerBound...]) } ?? ""
                if file.hasPrefix("/") { item.path = (root.map { RecordedPath.relative(file, from: $0) } ?? RecordedPath.relative(file, from: ".")) + suffix }
                return item
            }
            split.holdout = split.holdout.map(recorded)
            split.calibration = split.calibration?.map(recorded)
            split.root = policy == .none ? nil : root.map { RecordedPath.relative($0, from: home) }
            md.split = split
        }
        switch policy {
        case .none:
            md.provenance.sources = []
            md.provenance.command = nil
        case .relative:
            md.provenance.sources = provenance.sources.map { s in
                .init(path: RecordedPath.relative(s.path, from: home), sha256: s.sha256)
            }
            md.provenance.command = provenance.command.map { c in
                c.split(separator: " ", omittingEmptySubsequences: false).map { word in
                    word.hasPrefix("/") ? RecordedPath.relative(String(word), from: home) : String(word)
                }.joined(separator: " ")
            }
        }
        return md
    }

    /// This metadata as read from a model file at `path`: recorded relative sources and holdout root resolved
    /// against the file's directory, so they name the same files wherever the reader runs.
    public func resolvingPaths(forFileAt path: String) -> ModelMetadata {
        let home = RecordedPath.directory(of: path)
        var md = self
        md.provenance.sources = provenance.sources.map { s in
            .init(path: s.path.hasPrefix("/") ? s.path : RecordedPath.absolute(s.path, base: home), sha256: s.sha256)
        }
        if let root = split?.root, !root.hasPrefix("/") { md.split?.root = RecordedPath.absolute(root, base: home) }
        return md
    }
}

extension Provenance {
    /// What a file that leaves the machine (an ONNX or Core ML export) records: `portable` (file names and hashes),
    /// or under `.none` no sources and no command.
    public func exported(_ policy: ProvenancePolicy = .current) -> Provenance {
        var p = portable
        if policy == .none { p.sources = []; p.command = nil }
        return p
    }
}
