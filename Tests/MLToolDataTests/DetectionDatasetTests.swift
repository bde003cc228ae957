import Foundation
import MLToolCore
import MLToolTestSupport
import Testing
@testable import MLToolData

/// The four annotation layouts, the bad-annotation errors and named skips (exact messages), and the raccoon set.
@Suite struct DetectionDatasetTests {
    /// A fresh folder with `photos` (name → width × height) as PNGs.
    func folder(_ photos: [String: (Int, Int)], under sub: String = "") throws -> String {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mltool-detect-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir + "/" + sub, withIntermediateDirectories: true)
        for (name, (w, h)) in photos {
            let img = RGBImage(width: w, height: h, pixels: [UInt8](repeating: 90, count: w * h * 3))
            try Data(try PNGEncoder.encode(img)).write(to: URL(fileURLWithPath: dir + "/" + sub + name))
        }
        return dir
    }

    func write(_ text: String, _ path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func expectError(_ expected: DataError, _ body: () throws -> Void) {
        do { try body(); Issue.record("no error, expected \(expected)") } catch let e as DataError {
            #expect(e == expected)
            #expect(e.description == expected.description)
        } catch { Issue.record("\(error)") }
    }

    // MARK: layouts

    @Test func createMLFolder() throws {
        let dir = try folder(["a.png": (40, 30), "b.png": (64, 48)])
        try write(#"""
        [{"image": "a.png", "annotations": [{"label": "cat", "coordinates": {"x": 20, "y": 15, "width": 10, "height": 6}}]},
         {"image": "b.png", "annotations": [{"label": "dog", "coordinates": {"x": 32.5, "y": 24, "width": 20, "height": 10}},
                                            {"label": "cat", "coordinates": {"x": 10, "y": 10, "width": 8, "height": 8}}]}]
        """#, dir + "/annotations.json")
        let d = try DetectionDataset.load(dir)
        #expect(d.format == .createML && d.labels == ["cat", "dog"] && d.images.count == 2 && d.skipped.isEmpty)
        #expect(d.images[0].objects == [ObjectAnnotation(label: "cat", box: BoundingBox(x: 15, y: 12, width: 10, height: 6))])
        #expect(d.images[1].width == 64 && d.images[1].objects[0].box == BoundingBox(x: 22.5, y: 19, width: 20, height: 10))
        #expect(d.counts().map(\.boxes) == [2, 1])
    }

    @Test func pascalVOCFolder() throws {
        let dir = try folder(["p.png": (50, 40)], under: "images/")
        try write("""
        <?xml version="1.0"?>
        <annotation><filename>p.png</filename><size><width>50</width><height>40</height><depth>3</depth></size>
          <!-- a comment -->
          <object><name>r&amp;d</name><bndbox><xmin>5</xmin><ymin>6</ymin><xmax>25</xmax><ymax>30</ymax></bndbox></object>
        </annotation>
        """, dir + "/annotations/p.xml")
        let d = try DetectionDataset.load(dir)
        #expect(d.format == .pascalVOC && d.labels == ["r&d"])
        #expect(d.images.first?.objects.first?.box == BoundingBox(x1: 5, y1: 6, x2: 25, y2: 30))
    }

    @Test func yoloFolder() throws {
        let dir = try folder(["q.png": (100, 50)], under: "images/")
        try write("cat\ndog\n", dir + "/classes.txt")
        try write("1 0.5 0.5 0.2 0.4\n\n0 0.1 0.1 0.1 0.1\n", dir + "/labels/q.txt")
        let d = try DetectionDataset.load(dir)
        #expect(d.format == .yolo && d.labels == ["cat", "dog"])
        let boxes = d.images.first?.objects ?? []
        #expect(boxes.count == 2 && boxes[0] == ObjectAnnotation(label: "dog", box: BoundingBox(x: 40, y: 15, width: 20, height: 20)))
    }

    @Test func csvWithSkips() throws {
        let dir = try folder(["a.png": (40, 30)], under: "images/")
        let csv = dir + "/boxes.csv"
        try write("""
        filename,width,height,class,xmin,ymin,xmax,ymax
        a.png,40,30,cat,1,2,20,25
        a.png,40,30,cat,10,5,60,20
        a.png,40,30,cat,10,5,10,20
        a.png,40,30,dog,30,10,40.5,30
        missing.png,40,30,cat,1,1,5,5
        """, csv)
        let d = try DetectionDataset.load(csv)
        #expect(d.format == .csv && d.images.count == 1 && d.annotationCount == 5)
        #expect(d.images[0].objects.map(\.label) == ["cat", "dog"])
        #expect(d.images[0].objects[1].box == BoundingBox(x1: 30, y1: 10, x2: 40, y2: 30))   // clipped by half a pixel
        #expect(d.skipped.map(\.description) == [
            "\(csv): line 3: skipped (box outside the image): 'cat' box x 10–60, y 5–20 in a 40×30 image",
            "\(csv): line 4: skipped (zero-area box): 'cat' box x 10–10, y 5–20",
            "\(csv): line 6: skipped (unknown image): no such file: missing.png",
        ])
        expectError(.tooManyBadAnnotations(source: csv, skipped: 3, total: 5, limitPercent: 10,
                                           first: "\(csv): line 3: skipped (box outside the image): 'cat' box x 10–60, y 5–20 in a 40×30 image")) {
            try d.checkSkipped()
        }
        try d.checkSkipped(limitPercent: 60)
    }

    /// A photo whose boxes were all skipped is left out and named (not trained on as background); a photo that
    /// cannot be decoded is dropped with its boxes by `droppingUnreadablePhotos`, or stops it when strict.
    @Test func photosWithoutUsableBoxesOrPixelsAreNamed() throws {
        let dir = try folder(["a.png": (40, 30), "b.png": (40, 30), "c.png": (40, 30)], under: "images/")
        try write("cat\n", dir + "/classes.txt")
        try write("0 0.5 0.5 0.2 0.2\n", dir + "/labels/a.txt")
        try write("0 0.5 0.5 0 0.2\n0 2.5 0.5 0.2 0.2\n", dir + "/labels/b.txt")   // zero-area, then outside
        let png = try Data(contentsOf: URL(fileURLWithPath: dir + "/images/c.png"))
        try png.prefix(png.count - 20).write(to: URL(fileURLWithPath: dir + "/images/c.png"))   // IDAT cut short
        try write("0 0.5 0.5 0.2 0.2\n", dir + "/labels/c.txt")
        // c.png's header is read (YOLO needs its size): it is named by `load` already, with its box.
        let d = try DetectionDataset.load(dir)
        #expect(d.images.map { ($0.path as NSString).lastPathComponent } == ["a.png"])
        #expect(d.skipped.map(\.description) == [
            "\(dir)/labels/b.txt: line 1: skipped (zero-area box): 'cat' box x 20–20, y 12–18",
            "\(dir)/labels/b.txt: line 2: skipped (box outside the image): 'cat' box x 96–104, y 12–18 in a 40×30 image",
            "\(dir)/labels/b.txt: every line: skipped (no box left): b.png: all 2 of its boxes were skipped",
            "\(dir)/images/c.png: skipped (photo cannot be decoded): truncated PNG: the file ends at byte 93, inside the IDAT chunk at byte 46 (it claims 43 bytes)",
        ])
        #expect(d.skipped.map(\.boxes) == [1, 1, 0, 1] && d.annotationCount == 4)
        let readable = try d.droppingUnreadablePhotos(maxPixels: 1 << 20, workers: 2)
        #expect(readable.images.count == 1 && readable.skipped == d.skipped)
        do { _ = try d.droppingUnreadablePhotos(maxPixels: 1 << 20, workers: 1, strict: true); Issue.record("no error") } catch let e as DataError {
            #expect(e.description.hasPrefix("\(dir)/images/c.png: "), "\(e)")
        }
        // Too small a pixel limit makes every photo unreadable, each named with the limit.
        let none = try d.droppingUnreadablePhotos(maxPixels: 100, workers: 2)
        #expect(none.images.isEmpty && none.labels.isEmpty && none.skipped.count == 5)
        #expect(none.skipped.last?.description == "\(dir)/images/a.png: skipped (photo cannot be decoded): 40×30 is 1200 pixels, over the limit of 100")
    }

    // MARK: errors, exact

    @Test func missingLabels() throws {
        let dir = try folder(["a.png": (40, 30)])
        let json = dir + "/a.json"
        try write(#"[{"image": "a.png", "annotations": [{"coordinates": {"x": 1, "y": 1, "width": 2, "height": 2}}]}]"#, json)
        expectError(.badAnnotation(file: json, place: "image 1 ('a.png') annotation 1", expected: "a label", actual: "none")) {
            _ = try DetectionDataset.load(dir)
        }
        let voc = try folder(["p.png": (50, 40)], under: "images/")
        let xml = voc + "/annotations/p.xml"
        try write("<annotation>\n<filename>p.png</filename>\n<object>\n<name> </name><bndbox/></object></annotation>", xml)
        expectError(.badAnnotation(file: xml, place: "object 1 (line 3)", expected: "a label", actual: "an empty label")) {
            _ = try DetectionDataset.load(voc)
        }
        let csv = dir + "/b.csv"
        try write("filename,width,height,class,xmin,ymin,xmax,ymax\na.png,40,30,,1,2,3,4\n", csv)
        expectError(.badAnnotation(file: csv, place: "line 2", expected: "a label", actual: "an empty label")) {
            _ = try DetectionDataset.csv(csv)
        }
    }

    @Test func malformedFields() throws {
        let dir = try folder(["a.png": (40, 30)])
        let json = dir + "/a.json"
        try write(#"[{"image": "a.png", "annotations": [{"label": "x", "coordinates": {"x": "one", "y": 1, "width": 2, "height": 2}}]}]"#, json)
        expectError(.badAnnotation(file: json, place: "image 1 ('a.png') annotation 1", expected: "a number for coordinates.x", actual: "one")) {
            _ = try DetectionDataset.createML(json: json)
        }
        try write(#"{"image": "a.png"}"#, json)
        expectError(.badAnnotation(file: json, place: "top level", expected: "an array of {\"image\", \"annotations\"}", actual: "an object")) {
            _ = try DetectionDataset.createML(json: json)
        }
        let voc = try folder(["p.png": (50, 40)], under: "images/")
        let xml = voc + "/annotations/p.xml"
        try write("<annotation>\n<filename>p.png</filename>\n<object><name>a</name>\n<bndbox><xmin>1</xmin></bndbox></object></annotation>", xml)
        expectError(.badAnnotation(file: xml, place: "object 1 (line 3)", expected: "a number for ymin", actual: "nothing")) {
            _ = try DetectionDataset.pascalVOC(voc)
        }
        try write("<annotation>\n<filename>p.png</filename>\n<object></annotation>", xml)
        expectError(.badAnnotation(file: xml, place: "line 3", expected: "</object>", actual: "</annotation>")) {
            _ = try DetectionDataset.pascalVOC(voc)
        }
        let yolo = try folder(["q.png": (10, 10)], under: "images/")
        try write("cat\n", yolo + "/classes.txt")
        try write("3 0.5 0.5 0.1 0.1\n", yolo + "/labels/q.txt")
        expectError(.badAnnotation(file: yolo + "/labels/q.txt", place: "line 1", expected: "a class index below 1 (classes.txt)", actual: "3")) {
            _ = try DetectionDataset.yolo(yolo)
        }
    }

    // MARK: real data

    @Test func raccoonVOCAndCSVAgree() throws {
        guard let root = SharedDatasets.raccoon else { Oracles.missing("the raccoon set (../shared/datasets/raccoon or RACCOON_DIR)"); return }
        let voc = try DetectionDataset.load(root)
        #expect(voc.format == .pascalVOC && voc.images.count == 200 && voc.labels == ["raccoon"] && voc.skipped.isEmpty)
        #expect(voc.images.reduce(0) { $0 + $1.objects.count } == 217)
        let train = try DetectionDataset.load(root + "/data/train_labels.csv"), test = try DetectionDataset.load(root + "/data/test_labels.csv")
        #expect(train.images.count == 160 && test.images.count == 40 && train.skipped.isEmpty && test.skipped.isEmpty)
        #expect(train.images.reduce(0) { $0 + $1.objects.count } == 173 && test.images.reduce(0) { $0 + $1.objects.count } == 44)
        // The same boxes as the XML files.
        let byPath = Dictionary(uniqueKeysWithValues: voc.images.map { (($0.path as NSString).lastPathComponent, $0) })
        for i in train.images + test.images {
            let v = try #require(byPath[(i.path as NSString).lastPathComponent])
            #expect(Set(v.objects) == Set(i.objects) && v.width == i.width && v.height == i.height, "\(i.path)")
        }
    }

    /// `looksLikeAnnotations` (how `mltool train` tells detection data, without loading it) says yes to each layout
    /// `load` reads and no to a label-folder tree — even one with a class named "labels" — or a table of paths.
    @Test func annotationLayoutsAreToldFromNamesAndOneHeader() throws {
        let d = try TempDir()
        defer { d.cleanup() }
        _ = try d.file("voc/annotations/a.xml", text: "<annotation/>")
        _ = try d.file("yolo/labels/a.txt", text: "0 0.5 0.5 0.1 0.1\n")
        _ = try d.file("yolo/classes.txt", text: "cat\n")
        _ = try d.file("cml/boxes.json", text: "[{\"image\": \"a.jpg\", \"annotations\": []}]")
        _ = try d.file("det.csv", text: "filename,width,height,class,xmin,ymin,xmax,ymax\n")
        _ = try d.file("folders/labels/a.png", [0x89])
        _ = try d.file("folders/cats/b.png", [0x89])
        _ = try d.file("paths.csv", text: "path,label\na.png,cat\n")
        _ = try d.file("other/data.json", text: "{\"annotations\": 1}")
        for yes in ["voc", "yolo", "cml", "cml/boxes.json", "det.csv"] {
            #expect(DetectionDataset.looksLikeAnnotations(d.path + "/" + yes), "\(yes)")
        }
        for no in ["folders", "paths.csv", "other", "missing"] {
            #expect(!DetectionDataset.looksLikeAnnotations(d.path + "/" + no), "\(no)")
        }
        if let root = SharedDatasets.raccoon {
            #expect(DetectionDataset.looksLikeAnnotations(root) && DetectionDataset.looksLikeAnnotations(root + "/data/train_labels.csv"))
        }
    }
}
