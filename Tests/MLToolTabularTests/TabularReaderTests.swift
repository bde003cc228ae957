import Foundation
import Testing
import MLToolCore
@testable import MLToolTabular

/// Bad tables, each with the exact message `mltool` prints (exit 65, file, line and column).
@Suite struct TabularReaderTests {
    static func table(_ text: String, file: String = "t.csv") throws -> RawTable {
        try RawTable.delimited(bytes: Array(text.utf8), file: file, delimiter: UInt8(ascii: ","))
    }

    static func refusal(_ text: String, target: String = "y", file: String = "t.csv") -> TabularError? {
        do { _ = try TabularSchema.infer(try table(text, file: file), target: target) } catch let e as TabularError { return e } catch {
            return nil
        }
        return nil
    }

    @Test func aNumericColumnWithOneWordNamesTheRow() throws {
        var rows = "a,b,y\n"
        for i in 0..<150 { rows += "\(i),\(i % 3),\(i % 2)\n" }
        rows = rows.replacingOccurrences(of: "\n77,2,1\n", with: "\n77,two,1\n")
        let e = try #require(Self.refusal(rows))
        #expect(e == .notANumber(file: "t.csv", line: 79, column: 2, name: "b", value: "two", count: 1))
        #expect(e.description == "t.csv:79:2: column 'b' is numeric but 'two' is not a number (the only field that is not; "
            + "fix the row, or give --categorical b or --ignore b)")
        #expect(e.exitStatus == .dataError)
    }

    /// The direct decimal parse gives `Double(field)`'s bits: seeded plain decimals of 1 to 18 digits (the fast path
    /// takes up to 15) with signs, points, leading and trailing zeros, and fields it hands to `Double` (exponents, hex,
    /// words, spaces, signs in the middle, a lone point or sign).
    @Test func fieldsParseAsDoubleParsesThem() {
        var rng = SplitMix64(seed: 53)
        var fields = ["", ".", "-", "+", "+.5", "5.", ".5", "-0", "-0.0", "+0", "007", "0.000", "1e5", "1E-3", "0x1p3", "inf",
                      "-inf", "nan", "NaN", "NA", " 5", "5 ", "1,5", "1.2.3", "--1", "5-", "٣", "123456789012345",
                      "1234567890123456", "0.1", "0.7", "999999999999999.9", "9007199254740993", "3.14159265358979"]
        for _ in 0..<20_000 {
            let digits = (0..<Int(rng.next() % 18 + 1)).map { _ in String(rng.next() % 10) }.joined()
            let point = Int(rng.next() % UInt64(digits.count + 2))
            var field = point <= digits.count ? String(digits.prefix(point)) + "." + String(digits.dropFirst(point)) : digits
            if rng.next() % 3 == 0 { field = (rng.next() & 1 == 0 ? "-" : "+") + field }
            fields.append(field)
        }
        let differing = fields.filter { FeatureMatrix.parse($0)?.bitPattern != Double($0)?.bitPattern && !(Double($0)?.isNaN ?? false) }
        #expect(differing.isEmpty, "\(differing.count) fields parse differently, e.g. \(differing.prefix(5))")
        #expect(FeatureMatrix.parse("nan")?.isNaN == true && FeatureMatrix.parse("-0")?.sign == .minus)
    }

    @Test func aRaggedRowIsRefused() {
        #expect(throws: TabularError.raggedRow(file: "t.csv", line: 3, expected: 3, actual: 2)) {
            try Self.table("a,b,y\n1,2,0\n3,1\n")
        }
        #expect(TabularError.raggedRow(file: "t.csv", line: 3, expected: 3, actual: 2).description == "t.csv:3: 2 fields; the header has 3")
    }

    @Test func anEmptyTableIsRefused() {
        #expect(throws: TabularError.emptyTable(file: "t.csv")) { try Self.table("a,b,y\n") }
        #expect(throws: TabularError.emptyTable(file: "t.csv")) { try Self.table("") }
        #expect(TabularError.emptyTable(file: "t.csv").description == "t.csv: the table has no rows")
    }

    @Test func aNaNOrInfiniteTargetIsRefused() throws {
        #expect(Self.refusal("a,y\n1,0.5\n2,NaN\n") == .badTarget(file: "t.csv", line: 3, column: 2, name: "y", value: "NaN"))
        #expect(Self.refusal("a,y\n1,0.5\n2,inf\n") == .badTarget(file: "t.csv", line: 3, column: 2, name: "y", value: "inf"))
        #expect(Self.refusal("a,y\n1,\n") == .badTarget(file: "t.csv", line: 2, column: 2, name: "y", value: ""))
        #expect(TabularError.badTarget(file: "t.csv", line: 3, column: 2, name: "y", value: "inf").description
            == "t.csv:3:2: target 'y' is 'inf': every row needs a finite target")
    }

    @Test func aTargetWithOneClassIsRefused() {
        let e = Self.refusal("a,y\n1,yes\n2,yes\n")
        #expect(e == .oneClass(file: "t.csv", column: 2, name: "y", label: "yes"))
        #expect(e?.description == "t.csv: column 2 target 'y' has one class ('yes'); a classifier needs at least 2")
    }

    @Test func moreThan65536CategoriesAreRefused() {
        var rows = "id,y\n"
        for i in 0...65_536 { rows += "c\(i),\(i % 2)\n" }
        let e = Self.refusal(rows)
        #expect(e == .tooManyCategories(file: "t.csv", column: 1, name: "id", limit: 65_536))
        #expect(e?.description == "t.csv: column 1 'id' has more than 65536 categories (give --ignore id, or make it numeric)")
    }

    @Test func columnKindsAndTargetsAreInferred() throws {
        let t = try Self.table("n,c,flag,y,price\n1.5,red,true,a,10.5\n,blue,false,b,20\nNA,red,true,a,30.25\n")
        let s = try TabularSchema.infer(t, target: "y", ignore: ["price"])
        #expect(s.features.map(\.name) == ["n", "c", "flag"])
        #expect(s.features.map(\.kind) == [.numeric, .categorical, .categorical])
        #expect(s.features[1].categories == ["red", "blue"])
        #expect(s.objective == .binary && s.labels == ["a", "b"])
        #expect(try TabularSchema.infer(t, target: "price").objective == .regression)
        #expect(try TabularSchema.infer(t, target: "y", categorical: ["n"]).features[0].categories == ["1.5"])
        let m = try FeatureMatrix(table: t, features: s.features)
        #expect(m.columns[0][0] == 1.5 && m.columns[0][1].isNaN && m.columns[0][2].isNaN)
        #expect(m.columns[1] == [0, 1, 0])
    }

    @Test func jsonLinesReadAsTheCSV() throws {
        let text = "{\"a\": 1.5, \"b\": \"x\", \"y\": true}\n{\"b\": null, \"a\": 2, \"y\": false}\n\n"
        let t = try RawTable.jsonLines(bytes: Array(text.utf8), file: "t.jsonl")
        #expect(t.header == ["a", "b", "y"])
        #expect(t.rows == [["1.5", "x", "true"], ["2", "", "false"]])
        #expect(t.lines == [1, 2])
        #expect(throws: TabularError.badJSONLine(file: "t.jsonl", line: 2, reason: "not a JSON object")) {
            try RawTable.jsonLines(bytes: Array("{\"a\": 1}\n[1]\n".utf8), file: "t.jsonl")
        }
    }
}
