/// How much of the training data becomes the validation split (for choosing the regularisation and early stopping).
public enum ValidationRule: Equatable, Sendable {
    /// Create ML's rule: none under 50 items, 10% for 50–199, 5% from 200.
    case auto
    /// A fixed fraction in [0, 1).
    case fraction(Double)
    case none

    /// Parses "auto", "none" or a fraction like "0.1".
    public static func parse(_ text: String) throws -> ValidationRule {
        switch text {
        case "auto": return .auto
        case "none": return .none
        default:
            guard let f = Double(text), f >= 0, f < 1 else {
                throw DataError.invalidArgument(what: "--validation", value: text,
                                                expected: "auto, none or a fraction in [0, 1)")
            }
            return .fraction(f)
        }
    }

    /// Create ML's automatic validation fraction for `count` items.
    public static func autoFraction(count: Int) -> Double {
        count < 50 ? 0 : count < 200 ? 0.1 : 0.05
    }

    /// The validation fraction for `count` training items.
    public func fraction(count: Int) -> Double {
        switch self {
        case .auto: return Self.autoFraction(count: count)
        case .fraction(let f): return f
        case .none: return 0
        }
    }
}
