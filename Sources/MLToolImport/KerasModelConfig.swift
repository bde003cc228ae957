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
    /// Per call: number arguments by operand position (Keras 3 `x + 3.0` ops, Keras 2 TFOpLambda `y=`).
    var scalars: [[Int: Float]] = []
    /// The group under `model_weights` that holds the layer's weights: its own name, or for a layer of a nested
    /// model the top-level nested model's name.
    var weightGroup: String
    /// For a layer of a nested model: its own name inside the nested model, which its weight names carry
    /// ("c1" of "c1/kernel:0"); nil for a top-level layer.
    var nestedName: String?

    init(name: String, className: String, config: [String: Any], entry: [String: Any], calls: [[KerasTensorRef]]) {
        self.name = name; self.className = className; self.config = config; self.entry = entry; self.calls = calls
        self.weightGroup = name
        self.nestedName = nil
    }
}

/// The `model_config` JSON of a Keras HDF5 file: Sequential or Functional, in the Keras 2 or Keras 3 format.
package struct KerasModelConfig {
    var name: String?
    var layers: [KerasLayer]
    var inputs: [KerasTensorRef]
    var outputs: [KerasTensorRef]

    /// Parses the JSON text of the `model_config` attribute. Nested models (a Functional or Sequential used as a
    /// layer) are replaced by their own layers, named "<model>/<layer>".
    package static func parse(_ json: String, file: String) throws -> KerasModelConfig {
        let place = "/ attribute 'model_config'"
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)),
              let root = object as? [String: Any] else {
            throw ImportError.invalid(file: file, place: place, expected: "a JSON object", actual: "other text")
        }
        let config = try model(root, file: file, depth: 0)
        var seen = Set<String>()
        for layer in config.layers where !seen.insert(layer.name).inserted {
            throw ImportError.invalid(file: file, place: "model_config layer '\(layer.name)'",
                                      expected: "unique layer names", actual: "a second layer of that name")
        }
        return config
    }

    private static let modelClasses: Set<String> = ["Sequential", "Functional", "Model"]

    private static func model(_ root: [String: Any], file: String, depth: Int) throws -> KerasModelConfig {
        let className = root["class_name"] as? String ?? "?"
        switch className {
        case "Sequential":
            return try inlineNested(sequential(root, file: file, nested: depth > 0), file: file, depth: depth)
        case "Functional", "Model":
            return try inlineNested(functional(root, file: file), file: file, depth: depth)
        default:
            throw ImportError.invalid(file: file, place: "/ attribute 'model_config'",
                                      expected: "a Sequential or Functional model", actual: "class '\(className)'")
        }
    }

    // MARK: - Nested models

    /// Replaces every nested model by its layers: its inputs become the tensors its call consumed, and references
    /// to its outputs become references to the inner tensors. A nested model called more than once is unsupported.
    private static func inlineNested(_ config: KerasModelConfig, file: String, depth: Int) throws -> KerasModelConfig {
        guard config.layers.contains(where: { modelClasses.contains($0.className) }) else { return config }
        guard depth < 8 else {
            throw ImportError.invalid(file: file, place: "model_config", expected: "models nested at most 8 deep",
                                      actual: "deeper nesting")
        }
        var layers: [KerasLayer] = []
        var outputsOf: [String: [KerasTensorRef]] = [:]
        for outer in config.layers {
            guard modelClasses.contains(outer.className) else {
                layers.append(outer)
                continue
            }
            if outer.calls.isEmpty { continue }
            guard outer.calls.count == 1 else {
                throw ImportError.unsupported(file: file, ops: [.init(op: "\(outer.className) used more than once",
                                                                      count: 1, firstNodes: [outer.name])])
            }
            let inner = try model(outer.entry, file: file, depth: depth + 1)
            guard inner.inputs.count == outer.calls[0].count else {
                throw ImportError.invalid(file: file, place: "layer '\(outer.name)'",
                                          expected: "\(inner.inputs.count) inputs", actual: "\(outer.calls[0].count)")
            }
            let fed = Dictionary(zip(inner.inputs, outer.calls[0]), uniquingKeysWith: { a, _ in a })
            func rename(_ r: KerasTensorRef) -> KerasTensorRef {
                fed[r] ?? KerasTensorRef(layer: outer.name + "/" + r.layer, node: r.node, index: r.index)
            }
            for var layer in inner.layers where layer.className != "InputLayer" {
                layer.calls = layer.calls.map { $0.map(rename) }
                layer.nestedName = layer.nestedName ?? layer.name
                layer.name = outer.name + "/" + layer.name
                layer.weightGroup = outer.weightGroup
                layers.append(layer)
            }
            outputsOf[outer.name] = inner.outputs.map(rename)
        }
        // References to a nested model's output i (whatever node index the file gives its single call) now point
        // inside it; repeat for chains of nested models feeding each other.
        func substitute(_ r: KerasTensorRef) -> KerasTensorRef {
            var r = r
            for _ in 0...outputsOf.count {
                guard let outs = outputsOf[r.layer], r.index < outs.count else { break }
                r = outs[r.index]
            }
            return r
        }
        for i in layers.indices { layers[i].calls = layers[i].calls.map { $0.map(substitute) } }
        return KerasModelConfig(name: config.name, layers: layers, inputs: config.inputs.map(substitute),
                                outputs: config.outputs.map(substitute))
    }

    // MARK: - Sequential

    /// A nested Sequential may leave its input shape out: the outer model gives it.
    private static func sequential(_ root: [String: Any], file: String, nested: Bool) throws -> KerasModelConfig {
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
            guard let shape = shape ?? (nested ? NSNull() : nil), nested || !(shape is NSNull) else {
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
        var scalars: [[Int: Float]] = []
        if functional {
            for node in entry["inbound_nodes"] as? [Any] ?? [] {
                let call = try inputs(ofCall: node, file: file, layer: name)
                calls.append(call.tensors)
                scalars.append(call.scalars)
            }
        }
        var layer = KerasLayer(name: name, className: className, config: config, entry: entry, calls: calls)
        layer.scalars = scalars
        return layer
    }

    /// The input tensors of one inbound node, and its number operands by position: Keras 2
    /// `[[name, node, index, kwargs], ...]` (or a single `[name, node, index, kwargs]`, with a TFOpLambda's number
    /// `y` in kwargs), or Keras 3 `{"args": [...], "kwargs": {...}}` whose args hold `__keras_tensor__` objects
    /// (possibly in nested lists) and numbers.
    private static func inputs(ofCall node: Any, file: String, layer: String) throws
        -> (tensors: [KerasTensorRef], scalars: [Int: Float]) {
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
            var args = dict["args"] as? [Any] ?? []
            if args.count == 1, let list = args[0] as? [Any] { args = list }
            var scalars: [Int: Float] = [:]
            for (position, arg) in args.enumerated() {
                if let n = arg as? NSNumber, !(arg is [Any]) { scalars[position] = n.floatValue } else { try collect(arg) }
            }
            return (found, scalars)
        }
        guard var list = node as? [Any] else {
            throw ImportError.invalid(file: file, place: place, expected: "a list or object", actual: "\(node)")
        }
        if list.first is String { list = [list] }
        let refs = try list.map { try ref($0, file: file, place: place) }
        var scalars: [Int: Float] = [:]
        if refs.count == 1, let entry = list[0] as? [Any], entry.count >= 4,
           let y = (entry[3] as? [String: Any])?["y"] as? NSNumber {
            scalars[1] = y.floatValue
        }
        return (refs, scalars)
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

/// A JSON number that is an integer of magnitude below 2^31 (NSNumber on every platform), else nil: no Keras
/// size comes near that, and the bound keeps later size arithmetic far from overflow.
func jsonInt(_ value: Any?) -> Int? {
    guard let n = value as? NSNumber, let i = Int(exactly: n.doubleValue), abs(i) < 1 << 31 else { return nil }
    return i
}
