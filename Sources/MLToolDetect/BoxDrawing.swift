import MLToolCore
import MLToolData

/// Draws detections onto a photo (for `predict --draw` and reports): a coloured outline per object and, above it
/// (inside when there is no room), a filled tag with "label 0.87" in a 5×7 pixel font scaled with the photo.
public enum BoxDrawing {
    /// Ultralytics' palette, one colour per class index (cycled).
    static let palette: [(UInt8, UInt8, UInt8)] = [
        (0xFF, 0x38, 0x38), (0xFF, 0x9D, 0x97), (0xFF, 0x70, 0x1F), (0xFF, 0xB2, 0x1D), (0xCF, 0xD2, 0x31),
        (0x48, 0xF9, 0x0A), (0x92, 0xCC, 0x17), (0x3D, 0xDB, 0x86), (0x1A, 0x93, 0x34), (0x00, 0xD4, 0xBB),
        (0x2C, 0x99, 0xA8), (0x00, 0xC2, 0xFF), (0x34, 0x45, 0x93), (0x64, 0x73, 0xFF), (0x00, 0x18, 0xEC),
        (0x84, 0x38, 0xFF), (0x52, 0x00, 0x85), (0xCB, 0x38, 0xFF), (0xFF, 0x95, 0xC8), (0xFF, 0x37, 0xC7),
    ]

    /// The colour of class `index`.
    public static func colour(_ index: Int) -> (r: UInt8, g: UInt8, b: UInt8) {
        let c = palette[((index % palette.count) + palette.count) % palette.count]
        return (c.0, c.1, c.2)
    }

    /// `image` with every object drawn; `lineWidth` nil scales with the photo (0.3% of its mean side, at least 2).
    public static func draw(_ objects: [DetectedObject], on image: RGBImage, lineWidth: Int? = nil) -> RGBImage {
        draw(objects.map { ($0.box, $0.classIndex, "\($0.label) \(String(format2: $0.confidence))") }, on: image, lineWidth: lineWidth)
    }

    /// `image` with boxes (photo pixels), each in its class's colour with its caption.
    public static func draw(_ boxes: [(box: BoundingBox, classIndex: Int, caption: String)], on image: RGBImage,
                            lineWidth: Int? = nil) -> RGBImage {
        var out = image
        guard image.width > 0, image.height > 0 else { return out }
        let lw = max(1, lineWidth ?? max(2, Int((Double(image.width + image.height) / 2 * 0.003).rounded())))
        let scale = max(1, lw / 2 + (image.width + image.height >= 1200 ? 1 : 0))
        for (box, index, caption) in boxes {
            let c = colour(index)
            let x1 = clamp(Int(box.x.rounded()), image.width - 1), y1 = clamp(Int(box.y.rounded()), image.height - 1)
            let x2 = clamp(Int(box.maxX.rounded()), image.width - 1), y2 = clamp(Int(box.maxY.rounded()), image.height - 1)
            // Outline: lw pixels inside the box edges.
            fill(&out, x1, y1, x2, min(y2, y1 + lw - 1), c)
            fill(&out, x1, max(y1, y2 - lw + 1), x2, y2, c)
            fill(&out, x1, y1, min(x2, x1 + lw - 1), y2, c)
            fill(&out, max(x1, x2 - lw + 1), y1, x2, y2, c)
            guard !caption.isEmpty else { continue }
            let text = BitmapFont.width(caption) * scale, th = BitmapFont.height * scale
            let pad = scale
            let tagW = text + 2 * pad, tagH = th + 2 * pad
            let top = y1 - tagH >= 0 ? y1 - tagH : y1
            let left = min(x1, max(0, image.width - tagW))
            fill(&out, left, top, min(image.width - 1, left + tagW - 1), min(image.height - 1, top + tagH - 1), c)
            // White text on dark colours, black on light ones (Rec. 601 luma).
            let luma = 299 * Int(c.r) + 587 * Int(c.g) + 114 * Int(c.b)
            let ink: (UInt8, UInt8, UInt8) = luma > 150_000 ? (0, 0, 0) : (255, 255, 255)
            BitmapFont.draw(caption, into: &out, x: left + pad, y: top + pad, scale: scale, colour: ink)
        }
        return out
    }

    /// `image` with true boxes drawn as dashed white outlines edged in black (so predictions drawn over them stay
    /// readable).
    public static func drawTruth(_ boxes: [BoundingBox], on image: RGBImage) -> RGBImage {
        var out = image
        guard image.width > 0, image.height > 0 else { return out }
        let dash = max(4, (image.width + image.height) / 120)
        for box in boxes {
            let x1 = clamp(Int(box.x.rounded()), image.width - 1), y1 = clamp(Int(box.y.rounded()), image.height - 1)
            let x2 = clamp(Int(box.maxX.rounded()), image.width - 1), y2 = clamp(Int(box.maxY.rounded()), image.height - 1)
            func dot(_ x: Int, _ y: Int, _ along: Int) {
                let white = (along / dash) % 2 == 0
                let c: (r: UInt8, g: UInt8, b: UInt8) = white ? (255, 255, 255) : (0, 0, 0)
                fill(&out, x, y, x, y, c)
            }
            for x in x1...max(x1, x2) { dot(x, y1, x - x1); dot(x, y2, x - x1) }
            for y in y1...max(y1, y2) { dot(x1, y, y - y1); dot(x2, y, y - y1) }
        }
        return out
    }

    private static func clamp(_ v: Int, _ hi: Int) -> Int { min(max(v, 0), max(hi, 0)) }

    /// Fills the rectangle [x1, x2] × [y1, y2] (inclusive, already inside the image).
    static func fill(_ img: inout RGBImage, _ x1: Int, _ y1: Int, _ x2: Int, _ y2: Int, _ c: (r: UInt8, g: UInt8, b: UInt8)) {
        guard x1 <= x2, y1 <= y2 else { return }
        let w = img.width
        img.pixels.withUnsafeMutableBufferPointer { p in
            for y in y1...y2 {
                var i = (y &* w &+ x1) &* 3
                for _ in x1...x2 { p[i] = c.r; p[i &+ 1] = c.g; p[i &+ 2] = c.b; i &+= 3 }
            }
        }
    }
}

extension String {
    /// A confidence with two decimals ("0.87").
    init(format2 v: Double) {
        let r = Int((Swift.min(Swift.max(v, 0), 1) * 100).rounded())
        self = "\(r / 100).\(r % 100 < 10 ? "0" : "")\(r % 100)"
    }
}

/// A 5×7 pixel font (one column of spacing): digits, letters (lower case drawn as capitals) and the punctuation
/// labels use; anything else draws as '?'.
enum BitmapFont {
    static let height = 7
    static let advance = 6

    /// Rows top to bottom, bit 4 the leftmost column.
    static let glyphs: [Character: [UInt8]] = [
        "A": [14, 17, 17, 31, 17, 17, 17], "B": [30, 17, 17, 30, 17, 17, 30], "C": [14, 17, 16, 16, 16, 17, 14],
        "D": [30, 17, 17, 17, 17, 17, 30], "E": [31, 16, 16, 30, 16, 16, 31], "F": [31, 16, 16, 30, 16, 16, 16],
        "G": [14, 17, 16, 23, 17, 17, 15], "H": [17, 17, 17, 31, 17, 17, 17], "I": [14, 4, 4, 4, 4, 4, 14],
        "J": [7, 2, 2, 2, 2, 18, 12], "K": [17, 18, 20, 24, 20, 18, 17], "L": [16, 16, 16, 16, 16, 16, 31],
        "M": [17, 27, 21, 21, 17, 17, 17], "N": [17, 17, 25, 21, 19, 17, 17], "O": [14, 17, 17, 17, 17, 17, 14],
        "P": [30, 17, 17, 30, 16, 16, 16], "Q": [14, 17, 17, 17, 21, 18, 13], "R": [30, 17, 17, 30, 20, 18, 17],
        "S": [15, 16, 16, 14, 1, 1, 30], "T": [31, 4, 4, 4, 4, 4, 4], "U": [17, 17, 17, 17, 17, 17, 14],
        "V": [17, 17, 17, 17, 17, 10, 4], "W": [17, 17, 17, 21, 21, 21, 10], "X": [17, 17, 10, 4, 10, 17, 17],
        "Y": [17, 17, 10, 4, 4, 4, 4], "Z": [31, 1, 2, 4, 8, 16, 31],
        "0": [14, 17, 19, 21, 25, 17, 14], "1": [4, 12, 4, 4, 4, 4, 14], "2": [14, 17, 1, 2, 4, 8, 31],
        "3": [31, 2, 4, 2, 1, 17, 14], "4": [2, 6, 10, 18, 31, 2, 2], "5": [31, 16, 30, 1, 1, 17, 14],
        "6": [6, 8, 16, 30, 17, 17, 14], "7": [31, 1, 2, 4, 8, 8, 8], "8": [14, 17, 17, 14, 17, 17, 14],
        "9": [14, 17, 17, 15, 1, 2, 12],
        " ": [0, 0, 0, 0, 0, 0, 0], ".": [0, 0, 0, 0, 0, 12, 12], ",": [0, 0, 0, 0, 12, 4, 8],
        ":": [0, 12, 12, 0, 12, 12, 0], "-": [0, 0, 0, 31, 0, 0, 0], "_": [0, 0, 0, 0, 0, 0, 31],
        "%": [24, 25, 2, 4, 8, 19, 3], "(": [2, 4, 8, 8, 8, 4, 2], ")": [8, 4, 2, 2, 2, 4, 8],
        "/": [0, 1, 2, 4, 8, 16, 0], "?": [14, 17, 1, 2, 4, 0, 4], "+": [0, 4, 4, 31, 4, 4, 0],
        "=": [0, 0, 31, 0, 31, 0, 0], "'": [12, 4, 8, 0, 0, 0, 0],
    ]

    static func glyph(_ ch: Character) -> [UInt8] {
        glyphs[ch] ?? glyphs[Character(ch.uppercased())] ?? glyphs["?"]!
    }

    /// Width in font pixels (no trailing spacing).
    static func width(_ s: String) -> Int { s.isEmpty ? 0 : s.count * advance - 1 }

    static func draw(_ s: String, into img: inout RGBImage, x: Int, y: Int, scale: Int, colour: (UInt8, UInt8, UInt8)) {
        var cx = x
        for ch in s {
            let rows = glyph(ch)
            for (r, bits) in rows.enumerated() {
                for col in 0..<5 where bits & (16 >> UInt8(col)) != 0 {
                    let px = cx + col * scale, py = y + r * scale
                    let x2 = min(px + scale - 1, img.width - 1), y2 = min(py + scale - 1, img.height - 1)
                    if px >= 0, py >= 0, px <= x2, py <= y2 { BoxDrawing.fill(&img, px, py, x2, y2, colour) }
                }
            }
            cx += advance * scale
        }
    }
}
