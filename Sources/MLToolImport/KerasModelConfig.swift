import Foundation

/// A tensor of the Keras graph: output `index` of call `node` of layer `layer` (Keras's "keras_history").
struct KerasTensorRef: Hashable, CustomStringConvertible {
    var layer: String
    var node: Int
    var index: Int
    var description: String { "\(layer)[\(node)][\(index)]" }
}

/// One layer of `model_config`, with the input tensors of each of its calls.
struct KerasLayer {
    var name: String
    var className: String
    /// The layer's "config" object (JSON, as Foundation parsed it).
    var config: [String: Any]
    /// The whole layer entry (class_name, module, registered_name, config, ...), scanned for code-carrying objects.
    var entry: [String: Any]
    /// One element per call of the layer (its inbound nodes): the tensors that call consumes, in order.
    var calls: [[KerasTensorRef]]
}

/// The `model_config` JSON of a Keras HDF5 file: Sequential or Functional, in the Keras 2 or Keras 3 format.
struct KerasModelConfig {
    var name: String?
    var layers: [KerasLayer]
    var inputs: [KerasTensorRef]
    var outputs: [KerasTensorRef]

    /// Parses the JSON text of the `model_config` attribute.
    static func parse(_ json: String, file: String) throws -> KerasModelConfig {
        let place = "/ attribute 'model_config'"
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
              let root = object as? [String: Any] else {
            throw ImportError.invalid(file: file, place: place, expected: "a JSON object", actual: "other text")
        }
        let className = root["class_name"] as? String ?? "?"
        let config: KerasModelConfig
        switch className {
        case "Sequential":
            config = try sequential(root, file: file)
        case "Functional", "Model":
            config = try functional(root, file: file)
        default:
            throw ImportError.invalid(file: file, place: place, expected: "a Sequential or Functional model",
                                      actual: "class '\(className)'")
        }
        var seen = Set<String>()
        for layer in config.layers where !seen.insert(layer.name).inserted {
            throw ImportError.invalid(file: file, place: "model_config layer '\(layer.name)'",
                                      expected: "unique layer names", actual: "a second layer of that name")
        }
        return config
    }

    // MARK: - Sequential

    private static func sequential(_ root: [String: Any], file: String) throws -> KerasModelConfig {
        // Keras ≥ 2.3 and 3 nest the layers in config.layers; Keras 2.2 made config the list itself.
        let config = root["config"] as? [String: Any]
        guard let entries = (config?["layers"] ?? root["config"]) as? [[String: Any]] else {
            throw ImportError.invalid(file: file, place: "model_config", expected: "a list of layers", actual: "none")
        }
        var layers = try entries.enumerated().map { try layer($1, index: $0, file: file, functional: false) }
        guard !layers.isEmpty else {
            throw ImportError.invalid(file: file, place: "model_config", expected: "at least one layer", actual: "none")
        }
        if layers[0].className != "InputLayer" {
            // Keras 2 keeps the input shape on the first layer (batch_input_shape) or in build_input_shape.
            let shape = layers[0].config["batch_input_shape"] ?? layers[0].config["batch_shape"]
                ?? config?["build_input_shape"]
            guard let shape, !(shape is NSNull) else {
                throw ImportError.invalid(file: file, place: "model_config", expected: "an input shape",
                                          actual: "none (the model was never built)")
            }
            var name = "input"
            while layers.contains(where: { $0.name == name }) { name += "_" }
            let input = KerasLayer(name: name, className: "InputLayer", config: ["batch_shape": shape, "name": name],
                                   entry: [:], calls: [])
            layers.insert(input, at: 0)
        }
        for i in 1..<layers.count {
            layers[i].calls = [[KerasTensorRef(layer: layers[i - 1].name, node: 0, index: 0)]]
        }
        return KerasModelConfig(name: config?["name"] as? String, layers: layers,
                                inputs: [KerasTensorRef(layer: layers[0].name, node: 0, index: 0)],
                                outputs: [KerasTensorRef(layer: layers[layers.count - 1].name, node: 0, index: 0)])
    }

    // MARK: - Functional

    private static func functional(_ root: [String: Any], file: String) throws -> KerasModelConfig {
        guard let config = root["config"] as? [String: Any], let entries = config["layers"] as? [[String: Any]] else {
            throw ImportError.invalid(file: file, place: "model_config", expected: "config.layers", actual: "none")
        }
        let layers = try entries.enumerated().map { try layer($1, index: $0, file: file, functional: true) }
        return KerasModelConfig(name: config["name"] as? String, layers: layers,
                                inputs: try refs(config["input_layers"], file: file, place: "input_layers"),
                                outputs: try refs(config["output_layers"], file: file, place: "output_layers"))
    }

    private static func layer(_ entry: [String: Any], index: Int, file: String, functional: Bool) throws -> KerasLayer {
        let className = entry["class_name"] as? String ?? ""
        let config = entry["config"] as? [String: Any] ?? [:]
        guard let name = (entry["name"] as? String) ?? (config["name"] as? String), !className.isEmpty else {
            throw ImportError.invalid(file: file, place: "model_config layer #\(index)",
                                      expected: "class_name and name", actual: "\(entry.keys.sorted())")
        }
        var calls: [[KerasTensorRef]] = []
        if functional {
            for node in entry["inbound_nodes"] as? [Any] ?? [] {
                calls.append(try inputs(ofCall: node, file: file, layer: name))
            }
        }
        return KerasLayer(name: name, className: className, config: config, entry: entry, calls: calls)
    }

    /// The input tensors of one inbound node: Keras 2 `[[name, node, index, kwargs], ...]`, or Keras 3
    /// `{"args": [...], "kwargs": {...}}` whose args hold `__keras_tensor__` objects (possibly in nested lists).
    private static func inputs(ofCall node: Any, file: String, layer: String) throws -> [KerasTensorRef] {
        let place = "layer '\(layer)' inbound_nodes"
        if let dict = node as? [String: Any] {
            var found: [KerasTensorRef] = []
            func collect(_ value: Any) throws {
                if let d = value as? [String: Any] {
                    if d["class_name"] as? String == "__keras_tensor__" {
                        let history = (d["config"] as? [String: Any])?["keras_history"]
                        found.append(try ref(history, file: file, place: place))
                    } else {
                        for v in d.values { try collect(v) }
                    }
                } else if let list = value as? [Any] {
                    for v in list { try collect(v) }
                }
            }
            try collect(dict["args"] ?? [])
            return found
        }
        guard let list = node as? [Any] else {
            throw ImportError.invalid(file: file, place: place, expected: "a list or object", actual: "\(node)")
        }
        return try list.map { try ref($0, file: file, place: place) }
    }

    /// `[name, node, index, ...]`.
    private static func ref(_ value: Any?, file: String, place: String) throws -> KerasTensorRef {
        guard let list = value as? [Any], list.count >= 3, let name = list[0] as? String,
              let node = jsonInt(list[1]), let index = jsonInt(list[2]), node >= 0, index >= 0 else {
            throw ImportError.invalid(file: file, place: place, expected: "[layer, node, index]",
                                      actual: String(describing: value ?? "nothing"))
        }
        return KerasTensorRef(layer: name, node: node, index: index)
    }

    /// input_layers / output_layers: `[[name, node, index], ...]` (Keras 2, and Keras 3 with several tensors) or a
    /// single `[name, node, index]` (Keras 3 with one tensor).
    private static func refs(_ value: Any?, file: String, place: String) throws -> [KerasTensorRef] {
        guard let list = value as? [Any], !list.isEmpty else {
            throw ImportError.invalid(file: file, place: "model_config \(place)", expected: "a list of tensors",
                                      actual: "none")
        }
        if list.first is String { return [try ref(list, file: file, place: place)] }
        return try list.map { try ref($0, file: file, place: place) }
    }
}

// MARK: - Typed access to config values

extension Dictionary where Key == String, Value == Any {
    /// The value at `key`, treating JSON null as absent.
    func value(_ key: String) -> Any? {
        guard let v = self[key], !(v is NSNull) else { return nil }
        return v
    }
    func string(_ key: String) -> String? { value(key) as? String }
    func double(_ key: String) -> Double? { (value(key) as? NSNumber)?.doubleValue }
    func int(_ key: String) -> Int? { jsonInt(value(key)) }
    func bool(_ key: String) -> Bool? { (value(key) as? NSNumber)?.boolValue }
    /// An int or a list of ints, as a list of `count` values (a single int is repeated).
    func ints(_ key: String, count: Int) -> [Int]? {
        if let i = int(key) { return [Int](repeating: i, count: count) }
        guard let list = value(key) as? [Any] else { return nil }
        let ints = list.compactMap(jsonInt)
        return ints.count == count && list.count == count ? ints : nil
    }
}

/// A JSON number that is an integer (NSNumber on every platform), else nil.
func jsonInt(_ value: Any?) -> Int? {
    guard let n = value as? NSNumber else { return nil }
    return Int(exactly: n.doubleValue)
}
