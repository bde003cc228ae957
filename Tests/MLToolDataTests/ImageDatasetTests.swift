import Foundation
import MLToolTestSupport
import Testing
@testable import MLToolData

@Suite struct ImageDatasetTests {
    /// cat: 3 images (one nested), dog: 1 image, bird: empty, plus hidden files and a stray root file.
    private func makeTree(_ dir: TempDir) throws {
        let png = try Fixture.bytes("quad.png")
        for f in ["images/cat/b.png", "images/cat/a.png", "images/cat/sub/c.png", "images/dog/x.png"] {
            _ = try dir.file(f, png)
        }
        _ = try dir.file("images/cat/.DS_Store", text: "junk")
        _ = try dir.file("images/.hidden/z.png", png)
        _ = try dir.file("images/README.txt", text: "not a class")
        try dir.mkdir("images/bird")
    }

    @Test func folderWalkIsSortedAndSkipsHidden() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try makeTree(dir)
        let ds = try ImageDataset.load(dir.path + "/images")
        #expect(ds.labels == ["bird", "cat", "dog"])
        let root = dir.path + "/images/"
        #expect(ds.items == [ImageItem(path: root + "cat/a.png", label: "cat"),
                             ImageItem(path: root + "cat/b.png", label: "cat"),
                             ImageItem(path: root + "cat/sub/c.png", label: "cat"),
                             ImageItem(path: root + "dog/x.png", label: "dog")])
    }

    @Test func preflightNamesEmptyAndOneImageClasses() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        try makeTree(dir)
        let ds = try ImageDataset.folder(dir.path + "/images")
        let expected = DataError.classesTooSmall(source: ds.source, classes: ["bird (0 images)", "dog (1 image)"],
                                                 minimum: 2)
        #expect(throws: expected) { try ds.preflight() }
        #expect(expected.description == "\(ds.source): every class needs at least 2 usable images: "
                + "bird (0 images), dog (1 image)")
    }

    @Test func preflightSingleClassAndWarnings() throws {
        let one = ImageDataset(source: "images", labels: ["cat"], items: [
            ImageItem(path: "a", label: "cat"), ImageItem(path: "b", label: "cat")])
        #expect(throws: DataError.tooFewClasses(source: "images", labels: ["cat"])) { try one.preflight() }
        #expect(DataError.tooFewClasses(source: "images", labels: ["cat"]).description
                == "images: found only 1 class (cat); need at least 2")
        let items = ["a", "b", "c"].map { ImageItem(path: $0, label: "cat") }
            + (0..<12).map { ImageItem(path: "d\($0)", label: "dog") }
        let ds = ImageDataset(source: "images", labels: ["cat", "dog"], items: items)
        #expect(try ds.preflight() == ["images: class 'cat' has only 3 images; 10 or more train better"])
        // Undecodable images do not count.
        #expect(throws: DataError.classesTooSmall(source: "images", classes: ["cat (1 image)"], minimum: 2)) {
            try ds.preflight(unusable: ["a", "b"])
        }
    }

    @Test func tooManyBadImagesIsFatal() throws {
        let ds = ImageDataset(source: "images", labels: ["a", "b"],
                              items: (0..<20).map { ImageItem(path: "\($0).jpg", label: $0 < 10 ? "a" : "b") })
        let bad = [DataError.emptyFile(file: "3.jpg"), .notAnImage(file: "7.jpg", head: [0x47, 0x49, 0x46])]
        try ds.checkBadImages(bad)  // 2 of 20 = 10 %: allowed
        let err = DataError.tooManyBadImages(source: "images", bad: 3, total: 20, limitPercent: 10,
                                             first: "3.jpg: empty file (0 bytes)")
        #expect(throws: err) { try ds.checkBadImages(bad + [.truncatedImage(file: "9.jpg", format: "JPEG", place: "the file ends at byte 100, inside the scan that starts at byte 20")]) }
        #expect(err.description == "images: 3 of 20 images could not be decoded (more than 10%); "
                + "first: 3.jpg: empty file (0 bytes)")
    }

    @Test func csvWithRelativePathsAndMissingFile() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let png = try Fixture.bytes("quad.png")
        _ = try dir.file("imgs/a b.png", png)
        _ = try dir.file("imgs/c.png", png)
        let csv = try dir.file("data.csv", text: "label,file\ncat,\"imgs/a b.png\"\r\ndog,imgs/c.png\r\n")
        let ds = try ImageDataset.load(csv, pathColumn: "file")
        #expect(ds.labels == ["cat", "dog"])
        #expect(ds.items == [ImageItem(path: dir.path + "/imgs/a b.png", label: "cat"),
                             ImageItem(path: dir.path + "/imgs/c.png", label: "dog")])
        let bad = try dir.file("bad.csv", text: "path,label\nimgs/c.png,dog\nimgs/gone.jpg,cat\n")
        #expect(throws: DataError.missingFile(file: bad, line: 3, path: "imgs/gone.jpg")) {
            try ImageDataset.csv(bad)
        }
        #expect(DataError.missingFile(file: "bad.csv", line: 3, path: "imgs/gone.jpg").description
                == "bad.csv:3: no such file: imgs/gone.jpg")
    }
}

@Suite struct DataSplitTests {
    private let labels = (0..<100).map { $0 % 3 == 0 ? "a" : $0 % 3 == 1 ? "b" : "c" } + ["d", "d"]

    @Test func stratifiedAndDeterministic() throws {
        let (train, held) = try DataSplit.stratified(labels: labels, fraction: 0.2, seed: 42)
        #expect(Set(train).isDisjoint(with: held) && train.count + held.count == labels.count)
        #expect(train == train.sorted() && held == held.sorted())
        var perClass = [String: Int]()
        for i in held { perClass[labels[i], default: 0] += 1 }
        #expect(perClass == ["a": 7, "b": 7, "c": 7])  // round(34·0.2) = 7, round(33·0.2) = 7; "d" (2) keeps both
        let again = try DataSplit.stratified(labels: labels, fraction: 0.2, seed: 42)
        #expect(again.held == held)
        let other = try DataSplit.stratified(labels: labels, fraction: 0.2, seed: 43)
        #expect(other.held != held)
        #expect(throws: DataError.self) { try DataSplit.stratified(labels: labels, fraction: 1, seed: 0) }
    }

    @Test func addingAClassLeavesOthersAlone() throws {
        let base = try DataSplit.stratified(labels: labels, fraction: 0.3, seed: 7).held
        let more = try DataSplit.stratified(labels: labels + Array(repeating: "e", count: 10), fraction: 0.3, seed: 7)
        #expect(more.held.filter { $0 < labels.count } == base)
    }

    @Test func createMLValidationRule() throws {
        #expect([0, 49, 50, 199, 200, 5000].map { ValidationRule.autoFraction(count: $0) } == [0, 0, 0.1, 0.1, 0.05, 0.05])
        #expect(try ValidationRule.parse("auto") == .auto)
        #expect(try ValidationRule.parse("none").fraction(count: 1000) == 0)
        #expect(try ValidationRule.parse("0.25").fraction(count: 10) == 0.25)
        #expect(throws: DataError.invalidArgument(what: "--validation", value: "lots",
                                                  expected: "auto, none or a fraction in [0, 1)")) {
            try ValidationRule.parse("lots")
        }
    }
}

@Suite struct FeatureCacheTests {
    private let key = FeatureCache.key(contentHash: "abc", extractor: "lite0", preprocessing: "p", variant: "orig")

    @Test func roundTripAndKeysDiffer() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let cache = FeatureCache(directory: dir.path)
        #expect(cache.get(key: key) == nil)
        let v: [Float] = [1.5, -2, .pi, 0, 1e-30]
        try cache.put(key: key, features: v)
        #expect(cache.get(key: key) == v)
        #expect(key.count == 64)
        #expect(FeatureCache.key(contentHash: "abc", extractor: "lite0", preprocessing: "p", variant: "flip") != key)
        #expect(FeatureCache.key(contentHash: "ab", extractor: "clite0", preprocessing: "p", variant: "orig") != key)
        #expect(FeatureCache.defaultDirectory(environment: ["MLTOOL_CACHE": "/c", "HOME": "/h"]) == "/c/features")
        #expect(FeatureCache.defaultDirectory(environment: ["HOME": "/h"]) == "/h/.cache/mltool/features")
    }

    /// Every truncation and every single-bit flip of an entry is a miss, and the damaged file is removed.
    @Test func damagedEntriesAreMissesAndRemoved() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let cache = FeatureCache(directory: dir.path)
        try cache.put(key: key, features: [1, 2, 3])
        let path = cache.path(for: key)
        let good = try ImageDecoder.readFile(path)
        #expect(FeatureCache.decode(good, key: key) == [1, 2, 3])
        // In memory: every prefix, every single-bit flip, one byte too many.
        for n in 0..<good.count { #expect(FeatureCache.decode(Array(good[0..<n]), key: key) == nil, "prefix \(n)") }
        for bit in 0..<(good.count * 8) {
            var bad = good
            bad[bit / 8] ^= UInt8(1 << (bit % 8))
            #expect(FeatureCache.decode(bad, key: key) == nil, "bit \(bit)")
        }
        #expect(FeatureCache.decode(good + [0], key: key) == nil)
        // On disk: a torn entry is a miss and is removed.
        for n in [0, 10, good.count - 1] {
            try Data(good[0..<n]).write(to: URL(fileURLWithPath: path))
            #expect(cache.get(key: key) == nil, "prefix \(n)")
            #expect(!FileManager.default.fileExists(atPath: path))
        }
        try Data(good).write(to: URL(fileURLWithPath: path))
        #expect(cache.get(key: key) == [1, 2, 3])
        // An entry filed under another key is not used for this one.
        let other = FeatureCache.key(contentHash: "x", extractor: "", preprocessing: "", variant: "")
        try FileManager.default.createDirectory(atPath: (cache.path(for: other) as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(good).write(to: URL(fileURLWithPath: cache.path(for: other)))
        #expect(cache.get(key: other) == nil)
        // Non-finite features with a valid checksum (written wrong): a miss, removed, so training recomputes them.
        for bad: Float in [.nan, .infinity, -.infinity] {
            try cache.put(key: key, features: [1, bad, 3])
            #expect(cache.get(key: key) == nil, "\(bad)")
            #expect(!FileManager.default.fileExists(atPath: path), "\(bad): the entry was not removed")
        }
    }
}
