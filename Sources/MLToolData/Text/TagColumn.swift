/// Which CoNLL-U column holds the tags to learn: UPOS (column 4), XPOS (column 5) or one key of MISC (column 10,
/// `Key=Value|…`), written `upos`, `xpos` or `misc:KEY`.
public enum TagColumn: Sendable, Equatable, CustomStringConvertible {
    case upos
    case xpos
    case misc(String)

    /// Parses `upos`, `xpos` or `misc:KEY` (KEY not empty).
    public init(parsing text: String) throws {
        switch text.lowercased() {
        case "upos": self = .upos
        case "xpos": self = .xpos
        default:
            guard text.lowercased().hasPrefix("misc:"), text.count > 5 else {
                throw TextError.invalidConfig(field: "tag column", value: text, expected: "upos, xpos or misc:KEY")
            }
            self = .misc(String(text.dropFirst(5)))
        }
    }

    public var description: String {
        switch self {
        case .upos: return "upos"
        case .xpos: return "xpos"
        case .misc(let key): return "misc:\(key)"
        }
    }

    /// What a message calls the tag ("UPOS", "XPOS", "MISC key NE").
    var name: String {
        switch self {
        case .upos: return "UPOS"
        case .xpos: return "XPOS"
        case .misc(let key): return "MISC key \(key)"
        }
    }
}
