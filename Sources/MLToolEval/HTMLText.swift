/// Escaping and formatting for text placed in HTML and SVG (both parsed as HTML when inline).
public enum HTMLText {
    /// `text` with `& < > " '` replaced by character references: safe in element content and quoted attributes.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for ch in text.unicodeScalars {
            switch ch {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // C0 controls other than tab/newline are not allowed in HTML text; show them as U+FFFD.
                if ch.value < 0x20 && ch != "\t" && ch != "\n" { out += "\u{FFFD}" } else { out.unicodeScalars.append(ch) }
            }
        }
        return out
    }

    /// At most `limit` characters of `text` (whitespace runs collapsed), with "…" when cut.
    public static func snippet(_ text: String, limit: Int) -> String {
        let collapsed = text.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        guard collapsed.count > limit else { return collapsed }
        return String(collapsed.prefix(max(0, limit - 1))) + "…"
    }

    /// One headline card of a report: the metric's name, its value and a note under it.
    public static func card(_ name: String, _ value: String, _ note: String) -> String {
        "<div class=\"card\"><div class=\"k\">\(escape(name))</div><div class=\"v\">\(escape(value))</div><div class=\"n\">\(escape(note))</div></div>\n"
    }

    /// `n` with thousands separators: 1234567 → "1,234,567".
    public static func grouped(_ n: Int) -> String {
        let digits = String(n.magnitude)
        var out = ""
        for (i, d) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(d)
        }
        return (n < 0 ? "-" : "") + out
    }
}
