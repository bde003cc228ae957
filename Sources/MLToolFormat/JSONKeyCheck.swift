import MLToolCore

/// Finds what `JSONDecoder` lets through but the format forbids in the metadata JSON (docs/FORMAT.md section 4):
/// a byte-order mark or anything but an object at the top, nesting deeper than 512, a key that occurs twice in
/// one object (compared as Swift strings, i.e. up to canonical equivalence, which is how the decoder would merge
/// them), and an integer outside the signed 64-bit range (the decoder only says "not valid JSON"; this names the
/// key and the byte). Grammar errors are left to the decoder; this scan only needs to never read out of bounds.
package enum JSONKeyCheck {
    static let maxDepth = InputLimits.maxJSONDepth

    /// The byte offset and reason of the first problem, or nil. An integer must fit in 64 bits, signed or unsigned;
    /// with `unsignedKeys` given, one above 2^63 − 1 must belong to one of those keys (the decoder's own error for
    /// it names neither the key nor the place, so a failed decode asks again this way).
    package static func firstProblem(_ b: UnsafeRawBufferPointer, unsignedKeys: Set<String>? = nil) -> (offset: Int, reason: String)? {
        guard b.first == UInt8(ascii: "{") else {
            return (0, "the metadata must be one JSON object starting at its first byte")
        }
        var frames: [(isObject: Bool, keys: Set<String>)] = []
        var previous: UInt8 = 0   // the last significant byte outside strings
        var lastKey = ""
        var i = 0
        while i < b.count {
            let c = b[i]
            switch c {
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                let start = i
                while i + 1 < b.count, [UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."), UInt8(ascii: "e"),
                                        UInt8(ascii: "E")].contains(b[i + 1]) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(b[i + 1]) {
                    i += 1
                }
                let token = String(decoding: UnsafeRawBufferPointer(rebasing: b[start...i]), as: UTF8.self)
                if !token.contains(where: { ".eE".contains($0) }), Int64(token) == nil,
                   token.dropFirst(token.hasPrefix("-") ? 1 : 0).allSatisfy(\.isNumber), token != "-",
                   UInt64(token) == nil || unsignedKeys.map({ !$0.contains(lastKey) }) == true {
                    let range = UInt64(token) == nil ? "the 64-bit range" : "the range of a signed 64-bit integer"
                    return (start, "\"\(lastKey)\": integer \(token) is outside \(range) (at most 9223372036854775807)")
                }
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                guard frames.count < maxDepth else { return (i, "nesting deeper than \(maxDepth)") }
                frames.append((c == UInt8(ascii: "{"), []))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !frames.isEmpty { frames.removeLast() }
            case UInt8(ascii: "\""):
                let start = i
                let isKey = frames.last?.isObject == true
                    && (previous == UInt8(ascii: "{") || previous == UInt8(ascii: ","))
                if isKey {
                    guard let s = string(b, &i) else { return nil }   // unterminated: the decoder reports it
                    lastKey = s
                    if !frames[frames.count - 1].keys.insert(s).inserted {
                        return (start, "key \"\(s)\" occurs twice in one object")
                    }
                } else {
                    i += 1
                    while i < b.count, b[i] != UInt8(ascii: "\"") { i += b[i] == UInt8(ascii: "\\") ? 2 : 1 }
                }
            default:
                break
            }
            if c != UInt8(ascii: " "), c != UInt8(ascii: "\n"), c != UInt8(ascii: "\r"), c != UInt8(ascii: "\t") {
                previous = c
            }
            i += 1
        }
        return nil
    }

    /// Decodes the string whose opening quote is at `i`; leaves `i` on the closing quote. Nil if unterminated.
    static func string(_ b: UnsafeRawBufferPointer, _ i: inout Int) -> String? {
        var scalars = String.UnicodeScalarView()
        var raw: [UInt8] = []
        func flush() { scalars.append(contentsOf: String(decoding: raw, as: UTF8.self).unicodeScalars); raw.removeAll() }
        var pendingHigh: UInt32?
        i += 1
        while i < b.count {
            let c = b[i]
            if c == UInt8(ascii: "\"") { flush(); return String(scalars) }
            if c != UInt8(ascii: "\\") { raw.append(c); pendingHigh = nil; i += 1; continue }
            guard i + 1 < b.count else { return nil }
            let e = b[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): raw.append(8)
            case UInt8(ascii: "f"): raw.append(12)
            case UInt8(ascii: "n"): raw.append(10)
            case UInt8(ascii: "r"): raw.append(13)
            case UInt8(ascii: "t"): raw.append(9)
            case UInt8(ascii: "u"):
                guard i + 4 <= b.count else { return nil }
                let hex = String(decoding: UnsafeRawBufferPointer(rebasing: b[i..<(i + 4)]), as: UTF8.self)
                guard let v = UInt32(hex, radix: 16) else { return nil }
                i += 4
                flush()
                if (0xD800...0xDBFF).contains(v) { pendingHigh = v; continue }
                if (0xDC00...0xDFFF).contains(v), let h = pendingHigh {
                    scalars.append(Unicode.Scalar(0x10000 + ((h - 0xD800) << 10) + (v - 0xDC00)) ?? "\u{FFFD}")
                } else {
                    scalars.append(Unicode.Scalar(v) ?? "\u{FFFD}")
                }
            default: raw.append(e)   // \" \\ \/ (and anything else, which the decoder rejects)
            }
            pendingHigh = nil
        }
        return nil
    }
}
