/// Overflow-checked arithmetic for sizes computed from untrusted input. In Swift an overflow traps, and a trap on
/// bad input is a crash bug: every size that comes from a file goes through these.
public enum Checked {
    /// `a * b`, or throws `CoreError.overflow`.
    @inlinable
    public static func mul(_ a: Int, _ b: Int, file: String = "", what: String = "size") throws -> Int {
        let (r, o) = a.multipliedReportingOverflow(by: b)
        if o { throw CoreError.overflow(file: file, what: what) }
        return r
    }

    /// `a + b`, or throws `CoreError.overflow`.
    @inlinable
    public static func add(_ a: Int, _ b: Int, file: String = "", what: String = "size") throws -> Int {
        let (r, o) = a.addingReportingOverflow(b)
        if o { throw CoreError.overflow(file: file, what: what) }
        return r
    }

    /// The element count of `shape`; every dimension must be ≥ 0 and the product must fit in Int.
    public static func elementCount(_ shape: [Int], file: String = "", what: String = "shape") throws -> Int {
        var n = 1
        for d in shape {
            guard d >= 0 else {
                throw CoreError.invalidValue(file: file, offset: nil, what: what, expected: "dimensions ≥ 0",
                                             actual: "\(shape)")
            }
            n = try mul(n, d, file: file, what: what)
        }
        return n
    }

    /// `value` rounded up to a multiple of `alignment` (a power of two).
    public static func alignUp(_ value: Int, to alignment: Int, file: String = "") throws -> Int {
        let s = try add(value, alignment - 1, file: file, what: "aligned offset")
        return s & ~(alignment - 1)
    }
}
