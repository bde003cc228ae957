import Foundation

/// Recognises a Lambda layer whose function is only a known activation — `Lambda(keras.activations.swish)`,
/// `Lambda(lambda x: tf.nn.relu6(x))` — from its config alone. Nothing is run or unmarshalled into Python objects.
///
/// A named function is read from the config: Keras 3's `{"class_name": "function", "module": "builtins" |
/// "keras.activations" | "keras.ops", "config": name}` (Keras itself loads "builtins" from keras.activations), or
/// Keras 2's `function_type "function"` with an activations module. A Python lambda (Keras 3 `__lambda__`, Keras 2
/// `function_type "lambda"`) is base64 of `marshal.dumps(code)`: the code object's fields are walked byte by byte
/// and accepted only when the body is exactly `lambda x: a.b(x)` with two to four dotted names — its bytecode equal,
/// byte for byte, to what CPython 3.8–3.13 compile for that shape (`lambdaBytecode`), one argument, no closure, no
/// constant but None — and the dotted name is a function of `dottedActivations`. Anything else is nil (refused).
enum KerasLambda {
    /// Why any other Lambda is refused.
    static let refusal = "the layer carries Python code that is not a known activation, and mltool never runs Python code"

    /// The activation `config` (a Lambda layer's) applies, or nil.
    static func activation(_ config: [String: Any], kerasMajor: Int) -> KerasActivation? {
        guard extrasAreEmpty(config), let path = functionPath(config) else { return nil }
        return activation(path: path, kerasMajor: kerasMajor)
    }

    /// arguments, mask and a code-carrying output_shape would change what the layer does or need code: refused.
    private static func extrasAreEmpty(_ c: [String: Any]) -> Bool {
        if let a = c.value("arguments"), (a as? [String: Any])?.isEmpty != true { return false }
        if c.value("mask") != nil { return false }
        if let s = c.value("output_shape"), !(s is [Any]) || (c.string("output_shape_type") ?? "raw") != "raw" { return false }
        return true
    }

    /// The dotted name of the function the config records.
    private static func functionPath(_ c: [String: Any]) -> String? {
        if let f = c.value("function") as? [String: Any] {
            if f.string("class_name") == "function", let name = f.string("config"), let module = f.string("module") {
                if module == "builtins" || activationModule(module) { return "keras.activations." + name }
                if module == "keras.ops" || module == "keras.ops.nn" { return "keras.ops." + name }
                return nil
            }
            guard f.string("class_name") == "__lambda__", let inner = f["config"] as? [String: Any],
                  inner.value("defaults") == nil, inner.value("closure") == nil, let code = inner.string("code") else { return nil }
            return lambdaPath(base64: code)
        }
        switch c.string("function_type") {
        case "function":
            guard let name = c.string("function"), let module = c.string("module"), activationModule(module) else { return nil }
            return "keras.activations." + name
        case "lambda":
            guard let parts = c.value("function") as? [Any], parts.count == 3, let code = parts[0] as? String,
                  parts[1] is NSNull, parts[2] is NSNull else { return nil }
            return lambdaPath(base64: code)
        default:
            return nil
        }
    }

    /// keras.activations and where Keras 2 / tf.keras / Keras 3 keep it.
    private static func activationModule(_ m: String) -> Bool {
        ["keras.activations", "keras.src.activations", "keras.src.activations.activations", "tf_keras.src.activations",
         "keras.api.activations", "tensorflow.python.keras.activations", "tensorflow.keras.activations"].contains(m)
    }

    // MARK: - Dotted names

    /// `tf.nn.relu6` and the like → the activation it computes with its default arguments.
    static func activation(path: String, kerasMajor: Int) -> KerasActivation? {
        for prefix in ["keras.activations.", "tf.keras.activations.", "tensorflow.keras.activations."] where path.hasPrefix(prefix) {
            return KerasGraphBuilder.activation(named: String(path.dropFirst(prefix.count)), kerasMajor: kerasMajor)
        }
        for prefix in ["keras.ops.nn.", "keras.ops."] where path.hasPrefix(prefix) {
            let name = String(path.dropFirst(prefix.count))
            // keras.ops.gelu defaults to the tanh approximation, keras.activations.gelu to the exact form.
            if name == "gelu" { return .unary(.geluTanh, alpha: 0, beta: 0) }
            if name == "exp" { return KerasGraphBuilder.activation(named: "exponential", kerasMajor: 3) }
            return opsNames.contains(name) ? KerasGraphBuilder.activation(named: name, kerasMajor: 3) : nil
        }
        for prefix in ["tf.", "tensorflow."] where path.hasPrefix(prefix) {
            return tensorflow[String(path.dropFirst(prefix.count))].flatMap {
                KerasGraphBuilder.activation(named: $0, kerasMajor: 3)
            }
        }
        return nil
    }

    /// keras.ops functions whose defaults are those of the keras.activations function of the same name.
    private static let opsNames: Set<String> = ["relu", "relu6", "sigmoid", "tanh", "silu", "swish", "elu", "selu",
                                                "softplus", "softsign", "hard_sigmoid", "hard_silu", "hard_swish",
                                                "leaky_relu", "softmax", "log_softmax", "mish"]

    /// TensorFlow functions (after "tf.") → the Keras activation with the same defaults (tf.nn.gelu is the exact
    /// form, tf.nn.leaky_relu's alpha 0.2, tf.nn.softmax over the last axis).
    private static let tensorflow: [String: String] = [
        "nn.relu": "relu", "nn.relu6": "relu6", "nn.sigmoid": "sigmoid", "sigmoid": "sigmoid", "math.sigmoid": "sigmoid",
        "nn.tanh": "tanh", "tanh": "tanh", "math.tanh": "tanh", "nn.swish": "swish", "nn.silu": "silu", "nn.elu": "elu",
        "nn.selu": "selu", "nn.softplus": "softplus", "math.softplus": "softplus", "nn.softsign": "softsign",
        "nn.gelu": "gelu", "nn.leaky_relu": "leaky_relu", "nn.softmax": "softmax", "nn.log_softmax": "log_softmax",
        "exp": "exponential", "math.exp": "exponential",
    ]

    // MARK: - Marshalled code

    /// The bytecode of `lambda x: a.b(x)`, `a.b.c(x)`, `a.b.c.d(x)` (index: names − 2) per CPython version (from
    /// `(lambda x: a.b(x)).__code__.co_code` under each; Tests/Fixtures/keras/make_oned.py prints them again).
    /// `old` marks the 3.8–3.10 code object layout (with nlocals, varnames, freevars, cellvars).
    static let lambdaBytecode: [(version: String, old: Bool, code: [String])] = [
        ("3.8-3.10", true, [
            "7400a0017c00a1015300",
            "74006a01a0027c00a1015300",
            "74006a016a02a0037c00a1015300",
        ]),
        ("3.11", false, [
            "9700740000000000000000000000a00100000000000000000000000000000000000000007c00a6010000ab0100000000" +
                "000000005300",
            "97007400000000000000000000006a010000000000000000a00200000000000000000000000000000000000000007c00" +
                "a6010000ab0100000000000000005300",
            "97007400000000000000000000006a0100000000000000006a020000000000000000a003000000000000000000000000" +
                "00000000000000007c00a6010000ab0100000000000000005300",
        ]),
        ("3.12", false, [
            "9700740000000000000000006a030000000000000000000000000000000000007c00ab010000000000005300",
            "9700740000000000000000006a020000000000000000000000000000000000006a050000000000000000000000000000" +
                "000000007c00ab010000000000005300",
            "9700740000000000000000006a020000000000000000000000000000000000006a040000000000000000000000000000" +
                "000000006a070000000000000000000000000000000000007c00ab010000000000005300",
        ]),
        ("3.13", false, [
            "95005b0000000000000000005203000000000000000000000000000000000000550035010000000000002400",
            "95005b000000000000000000520200000000000000000000000000000000000052050000000000000000000000000000" +
                "00000000550035010000000000002400",
            "95005b000000000000000000520200000000000000000000000000000000000052040000000000000000000000000000" +
                "000000005207000000000000000000000000000000000000550035010000000000002400",
        ]),
    ]

    /// The dotted name called by a marshalled `lambda x: a.b(x)`, or nil for any other code.
    static func lambdaPath(base64 text: String) -> String? {
        guard text.utf8.count <= 8192, let data = Data(base64Encoded: text, options: .ignoreUnknownCharacters) else { return nil }
        for old in [true, false] {
            var reader = MarshalReader(bytes: [UInt8](data))
            if let names = reader.simpleLambda(oldLayout: old) { return names.joined(separator: ".") }
        }
        return nil
    }
}

/// Walks the fields of one marshalled CPython code object (never building Python objects): just enough to check it
/// is a one-argument lambda whose bytecode is a `KerasLambda.lambdaBytecode` template, and that the object ends
/// exactly where the data does. Any surprise gives nil.
struct MarshalReader {
    /// What a FLAG_REF slot holds: a later 'r' may only name an empty tuple (freevars, cellvars) or a string (the
    /// qualified name repeating the name).
    enum Slot { case emptyTuple, string, other }

    let bytes: [UInt8]
    var at = 0
    var refs: [Slot] = []

    init(bytes: [UInt8]) { self.bytes = bytes }

    mutating func byte() -> UInt8? {
        guard at < bytes.count else { return nil }
        defer { at += 1 }
        return bytes[at]
    }

    mutating func int32() -> Int? {
        guard at + 4 <= bytes.count else { return nil }
        defer { at += 4 }
        let v = UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
        return Int(Int32(bitPattern: v))
    }

    mutating func raw(_ n: Int) -> [UInt8]? {
        guard n >= 0, n <= bytes.count - at else { return nil }
        defer { at += n }
        return Array(bytes[at..<at + n])
    }

    /// A type code, registering a ref slot of kind `slot` when FLAG_REF is set.
    mutating func type(_ slot: Slot = .other) -> UInt8? {
        guard let t = byte() else { return nil }
        if t & 0x80 != 0 { refs.append(slot) }
        return t & 0x7f
    }

    /// Whether the next object is a ref ('r') to a slot of kind `slot` (and consumes it if so).
    mutating func ref(to slot: Slot) -> Bool? {
        guard at < bytes.count, bytes[at] & 0x7f == UInt8(ascii: "r") else { return false }
        at += 1
        guard let i = int32(), i >= 0, i < refs.count, refs[i] == slot else { return nil }
        return true
    }

    /// A bytes object ('s').
    mutating func byteString() -> [UInt8]? {
        guard type() == UInt8(ascii: "s"), let n = int32() else { return nil }
        return raw(n)
    }

    /// A string of any kind (or a ref to one), up to 4096 bytes: its bytes (empty for a ref).
    mutating func string() -> [UInt8]? {
        switch ref(to: .string) {
        case true?: return []
        case nil: return nil
        case false?: break
        }
        let n: Int?
        switch type(.string) {
        case UInt8(ascii: "z"), UInt8(ascii: "Z"): n = byte().map(Int.init)
        case UInt8(ascii: "a"), UInt8(ascii: "A"), UInt8(ascii: "u"), UInt8(ascii: "t"): n = int32()
        default: return nil
        }
        guard let n, n <= 4096 else { return nil }
        return raw(n)
    }

    /// A Python identifier (ASCII letters, digits, underscore; 1 to 64 bytes).
    mutating func identifier() -> String? {
        guard let chars = string(), (1...64).contains(chars.count),
              chars.allSatisfy({ $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5a).contains($0) || (0x61...0x7a).contains($0) }),
              !(0x30...0x39).contains(chars[0]) else { return nil }
        return String(decoding: chars, as: UTF8.self)
    }

    /// A tuple's element count ('(' or small ')'); an empty tuple may also be a ref to one.
    mutating func tupleCount() -> Int? {
        switch ref(to: .emptyTuple) {
        case true?: return 0
        case nil: return nil
        case false?: break
        }
        let empty = at + 1 < bytes.count && bytes[at] & 0x7f == UInt8(ascii: ")") && bytes[at + 1] == 0
        switch type(empty ? .emptyTuple : .other) {
        case UInt8(ascii: ")"): return byte().map(Int.init)
        case UInt8(ascii: "("): return int32()
        default: return nil
        }
    }

    /// The dotted names of `lambda x: a.b(x)` (2 to 4 names), or nil.
    mutating func simpleLambda(oldLayout: Bool) -> [String]? {
        // Flags: OPTIMIZED | NEWLOCALS (| NOFREE before 3.11), with or without NESTED (a lambda inside a function).
        let flags: Set<Int> = oldLayout ? [0x43, 0x53] : [0x03, 0x13]
        guard type() == UInt8(ascii: "c") else { return nil }
        let header = (0..<(oldLayout ? 6 : 5)).compactMap { _ in int32() }
        guard header.count == (oldLayout ? 6 : 5), header[0] == 1, header[1] == 0, header[2] == 0,
              flags.contains(header[header.count - 1]), !oldLayout || header[3] == 1,
              let code = byteString(),
              tupleCount() == 1, type() == UInt8(ascii: "N"),
              let count = tupleCount(), (2...4).contains(count) else { return nil }
        var names: [String] = []
        for _ in 0..<count {
            guard let name = identifier() else { return nil }
            names.append(name)
        }
        let hex = code.map { String(format: "%02x", $0) }.joined()
        guard KerasLambda.lambdaBytecode.contains(where: { $0.old == oldLayout && $0.code[count - 2] == hex }),
              tupleCount() == 1, identifier() != nil else { return nil }
        if oldLayout {
            // freevars, cellvars; filename, name; firstlineno; lnotab
            guard tupleCount() == 0, tupleCount() == 0, string() != nil, string() != nil, int32() != nil,
                  byteString() != nil else { return nil }
        } else {
            // the one local is a plain argument; filename, name, qualname; firstlineno; linetable, exceptiontable
            guard byteString() == [0x20], string() != nil, string() != nil, string() != nil, int32() != nil,
                  byteString() != nil, byteString() != nil else { return nil }
        }
        return at == bytes.count ? names : nil
    }
}
