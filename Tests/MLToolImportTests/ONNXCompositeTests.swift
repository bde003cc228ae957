import MLToolCore
import Testing
@testable import MLToolImport

/// The ops the importer expands into others (ONNXGraphBuilder+Composite, +Scatter, +Attention, +GridSample,
/// +Bitwise) refuse bad attributes and inputs with an ImportError naming the node, the attribute and expected vs
/// actual. Their values are checked by ONNXConformanceTests against the ONNX backend cases.
@Suite struct ONNXCompositeTests {
    /// The error `node` gets from a builder where `inputs` are activations of those ONNX shapes (graph inputs of
    /// element type `types[name]` when given) and `constants` constants.
    static func refusal(_ node: ONNXFile.Node, opset: Int = 23, inputs: [String: [Int]], types: [String: Int32] = [:],
                        constants: [String: ONNXConstant] = [:]) -> String? {
        var b = ONNXGraphBuilder(file: "t.onnx", opset: opset, constants: constants, reservedNames: Set(inputs.keys))
        b.shapes = inputs
        b.elementTypes = types
        do {
            try b.convert(node)
            return nil
        } catch {
            return "\(error)"
        }
    }

    static func node(_ op: String, _ inputs: [String], _ attributes: [ONNXFile.Attribute] = []) -> ONNXFile.Node {
        ONNXFile.Node(name: "n", opType: op, domain: "", inputs: inputs, outputs: ["y"],
                      attributes: Dictionary(uniqueKeysWithValues: attributes.map { ($0.name, $0) }))
    }

    static func int(_ name: String, _ v: Int) -> ONNXFile.Attribute { .init(name: name, type: 2, i: v) }
    static func string(_ name: String, _ v: String) -> ONNXFile.Attribute { .init(name: name, type: 3, s: v) }
    static func indices(_ shape: [Int], _ values: [Double]) -> ONNXConstant { ONNXConstant(shape: shape, values: values, isInteger: true) }

    @Test func triluNeedsTwoAxes() {
        #expect(Self.refusal(Self.node("Trilu", ["x"]), inputs: ["x": [5]])
                == "t.onnx: node 'n' (Trilu): expected an input of rank ≥ 2, found [5]")
    }

    @Test func lpNormalizationOrder() {
        #expect(Self.refusal(Self.node("LpNormalization", ["x"], [Self.int("p", 3)]), inputs: ["x": [2, 3]])
                == "t.onnx: node 'n' (LpNormalization) p: expected 1 or 2, found 3")
    }

    @Test func cumSumAxisOutOfRange() {
        #expect(Self.refusal(Self.node("CumSum", ["x", "axis"]), inputs: ["x": [2, 3]], constants: ["axis": Self.indices([], [2])])
                == "t.onnx: node 'n' (CumSum) axis: expected -2..<2, found 2")
    }

    @Test func gatherElementsIndexOutOfRange() {
        let idx = Self.indices([1, 2], [0, 7])
        #expect(Self.refusal(Self.node("GatherElements", ["x", "i"], [Self.int("axis", 1)]), inputs: ["x": [2, 3]], constants: ["i": idx])
                == "t.onnx: node 'n' (GatherElements) indices: expected indices in -3..<3, found 7")
    }

    @Test func scatterReduction() {
        let idx = Self.indices([1, 1], [0])
        #expect(Self.refusal(Self.node("ScatterElements", ["x", "i", "u"], [Self.string("reduction", "avg")]), opset: 18,
                             inputs: ["x": [2, 3], "u": [1, 1]], constants: ["i": idx])
                == "t.onnx: node 'n' (ScatterElements) reduction: expected none, add, mul, max or min, found avg")
    }

    @Test func gridSampleMode() {
        let grid = ONNXConstant(shape: [1, 2, 2, 2], values: [Double](repeating: 0, count: 8))
        #expect(Self.refusal(Self.node("GridSample", ["x", "g"], [Self.string("mode", "area")]), inputs: ["x": [1, 1, 3, 3]], constants: ["g": grid])
                == "t.onnx: node 'n' (GridSample) mode: expected nearest, linear or cubic (bilinear, bicubic before opset 20), found area")
    }

    @Test func attentionThreeDimensionalNeedsHeadCounts() {
        #expect(Self.refusal(Self.node("Attention", ["q", "k", "v"]), inputs: ["q": [1, 4, 8], "k": [1, 6, 8], "v": [1, 6, 8]])
                == "t.onnx: node 'n' (Attention) q_num_heads / kv_num_heads: expected head counts ≥ 1 dividing the hidden sizes, found [0, 0, 0] for [1, 4, 8]")
    }

    @Test func attentionComputedMaskShorterThanTheKeys() {
        let shapes = ["q": [1, 2, 4, 8], "k": [1, 2, 6, 8], "v": [1, 2, 6, 8], "m": [4, 4]]
        #expect(Self.refusal(Self.node("Attention", ["q", "k", "v", "m"]), inputs: shapes)
                == "t.onnx: node 'n' (Attention) attn_mask: expected a constant mask, or a computed one over all 6 keys, found computed [4, 4]")
    }

    @Test func bitShiftDirectionAndWidth() {
        #expect(Self.refusal(Self.node("BitShift", ["x", "s"], [Self.string("direction", "UP")]), inputs: ["x": [3], "s": [3]], types: ["x": 2, "s": 2])
                == "t.onnx: node 'n' (BitShift) direction: expected LEFT or RIGHT, found UP")
        // A computed operand of unknown element type: the width (where a left shift wraps) is unknown.
        #expect(Self.refusal(Self.node("BitShift", ["x", "s"], [Self.string("direction", "LEFT")]), inputs: ["x": [3], "s": [3]])
                == "t.onnx: node 'n' (BitShift) input 0: expected an integer graph input or constant (its width), found a computed tensor of unknown element type")
    }

    @Test func castLikeNeedsAConstantTarget() {
        #expect(Self.refusal(Self.node("CastLike", ["x", "t"]), inputs: ["x": [3], "t": [1]])
                == "t.onnx: node 'n' (CastLike): expected target_type as a constant (initializer), found computed tensor 't'")
    }

    @Test func oneHotDepth() {
        let idx = Self.indices([2], [0, 1])
        #expect(Self.refusal(Self.node("OneHot", ["i", "d", "v"]), opset: 11, inputs: ["v": [2]],
                             constants: ["i": idx, "d": ONNXConstant(shape: [], values: [0])])
                == "t.onnx: node 'n' (OneHot) depth: expected one value ≥ 1, found [0.0]")
    }
}
