import Foundation

/// Options more than one task declares (each written once, here).
public enum TaskOptions {
    /// `mltool predict --text STRING` (text classifiers and word taggers).
    public static let text = OptionDeclaration("--text", value: "STRING", repeats: true, help: "Classify this string (text models).")
}

/// How tasks write their results: JSON with sorted keys and unescaped slashes.
public enum TaskOutput {
    /// `value` as one line of JSON.
    public static func json<T: Encodable>(_ value: T) throws -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try e.encode(value), as: UTF8.self)
    }

    /// `s` as a JSON string literal.
    public static func jsonString(_ s: String) -> String {
        let e = JSONEncoder()
        e.outputFormatting = [.withoutEscapingSlashes]
        let data = (try? e.encode(s)) ?? Data("\"\"".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// The first line of `text`, at most 60 characters, for display.
    public static func snippet(_ text: String) -> String {
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        return line.count > 60 ? String(line.prefix(59)) + "…" : line
    }
}
