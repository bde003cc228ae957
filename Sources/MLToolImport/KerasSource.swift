import Foundation
import MLToolCore

/// What the importer reads from the file while it is open: the parsed config, the Keras version, and every
/// layer's weights. Checks for code-carrying and unsupported layers happen before any weight is read.
struct KerasSource {
    var file: String
    var config: KerasModelConfig
    var kerasVersion: String?
    var backend: String?
    var kerasMajor: Int
    var weights: [String: KerasLayerWeights] = [:]

    init(file h5: HDF5File) throws {
        file = h5.name
        let root = h5.root
        guard let configText = try h5.optionalString("model_config", of: root) else {
            throw ImportError.invalid(file: file, place: "/ attribute 'model_config'",
                                      expected: "a full model saved with model.save()",
                                      actual: "no model config (a weights-only file?)")
        }
        config = try KerasModelConfig.parse(configText, file: file)
        kerasVersion = (try? h5.optionalString("keras_version", of: root)) ?? nil
        backend = (try? h5.optionalString("backend", of: root)) ?? nil
        if let v = kerasVersion, let major = Int(v.prefix { $0.isNumber }) {
            kerasMajor = major
        } else {
            // No version attribute: Keras 3 writes "batch_shape" where Keras 2 wrote "batch_input_shape".
            kerasMajor = config.layers.contains { $0.config["batch_shape"] != nil } ? 3 : 2
        }
        try Self.refuseCode(config.layers, file: file, kerasMajor: kerasMajor)
        try Self.checkSupported(config.layers, file: file, kerasMajor: kerasMajor)
        try readWeights(h5)
    }

    /// Refuses the first layer that carries code: a Lambda that is not a known activation (`KerasLambda`), a class
    /// from a module outside Keras, an object registered by a package ("package>Name"), or a serialized Python lambda
    /// anywhere in its config.
    static func refuseCode(_ layers: [KerasLayer], file: String, kerasMajor: Int = 3) throws {
        for layer in layers {
            let place = "layer '\(layer.name)' (\(layer.className))"
            if layer.className == "Lambda" {
                guard KerasLambda.activation(layer.config, kerasMajor: kerasMajor) != nil else {
                    throw ImportError.refused(file: file, place: place, reason: KerasLambda.refusal)
                }
                continue
            }
            if let reason = codeCarrier(layer.entry.isEmpty ? layer.config : layer.entry) {
                throw ImportError.refused(file: file, place: place, reason: reason)
            }
        }
    }

    private static func codeCarrier(_ value: Any) -> String? {
        if let list = value as? [Any] { return list.lazy.compactMap(codeCarrier).first }
        guard let dict = value as? [String: Any] else { return nil }
        if dict.string("class_name") == "__lambda__" {
            return "it holds a serialized Python lambda, which mltool never runs"
        }
        if dict["class_name"] != nil, let module = dict.string("module"),
           !(module == "keras" || module.hasPrefix("keras.") || module.hasPrefix("tf_keras")) {
            return "it uses a custom object from module '\(module)', whose code mltool never runs"
        }
        if let registered = dict.string("registered_name"), registered.contains(">") {
            return "it uses the custom object '\(registered)', whose code mltool never runs"
        }
        for key in dict.keys.sorted() {
            if let value = dict[key], let reason = codeCarrier(value) { return reason }
        }
        return nil
    }

    /// Throws one `unsupported` error listing every layer the importer cannot convert, grouped by reason.
    static func checkSupported(_ layers: [KerasLayer], file: String, kerasMajor: Int) throws {
        var order: [String] = []
        var byKind: [String: [String]] = [:]
        for layer in layers {
            guard let problem = KerasLayerConverters.problem(layer, kerasMajor: kerasMajor) else { continue }
            if byKind[problem] == nil { order.append(problem) }
            byKind[problem, default: []].append(layer.name)
        }
        guard order.isEmpty else {
            throw ImportError.unsupported(file: file, ops: order.map {
                .init(op: $0, count: byKind[$0]?.count ?? 0, firstNodes: Array((byKind[$0] ?? []).prefix(3)))
            })
        }
    }

    /// Reads `weight_names` and the datasets of every layer listed in `layer_names` (under `model_weights`, or the
    /// root for files that keep them there). A nested model's group holds the weights of all its layers, each
    /// named "<inner layer>/<weight>".
    private mutating func readWeights(_ h5: HDF5File) throws {
        // Three pipelined exchanges with the sandboxed reader (HDF5File): every layer's group, every group's
        // weight names, every weight.
        let base = try h5.openIfPresent("model_weights", in: h5.root) ?? h5.root
        let listed: Set<String>? = try h5.optionalStrings("layer_names", of: base).map(Set.init)
        let layers = config.layers.filter { $0.className != "InputLayer" && listed?.contains($0.weightGroup) != false }
        let groups = try h5.openIfPresent(layers.map(\.weightGroup), in: base)
        let found = zip(layers, groups).compactMap { layer, group in group.flatMap { h5.isGroup($0) ? (layer, $0) : nil } }
        let names = try h5.optionalStrings("weight_names", ofEach: found.map(\.1))
        var wanted: [(layer: String, name: String, group: HDF5File.Object)] = []
        for ((layer, group), list) in zip(found, names) {
            guard let list else { continue }
            weights[layer.name] = KerasLayerWeights()
            for name in list {
                if let inner = layer.nestedName, name.split(separator: "/").dropLast().last.map(String.init) != inner {
                    continue
                }
                wanted.append((layer.name, name, group))
            }
        }
        let values = try h5.readFloats(wanted.map { ($0.name, $0.group) })
        for (item, (shape, data)) in zip(wanted, values) {
            weights[item.layer]?.entries.append(.init(name: item.name, shape: shape, data: data))
        }
    }
}
