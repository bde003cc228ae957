import Foundation
import MLToolCore
import MLToolEngine
import Testing
@testable import MLToolImport

/// Opt-in: keras.applications networks written by make_applications.py into $MLTOOL_KERAS_APPS_DIR (too large to
/// commit), compared with Keras's own outputs. Skipped, with a note, when the variable is not set.
@Suite struct KerasApplicationsTests {
    static let dir = ProcessInfo.processInfo.environment["MLTOOL_KERAS_APPS_DIR"]

    @Test(.enabled(if: dir != nil, "opt-in: set MLTOOL_KERAS_APPS_DIR to the output of Tests/Fixtures/keras/make_applications.py"))
    func applicationsMatchKeras() throws {
        let dir = try #require(Self.dir)
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("app_") && $0.hasSuffix(".h5") }
        try #require(!files.isEmpty, "no app_*.h5 in \(dir)")
        for file in files.sorted() {
            let path = dir + "/" + file
            let model = try KerasImporter.importModel(path: path, options: ImportOptions())
            let graph = try #require(model.metadata.graph)
            let data = try Data(contentsOf: URL(fileURLWithPath: String(path.dropLast(3)) + ".json"))
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            func tensor(_ key: String) throws -> Tensor {
                let t = try #require(json[key] as? [String: Any])
                return Tensor(shape: try #require(t["shape"] as? [NSNumber]).map(\.intValue),
                              data: try #require(t["data"] as? [NSNumber]).map(\.floatValue))
            }
            let out = try Engine(model: model, threads: 1).run([graph.inputs[0].name: try tensor("input")])
            KerasFixture.expectClose(try #require(out[graph.outputs[0]]), try tensor("output"), file)
            print("KerasApplicationsTests: \(file): \(graph.nodes.count) nodes compared with Keras")
        }
    }
}
