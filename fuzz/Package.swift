// swift-tools-version:6.0
// libFuzzer builds of mltool's readers (docs/SECURITY.md, "Fuzzing"). One executable, `mltool-fuzz`, runs the
// target named by MLTOOL_FUZZ_TARGET; the targets and their entries live in the main package (MLToolFuzzEntries).
// Build (fuzz/run.sh does): swift build -c release --package-path fuzz -Xswiftc -sanitize=fuzzer,address
//   -Xswiftc -parse-as-library -Xcc -fsanitize=fuzzer-no-link,address
import PackageDescription

let package = Package(
    name: "mltool-fuzz",
    dependencies: [.package(name: "mltool", path: "..")],
    targets: [
        .executableTarget(name: "mltool-fuzz", dependencies: [.product(name: "MLToolFuzzEntries", package: "mltool")]),
    ]
)
