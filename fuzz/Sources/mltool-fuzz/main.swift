// libFuzzer's entry points (libFuzzer supplies main). Built with -parse-as-library: no top-level code here.
import Foundation
import MLToolFuzzEntries

/// The target named by MLTOOL_FUZZ_TARGET, found once.
nonisolated(unsafe) private var target: FuzzTarget?

/// Before the first input: MLTOOL_FUZZ_LIST=1 prints "name dictionary" per target and exits; otherwise the
/// target must be named.
@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>) -> CInt {
    let environment = ProcessInfo.processInfo.environment
    if environment["MLTOOL_FUZZ_LIST"] != nil {
        for t in FuzzTarget.all { print(t.name, t.dictionary) }
        exit(0)
    }
    guard let name = environment["MLTOOL_FUZZ_TARGET"], let found = FuzzTarget.named(name) else {
        let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
        fputs("mltool-fuzz: set MLTOOL_FUZZ_TARGET to one of: \(names)\n", stderr)
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
