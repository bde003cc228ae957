// libFuzzer's entry points (libFuzzer supplies main). Built with -parse-as-library: no top-level code here.
import Foundation
import MLToolFuzzEntries

/// The target named by MLTOOL_FUZZ_TARGET, found once.
nonisolated(unsafe) private var target: FuzzTarget?

/// Before the first input: MLTOOL_FUZZ_LIST=1 prints "name dictionary" per target and exits; otherwise the
/// target must be named.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> CInt {
    // getenv, not ProcessInfo.environment: Foundation keeps that dictionary for good, which LeakSanitizer reports.
    if getenv("MLTOOL_FUZZ_LIST") != nil {
        for t in FuzzTarget.all { print(t.name, t.dictionary) }
        exit(0)
    }
    guard let name = getenv("MLTOOL_FUZZ_TARGET").map({ String(cString: $0) }), let found = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        FileHandle.standardError.write(Data("mltool-fuzz: set MLTOOL_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(2)
    }
    target = found
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let bytes = start.map { [UInt8](UnsafeRawBufferPointer(start: $0, count: count)) } ?? []
    _ = target?.run(bytes)
    return 0
}

/// libFuzzer's driver, which libFuzzer's own `main` would call.
@_silgen_name("LLVMFuzzerRunDriver")
func runDriver(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
               _ callback: @convention(c) (UnsafeRawPointer?, Int) -> CInt) -> CInt

/// SwiftPM links an executable target's `main` to `<module>_main` (what a @main type or top-level code would be
/// compiled to); with -parse-as-library there is neither, so this is it: it hands over to libFuzzer's driver.
@_cdecl("mltool_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc, arguments = argv
    return runDriver(&count, &arguments, { fuzz($0, $1) })
}
