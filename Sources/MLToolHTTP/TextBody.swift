import Foundation
import MLToolCore

/// The texts of a JSON body `{"text": "…"}` or `{"texts": ["…", …]}` (the text endpoints), read with
/// JSONSerialization after the nesting depth is checked, each text and their count held to limits.
public struct TextBody: Sendable, Equatable {
    public var texts: [String]
    /// `{"texts": [...]}` (answered with an array) rather than `{"text": ...}` (one object).
    public var isList: Bool

    /// `maxTextBytes`: the most UTF-8 bytes of one text; `maxTexts`: the most texts of one request.
    public init(_ body: [UInt8], maxTextBytes: Int, maxTexts: Int, source: String = "request body") throws {
        let tooDeep = body.withUnsafeBytes { InputLimits.firstTooDeepJSON($0, limit: 8) }
        if let at = tooDeep {
            throw HTTPError.malformedJSON(source: source, place: "byte \(at)", expected: "at most 8 levels of nesting", actual: "more")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            let place = ((error as NSError).userInfo["NSJSONSerializationErrorIndex"] as? Int).map { "byte \($0)" } ?? "the body"
            throw HTTPError.malformedJSON(source: source, place: place, expected: "JSON", actual: "malformed JSON")
        }
        guard let dict = object as? [String: Any] else {
            throw HTTPError.malformedJSON(source: source, place: "the top level", expected: "an object {\"text\": …} or {\"texts\": […]}",
                                          actual: Self.kind(object))
        }
        let texts: [String]
        if let one = dict["text"] {
            guard let s = one as? String else {
                throw HTTPError.malformedJSON(source: source, place: "\"text\"", expected: "a string", actual: Self.kind(one))
            }
            texts = [s]; isList = false
        } else if let many = dict["texts"] {
            guard let list = many as? [Any] else {
                throw HTTPError.malformedJSON(source: source, place: "\"texts\"", expected: "an array of strings", actual: Self.kind(many))
            }
            guard list.count <= maxTexts else { throw HTTPError.tooLarge(source: source, what: "\"texts\" of \(list.count) texts", size: list.count, limit: maxTexts) }
            texts = try list.enumerated().map { i, v in
                guard let s = v as? String else {
                    throw HTTPError.malformedJSON(source: source, place: "\"texts\"[\(i)]", expected: "a string", actual: Self.kind(v))
                }
                return s
            }
            isList = true
        } else {
            throw HTTPError.malformedJSON(source: source, place: "the top level", expected: "a key \"text\" or \"texts\"",
                                          actual: "keys " + dict.keys.sorted().joined(separator: ", "))
        }
        for (i, t) in texts.enumerated() where t.utf8.count > maxTextBytes {
            throw HTTPError.tooLarge(source: source, what: "text \(i)", size: t.utf8.count, limit: maxTextBytes)
        }
        self.texts = texts
    }

    static func kind(_ v: Any) -> String {
        switch v {
        case is String: return "a string"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        case is NSNull: return "null"
        case is NSNumber: return "a number or boolean"
        default: return "another value"
        }
    }
}
