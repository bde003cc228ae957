import Foundation
import MLToolCore

extension DetectionDataset {
    private static func exists(_ p: String) -> Bool { FileManager.default.fileExists(atPath: p) && !DirectoryWalk.isDirectory(p) }

    /// What a JSON value is, for messages.
    private static func kind(_ v: Any?) -> String {
        switch v {
        case nil: return "none"
        case is NSNull: return "null"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        case is String: return "a string"
        default: return "a number"
        }
    }

    /// Create ML's JSON: photos relative to the JSON's folder; sizes read from the photos' headers.
    public static func createML(json path: String) throws -> DetectionDataset {
        let bytes = try ImageDecoder.readFile(path)
        if let at = bytes.withUnsafeBytes({ InputLimits.firstTooDeepJSON($0) }) {
            throw DataError.jsonTooDeep(file: path, offset: at, limit: InputLimits.maxJSONDepth)
        }
        let root: Any
        do { root = try JSONSerialization.jsonObject(with: Data(bytes)) } catch {
            throw DataError.badAnnotation(file: path, place: "JSON", expected: "valid JSON", actual: "\((error as NSError).localizedDescription)")
        }
        guard let entries = root as? [Any] else {
            throw DataError.badAnnotation(file: path, place: "top level", expected: "an array of {\"image\", \"annotations\"}", actual: kind(root))
        }
        let base = (path as NSString).deletingLastPathComponent
        var b = Builder(source: path)
        for (i, entry) in entries.enumerated() {
            let place = "image \(i + 1)"
            guard let e = entry as? [String: Any] else {
                throw DataError.badAnnotation(file: path, place: place, expected: "an object {\"image\", \"annotations\"}", actual: kind(entry))
            }
            guard let name = e["image"] as? String, !name.isEmpty else {
                throw DataError.badAnnotation(file: path, place: place, expected: "\"image\": a file name", actual: e["image"].map { "\($0)" } ?? "none")
            }
            guard let annotations = e["annotations"] as? [Any] else {
                throw DataError.badAnnotation(file: path, place: "\(place) ('\(name)')", expected: "\"annotations\": an array", actual: kind(e["annotations"]))
            }
            var objects: [ObjectAnnotation] = []
            for (k, a) in annotations.enumerated() {
                let at = "\(place) ('\(name)') annotation \(k + 1)"
                guard let o = a as? [String: Any] else {
                    throw DataError.badAnnotation(file: path, place: at, expected: "an object {\"label\", \"coordinates\"}", actual: kind(a))
                }
                let label = try Self.label(o["label"] as? String, file: path, place: at)
                guard let c = o["coordinates"] as? [String: Any] else {
                    throw DataError.badAnnotation(file: path, place: at, expected: "\"coordinates\": {\"x\", \"y\", \"width\", \"height\"}", actual: "none")
                }
                func v(_ k: String) throws -> Double {
                    guard let n = c[k] as? NSNumber, !(c[k] is Bool) else {
                        throw DataError.badAnnotation(file: path, place: at, expected: "a number for coordinates.\(k)", actual: c[k].map { "\($0)" } ?? "nothing")
                    }
                    return n.doubleValue
                }
                let (x, y, w, h) = (try v("x"), try v("y"), try v("width"), try v("height"))
                objects.append(ObjectAnnotation(label: label, box: BoundingBox(x: x - w / 2, y: y - h / 2, width: w, height: h)))
            }
            let photo = name.hasPrefix("/") ? name : base + "/" + name
            guard exists(photo) else {
                b.unknownImage(name, file: path, place: place, boxes: objects.count)
                continue
            }
            guard let size = b.size(of: photo, boxes: objects.count) else { continue }
            let kept = objects.enumerated().compactMap { k, o in
                b.check(o, width: size.width, height: size.height, file: path, place: "\(place) ('\(name)') annotation \(k + 1)")
            }
            b.add(AnnotatedImage(path: photo, width: size.width, height: size.height, objects: kept), annotated: objects.count,
                  file: path, place: "\(place) ('\(name)')")
        }
        return b.dataset(.createML)
    }

    /// A Pascal VOC folder: `annotations/*.xml`, photos in `images/`, `JPEGImages/` or beside the XML files.
    public static func pascalVOC(_ folder: String) throws -> DetectionDataset {
        let dir = folder + "/annotations"
        var b = Builder(source: folder)
        let photoDirs = [folder + "/images", folder + "/JPEGImages", dir, folder]
        for name in try DirectoryWalk.listing(dir) where name.lowercased().hasSuffix(".xml") {
            let file = dir + "/" + name
            let root = try XMLReader.parse(try ImageDecoder.readFile(file), file: file)
            guard root.name == "annotation" else {
                throw DataError.badAnnotation(file: file, place: "line \(root.line)", expected: "<annotation>", actual: "<\(root.name)>")
            }
            guard let filename = root.value("filename"), !filename.isEmpty else {
                throw DataError.badAnnotation(file: file, place: "line \(root.line)", expected: "<filename>", actual: "none")
            }
            var objects: [(ObjectAnnotation, String)] = []
            for (k, o) in root.all("object").enumerated() {
                let place = "object \(k + 1) (line \(o.line))"
                let label = try Self.label(o.value("name"), file: file, place: place)
                guard let box = o.child("bndbox") else {
                    throw DataError.badAnnotation(file: file, place: place, expected: "<bndbox>", actual: "none")
                }
                let x1 = try number(box.value("xmin"), "xmin", file: file, place: place), y1 = try number(box.value("ymin"), "ymin", file: file, place: place)
                let x2 = try number(box.value("xmax"), "xmax", file: file, place: place), y2 = try number(box.value("ymax"), "ymax", file: file, place: place)
                objects.append((ObjectAnnotation(label: label, box: BoundingBox(x1: x1, y1: y1, x2: x2, y2: y2)), place))
            }
            guard let photo = photoDirs.map({ $0 + "/" + filename }).first(where: exists) else {
                b.unknownImage(filename, file: file, place: "<filename>", boxes: objects.count)
                continue
            }
            var size: (width: Int, height: Int)
            if let s = root.child("size"), let w = Int(s.value("width") ?? ""), let h = Int(s.value("height") ?? ""), w > 0, h > 0 {
                size = (w, h)
            } else {
                guard let s = b.size(of: photo, boxes: objects.count) else { continue }
                size = s
            }
            let kept = objects.compactMap { b.check($0.0, width: size.width, height: size.height, file: file, place: $0.1) }
            b.add(AnnotatedImage(path: photo, width: size.width, height: size.height, objects: kept), annotated: objects.count,
                  file: file, place: "every <object>")
        }
        return b.dataset(.pascalVOC)
    }

    /// A YOLO folder: `images/`, `labels/<stem>.txt` ("class cx cy w h", fractions), `classes.txt` or `obj.names`.
    public static func yolo(_ folder: String) throws -> DetectionDataset {
        let namesFile = [folder + "/classes.txt", folder + "/obj.names"].first(where: exists)
        var classes: [String] = []
        if let f = namesFile {
            classes = String(decoding: try TableFile.read(f), as: UTF8.self).split(whereSeparator: \.isNewline)
                .map { String($0).trimmingSpaces() }.filter { !$0.isEmpty }
        }
        var b = Builder(source: folder)
        let imageDir = folder + "/images"
        for name in try DirectoryWalk.listing(imageDir) where !DirectoryWalk.isDirectory(imageDir + "/" + name) {
            let photo = imageDir + "/" + name
            let stem = (name as NSString).deletingPathExtension
            let labelFile = folder + "/labels/" + stem + ".txt"
            guard let size = b.size(of: photo, boxes: exists(labelFile) ? try Self.yoloLineCount(labelFile) : 0) else { continue }
            var kept: [ObjectAnnotation] = []
            var annotated = 0
            if exists(labelFile) {
                let text = String(decoding: try TableFile.read(labelFile), as: UTF8.self)
                for (n, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let line = raw.trimmingCharacters(in: .whitespacesAndNewlines)
                    if line.isEmpty { continue }
                    let place = "line \(n + 1)"
                    let f = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
                    guard f.count == 5 else {
                        throw DataError.badAnnotation(file: labelFile, place: place, expected: "5 fields (class cx cy w h)", actual: "\(f.count)")
                    }
                    guard let c = Int(f[0]), c >= 0 else {
                        throw DataError.badAnnotation(file: labelFile, place: place, expected: "a class index ≥ 0", actual: "'\(f[0])'")
                    }
                    let label: String
                    if namesFile == nil { label = String(c) } else {
                        guard c < classes.count else {
                            throw DataError.badAnnotation(file: labelFile, place: place, expected: "a class index below \(classes.count) (\((namesFile! as NSString).lastPathComponent))",
                                                          actual: "\(c)")
                        }
                        label = classes[c]
                    }
                    let v = try (1...4).map { try number(f[$0], ["cx", "cy", "w", "h"][$0 - 1], file: labelFile, place: place) }
                    let w = v[2] * Double(size.width), h = v[3] * Double(size.height)
                    let o = ObjectAnnotation(label: label, box: BoundingBox(x: v[0] * Double(size.width) - w / 2, y: v[1] * Double(size.height) - h / 2,
                                                                             width: w, height: h))
                    annotated += 1
                    if let k = b.check(o, width: size.width, height: size.height, file: labelFile, place: place) { kept.append(k) }
                }
            }
            b.add(AnnotatedImage(path: photo, width: size.width, height: size.height, objects: kept), annotated: annotated,
                  file: labelFile, place: "every line")
        }
        return b.dataset(.yolo)
    }

    /// The boxes a YOLO label file lists (its non-blank lines).
    static func yoloLineCount(_ file: String) throws -> Int {
        String(decoding: try TableFile.read(file), as: UTF8.self).split(separator: "\n")
            .filter { !$0.allSatisfy(\.isWhitespace) }.count
    }

    /// A CSV `filename,width,height,class,xmin,ymin,xmax,ymax` (one row per box, pixels).
    public static func csv(_ path: String) throws -> DetectionDataset {
        let table = try CSVReader.table(path: path)
        let cols = try ["filename", "width", "height", "class", "xmin", "ymin", "xmax", "ymax"].map { try table.column($0) }
        let base = (path as NSString).deletingLastPathComponent
        let parent = (base as NSString).deletingLastPathComponent
        let dirs = [base, base + "/images", parent + "/images"]
        var b = Builder(source: path)
        var order: [String] = []
        var byName: [String: (photo: String?, width: Int, height: Int, objects: [ObjectAnnotation], line: Int)] = [:]
        var rows: [String: Int] = [:]
        for row in table.rows {
            let place = "line \(row.line)"
            let f = cols.map { row.fields[$0] }
            let name = f[0].trimmingSpaces()
            guard !name.isEmpty else { throw DataError.badAnnotation(file: path, place: place, expected: "a filename", actual: "nothing") }
            let label = try Self.label(f[3], file: path, place: place)
            let w = try number(f[1], "width", file: path, place: place), h = try number(f[2], "height", file: path, place: place)
            guard w >= 1, h >= 1, w == w.rounded(), h == h.rounded(), w <= 1e6, h <= 1e6 else {
                throw DataError.badAnnotation(file: path, place: place, expected: "a whole width and height ≥ 1", actual: "\(f[1]) × \(f[2])")
            }
            let v = try (4...7).map { try number(f[$0], ["xmin", "ymin", "xmax", "ymax"][$0 - 4], file: path, place: place) }
            let o = ObjectAnnotation(label: label, box: BoundingBox(x1: v[0], y1: v[1], x2: v[2], y2: v[3]))
            if byName[name] == nil {
                order.append(name)
                let photo = name.hasPrefix("/") ? (exists(name) ? name : nil) : dirs.map { $0 + "/" + name }.first(where: exists)
                byName[name] = (photo, Int(w), Int(h), [], row.line)
            }
            guard byName[name]!.width == Int(w), byName[name]!.height == Int(h) else {
                throw DataError.badAnnotation(file: path, place: place, expected: "\(byName[name]!.width) × \(byName[name]!.height) for '\(name)' (line \(byName[name]!.line))",
                                              actual: "\(Int(w)) × \(Int(h))")
            }
            rows[name, default: 0] += 1
            if byName[name]!.photo != nil {
                if let k = b.check(o, width: Int(w), height: Int(h), file: path, place: place) { byName[name]!.objects.append(k) }
            } else {
                byName[name]!.objects.append(o)   // counted as skipped with its photo below
            }
        }
        for name in order {
            let e = byName[name]!
            guard let photo = e.photo else {
                b.unknownImage(name, file: path, place: "line \(e.line)", boxes: e.objects.count)
                continue
            }
            b.add(AnnotatedImage(path: photo, width: e.width, height: e.height, objects: e.objects), annotated: rows[name] ?? 0,
                  file: path, place: "'\(name)' (from line \(e.line))")
        }
        return b.dataset(.csv)
    }
}
