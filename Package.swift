// swift-tools-version:6.0
// mltool: Create ML and coremltools for Linux. Targets depend in one direction:
//   C system libraries ← MLToolCore ← MLToolFormat ← MLToolImport
//   MLToolCore ← MLToolEngine, MLToolData, MLToolTrain, MLToolEval, MLToolQuant, MLToolExport (which uses MLToolTabular)
//   all of them ← MLTool (the library product: pipelines and classifiers) ← MLToolCLI ← mltool (only @main)
import PackageDescription

let package = Package(
    name: "mltool",
    products: [
        .executable(name: "mltool", targets: ["mltool"]),
        .library(name: "MLTool", targets: ["MLTool"]),
        // The fuzz targets' entries, for the libFuzzer package in fuzz/ (docs/SECURITY.md, "Fuzzing").
        .library(name: "MLToolFuzzEntries", targets: ["MLToolFuzzEntries"]),
    ],
    targets: [
        // Debian's C libraries (see ../shared/docs/PLATFORM.md); each shim.h includes a path that needs no -I.
        .systemLibrary(name: "CProtobufC", pkgConfig: "libprotobuf-c", providers: [.apt(["libprotobuf-c-dev"])]),
        .systemLibrary(name: "COpenBLAS", pkgConfig: "openblas", providers: [.apt(["libopenblas-dev"])]),
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CPNG", pkgConfig: "libpng", providers: [.apt(["libpng-dev"])]),
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),

        .target(name: "COnnxProto", dependencies: ["CProtobufC"]),
        .target(name: "CCoreMLProto", dependencies: ["CProtobufC"], exclude: ["coreml_subset.proto"]),
        .target(name: "MLToolCore"),
        .target(name: "MLToolFormat", dependencies: ["MLToolCore"]),
        // libhdf5 runs only in a sandboxed child process (docs/SECURITY.md); MLToolImport talks to it over a socket.
        // It is not linked: the parent dlopens it (libhdf5-dev's headers, Debian's libhdf5 at run time) before
        // forking its first reader, so no other mltool process maps it or the ~30 libraries it pulls in.
        .target(name: "CMLToolHDF5Sandbox"),
        .target(name: "MLToolImport", dependencies: ["MLToolCore", "MLToolFormat", "CMLToolHDF5Sandbox", "CProtobufC", "COnnxProto", "CCoreMLProto"]),
        .target(name: "CMLToolCPU"),
        .target(name: "CMLToolKernels", dependencies: ["CMLToolCPU"]),
        .target(name: "MLToolEngine", dependencies: ["MLToolCore", "COpenBLAS", "CMLToolCPU", "CMLToolKernels"]),
        .target(name: "MLToolData", dependencies: ["MLToolCore", "CTurboJPEG", "CPNG"]),
        .target(name: "CMLToolTrainKernels", dependencies: ["CMLToolCPU"]),
        .target(name: "MLToolTrain", dependencies: ["MLToolCore", "COpenBLAS", "CMLToolCPU", "CMLToolTrainKernels"]),
        .target(name: "MLToolEval", dependencies: ["MLToolCore", "MLToolFormat"]),
        .target(name: "MLToolQuant", dependencies: ["MLToolCore"]),
        .target(name: "MLToolExport", dependencies: ["MLToolCore", "MLToolTabular", "CProtobufC", "COnnxProto", "CCoreMLProto"]),
        // Natural language beyond one label per text: word tagging, language identification (issue 18).
        .target(name: "MLToolNL", dependencies: ["MLToolCore", "MLToolData", "MLToolTrain", "MLToolEval", "MLToolQuant"]),
        // Object detection: decode, NMS, the detector runner and box drawing (issue 17).
        .target(name: "MLToolDetect", dependencies: ["MLToolCore", "MLToolEngine", "MLToolData"]),
        // HTTP for `mltool serve` (issue 54): libmicrohttpd as Swift values, and the request bodies mltool parses.
        .target(name: "MLToolHTTP", dependencies: ["MLToolCore", "CMicroHTTPD"]),
        // Sound: decoding (libsndfile), resampling, the mel front end and windows of the speech embedding (issue 58).
        .target(name: "MLToolAudio", dependencies: ["MLToolCore", "MLToolData", "MLToolEngine", "CSndFile"]),
        // Tables: the reader, quantile bins, histogram gradient-boosted trees, forests and linear models (issue 53;
        // the linear ones fitted by MLToolTrain's L-BFGS).
        .target(name: "MLToolTabular", dependencies: ["MLToolCore", "MLToolData", "MLToolTrain"]),
        // The library product: the pipelines (train, evaluate, quantize, import, export) and the classifiers, over
        // the targets above; it re-exports them, so `import MLTool` is all a program needs.
        .target(name: "MLTool", dependencies: [
            "MLToolCore", "MLToolFormat", "MLToolImport", "MLToolEngine", "MLToolData", "MLToolTrain", "MLToolEval", "MLToolQuant", "MLToolExport", "MLToolNL", "MLToolDetect", "MLToolAudio",
            "MLToolHTTP", "MLToolTabular",
        ], resources: [
            // `mltool studio`'s page (issue 55), embedded as byte arrays (PackageResources): nothing beside the binary.
            .embedInCode("Studio/Assets/index.html"), .embedInCode("Studio/Assets/studio.css"), .embedInCode("Studio/Assets/studio.js"),
        ]),
        // One entry per reader of outside bytes (bytes in, errors swallowed): run by fuzz/ under libFuzzer and by
        // FuzzRegressionTests on every committed seed and regression input.
        .target(name: "MLToolFuzzEntries", dependencies: ["MLToolCore", "MLToolFormat", "MLToolImport", "MLToolData",
                                                   "MLToolEngine", "MLToolHTTP"]),
        // The command line: parses, calls one library entry, prints. Imports only Foundation and MLTool.
        .target(name: "MLToolCLI", dependencies: ["MLTool"]),
        .executableTarget(name: "mltool", dependencies: ["MLToolCLI"]),
        // The two programs of the package Examples/ClassifyPhotos (a user's package: `.package(path:)`, `import
        // MLTool`), built here from the same files so that make test compiles them with the test build instead of
        // compiling the whole library a second time in the example's own package (4 minutes); make example-manifest
        // checks that package's manifest against this one.
        .executableTarget(name: "ExampleClassifyPhotos", dependencies: ["MLTool"], path: "Examples/ClassifyPhotos/Sources/ClassifyPhotos"),
        .executableTarget(name: "ExampleAPIDocs", dependencies: ["MLTool"], path: "Examples/ClassifyPhotos/Sources/APIDocs"),

        // Test support (assertClose, Oracles): a regular target whose sources live under Tests/.
        .target(name: "MLToolTestSupport", dependencies: ["MLToolCore"], path: "Tests/MLToolTestSupport"),
        .testTarget(name: "MLToolTestSupportTests", dependencies: ["MLToolTestSupport", "MLToolCore"]),
        .testTarget(name: "MLToolCoreTests", dependencies: ["MLToolCore"]),
        .testTarget(name: "MLToolTests", dependencies: ["MLTool", "MLToolTestSupport"]),
        .testTarget(name: "MLToolCLITests", dependencies: ["MLTool", "MLToolTestSupport"], exclude: ["Snapshots"]),
        .testTarget(name: "MLToolEvalTests", dependencies: ["MLToolEval", "MLToolTestSupport"]),
        .testTarget(name: "MLToolQuantTests", dependencies: ["MLToolQuant"]),
        .testTarget(name: "MLToolFormatTests", dependencies: ["MLToolFormat", "MLToolCore", "MLToolTestSupport"], exclude: ["reference_reader.py"]),
        .testTarget(name: "MLToolEngineTests", dependencies: ["MLToolEngine", "MLToolFormat", "MLToolCore", "CMLToolCPU", "CMLToolKernels", "MLToolTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "MLToolImportTests", dependencies: ["MLToolImport", "MLToolCore", "MLToolEngine", "MLToolDetect", "MLToolTestSupport"]),
        .testTarget(name: "MLToolDataTests", dependencies: ["MLToolData", "MLToolCore", "MLToolTestSupport"], exclude: ["Fixtures"]),
        .testTarget(name: "MLToolTrainTests", dependencies: ["MLToolTrain", "MLToolData", "MLToolEngine", "MLToolFormat", "MLToolTestSupport"]),
        .testTarget(name: "MLToolDetectTests", dependencies: ["MLToolDetect", "MLToolImport", "MLToolFormat", "MLToolEngine", "MLToolData", "MLToolCore", "MLToolTestSupport"]),
        .testTarget(name: "MLToolTextTests", dependencies: ["MLToolData", "MLToolTestSupport"]),
        .testTarget(name: "MLToolExportTests", dependencies: ["MLToolExport", "MLToolTabular", "MLToolImport", "MLToolEngine", "MLToolFormat", "MLToolData", "MLToolQuant", "MLToolCore", "CPNG", "MLToolTestSupport"]),
        .testTarget(name: "MLToolReportTests", dependencies: ["MLToolEval", "MLToolData", "MLToolCore"]),
        .testTarget(name: "MLToolNLTests", dependencies: ["MLToolNL", "MLToolData", "MLToolCore", "MLToolFormat", "MLToolEval", "MLToolQuant", "MLToolTestSupport"]),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["MLToolFuzzEntries"]),
        .testTarget(name: "MLToolAudioTests", dependencies: ["MLToolAudio", "MLToolData", "MLToolImport", "MLToolEngine", "MLToolTrain", "MLToolCore", "MLToolTestSupport"]),
        .testTarget(name: "MLToolTabularTests", dependencies: ["MLToolTabular", "MLToolFormat", "MLToolCore", "MLToolTestSupport"]),
        .testTarget(name: "MLToolCLITextTests", dependencies: ["MLToolCLI", "MLTool", "MLToolTestSupport"]),
    ]
)
