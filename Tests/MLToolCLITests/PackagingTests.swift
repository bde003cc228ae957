import Foundation
import MLTool
import MLToolTestSupport
import Testing

/// What `make deb` ships (the package make test builds, MLTOOL_DEB): its binary loads no library from the Swift
/// toolchain, its Depends names the Debian packages of what it loads; and the man page and completions the binary
/// generates (`mltool completions man|bash|zsh`) cover every command. The .deb is installed into a Debian 12 root
/// without Swift and used there by packaging/test-deb.sh (`make test-deb`).
@Suite(.enabled(if: Tool.available, "needs MLTOOL_BIN (make test sets it)"))
struct PackagingTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// Runs `program args` (found on PATH), or nil when it is not installed.
    static func shell(_ program: String, _ args: [String], env: [String: String] = [:]) throws -> Tool.Result? {
        guard let dir = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
            .first(where: { FileManager.default.isExecutableFile(atPath: "\($0)/\(program)") }) else { return nil }
        return try Tool.exec("\(dir)/\(program)", args, env: env)
    }

    /// The commands `mltool --help` lists.
    static func commands() throws -> [String] {
        let help = try Tool.run(["--help"]).stdout
        let listed = help.components(separatedBy: "COMMANDS:\n").last?.components(separatedBy: "\n\n").first ?? ""
        return listed.split(separator: "\n").compactMap { $0.split(separator: " ").first.map(String.init) }
    }

    /// The .deb `make deb` wrote (make test sets MLTOOL_DEB), unpacked into `dir`; nil after a loud skip.
    static func unpackedDeb(into dir: TempDir) throws -> String? {
        guard let deb = ProcessInfo.processInfo.environment["MLTOOL_DEB"], FileManager.default.fileExists(atPath: deb) else {
            Oracles.missing("PackagingTests: MLTOOL_DEB does not name a .deb (make test runs make deb and sets it)"); return nil
        }
        let unpacked = try #require(try shell("dpkg-deb", ["-R", deb, dir.file("deb")]))
        #expect(unpacked.status == 0, "dpkg-deb -R: \(unpacked.stderr)")
        return dir.file("deb")
    }

    /// The packaged binary loads no library from the Swift toolchain: no RUNPATH, no libswift*/Foundation/dispatch.
    /// (The binary the suites run is the one `swift test` links, with the toolchain's runtime: --static-swift-stdlib
    /// cannot link XCTest, swiftlang/swift-package-manager#5590.)
    @Test func packagedBinaryLoadsNoToolchainLibrary() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        guard let deb = try Self.unpackedDeb(into: dir) else { return }
        let binary = deb + "/usr/bin/mltool"
        let dynamic = try #require(try Self.shell("readelf", ["-d", binary]))
        #expect(dynamic.status == 0)
        #expect(!dynamic.stdout.contains("RUNPATH") && !dynamic.stdout.contains("RPATH"), "\(dynamic.stdout)")
        let needed = dynamic.stdout.split(separator: "\n").filter { $0.contains("(NEEDED)") }
        // Measured with --static-swift-stdlib: the six Debian libraries, libstdc++, libm, libgcc_s, libc, ld-linux.
        #expect(needed.count >= 10, "\(needed)")
        #expect(!needed.contains { $0.contains("swift") || $0.contains("Foundation") || $0.contains("dispatch") }, "\(needed)")
        let loaded = try #require(try Self.shell("ldd", [binary]))
        #expect(!loaded.stdout.contains("not found") && !loaded.stdout.contains("swift"), "\(loaded.stdout)")
        let version = try Tool.exec(binary, ["--version"])
        #expect(version.status == 0 && version.stdout.hasPrefix("mltool "))
    }

    /// Depends names the Debian package of each library the binary links, and libhdf5 (opened at run time), with floors.
    @Test func packageDependsOnTheDebianLibraries() throws {
        let dir = try TempDir()
        defer { dir.cleanup() }
        guard let deb = try Self.unpackedDeb(into: dir) else { return }
        let control = try String(contentsOfFile: deb + "/DEBIAN/control", encoding: .utf8)
        let line = try #require(control.split(separator: "\n").first { $0.hasPrefix("Depends: ") })
        let names = line.dropFirst("Depends: ".count).split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        for package in ["libc6", "libprotobuf-c1", "libturbojpeg0", "libpng16-16", "libmicrohttpd12", "libsndfile1", "libhdf5-103-1", "libstdc++6"] {
            #expect(names.contains { $0.hasPrefix(package + " (>= ") }, "\(package) missing from: \(line)")
        }
        #expect(names.contains { $0.hasPrefix("libopenblas0") }, "\(line)")
        for model in BundledModel.all.map(\.fileName) {
            #expect(FileManager.default.fileExists(atPath: deb + "/usr/share/mltool/" + model), "\(model) not packaged")
        }
        for file in ["usr/share/man/man1/mltool.1.gz", "usr/share/bash-completion/completions/mltool",
                     "usr/share/zsh/vendor-completions/_mltool", "usr/share/doc/mltool/copyright"] {
            #expect(FileManager.default.fileExists(atPath: deb + "/" + file), "\(file) not packaged")
        }
    }

    @Test func manPageRendersEveryCommand() throws {
        let roff = try Tool.run(["completions", "man"])
        #expect(roff.status == 0)
        let dir = try TempDir()
        defer { dir.cleanup() }
        try roff.stdout.write(toFile: dir.file("mltool.1"), atomically: true, encoding: .utf8)
        guard let page = try Self.shell("man", ["--warnings", "-l", dir.file("mltool.1")], env: ["MANWIDTH": "120", "MAN_KEEP_FORMATTING": ""]) else {
            Oracles.missing("PackagingTests: man (man-db) is not installed"); return
        }
        #expect(page.status == 0 && page.stderr.isEmpty, "man: \(page.stderr)")
        let commands = try Self.commands()
        #expect(commands.count >= 11, "\(commands)")
        for c in commands {
            #expect(page.stdout.contains("MLTOOL \(c.uppercased())"), "no section for \(c)")
        }
        #expect(page.stdout.contains("--min-confidence") && page.stdout.contains("--token"), "options missing from the page")
    }

    /// The Makefile's BUNDLED_MODELS (what make models builds and make install, dist and deb ship) are the files of
    /// `BundledModel.all` (where mltool looks for them), in its order; the man page's FILES names each.
    @Test func makefileShipsEveryBundledModel() throws {
        let makefile = try String(contentsOfFile: Self.root + "/Makefile", encoding: .utf8)
        let line = try #require(makefile.split(separator: "\n").first { $0.hasPrefix("BUNDLED_MODELS := ") })
        #expect(line.dropFirst("BUNDLED_MODELS := ".count).split(separator: " ").map(String.init) == BundledModel.all.map(\.fileName))
        let roff = try Tool.run(["completions", "man"]).stdout
        for model in BundledModel.all {
            #expect(roff.contains(model.fileName.replacingOccurrences(of: "-", with: "\\-")) && roff.contains(model.environmentVariable),
                    "\(model.fileName) missing from the man page's FILES")
        }
    }

    @Test func bashCompletionCompletesCommandsAndOptions() throws {
        let script = try Tool.run(["completions", "bash"])
        #expect(script.status == 0)
        let dir = try TempDir()
        defer { dir.cleanup() }
        try script.stdout.write(toFile: dir.file("mltool.bash"), atomically: true, encoding: .utf8)
        let probe = """
            source \(dir.file("mltool.bash"))
            COMP_WORDS=(mltool tr); COMP_CWORD=1; _mltool; echo "${COMPREPLY[*]}"
            COMP_WORDS=(mltool serve --to); COMP_CWORD=2; _mltool; echo "${COMPREPLY[*]}"
            COMP_WORDS=(mltool train --test ''); COMP_CWORD=3; _mltool; echo "[${COMPREPLY[*]}]"
            COMP_WORDS=(mltool help q); COMP_CWORD=2; _mltool; echo "${COMPREPLY[*]}"
            """
        let out = try #require(try Self.shell("bash", ["-c", probe]))
        // A value after --test is left to the shell's file completion (nothing from mltool).
        #expect(out.stdout == "train\n--token\n[]\nquantize\n", "\(out.stdout) \(out.stderr)")
    }

    @Test func zshCompletionParses() throws {
        let script = try Tool.run(["completions", "zsh"])
        #expect(script.status == 0 && script.stdout.hasPrefix("#compdef mltool\n"))
        for c in try Self.commands() { #expect(script.stdout.contains("    \(c))\n"), "no case for \(c)") }
        guard let parsed = try Self.shell("zsh", ["-n", "-c", script.stdout]) else {
            Oracles.missing("PackagingTests: zsh is not installed (make setup installs it)"); return
        }
        #expect(parsed.status == 0, "zsh -n: \(parsed.stderr)")
        let unknown = try Tool.run(["completions", "fish"])
        #expect(unknown.status == 64 && unknown.stderr.contains("expected bash, zsh or man"))
    }
}
