import Foundation
import MLToolTestSupport
import Testing

/// `mltool predict models/efficientnet-lite0.bin photo`, with mltool's own decoding and resizing, gives the same top-1
/// class as onnxruntime with PIL preprocessing (recipes/efficientnet_lite0.py wrote those into reference.json) on the
/// six photos that ship in scikit-image and scikit-learn. Under MLTOOL_REQUIRE_ORACLES=1 a missing photo, model or
/// binary is a failure.
@Suite struct PhotoPredictTests {
    static let photos = Photos.paths

    @Test func sameTopOneAsOnnxruntimeWithPIL() throws {
        guard Tool.available else { return Oracles.missing("PhotoPredictTests: \(Oracles.mltoolBinaryProblem)") }
        guard let photos = Self.photos else { return Oracles.missing("PhotoPredictTests: \(Photos.problem)") }
        let refData = try Data(contentsOf: URL(fileURLWithPath: Photos.reference))
        let reference = try #require(try JSONSerialization.jsonObject(with: refData) as? [String: [String: Any]])
        let names = photos.keys.sorted()
        #expect(names == Photos.names.sorted())
        let r = try Tool.run(["predict", Photos.model] + names.map { photos[$0]! } + ["--json", "--top", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 6)
        for (name, line) in zip(names, lines) {
            let obj = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            let top = try #require((obj["top"] as? [[String: Any]])?.first)
            let expected = try #require((reference[name]?["top5"] as? [Int])?.first)
            #expect(top["index"] as? Int == expected, "\(name): mltool \(top), onnxruntime \(expected)")
            if name == "chelsea" { #expect([281, 282].contains(top["index"] as? Int ?? -1), "chelsea is a tabby/tiger cat") }
        }
    }
}

enum Photos {
    static let root = OracleAvailabilityTests.root.path
    static let names = ["chelsea", "coffee", "rocket", "astronaut", "china", "flower"]
    static let reference = root + "/models/efficientnet-lite0-reference/reference.json"
    static let model = root + "/models/efficientnet-lite0.bin"

    /// Why `paths` is nil.
    static var problem: String {
        let found = located()
        let missing = names.filter { found[$0] == nil }
        var parts = missing.isEmpty ? [] : ["photos not found: \(missing.joined(separator: ", ")) (pip install scikit-image scikit-learn)"]
        for f in [model, reference] where !FileManager.default.fileExists(atPath: f) { parts.append("no \(f) (make models)") }
        return parts.joined(separator: "; ")
    }

    /// The six photos by name, when all six, the model and its onnxruntime reference are present.
    static let paths: [String: String]? = {
        let map = located()
        guard map.count == 6, FileManager.default.fileExists(atPath: model), FileManager.default.fileExists(atPath: reference) else {
            return nil
        }
        return map
    }()

    /// The photos python3 finds in scikit-image's and scikit-learn's data folders.
    static func located() -> [String: String] {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", """
            import os, skimage, sklearn
            s = os.path.join(os.path.dirname(skimage.__file__), 'data')
            l = os.path.join(os.path.dirname(sklearn.__file__), 'datasets', 'images')
            for k, d, f in [('chelsea', s, 'chelsea.png'), ('coffee', s, 'coffee.png'), ('rocket', s, 'rocket.jpg'),
                            ('astronaut', s, 'astronaut.png'), ('china', l, 'china.jpg'), ('flower', l, 'flower.jpg')]:
                print(k, os.path.join(d, f))
            """]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return [:] }
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        var map = [String: String]()
        for line in text.split(separator: "\n") {
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            if parts.count == 2, FileManager.default.fileExists(atPath: parts[1]) { map[parts[0]] = parts[1] }
        }
        return map
    }
}
