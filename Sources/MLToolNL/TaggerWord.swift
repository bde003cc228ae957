/// What the tagger's features need to know about one word, computed once from its UTF-8 bytes: hashes of the word,
/// its lower-case form, prefixes and suffixes (of the lower-case form, 1–4 and 1–5 Unicode scalars), two shapes,
/// flag bits and its length; `lexicon` fills in the tag set and word cluster later.
///
/// Hashes are `TaggerHash.bytes` of UTF-8: the same on every machine, so a stored model's feature keys mean the same
/// thing wherever it is read.
struct TaggerWord: Sendable {
    var form: UInt64 = 0
    var lower: UInt64 = 0
    /// Hashes of the first 1…4 scalars of the lower-case form (0 when the word is shorter).
    var prefix = SIMD4<UInt64>()
    /// Hashes of the last 1…5 scalars (lanes 0…4; 0 when the word is shorter).
    var suffix = SIMD8<UInt64>()
    /// The word's characters as classes (X upper, x lower, d digit, other characters as themselves), at most 16.
    var shape: UInt64 = 0
    /// The same with runs of one class collapsed ("Xx", "d.d").
    var shortShape: UInt64 = 0
    var flags: Flags = []
    /// Length in Unicode scalars, capped at 255.
    var length: UInt8 = 0
    /// Bit t set: the word was seen with tag t in training (0: unknown word).
    var tagMask: UInt32 = 0
    /// The word's cluster as a bit path with a leading 1 (0: none).
    var cluster: UInt32 = 0
    /// The word's gazetteer bits (bit 2c: first word of a name of class c, 2c + 1: a later word; 0: none).
    var names: UInt16 = 0

    struct Flags: OptionSet, Sendable {
        let rawValue: UInt16
        static let hasDigit = Flags(rawValue: 1 << 0)
        static let hasUpper = Flags(rawValue: 1 << 1)
        static let allUpper = Flags(rawValue: 1 << 2)
        static let initialUpper = Flags(rawValue: 1 << 3)
        static let hasHyphen = Flags(rawValue: 1 << 4)
        static let hasPeriod = Flags(rawValue: 1 << 5)
        static let noAlphanumeric = Flags(rawValue: 1 << 6)
        static let number = Flags(rawValue: 1 << 7)
        static let hasLetter = Flags(rawValue: 1 << 8)
        static let hasApostrophe = Flags(rawValue: 1 << 9)
        static let count = 10
    }

    /// The sentinels before the first word and after the last one.
    static let start = TaggerWord(sentinel: 0x5354_4152_545F_5F5F)
    static let end = TaggerWord(sentinel: 0x454E_445F_5F5F_5F5F)

    init() {}

    private init(sentinel: UInt64) {
        form = sentinel; lower = sentinel; shape = sentinel; shortShape = sentinel
        suffix = SIMD8(repeating: sentinel)
        prefix = SIMD4(repeating: sentinel)
        cluster = 1
        tagMask = 1 << 31
    }

    init(_ token: String) {
        var token = token
        self = token.withUTF8 { TaggerWord(utf8: $0) }
    }

    init(utf8 u: UnsafeBufferPointer<UInt8>) {
        self.init()
        form = TaggerHash.bytes(u)
        var ascii = true
        for b in u where b >= 0x80 { ascii = false; break }
        if ascii {
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(u.count, 1)) { lower in
                for i in 0..<u.count {
                    let b = u[i]
                    lower[i] = b >= 0x41 && b <= 0x5A ? b | 0x20 : b
                }
                fill(lower: UnsafeBufferPointer(rebasing: lower[0..<u.count]))
            }
        } else {
            var lowered = String(decoding: u, as: UTF8.self).lowercased()
            lowered.withUTF8 { fill(lower: $0) }
        }
        shapeAndFlags(u, ascii: ascii)
    }

    /// Hashes of the lower-case form and its prefixes and suffixes.
    private mutating func fill(lower l: UnsafeBufferPointer<UInt8>) {
        lower = TaggerHash.bytes(l)
        // Scalar boundaries: bytes that are not continuation bytes.
        var starts: [Int] = []
        starts.reserveCapacity(l.count)
        for i in 0..<l.count where l[i] & 0xC0 != 0x80 { starts.append(i) }
        let n = starts.count
        for k in 1...4 where k <= n {
            let end = k < n ? starts[k] : l.count
            prefix[k - 1] = TaggerHash.bytes(UnsafeBufferPointer(rebasing: l[0..<end]))
        }
        for k in 1...5 where k <= n {
            suffix[k - 1] = TaggerHash.bytes(UnsafeBufferPointer(rebasing: l[starts[n - k]..<l.count]))
        }
    }

    private mutating func shapeAndFlags(_ u: UnsafeBufferPointer<UInt8>, ascii: Bool) {
        var long = TaggerHash.seed, short = TaggerHash.seed
        var classes = 0, previous: UInt32 = 0xFFFF_FFFF
        var upper = 0, letters = 0, digits = 0, alnum = 0, count = 0
        var f: Flags = []
        func visit(_ s: Unicode.Scalar) {
            let cls: UInt32
            if s.isASCII {
                let v = s.value
                if v >= 0x41 && v <= 0x5A { cls = 0x58 } else if v >= 0x61 && v <= 0x7A { cls = 0x78 }
                else if v >= 0x30 && v <= 0x39 { cls = 0x64 } else { cls = v }
            } else {
                let p = s.properties
                if p.isUppercase { cls = 0x58 } else if p.isLowercase { cls = 0x78 }
                else if p.numericType != nil { cls = 0x64 } else if p.isAlphabetic { cls = 0x6C } else { cls = s.value }
            }
            switch cls {
            case 0x58: upper += 1; letters += 1; alnum += 1
                if count == 0 { f.insert(.initialUpper) }
            case 0x78, 0x6C: letters += 1; alnum += 1
            case 0x64: digits += 1; alnum += 1
            case 0x2D: f.insert(.hasHyphen)
            case 0x2E: f.insert(.hasPeriod)
            case 0x27, 0x2019: f.insert(.hasApostrophe)
            default: break
            }
            if classes < 16 { long = TaggerHash.add(long, UInt64(cls)); classes += 1 }
            if cls != previous { short = TaggerHash.add(short, UInt64(cls)); previous = cls }
            count += 1
        }
        if ascii {
            for b in u { visit(Unicode.Scalar(b)) }
        } else {
            for s in String(decoding: u, as: UTF8.self).unicodeScalars { visit(s) }
        }
        shape = TaggerHash.finish(long)
        shortShape = TaggerHash.finish(short)
        if digits > 0 { f.insert(.hasDigit) }
        if upper > 0 { f.insert(.hasUpper) }
        if letters > 0 { f.insert(.hasLetter) }
        if letters > 0 && upper == letters { f.insert(.allUpper) }
        if alnum == 0 { f.insert(.noAlphanumeric) }
        if digits > 0 && letters == 0 { f.insert(.number) }
        flags = f
        length = UInt8(min(count, 255))
    }
}
