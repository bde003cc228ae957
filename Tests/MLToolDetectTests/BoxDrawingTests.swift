import Foundation
import MLToolCore
import MLToolData
import Testing
@testable import MLToolDetect

@Suite struct BoxDrawingTests {
    func grey(_ w: Int, _ h: Int) -> RGBImage { RGBImage(width: w, height: h, pixels: [UInt8](repeating: 128, count: w * h * 3)) }

    @Test func outlineTagAndTextLandWhereExpected() throws {
        let object = DetectedObject(label: "raccoon", classIndex: 0, confidence: 0.873, box: BoundingBox(x: 40, y: 50, width: 100, height: 60),
                                    imageWidth: 200, imageHeight: 160)
        let out = BoxDrawing.draw([object], on: grey(200, 160), lineWidth: 2)
        let red = BoxDrawing.colour(0)
        func px(_ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) { let p = out.pixel(x: x, y: y); return (p.r, p.g, p.b) }
        // The outline: 2 pixels inside each edge.
        for (x, y) in [(40, 50), (41, 51), (139, 109), (90, 50), (40, 80), (139, 80)] { #expect(px(x, y) == red, "(\(x), \(y))") }
        // Inside and outside the box: untouched.
        for (x, y) in [(90, 80), (42, 52), (10, 10), (150, 120)] { #expect(px(x, y) == (128, 128, 128), "(\(x), \(y))") }
        // The tag above the box: "raccoon 0.87" is 12 glyphs, 71 font pixels + 2 of padding, 9 rows high; white ink.
        #expect(px(40, 41) == red && px(40 + 72, 41) == red && px(40 + 73, 41) == (128, 128, 128))
        var white = 0
        for y in 41..<50 { for x in 40..<114 where px(x, y) == (255, 255, 255) { white += 1 } }
        #expect(white > 60, "\(white) white text pixels")
        #expect(String(format2: 0.873) == "0.87" && String(format2: 0.05) == "0.05" && String(format2: 1) == "1.00")
        #expect(try PNGEncoder.encode(out).count > 100)
    }

    @Test func boxesAtTheEdgeAndTagsInsideStayInTheImage() {
        let object = DetectedObject(label: "x", classIndex: 3, confidence: 0.5, box: BoundingBox(x: -10, y: -5, width: 300, height: 40),
                                    imageWidth: 64, imageHeight: 48)
        let out = BoxDrawing.draw([object], on: grey(64, 48))
        #expect(out.width == 64 && out.height == 48)
        let c = BoxDrawing.colour(3)
        let p = out.pixel(x: 0, y: 0)
        #expect((p.r, p.g, p.b) == c)
    }

    @Test func everyGlyphIsFiveBySeven() {
        #expect(BitmapFont.glyphs.count >= 50)
        for (ch, rows) in BitmapFont.glyphs {
            #expect(rows.count == 7 && rows.allSatisfy { $0 < 32 }, "glyph \(ch)")
        }
        #expect(BitmapFont.glyph("a") == BitmapFont.glyph("A"))
        #expect(BitmapFont.glyph("€") == BitmapFont.glyph("?"))
    }
}
