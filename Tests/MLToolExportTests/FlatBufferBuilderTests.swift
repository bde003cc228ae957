import Testing
@testable import MLToolExport

/// FlatBufferBuilder read back with a minimal reader written from the flatbuffers wire format (root offset, vtables,
/// offsets relative to their own address): every kind of field, the alignment of every value, shared vtables.
@Suite struct FlatBufferBuilderTests {
    /// Reads a finished buffer; every read is bounds-checked by the array.
    struct Reader {
        let b: [UInt8]
        func u32(_ p: Int) -> Int { (0..<4).reduce(0) { $0 | Int(b[p + $1]) << (8 * $1) } }
        func u16(_ p: Int) -> Int { Int(b[p]) | Int(b[p + 1]) << 8 }
        func i32(_ p: Int) -> Int { Int(Int32(truncatingIfNeeded: u32(p))) }
        var root: Int { u32(0) }
        /// The address of field `slot` of the table at `t`, nil when absent.
        func field(_ t: Int, _ slot: Int) -> Int? {
            let vt = t - i32(t)
            guard 4 + 2 * slot < u16(vt) else { return nil }
            let o = u16(vt + 4 + 2 * slot)
            return o == 0 ? nil : t + o
        }
        func vtable(_ t: Int) -> Int { t - i32(t) }
        func deref(_ p: Int) -> Int { p + u32(p) }
        func string(_ p: Int) -> String {
            let s = deref(p), n = u32(s)
            return String(decoding: b[(s + 4)..<(s + 4 + n)], as: UTF8.self)
        }
        /// (count, address of element 0) of the vector the offset at `p` points at.
        func vector(_ p: Int) -> (count: Int, start: Int) {
            let v = deref(p)
            return (u32(v), v + 4)
        }
    }

    @Test func fieldsReadBackWithTheirAlignment() throws {
        var b = FlatBufferBuilder()
        let name = b.string("conv/1")
        let ints = b.vector([Int32(-1), 224, 224, 3])
        let longs = b.vector([Int64(1) << 40, -5])
        let data = b.bytes([1, 2, 3, 4, 5], alignment: 16)
        let floats = b.vector([Float(0.5), -2])
        let pairs = b.structs([7, 0, 0, 0, 9, 0, 0, 0], count: 1, alignment: 4)
        // Two children with the same layout: one vtable between them.
        var children = [FlatBufferBuilder.Offset]()
        for v in [Int32(10), 20] {
            b.startTable()
            b.add(0, v)
            b.add(1, UInt8(3))
            children.append(b.endTable())
        }
        let list = b.vector(children)
        b.startTable()
        b.add(0, UInt32(3))
        b.add(1, name)
        b.add(2, ints)
        b.add(3, Int8(5), default: 5)     // equal to its default: left out
        b.add(4, data)
        b.add(5, Int64(-7))
        b.add(6, true)
        b.add(7, Float(1.5))
        b.add(8, longs)
        b.add(9, floats)
        b.add(10, list)
        b.add(11, pairs)
        let root = b.endTable()
        let bytes = try b.finish(root, identifier: "TFL3")
        let r = Reader(b: bytes)

        #expect(Array(bytes[4..<8]) == Array("TFL3".utf8))
        #expect(bytes.count % 16 == 0, "the total is a multiple of the largest alignment, \(bytes.count)")
        let t = r.root
        #expect(t % 4 == 0)
        #expect(r.field(t, 0).map(r.u32) == 3)
        #expect(r.field(t, 1).map(r.string) == "conv/1")
        let v = try #require(r.field(t, 2).map(r.vector))
        #expect(v.count == 4 && v.start % 4 == 0)
        #expect((0..<4).map { r.i32(v.start + 4 * $0) } == [-1, 224, 224, 3])
        #expect(r.field(t, 3) == nil)
        let d = try #require(r.field(t, 4).map(r.vector))
        #expect(d.count == 5 && d.start % 16 == 0 && Array(bytes[d.start..<(d.start + 5)]) == [1, 2, 3, 4, 5])
        let i64 = try #require(r.field(t, 5))
        #expect(i64 % 8 == 0 && Int64(bitPattern: UInt64(r.u32(i64)) | UInt64(r.u32(i64 + 4)) << 32) == -7)
        #expect(r.field(t, 6).map { bytes[$0] } == 1)
        #expect(r.field(t, 7).map { Float(bitPattern: UInt32(r.u32($0))) } == 1.5)
        let l = try #require(r.field(t, 8).map(r.vector))
        #expect(l.count == 2 && l.start % 8 == 0 && r.u32(l.start + 4) == 1 << 8 && r.i32(l.start + 8) == -5)
        let f = try #require(r.field(t, 9).map(r.vector))
        #expect((0..<2).map { Float(bitPattern: UInt32(r.u32(f.start + 4 * $0))) } == [0.5, -2])
        let c = try #require(r.field(t, 10).map(r.vector))
        let tables = (0..<c.count).map { r.deref(c.start + 4 * $0) }
        #expect(tables.map { r.field($0, 0).map(r.i32) } == [10, 20])
        #expect(tables.map { r.field($0, 1).map { Int(bytes[$0]) } } == [3, 3])
        #expect(r.vtable(tables[0]) == r.vtable(tables[1]), "identical vtables are written once")
        let s = try #require(r.field(t, 11).map(r.vector))
        #expect(s.count == 1 && r.u32(s.start) == 7 && r.u32(s.start + 4) == 9)
        #expect(r.field(t, 12) == nil)
    }

    /// An empty table and a string at the very start of the buffer still give aligned, readable data.
    @Test func emptyTable() throws {
        var b = FlatBufferBuilder()
        b.startTable()
        let root = b.endTable()
        let bytes = try b.finish(root, identifier: "M001")
        let r = Reader(b: bytes)
        #expect(Array(bytes[4..<8]) == Array("M001".utf8) && bytes.count % 4 == 0)
        #expect(r.u16(r.vtable(r.root)) == 4 && r.field(r.root, 0) == nil)
    }
}
