import Testing
@testable import MLToolCore

@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
         "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func knownVectors(input: String, digest: String) {
        #expect(SHA256.hex(Array(input.utf8)) == digest)
    }

    @Test func millionAs() {
        #expect(SHA256.hex([UInt8](repeating: 0x61, count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func incrementalEqualsOneShot() {
        let data = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        var s = SHA256()
        for chunk in stride(from: 0, to: data.count, by: 37) { s.update(data[chunk..<min(chunk + 37, data.count)]) }
        let inc = s.finalize().map { String($0, radix: 16) }.joined()
        var t = SHA256(); t.update(data)
        #expect(inc == t.finalize().map { String($0, radix: 16) }.joined())
    }
}

@Suite struct CheckedTests {
    @Test func overflowThrows() throws {
        #expect(throws: CoreError.self) { try Checked.elementCount([Int.max / 2, 3]) }
        #expect(throws: CoreError.self) { try Checked.elementCount([4, -1]) }
        #expect(try Checked.elementCount([2, 3, 4]) == 24)
        #expect(try Checked.alignUp(65, to: 64) == 128)
    }

    @Test func byteReaderNeverReadsPastEnd() throws {
        let bytes: [UInt8] = [1, 0, 0, 0, 2]
        try bytes.withUnsafeBytes { raw throws in
            var r = ByteReader(raw, file: "x.bin")
            let a = try r.u32("a")
            #expect(a == 1)
            #expect(throws: CoreError.truncated(file: "x.bin", offset: 4, needed: 4, length: 5, what: "b")) {
                try r.u32("b")
            }
        }
    }
}

@Suite struct PackedBitsTests {
    @Test(arguments: [1, 2, 4, 6, 8])
    func roundTrip(bits: Int) {
        var rng = SplitMix64(seed: UInt64(bits))
        let idx = (0..<1001).map { _ in Int(rng.next() % UInt64(1 << bits)) }
        let packed = PackedBits.pack(idx, bits: bits)
        #expect(packed.count == (1001 * bits + 7) / 8)
        let back = packed.withUnsafeBytes { raw in (0..<idx.count).map { PackedBits.get(raw, index: $0, bits: bits) } }
        #expect(back == idx)
    }

    @Test func paletteDequantizesPerGroup() throws {
        // 4 output channels along axis 0, groups of 2: each group has its own 2-entry table.
        let idx = [0, 1, 1, 0, 0, 0, 1, 1]
        let t = StoredTensor(name: "w", dtype: .palette1, shape: [4, 2],
                             quant: QuantParams(axis: 0, groupSize: 2, lut: [1, 2, 10, 20]),
                             bytes: TensorBytes(copying: PackedBits.pack(idx, bits: 1)))
        #expect(try t.floats() == [1, 2, 2, 1, 10, 10, 20, 20])
    }

    @Test func int8PerChannel() throws {
        let q: [Int8] = [1, -1, 2, -2]
        let t = StoredTensor(name: "w", dtype: .int8, shape: [2, 2],
                             quant: QuantParams(axis: 0, scales: [0.5, 2], zeroPoints: [0, 1]),
                             bytes: TensorBytes(copying: q.map { UInt8(bitPattern: $0) }))
        #expect(try t.floats() == [0.5, -0.5, 2, -6])
    }
}

/// `GraphPasses.fuseSwish`: x · σ(x) as ONNX exports spell SiLU becomes one swish, then moves into the conv.
@Suite struct SwishFusionTests {
    static func graph(extraReader: Bool) -> Model {
        let conv = Node(name: "conv", op: .conv, inputs: ["x", "w"], outputs: ["c"],
                        attributes: Attributes(kernel: [1, 1], strides: [1, 1], pads: [0, 0, 0, 0], groups: 1))
        var nodes = [conv, Node(name: "sig", op: .sigmoid, inputs: ["c"], outputs: ["s"]),
                     Node(name: "mul", op: .mul, inputs: ["s", "c"], outputs: ["y"])]
        var outputs = ["y"]
        if extraReader { nodes.append(Node(name: "other", op: .relu, inputs: ["s"], outputs: ["r"])); outputs.append("r") }
        let g = Graph(inputs: [GraphInput(name: "x", shape: [-1, 2, 2, 3])], outputs: outputs, nodes: nodes)
        return Model(metadata: ModelMetadata(task: .imageClassifier, graph: g),
                     tensors: [StoredTensor(name: "w", tensor: Tensor(shape: [1, 1, 3, 4], data: (0..<12).map { Float($0) / 10 }))])
    }

    @Test func siluBecomesAFusedSwish() throws {
        let g = try #require(try GraphPasses.optimize(Self.graph(extraReader: false)).metadata.graph)
        #expect(g.nodes.count == 1 && g.nodes[0].op == .conv && g.nodes[0].attributes.activation?.op == .swish)
        #expect(g.nodes[0].outputs == ["y"] && g.outputs == ["y"])
    }

    @Test func aSigmoidReadElsewhereStays() throws {
        let g = try #require(try GraphPasses.fuseSwish(Self.graph(extraReader: true)).metadata.graph)
        #expect(g.nodes.map(\.op) == [.conv, .sigmoid, .mul, .relu])
    }

    /// The graph cut to what some outputs read: the nodes on a path to them, in graph order, and the names read.
    @Test func nodesFeedingOutputs() throws {
        let nodes = try #require(Self.graph(extraReader: true).metadata.graph).nodes  // conv, sig, mul → y; sig → relu → r
        let toY = GraphPasses.nodes(nodes, feeding: ["y"])
        #expect(toY.nodes.map(\.name) == ["conv", "sig", "mul"] && toY.read == ["y", "s", "c", "x", "w"])
        let toR = GraphPasses.nodes(nodes, feeding: ["r"])
        #expect(toR.nodes.map(\.name) == ["conv", "sig", "other"] && toR.read == ["r", "s", "c", "x", "w"])
        #expect(GraphPasses.nodes(nodes, feeding: ["c"]).nodes.map(\.name) == ["conv"])
        #expect(GraphPasses.nodes(nodes, feeding: ["x"]).nodes.isEmpty && GraphPasses.nodes(nodes, feeding: []).read.isEmpty)
    }
}

/// The one seeded shuffle and split: the documented algorithm (a seed's order is part of every model's bytes), and
/// the split's sides disjoint, complete and in increasing order.
@Suite struct SeededShuffleTests {
    @Test func shuffleIsFisherYatesFromTheBack() {
        var a = Array(0..<50), rng = SplitMix64(seed: 7)
        a.seededShuffle(&rng)
        var b = Array(0..<50), check = SplitMix64(seed: 7)
        var i = 49
        while i > 0 { b.swapAt(i, Int(check.next() % UInt64(i + 1))); i -= 1 }
        #expect(a == b && a != Array(0..<50) && a.sorted() == Array(0..<50))
    }

    @Test func splitTakesTheShuffledPrefix() {
        let (rest, taken) = SeededSplit.indices(count: 20, taking: 5, seed: 3)
        var order = Array(0..<20), rng = SplitMix64(seed: 3)
        order.seededShuffle(&rng)
        #expect(taken == order.prefix(5).sorted() && rest == (0..<20).filter { !taken.contains($0) })
        #expect(SeededSplit.indices(count: 4, taking: 0, seed: 3) == ([0, 1, 2, 3], []))
        #expect(SeededSplit.indices(count: 0, taking: 2, seed: 3) == ([], []))
    }
}
