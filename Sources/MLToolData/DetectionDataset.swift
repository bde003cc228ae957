import Foundation
import MLToolCore

/// One annotated photo.
public struct AnnotatedImage: Equatable, Sendable {
    public var path: String
    public var width: Int
    public var height: Int
    public var objects: [ObjectAnnotation]
    public init(path: String, width: Int, height: Int, objects: [ObjectAnnotation]) {
        self.path = path; self.width = width; self.height = height; self.objects = objects
    }
}

/// An annotation left out, and why (named skips are reported, like undecodable images).
public struct AnnotationSkip: Equatable, Sendable, CustomStringConvertible {
    public enum Reason: String, Sendable {
        /// The box extends more than a pixel outside the photo.
        case outsideImage = "box outside the image"
        /// Width or height ≤ 0.
        case zeroArea = "zero-area box"
        /// The annotation names a photo that is not there.
        case unknownImage = "unknown image"
        /// The photo is there but cannot be decoded (truncated, corrupt, too large); its boxes go with it.
        case unreadableImage = "photo cannot be decoded"
        /// Every box of the photo was skipped: it is left out rather than trained on as a photo without objects.
        case noBoxLeft = "no box left"
    }
    public var file: String
    public var place: String
    public var reason: Reason
    public var detail: String
    /// Boxes lost: 1 for a box, all of a photo's boxes for an unknown photo.
    public var boxes: Int = 1
    /// `photo` left out because it cannot be decoded (`error` says why; its own path is not repeated).
    static func unreadable(_ photo: String, _ error: Error, boxes: Int) -> AnnotationSkip {
        let text = "\(error)", prefix = photo + ": "
        return AnnotationSkip(file: photo, place: "", reason: .unreadableImage,
                              detail: text.hasPrefix(prefix) ? String(text.dropFirst(prefix.count)) : text, boxes: boxes)
    }

    public var description: String {
        (place.isEmpty ? "\(file): " : "\(file): \(place): ") + "skipped (\(reason.rawValue)): \(detail)"
    }
}

/// Annotated photos for object detection, from any of four layouts (`load` recognises them):
/// - Create ML: a folder holding the photos and one JSON file, an array of {"image", "annotations": [{"label",
///   "coordinates": {"x", "y", "width", "height"}}]} in pixels with (x, y) the box centre (or that JSON file);
/// - Pascal VOC: a folder with `annotations/*.xml` (`<size>`, `<object><name>`, `<bndbox>` xmin ymin xmax ymax in
///   pixels) and the photos in `images/` (or `JPEGImages/`, or next to the XML);
/// - YOLO: a folder with `images/` and `labels/` (one `<stem>.txt` per photo, lines "class cx cy w h" as fractions
///   of the photo) and `classes.txt` (or `obj.names`) naming the classes in index order;
/// - CSV: `filename,width,height,class,xmin,ymin,xmax,ymax` (pixels), photos next to the CSV or in `images/` there
///   or beside its folder.
/// Malformed files and missing fields (a label, a coordinate) throw `DataError.badAnnotation` naming the file and
/// place. Boxes outside the photo (by more than a pixel; within a pixel they are clipped), boxes of zero area and
/// photos that do not exist or whose header cannot be read are skipped and listed in `skipped`, as is a photo whose
/// boxes were all skipped (left out, not kept as a photo without objects); `droppingUnreadablePhotos` decodes each
/// photo and names those that fail the same way; `checkSkipped` fails when too many boxes went.
public struct DetectionDataset: Sendable {
    public enum Format: String, Sendable { case createML, pascalVOC, yolo, csv }
    public var source: String
    public var format: Format
    /// Every class with at least one kept box, sorted.
    public var labels: [String]
    /// Photos in a stable order (sorted by path for folders, file order for JSON and CSV).
    public var images: [AnnotatedImage]
    public var skipped: [AnnotationSkip]
    /// Boxes read, kept or skipped.
    public var annotationCount: Int

    /// How far (pixels) a box may stick out of its photo and still be kept (clipped).
    public static let outsideTolerance = 1.0

    /// The data set at `path`: a Create ML JSON or CSV file, or a folder in one of the layouts.
    public static func load(_ path: String) throws -> DetectionDataset {
        guard FileManager.default.fileExists(atPath: path) else {
            throw DataError.cannotRead(file: path, reason: "No such file or directory")
        }
        guard DirectoryWalk.isDirectory(path) else {
            if path.lowercased().hasSuffix(".json") { return try createML(json: path) }
            return try csv(path)
        }
        let names = try DirectoryWalk.listing(path)
        if names.contains("annotations"), DirectoryWalk.isDirectory(path + "/annotations") { return try pascalVOC(path) }
        if names.contains("labels"), DirectoryWalk.isDirectory(path + "/labels") { return try yolo(path) }
        let json = names.filter { $0.lowercased().hasSuffix(".json") }
        if json.count == 1 { return try createML(json: path + "/" + json[0]) }
        let csvs = names.filter { $0.lowercased().hasSuffix(".csv") }
        if json.isEmpty, csvs.count == 1 { return try csv(path + "/" + csvs[0]) }
        throw DataError.badAnnotation(file: path, place: "folder", expected: "annotations/ (Pascal VOC), labels/ (YOLO), one .json (Create ML) or one .csv",
                                      actual: json.count > 1 ? "\(json.count) JSON files" : "none of them")
    }

    /// Whether `path` is laid out as one of the annotation formats `load` reads, told from names and the first
    /// bytes of one file (never the whole set): a Create ML JSON (an array whose first entries carry "annotations"),
    /// a CSV whose header has xmin, ymin, xmax and ymax, or a folder with annotations/*.xml (Pascal VOC), labels/ and
    /// classes.txt or obj.names (YOLO), or one such JSON or CSV.
    public static func looksLikeAnnotations(_ path: String) -> Bool {
        guard DirectoryWalk.isDirectory(path) else { return annotationFile(path) }
        guard let names = try? DirectoryWalk.listing(path) else { return false }
        if names.contains("annotations"), DirectoryWalk.isDirectory(path + "/annotations") {
            return ((try? DirectoryWalk.listing(path + "/annotations")) ?? []).contains { $0.lowercased().hasSuffix(".xml") }
        }
        if names.contains("labels"), DirectoryWalk.isDirectory(path + "/labels") {
            return names.contains("classes.txt") || names.contains("obj.names")
        }
        let files = names.filter { $0.lowercased().hasSuffix(".json") || $0.lowercased().hasSuffix(".csv") }
        return files.count == 1 && annotationFile(path + "/" + files[0])
    }

    /// A Create ML JSON or a detection CSV, from its first 64 KiB.
    private static func annotationFile(_ path: String) -> Bool {
        guard let handle = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? handle.close() }
        let head = String(decoding: (try? handle.read(upToCount: 65536)) ?? Data(), as: UTF8.self)
        if path.lowercased().hasSuffix(".json") {
            return head.drop { $0.isWhitespace }.first == "[" && head.contains("\"annotations\"")
        }
        let header = head.prefix { $0 != "\n" && $0 != "\r" }.lowercased()
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces.union(CharacterSet(charactersIn: "\""))) }
        return ["xmin", "ymin", "xmax", "ymax"].allSatisfy(header.contains)
    }

    /// Fails when more than `limitPercent` % of the boxes were skipped (the first skip is quoted).
    public func checkSkipped(limitPercent: Int = 10) throws {
        let lost = skipped.reduce(0) { $0 + $1.boxes }
        guard let first = skipped.first, lost * 100 > max(annotationCount, 1) * limitPercent else { return }
        throw DataError.tooManyBadAnnotations(source: source, skipped: lost, total: annotationCount,
                                              limitPercent: limitPercent, first: first.description)
    }

    /// This data set without the photos that cannot be decoded (each photo decoded once, `workers` at a time; an
    /// image's size limit is `maxPixels`), which are named in `skipped` with their boxes — as image classification
    /// skips an undecodable image. `strict`: the first such photo's error (in data set order) is thrown instead.
    public func droppingUnreadablePhotos(maxPixels: Int, workers: Int, strict: Bool = false) throws -> DetectionDataset {
        let slots = Slots<DataError>(count: images.count)
        let photos = images, lanes = max(1, min(workers, photos.count))
        DispatchQueue.concurrentPerform(iterations: lanes) { w in
            var i = w
            while i < photos.count {
                do { _ = try ImageDecoder.decode(path: photos[i].path, maxPixels: maxPixels) } catch let e as DataError {
                    slots.set(i, e)
                } catch {
                    slots.set(i, .cannotRead(file: photos[i].path, reason: "\(error)"))
                }
                i += lanes
            }
        }
        // A photo whose header could not be read was named by `load`; strict stops there too, with its own error.
        if strict, let first = skipped.first(where: { $0.reason == .unreadableImage }) {
            _ = try ImageDecoder.decode(path: first.file, maxPixels: maxPixels)
        }
        var kept = self
        kept.images = []
        for (i, photo) in images.enumerated() {
            guard let e = slots.value(i) else { kept.images.append(photo); continue }
            if strict { throw e }
            kept.skipped.append(.unreadable(photo.path, e, boxes: photo.objects.count))
        }
        kept.labels = Set(kept.images.flatMap { $0.objects.map(\.label) }).sorted()
        return kept
    }

    /// Boxes per class, in `labels` order.
    public func counts() -> [(label: String, boxes: Int)] {
        var n: [String: Int] = [:]
        for i in images { for o in i.objects { n[o.label, default: 0] += 1 } }
        return labels.map { ($0, n[$0] ?? 0) }
    }

    // MARK: shared

    /// Collects photos and skips; `add` validates each box against its photo.
    struct Builder {
        let source: String
        var images: [AnnotatedImage] = []
        var skipped: [AnnotationSkip] = []
        var count = 0

        static func describe(_ b: BoundingBox) -> String {
            func f(_ v: Double) -> String { v == v.rounded() && abs(v) < 1e15 ? String(Int(v)) : String(v) }
            return "x \(f(b.x))–\(f(b.maxX)), y \(f(b.y))–\(f(b.maxY))"
        }

        /// The box as kept (clipped within the tolerance), or nil after recording a skip.
        mutating func check(_ o: ObjectAnnotation, width: Int, height: Int, file: String, place: String) -> ObjectAnnotation? {
            count += 1
            let b = o.box
            guard b.width > 0, b.height > 0, b.x.isFinite, b.y.isFinite, b.width.isFinite, b.height.isFinite else {
                skipped.append(AnnotationSkip(file: file, place: place, reason: .zeroArea, detail: "'\(o.label)' box \(Self.describe(b))"))
                return nil
            }
            let t = DetectionDataset.outsideTolerance
            guard b.x >= -t, b.y >= -t, b.maxX <= Double(width) + t, b.maxY <= Double(height) + t else {
                skipped.append(AnnotationSkip(file: file, place: place, reason: .outsideImage,
                                              detail: "'\(o.label)' box \(Self.describe(b)) in a \(width)×\(height) image"))
                return nil
            }
            let c = b.clipped(width: Double(width), height: Double(height))
            guard c.width > 0, c.height > 0 else {
                skipped.append(AnnotationSkip(file: file, place: place, reason: .zeroArea, detail: "'\(o.label)' box \(Self.describe(b)) after clipping"))
                return nil
            }
            return ObjectAnnotation(label: o.label, box: c)
        }

        /// Keeps `image` unless it had `annotated` boxes and none survived `check` (then it is named and left out:
        /// training on it as a photo with no objects would teach that its objects are background).
        mutating func add(_ image: AnnotatedImage, annotated: Int, file: String, place: String) {
            guard annotated > 0, image.objects.isEmpty else { images.append(image); return }
            let name = (image.path as NSString).lastPathComponent
            skipped.append(AnnotationSkip(file: file, place: place, reason: .noBoxLeft,
                                          detail: "\(name): all \(annotated) of its boxes were skipped", boxes: 0))
        }

        /// The size of `photo` from its header, or nil after naming it (with its `boxes`) when the header cannot
        /// be read: one bad photo is skipped like an undecodable image, never the end of the data set.
        mutating func size(of photo: String, boxes: Int) -> (width: Int, height: Int)? {
            do { return try ImageDecoder.size(path: photo) } catch {
                count += boxes
                skipped.append(.unreadable(photo, error, boxes: boxes))
                return nil
            }
        }

        mutating func unknownImage(_ path: String, file: String, place: String, boxes: Int) {
            count += boxes
            skipped.append(AnnotationSkip(file: file, place: place, reason: .unknownImage, detail: "no such file: \(path)", boxes: boxes))
        }

        func dataset(_ format: Format) -> DetectionDataset {
            let labels = Set(images.flatMap { $0.objects.map(\.label) }).sorted()
            return DetectionDataset(source: source, format: format, labels: labels, images: images, skipped: skipped, annotationCount: count)
        }
    }

    /// The number in `text` (field `what` at `place`), or a badAnnotation error.
    static func number(_ text: String?, _ what: String, file: String, place: String) throws -> Double {
        guard let t = text?.trimmingSpaces(), !t.isEmpty else {
            throw DataError.badAnnotation(file: file, place: place, expected: "a number for \(what)", actual: "nothing")
        }
        guard let v = Double(t), v.isFinite else {
            throw DataError.badAnnotation(file: file, place: place, expected: "a number for \(what)", actual: "'\(t)'")
        }
        return v
    }

    static func label(_ text: String?, file: String, place: String) throws -> String {
        guard let t = text?.trimmingSpaces(), !t.isEmpty else {
            throw DataError.badAnnotation(file: file, place: place, expected: "a label", actual: text == nil ? "none" : "an empty label")
        }
        return t
    }
}
