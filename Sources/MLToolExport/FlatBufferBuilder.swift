/// Builds a FlatBuffer (flatbuffers.dev "internals") back to front, as the reference builders do: children are
/// written before the tables that point at them, and every position is a distance from the end of the buffer, which
/// is what a 32-bit unsigned offset encodes (the reader adds it to the offset's own address).
///
/// The bytes are kept reversed (`reversed[i]` is the byte at distance i + 1 from the end), so prepending is an
/// append. Alignment is taken from the end too; `finish` pads the front so that the total is a multiple of the
/// largest alignment used, which makes every aligned distance an aligned address. Tables: `startTable`, `add` fields
/// by vtable slot (a scalar equal to its schema default is left out, as flatc's builders do), `endTable`; identical
/// vtables are written once.
struct FlatBufferBuilder {
    /// A finished object: its distance from the end of the buffer.
    struct Offset: Hashable {
        fileprivate let position: Int
    }

    /// The buffer grew past what 32-bit offsets reach.
    struct TooLarge: Error {
        let size: Int
    }

    private var reversed: [UInt8] = []
    private var minAlign = 1
    private var fields: [(slot: Int, position: Int)] = []
    private var tableStart: Int?
    private var vtables: [[UInt16]: Int] = [:]

    init(capacity: Int = 1024) { reversed.reserveCapacity(capacity) }

    var size: Int { reversed.count }

    // MARK: Raw writes

    /// Pads so that after `additional` more bytes the next `alignment`-byte value is aligned.
    mutating func align(_ alignment: Int, additional: Int = 0) {
        minAlign = max(minAlign, alignment)
        let pad = (alignment - (size + additional) % alignment) % alignment
        reversed.append(contentsOf: repeatElement(0, count: pad))
    }

    /// Prepends a little-endian integer, unaligned.
    private mutating func put<T: FixedWidthInteger>(_ v: T) {
        // The byte at the highest address goes in first.
        let le = v.littleEndian
        withUnsafeBytes(of: le) { reversed.append(contentsOf: $0.reversed()) }
    }

    /// Prepends an aligned scalar; returns its position.
    @discardableResult
    mutating func scalar<T: FixedWidthInteger>(_ v: T) -> Int {
        align(MemoryLayout<T>.size)
        put(v)
        return size
    }

    /// Prepends an offset to `target` (aligned 4); returns its position.
    @discardableResult
    mutating func offset(to target: Offset) -> Int {
        align(4)
        // The reader adds the value to the offset's own address: the distance between the two.
        put(UInt32(truncatingIfNeeded: size + 4 - target.position))
        return size
    }

    // MARK: Strings and vectors

    /// A UTF-8 string, zero-terminated, behind its length.
    mutating func string(_ s: String) -> Offset {
        let utf8 = Array(s.utf8)
        align(4, additional: utf8.count + 1)
        reversed.append(0)
        reversed.append(contentsOf: utf8.reversed())
        put(UInt32(truncatingIfNeeded: utf8.count))
        return Offset(position: size)
    }

    /// A vector of integers.
    mutating func vector<T: FixedWidthInteger>(_ values: [T]) -> Offset {
        let width = MemoryLayout<T>.size
        align(4, additional: values.count * width)
        align(width, additional: values.count * width)
        for v in values.reversed() { put(v) }
        put(UInt32(truncatingIfNeeded: values.count))
        return Offset(position: size)
    }

    /// A vector of float32 values.
    mutating func vector(_ values: [Float]) -> Offset { vector(values.map(\.bitPattern)) }

    /// A vector of bytes whose first byte is aligned to `alignment` (a power of two; schema `force_align`).
    mutating func bytes(_ data: [UInt8], alignment: Int = 1) -> Offset {
        align(4, additional: data.count)
        align(alignment, additional: data.count)
        reversed.append(contentsOf: data.reversed())
        put(UInt32(truncatingIfNeeded: data.count))
        return Offset(position: size)
    }

    /// A vector of `count` structs, given as their little-endian bytes in order (`alignment`: the struct's).
    mutating func structs(_ data: [UInt8], count: Int, alignment: Int) -> Offset {
        align(4, additional: data.count)
        align(alignment, additional: data.count)
        reversed.append(contentsOf: data.reversed())
        put(UInt32(truncatingIfNeeded: count))
        return Offset(position: size)
    }

    /// A vector of offsets to tables or strings.
    mutating func vector(_ offsets: [Offset]) -> Offset {
        align(4, additional: offsets.count * 4)
        for o in offsets.reversed() { offset(to: o) }
        put(UInt32(truncatingIfNeeded: offsets.count))
        return Offset(position: size)
    }

    // MARK: Tables

    mutating func startTable() {
        fields = []
        tableStart = size
    }

    /// A scalar field, left out when it equals the schema default.
    mutating func add<T: FixedWidthInteger>(_ slot: Int, _ value: T, default d: T = 0) {
        guard value != d else { return }
        fields.append((slot, scalar(value)))
    }

    mutating func add(_ slot: Int, _ value: Bool) { add(slot, UInt8(value ? 1 : 0)) }

    mutating func add(_ slot: Int, _ value: Float, default d: Float = 0) {
        guard value != d else { return }
        fields.append((slot, scalar(value.bitPattern)))
    }

    /// An offset field (a table, string or vector).
    mutating func add(_ slot: Int, _ value: Offset?) {
        guard let value else { return }
        fields.append((slot, offset(to: value)))
    }

    /// Writes the table's vtable (or reuses an identical one) and returns the table.
    mutating func endTable() -> Offset {
        let start = tableStart ?? size
        // The table begins with a signed offset to its vtable, filled in below.
        align(4)
        put(Int32(0))
        let table = size
        let slots = (fields.map(\.slot).max() ?? -1) + 1
        var vtable = [UInt16](repeating: 0, count: 2 + slots)
        vtable[0] = UInt16(truncatingIfNeeded: 4 + 2 * slots)
        vtable[1] = UInt16(truncatingIfNeeded: table - start)
        for f in fields { vtable[2 + f.slot] = UInt16(truncatingIfNeeded: table - f.position) }
        let vtablePosition: Int
        if let existing = vtables[vtable] {
            vtablePosition = existing
        } else {
            for v in vtable.reversed() { put(v) }
            vtablePosition = size
            vtables[vtable] = vtablePosition
        }
        // vtable address = table address − soffset; addresses are total − position.
        patch(Int32(truncatingIfNeeded: vtablePosition - table), at: table)
        fields = []
        tableStart = nil
        return Offset(position: table)
    }

    /// Overwrites the 4 bytes at distance `position` from the end with `v`.
    private mutating func patch(_ v: Int32, at position: Int) {
        let u = UInt32(bitPattern: v)
        for k in 0..<4 { reversed[position - 1 - k] = UInt8(truncatingIfNeeded: u >> (8 * k)) }
    }

    // MARK: Finish

    /// The finished buffer: the root offset, then the 4-byte file identifier, then everything else.
    mutating func finish(_ root: Offset, identifier: String) throws -> [UInt8] {
        let id = Array(identifier.utf8.prefix(4))
        minAlign = max(minAlign, 4)
        align(minAlign, additional: 8)
        reversed.append(contentsOf: (id + [UInt8](repeating: 0, count: 4 - id.count)).reversed())
        offset(to: root)
        guard size <= Int(Int32.max) else { throw TooLarge(size: size) }
        return reversed.reversed()
    }
}
