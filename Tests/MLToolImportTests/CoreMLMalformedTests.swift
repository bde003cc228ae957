import Foundation
import MLToolCore
import Testing
@testable import MLToolImport

/// Damaged Core ML files, each made in code from a committed fixture: every one is an ImportError (exit 65 unless
/// the input is missing) naming the file and the place, never a crash, and no path leaves the package.
@Suite struct CoreMLMalformedTests {
    /// A fresh copy of a fixture package in a temporary directory.
    static func copy(_ name: String) throws -> (dir: String, package: String) {
        let dir = NSTemporaryDirectory() + "mltool-coreml-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        let package = dir + "/" + name
        try FileManager.default.copyItem(atPath: CoreMLFixtures.path(name), toPath: package)
        return (dir, package)
    }

    static func message(_ body: () throws -> Model) -> (String, MLToolCore.ExitStatus)? {
        do { _ = try body(); return nil } catch let e as ImportError { return (e.description, e.exitStatus) } catch { return ("\(error)", MLToolCore.ExitStatus.software) }
    }

    @Test func truncatedAndGarbledSpecifications() throws {
        let bytes = try Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("small_cnn.mlmodel")))
        let dir = NSTemporaryDirectory() + "mltool-coreml-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/cut.mlmodel"
        // Every 61st prefix (and the last byte cut off): each must throw an ImportError, never crash or import.
        var cuts = Array(stride(from: 0, to: bytes.count, by: 61)) + [bytes.count - 1]
        cuts.removeAll { $0 == 0 }
        for n in cuts {
            try bytes.prefix(n).write(to: URL(fileURLWithPath: path))
            let r = Self.message { try CoreMLImporter.importModel(path: path) }
            #expect(r != nil, "a \(n)-byte prefix imported")
            #expect(r?.1 == .dataError, "prefix \(n): \(r?.0 ?? "")")
        }
        try bytes.prefix(1000).write(to: URL(fileURLWithPath: path))
        #expect(Self.message { try CoreMLImporter.importModel(path: path) }?.0
            == "\(path): not a valid model: not a Core ML model specification: byte 313, Model.neuralNetworkClassifier: a length of 19529 bytes runs past the end of its message at byte 1000 (684 bytes are left)")
        try Data().write(to: URL(fileURLWithPath: path))
        #expect(Self.message { try CoreMLImporter.importModel(path: path) }?.0 == "\(path): not a valid model: the file is empty")
        // Garbled: every 7th byte flipped.
        var garbled = bytes
        for i in stride(from: 3, to: garbled.count, by: 7) { garbled[i] ^= 0xA5 }
        try garbled.write(to: URL(fileURLWithPath: path))
        #expect(Self.message { try CoreMLImporter.importModel(path: path) }?.1 == .dataError)
    }

    @Test func weightOffsetPastTheEndOfWeightBin() throws {
        let (dir, package) = try Self.copy("resnet_style.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let weights = package + "/Data/com.apple.CoreML/weights/weight.bin"
        // Keep the header and the first blob's metadata, cut its data short.
        let full = try Data(contentsOf: URL(fileURLWithPath: weights))
        try full.prefix(160).write(to: URL(fileURLWithPath: weights))
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.1 == .dataError)
        #expect(r.0 == "\(weights): op 'head_bias' (const): blob data at byte 128 (metadata at byte 64): expected 40 bytes inside the file, found a file of 160 bytes",
                "\(r.0)")
        // Cut inside the first blob's metadata.
        try full.prefix(100).write(to: URL(fileURLWithPath: weights))
        #expect(Self.message { try CoreMLImporter.importModel(path: package) }?.0
            == "\(weights): op 'head_bias' (const): blob metadata at byte 64: expected 64 bytes inside the file, found a file of 100 bytes")
        // Cut inside the data of a later blob.
        try full.prefix(1900).write(to: URL(fileURLWithPath: weights))
        let r2 = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r2.1 == .dataError)
        #expect(r2.0 == "\(weights): op 'const_0' (const): blob data at byte 1600 (metadata at byte 1536): expected 1728 bytes inside the file, found a file of 1900 bytes")
    }

    @Test func blobHeaderWithABadSentinel() throws {
        let (dir, package) = try Self.copy("resnet_style.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let weights = package + "/Data/com.apple.CoreML/weights/weight.bin"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: weights))
        bytes.replaceSubrange(64..<68, with: [0xEF, 0xBE, 0xAD, 0x0B])
        try bytes.write(to: URL(fileURLWithPath: weights))
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.1 == .dataError)
        #expect(r.0 == "\(weights): op 'head_bias' (const): blob metadata sentinel at byte 64: expected 0xDEADBEEF, found 0xBADBEEF", "\(r.0)")
        // A weight file whose header is not MILBlob version 2.
        bytes.replaceSubrange(4..<8, with: [9, 0, 0, 0])
        try bytes.write(to: URL(fileURLWithPath: weights))
        #expect(Self.message { try CoreMLImporter.importModel(path: package) }?.0 == "\(weights): header version (byte 4): expected 2, found 9")
    }

    /// Rewrites the root item's path in the manifest.
    static func setManifestPath(_ package: String, _ path: String) throws {
        let url = URL(fileURLWithPath: package + "/Manifest.json")
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let root = try #require(json["rootModelIdentifier"] as? String)
        var items = try #require(json["itemInfoEntries"] as? [String: Any])
        var item = try #require(items[root] as? [String: Any])
        item["path"] = path
        items[root] = item
        json["itemInfoEntries"] = items
        try JSONSerialization.data(withJSONObject: json).write(to: url)
    }

    @Test func manifestPathsThatLeaveThePackageAreRefused() throws {
        let (dir, package) = try Self.copy("small_cnn.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let manifest = package + "/Manifest.json"
        let place = { (id: String) in "\(manifest): itemInfoEntries['\(id)'].path: refused: " }
        let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: manifest))) as? [String: Any]
        let id = try #require(json?["rootModelIdentifier"] as? String)
        // A real file outside the package that the paths below point at: it must never be read.
        try Data(contentsOf: URL(fileURLWithPath: CoreMLFixtures.path("small_cnn.mlmodel"))).write(to: URL(fileURLWithPath: dir + "/outside.mlmodel"))

        try Self.setManifestPath(package, "../../outside.mlmodel")
        #expect(Self.message { try CoreMLImporter.importModel(path: package) }?.0 == place(id) + "path '../../outside.mlmodel' leaves the package")
        try Self.setManifestPath(package, dir + "/outside.mlmodel")
        #expect(Self.message { try CoreMLImporter.importModel(path: package) }?.0
            == place(id) + "absolute path '\(dir)/outside.mlmodel' (paths must stay inside the package)")
        // A symlink inside the package that points out of it.
        try Self.setManifestPath(package, "com.apple.CoreML/link.mlmodel")
        try FileManager.default.createSymbolicLink(atPath: package + "/Data/com.apple.CoreML/link.mlmodel", withDestinationPath: dir + "/outside.mlmodel")
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.0 == place(id) + "'Data/com.apple.CoreML/link.mlmodel' is a symbolic link (links are never followed out of the model's directory)")
        #expect(r.1 == .dataError)
    }

    @Test func weightDirectorySymlinkedOutOfThePackageIsRefused() throws {
        let (dir, package) = try Self.copy("resnet_style.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let weights = package + "/Data/com.apple.CoreML/weights"
        try FileManager.default.moveItem(atPath: weights, toPath: dir + "/weights")
        try FileManager.default.createSymbolicLink(atPath: weights, withDestinationPath: dir + "/weights")
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.0 == "\(package)/Data/com.apple.CoreML/model.mlmodel: op 'head_bias' (const): refused: 'Data/com.apple.CoreML/weights' is a symbolic link (links are never followed out of the model's directory)",
                "\(r.0)")
        #expect(r.1 == .dataError)
    }

    @Test func hardLinkedWeightFileIsRefused() throws {
        let (dir, package) = try Self.copy("small_cnn.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        // A second name for the weight file, outside the package: the package's file could be anyone's.
        let weights = package + "/Data/com.apple.CoreML/weights/weight.bin"
        try FileManager.default.linkItem(atPath: weights, toPath: dir + "/elsewhere.bin")
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.0.hasSuffix("refused: the file has 2 hard links (a file with more than one name may live outside the model's directory)"), "\(r.0)")
        #expect(r.1 == .dataError)
    }

    /// An ML Program → NMS pipeline package (ct.utils.make_pipeline names the program's weights weights/0-weight.bin):
    /// a cut or missing weight file is an error naming that file and the op, as for a lone program.
    @Test func pipelinePackageWithDamagedWeights() throws {
        let (dir, package) = try Self.copy("tiny_detector.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let weights = package + "/Data/com.apple.CoreML/weights/0-weight.bin"
        let full = try Data(contentsOf: URL(fileURLWithPath: weights))
        try full.prefix(300).write(to: URL(fileURLWithPath: weights))
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.1 == .dataError)
        #expect(r.0 == "\(weights): op 'offset' (const): blob data at byte 128 (metadata at byte 64): expected 1024 bytes inside the file, found a file of 300 bytes", "\(r.0)")
        try FileManager.default.removeItem(atPath: weights)
        let m = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(m.1 == .noInput)
        #expect(m.0 == "\(weights): cannot read: no such weight file (or it cannot be read)", "\(m.0)")
    }

    @Test func missingManifestIsMissingInput() throws {
        let (dir, package) = try Self.copy("small_cnn.mlpackage")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        try FileManager.default.removeItem(atPath: package + "/Manifest.json")
        let r = try #require(Self.message { try CoreMLImporter.importModel(path: package) })
        #expect(r.1 == .noInput)
        #expect(r.0 == "\(package)/Manifest.json: cannot read: no Manifest.json in the package (or it cannot be read)")
    }
}
