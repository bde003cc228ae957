/// Everything about a model except its tensor bytes. Stored as the metadata section of a model file (JSON with
/// sorted keys, so that the same model always writes the same bytes).
public struct ModelMetadata: Codable, Equatable, Sendable {
    public enum Task: String, Codable, Sendable {
        /// An imported network with no classifier semantics.
        case network
        case imageClassifier
        case textClassifier
        /// One tag per word of a text (`tagger` holds its settings).
        case wordTagger
        /// Boxes with labels and confidences: `detection` says how the graph's outputs become them.
        case objectDetector
        /// A tree ensemble over the columns of a table (`tabular` holds its features and tensor names).
        case tabular
        /// Labels for time ranges of a recording: `sound` says how samples become the graph's windows.
        case soundClassifier
    }

    public var task: Task
    public var name: String?
    public var description: String?
    public var author: String?
    public var license: String?
    public var version: String?
    /// The computation; nil for models that are not a graph (text models name their tensors in `text` or `tagger`).
    public var graph: Graph?
    /// Class names, in output index order; empty when the model has none.
    public var labels: [String]
    /// Whether the graph's first output holds "logits" or "probabilities".
    public var outputKind: String?
    /// For extractors: the tensor whose values are the features (e.g. the pooled 1280-wide layer).
    public var featureTensor: String?
    public var image: ImagePreprocessing?
    public var text: TextConfig?
    /// A word tagger's settings (task `wordTagger`).
    public var tagger: TaggerConfig?
    /// Object detectors: the decoder and non-maximum suppression after the graph.
    public var detection: DetectionConfig?
    /// A tree ensemble's features and objective (task `tabular`).
    public var tabular: TabularConfig?
    /// A sentence encoder's tokenizer (a network whose `input_ids` and `attention_mask` come from text).
    public var sentenceEncoder: SentenceEncoderConfig?
    /// A sound classifier's front end and windows (task `soundClassifier`).
    public var sound: SoundConfig?
    public var provenance: Provenance
    /// Stored metrics (e.g. "holdout.accuracy").
    public var metrics: [String: Double]
    public var split: SplitManifest?

    public init(task: Task, graph: Graph? = nil, labels: [String] = [], provenance: Provenance = Provenance()) {
        self.task = task; self.graph = graph; self.labels = labels; self.provenance = provenance; self.metrics = [:]
    }
}

/// How raw images become the model's input tensor.
public struct ImagePreprocessing: Codable, Equatable, Sendable {
    /// Input height and width in pixels.
    public var height: Int
    public var width: Int
    /// "rgb", "bgr" or "gray".
    public var colorOrder: String
    /// value = (pixel · scale + bias[c] − mean[c]) / std[c], pixel in 0…255.
    public var scale: Float
    public var bias: [Float]
    public var mean: [Float]
    public var std: [Float]
    /// "shorter": resize the shorter side to `resizeTo` keeping the aspect ratio; "exact" (or Vision's name
    /// "scaleFill"): to height × width; "letterbox": fit inside height × width keeping the aspect ratio, centred on
    /// a canvas of `padValue` (docs/FORMAT.md section 4.2).
    public var resize: String
    /// Length of the shorter side after resizing (used with resize "shorter").
    public var resizeTo: Int?
    /// "center" or "none".
    public var crop: String
    /// letterbox: the pixel value (0…255, before scale and bias) of the padding; nil means 0.
    public var padValue: Float?

    public init(height: Int, width: Int, colorOrder: String = "rgb", scale: Float = 1, bias: [Float] = [0, 0, 0],
                mean: [Float] = [0, 0, 0], std: [Float] = [1, 1, 1], resize: String = "exact", resizeTo: Int? = nil,
                crop: String = "none", padValue: Float? = nil) {
        self.height = height; self.width = width; self.colorOrder = colorOrder; self.scale = scale; self.bias = bias
        self.mean = mean; self.std = std; self.resize = resize; self.resizeTo = resizeTo; self.crop = crop
        self.padValue = padValue
    }

    /// Ultralytics' YOLO input: RGB scaled to [0, 1], letterboxed on grey (114) to size × size.
    public static func yolo(size: Int) -> ImagePreprocessing {
        ImagePreprocessing(height: size, width: size, scale: 1.0 / 255, resize: "letterbox", padValue: 114)
    }

    /// The extractor default: RGB scaled to [-1, 1], 224×224, shorter side to 256 then centre crop.
    public static let efficientNetLite = ImagePreprocessing(
        height: 224, width: 224, colorOrder: "rgb", scale: 1.0 / 127.5, bias: [-1, -1, -1],
        resize: "shorter", resizeTo: 256, crop: "center")
}

/// Text-model settings: the tokenizer and feature map live in the model, so predict works on raw strings.
public struct TextConfig: Codable, Equatable, Sendable {
    public var lowercase: Bool
    /// Unicode normalisation form applied before tokenizing ("nfkc" or "none").
    public var normalization: String
    public var wordNgrams: [Int]         // [min, max]
    public var charNgrams: [Int]?        // [min, max] or nil
    public var minCount: Int
    /// "tfidf", "count" or "binary".
    public var weighting: String
    public var sublinearTF: Bool
    public var l2Normalize: Bool
    /// When set, features are hashed into 2^hashBits buckets and there is no vocabulary.
    public var hashBits: Int?
    public var stopWords: [String]
    /// Names of tensors in the tensor table: vocabulary (u8, newline-separated UTF-8), idf (f32), weights, bias.
    public var vocabularyTensor: String?
    public var idfTensor: String?
    public var weightsTensor: String
    public var biasTensor: String
    /// With a sentence encoder (`ModelMetadata.sentenceEncoder`, the graph): f32 [D] tensors that turn its embedding e
    /// into the last D features, (e − mean) · scale; nil for TF-IDF features alone.
    public var embeddingMeanTensor: String?
    public var embeddingScaleTensor: String?

    public init(lowercase: Bool = true, normalization: String = "nfkc", wordNgrams: [Int] = [1, 2],
                charNgrams: [Int]? = nil, minCount: Int = 1, weighting: String = "tfidf", sublinearTF: Bool = true,
                l2Normalize: Bool = true, hashBits: Int? = nil, stopWords: [String] = [],
                vocabularyTensor: String? = "text.vocabulary", idfTensor: String? = "text.idf",
                weightsTensor: String = "text.weights", biasTensor: String = "text.bias") {
        self.lowercase = lowercase; self.normalization = normalization; self.wordNgrams = wordNgrams
        self.charNgrams = charNgrams; self.minCount = minCount; self.weighting = weighting
        self.sublinearTF = sublinearTF; self.l2Normalize = l2Normalize; self.hashBits = hashBits
        self.stopWords = stopWords; self.vocabularyTensor = vocabularyTensor; self.idfTensor = idfTensor
        self.weightsTensor = weightsTensor; self.biasTensor = biasTensor
    }
}

/// Where a model came from.
public struct Provenance: Codable, Equatable, Sendable {
    public struct Source: Codable, Equatable, Sendable {
        public var path: String
        public var sha256: String
        public init(path: String, sha256: String) { self.path = path; self.sha256 = sha256 }
    }
    public var toolVersion: String
    public var sources: [Source]
    public var seed: UInt64?
    public var command: String?
    /// Seconds per phase (e.g. "extract", "train").
    public var timings: [String: Double]

    public init(toolVersion: String = MLToolInfo.version, sources: [Source] = [], seed: UInt64? = nil,
                command: String? = nil, timings: [String: Double] = [:]) {
        self.toolVersion = toolVersion; self.sources = sources; self.seed = seed; self.command = command
        self.timings = timings
    }

    /// This provenance with no path of the machine that made it, for files that leave it (exports): sources by
    /// file name, and every path in the command (a word holding a "/", or starting with "~") by its last
    /// component. Hashes, seed, timings and the rest of the command stay.
    public var portable: Provenance {
        func name(_ path: String) -> String {
            let last = path.split(separator: "/").last.map(String.init) ?? ""
            return last.isEmpty || last == "~" ? "." : last
        }
        var p = self
        p.sources = sources.map { Source(path: name($0.path), sha256: $0.sha256) }
        p.command = command.map { c in
            c.split(separator: " ", omittingEmptySubsequences: false).map { word in
                word.contains("/") || word.hasPrefix("~") ? name(String(word)) : String(word)
            }.joined(separator: " ")
        }
        return p
    }
}

/// The items held out for testing, so that `mltool eval` can re-evaluate on exactly them.
public struct SplitManifest: Codable, Equatable, Sendable {
    public struct Item: Codable, Equatable, Sendable {
        public var path: String
        public var label: String
        public var sha256: String
        public init(path: String, label: String, sha256: String) {
            self.path = path; self.label = label; self.sha256 = sha256
        }
    }
    /// The root the paths are relative to (absolute), or nil when the paths are absolute.
    public var root: String?
    public var holdout: [Item]
    public var trainCount: Int
    public var validationCount: Int
    public var seed: UInt64
    /// Training items for quantization's calibration (never a validation or holdout item), relative to `root`.
    public var calibration: [Item]?
    public init(root: String?, holdout: [Item], trainCount: Int, validationCount: Int, seed: UInt64,
                calibration: [Item]? = nil) {
        self.root = root; self.holdout = holdout; self.trainCount = trainCount
        self.validationCount = validationCount; self.seed = seed; self.calibration = calibration
    }

    /// How many calibration items a trainer records (`calibration`).
    public static let calibrationCount = 64

    /// `count` of `items` spread evenly over them (items in class order hit every class), in their order.
    public static func spread<T>(_ items: [T], count: Int) -> [T] {
        guard items.count > count, count > 0 else { return items }
        return (0..<count).map { items[$0 * items.count / count] }
    }
}

/// Facts about this build of mltool. (Not named `MLTool`: that is the library module's name.)
public enum MLToolInfo {
    public static let version = "0.1.0"
}
