import Foundation
import MLToolCore

extension TaggedCorpus {
    /// Parses Create ML's word-tagger JSON `bytes` (already UTF-8): an array of objects, each with an array of
    /// strings `tokensKey` and an array of strings `labelsKey` of the same length (one label per token). A sentence
    /// with no tokens, arrays of different lengths, or a token or label that is not a non-empty string is an error
    /// naming the sentence by its 1-based position.
    public static func json(bytes: [UInt8], file: String, tokensKey: String = "tokens",
                            labelsKey: String = "labels") throws -> TaggedCorpus {
        if let at = bytes.withUnsafeBytes({ InputLimits.firstTooDeepJSON($0) }) {
            throw DataError.jsonTooDeep(file: file, offset: at, limit: InputLimits.maxJSONDepth)
        }
        let root: Any
        do {
            root = try JSONSerialization.jsonObject(with: Data(bytes), options: [])
        } catch {
            throw TextError.jsonStructure(file: file, place: jsonErrorPlace(error, byteCount: bytes.count), message: "invalid JSON")
        }
        guard let array = root as? [Any] else {
            throw TextError.jsonStructure(file: file, place: "top level", message: "expected an array of sentences")
        }
        var sentences: [TaggedSentence] = []
        sentences.reserveCapacity(array.count)
        for (i, element) in array.enumerated() {
            let place = "sentence \(i + 1)"
            guard let object = element as? [String: Any] else {
                throw TextError.jsonStructure(file: file, place: place, message: "expected an object")
            }
            func strings(_ key: String) throws -> [String] {
                guard let value = object[key] else {
                    throw TextError.jsonStructure(file: file, place: place, message: "no '\(key)' array")
                }
                guard let items = value as? [Any] else {
                    throw TextError.jsonStructure(file: file, place: place, message: "'\(key)' is not an array")
                }
                return try items.enumerated().map { j, item in
                    guard let s = item as? String, !s.isEmpty else {
                        throw TextError.jsonStructure(file: file, place: place,
                                                      message: "\(key)[\(j)] is not a non-empty string")
                    }
                    return s
                }
            }
            let tokens = try strings(tokensKey), labels = try strings(labelsKey)
            guard !tokens.isEmpty else {
                throw TextError.jsonStructure(file: file, place: place, message: "a sentence with no tokens")
            }
            guard tokens.count == labels.count else {
                throw TextError.lengthMismatch(file: file, sentence: i + 1, tokens: tokens.count, labels: labels.count)
            }
            sentences.append(TaggedSentence(tokens: tokens, tags: labels, line: i + 1))
        }
        guard !sentences.isEmpty else { throw TextError.noDocuments(source: file, reason: "an empty array") }
        return TaggedCorpus(source: file, format: .json, sentences: sentences)
    }
}

/// Where Foundation's JSON parser stopped: its "around character N" is a byte index into the UTF-8 input.
func jsonErrorPlace(_ error: Error, byteCount: Int) -> String {
    let text = ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? ""
    if let r = text.range(of: #"character \d+"#, options: .regularExpression),
       let n = Int(text[r].dropFirst("character ".count)) {
        return "byte \(n)"
    }
    if text.contains("end of file") { return "byte \(byteCount) (the end of the file)" }
    return "top level"
}
