import Foundation
import MLToolCore
import MLToolEngine
import MLToolTestSupport
import Testing
@testable import MLToolImport

/// keras.applications networks (MobileNetV2, EfficientNetB0, MobileNetV3Small; random seeded weights) written with
/// their Keras outputs by Tests/Fixtures/keras/make_applications.py into $MLTOOL_KERAS_APPS_DIR (2–17 MB each, too
/// large to commit: `make test` generates the Keras 3 ones into .build/keras-applications). Every Keras 3 network
/// must be there (a failure under MLTOOL_REQUIRE_ORACLES=1 otherwise); Keras 2 ones (tf_keras, made by hand) are
/// checked too when present.
@Suite struct KerasApplicationsTests {
    static let dir = ProcessInfo.processInfo.environment["MLTOOL_KERAS_APPS_DIR"]
    static let required = ["app_mnv2_k3.h5", "app_effb0_k3.h5", "app_mnv3_k3.h5"]

    @Test func applicationsMatchKeras() throws {
        guard let dir = Self.dir, !dir.isEmpty else {
            return Oracles.missing("KerasApplicationsTests: MLTOOL_KERAS_APPS_DIR is not set (make test sets it; or run Tests/Fixtures/keras/make_applications.py DIR)")
        }
        let present = Set((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? [])
        let missing = Self.required.filter { !present.contains($0) || !present.contains(String($0.dropLast(3)) + ".json") }
        guard missing.isEmpty else {
            return Oracles.missing("KerasApplicationsTests: \(missing.joined(separator: ", ")) (or its .json) missing in \(dir) (KERAS_BACKEND=jax python3 Tests/Fixtures/keras/make_applications.py \(dir))")
        }
        let files = present.filter { $0.hasPrefix("app_") && $0.hasSuffix(".h5") }.sorted()
        for file in files {
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
