import CMLToolCPU
import CMLToolKernels
import Foundation
import MLToolCore
import Testing
@testable import MLToolEngine
import MLToolTestSupport

/// A palettized tensor's bytes placed so that they end exactly where an inaccessible page begins: a kernel that
/// reads one byte past the index stream faults instead of passing.
final class GuardedBytes {
    let base: UnsafeMutableRawPointer
    let length: Int
    let pointer: UnsafeMutablePointer<UInt8>

    init(_ bytes: [UInt8]) {
        let page = Int(sysconf(Int32(_SC_PAGESIZE)))
        let pages = (bytes.count + page - 1) / page + 1
        length = pages * page
        base = mmap(nil, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        mprotect(base + (pages - 1) * page, page, PROT_NONE)
        pointer = (base + (pages - 1) * page - bytes.count).assumingMemoryBound(to: UInt8.self)
        bytes.withUnsafeBufferPointer { if let b = $0.baseAddress { pointer.update(from: b, count: bytes.count) } }
    }

    deinit { munmap(base, length) }
}

@Suite(.serialized) struct PaletteTests {
    /// How the table offset and scale of element (k, n) are laid out in a case.
    enum Layout: CaseIterable { case oneTable, columnScales, rowScales, columnTables, panelTables, rowTables }

    /// `mlk_palette_unpack` at every level against the definition computed here and packed by `mlk_pack`: every
    /// bit width, panel counts with and without a partial last panel, streams whose rows start mid-byte (N odd),
    /// one table, per-column scales, a table per column (the gather path), a table per 16-column panel (tables in
    /// registers, changing between panels) and per-row tables and scales; any panel range; the stream ends at an
    /// inaccessible page.
    @Test func everyLevelDecodesExactlyTheDefinition() throws {
        var cases = 0
        do {
            let levels = try forEachCPULevel { level in
                for bits in [1, 2, 4, 6, 8] {
                    for (k, n) in [(1, 16), (3, 17), (37, 24), (64, 96), (9, 33), (130, 48), (5, 1000), (2, 7)] {
                        for layout in Layout.allCases {
                            try check(bits: bits, k: k, n: n, layout: layout, level: level)
                            cases += 1
                        }
                    }
                }
            }
            #expect(cases == levels.count * 5 * 8 * Layout.allCases.count)
        }
    }

    func check(bits: Int, k: Int, n: Int, layout: Layout, level: Int32) throws {
        var g = GraphBuilder(seed: UInt64(bits * 1000 + k * 7 + n), input: [])
        let entries = 1 << bits
        let panels = (n + 15) / 16
        let tables = layout == .columnTables ? n : (layout == .rowTables ? 3 : (layout == .panelTables ? panels : 1))
        let lut = g.values(tables * entries, -2, 2)
        let indices = (0..<(k * n)).map { _ in min(entries - 1, Int(g.rng.nextUnit() * Float(entries))) }
        var rowBase = [Int32](repeating: 0, count: k), rowScale = [Float](repeating: 1, count: k)
        var colBase = [Int32](repeating: 0, count: panels * 16), colScale = [Float](repeating: 0, count: panels * 16)
        for c in 0..<n { colScale[c] = 1 }
        switch layout {
        case .oneTable: break
        case .columnScales: for c in 0..<n { colScale[c] = g.values(1, 0.1, 3)[0] }
        case .rowScales: for r in 0..<k { rowScale[r] = g.values(1, 0.1, 3)[0] }
        case .columnTables: for c in 0..<n { colBase[c] = Int32(c * entries); colScale[c] = g.values(1, 0.1, 3)[0] }
        case .panelTables: for c in 0..<(panels * 16) { colBase[c] = Int32(c / 16 * entries) }
        case .rowTables: for r in 0..<k { rowBase[r] = Int32(r % 3 * entries); rowScale[r] = g.values(1, 0.1, 3)[0] }
        }
        var w = [Float](repeating: 0, count: k * n)
        for r in 0..<k {
            for c in 0..<n {
                let scale: Float = rowScale[r] * colScale[c]
                let entry = Int(rowBase[r]) + Int(colBase[c]) + indices[r * n + c]
                w[r * n + c] = scale * lut[entry]
            }
        }
        let count = Int(mlk_packed_count(Int64(k), Int64(n)))
        var expected = [Float](repeating: .nan, count: count)
        mlk_pack(w, Int64(k), Int64(n), &expected)
        let stream = GuardedBytes(PackedBits.pack(indices, bits: bits))
        let bytes = (k * n * bits + 7) / 8
        let place = "level \(level), \(bits) bits, \(k)×\(n), \(layout)"
        for (p0, p1) in [(0, panels), (panels / 2, panels), (0, (panels + 1) / 2)] where p0 < p1 {
            var got = [Float](repeating: .nan, count: (p1 - p0) * k * 16)
            mlk_palette_unpack(stream.pointer, Int64(bytes), Int32(bits), Int64(k), Int64(n), lut, rowBase, rowScale,
                               colBase, colScale, Int64(p0), Int64(p1), &got)
            let want = expected[(p0 * k * 16)..<(p1 * k * 16)]
            let differ = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
            #expect(differ == 0, "\(place), panels \(p0)..<\(p1): \(differ) of \(got.count) values differ")
        }
    }

    /// `mlk_palette_gemv` (1 to 63 input rows, weights decoded in registers: 4-row tiles up to 4 rows, tall tiles of
    /// 8, 16 or 25 rows above at 4 bits) gives the bits of `mlk_gemm_packed_res` on the panels `mlk_palette_unpack` decodes,
    /// for any column range, with and without bias and residual, for vector and scalar activations, with row scales
    /// (a table shared by rows of different scales) or without, at AVX2 (4 bits, up to 4 rows) and AVX-512; where it
    /// declines (portable C, 8 bits, 64 rows, several tables, 5 rows and more at other widths or an odd number of
    /// columns, other widths or more rows at AVX2) it writes nothing; tall tiles take
    /// the rows packed once (`mlk_palette_tall_pack`, tiles in two calls) with the same bits.
    @Test func oneRowDecodedInRegistersGivesTheBitsOfTheDecodedGemm() throws {
        var ran = 0
        do {
            try forEachCPULevel { level in
                for bits in [1, 2, 4, 6, 8] {
                    for (k, n) in [(1280, 1000), (37, 24), (64, 96), (9, 33), (130, 48), (5, 7), (300, 200), (20, 129)] {
                        for (l, layout) in [Layout.oneTable, .columnScales, .rowScales, .rowTables].enumerated() {
                            // A short tile's rows, then a tall one's (fewer on the largest shape, for time), in turn.
                            let tall = [5, 9, 17, 24, 25, 36, 41, 49, 63, 64][(bits + k + n + l) % 10]
                            for rows in [1 + (bits + k + n + l) % 4, k * n > 100_000 ? 9 : tall] {
                                ran += try checkGemv(bits: bits, k: k, n: n, rows: rows, layout: layout, level: level)
                            }
                        }
                    }
                }
            }
        }
        #expect(ran > 0, "the register-decoding kernel never ran (no AVX2 here?)")
    }

    /// A palettized layer decodes into a gap of the activation arena where it has one (a late layer's weights beside
    /// small activations): the palettized model's arena is the float model's size with every value in the same place,
    /// at least one room is inside it, no room overlaps a value live while it is in use (with a fused pair's second
    /// step too), and the palettized model computes the float model's bits
    /// (`palettizedLayersComputeTheBitsOfTheirFloatDequantization`).
    @Test func decodedPanelsFitInTheArenaWithoutGrowingIt() throws {
        let (palette, float) = try Self.palettized(Self.fusedNetwork())
        let (big, bigFloat) = try Self.palettized(mobileNetLike(size: 33))
        // The network's late layers have free memory while they run. The fused pair alone has none at the avx2 level
        // (its input and output fill the arena) but has a room at avx512 (Zen 4), whose panels are laid out
        // differently: either way the invariants below hold.
        do {
            try checkRooms(palette, float, image: [1, 90, 90, 8], expectRooms: nil)
            try checkRooms(big, bigFloat, image: [1, 33, 33, 3], expectRooms: true)
        }
    }

    /// `expectRooms`: whether a palette must (true) or must not (false) be decoded into a room while the model runs;
    /// nil: either.
    func checkRooms(_ p: Model, _ f: Model, image: [Int], expectRooms: Bool?) throws {
        let outputs = try #require(p.metadata.graph?.outputs)
        let (plan, program) = try UnwrittenValueTests.plan(p, outputs: outputs, image: image)
        let (floatPlan, floatProgram) = try UnwrittenValueTests.plan(f, outputs: outputs, image: image)
        // A palette is decoded while the model runs only into a room; without one it is decoded at load (measured:
        // the fused pair decodes at load, the network's late layers in rooms). Either way the outcome is asserted.
        let decodesInPlan = plan.steps.contains { program.steps[$0].palette != nil }
        if let expectRooms {
            #expect(decodesInPlan == expectRooms, "\(image): a step decodes a palette while it runs: \(decodesInPlan), rooms expected: \(expectRooms)")
        }
        guard decodesInPlan else { return }
        #expect(plan.arenaFloats == floatPlan.arenaFloats, "the rooms grew the arena")
        for (name, id) in program.ids where plan.offset[id] != nil {
            #expect(plan.offset[id] == floatProgram.ids[name].flatMap { floatPlan.offset[$0] },
                    "\(name) is not where the float model's plan puts it")
        }
        #expect(plan.decodeOffset.isEmpty != expectRooms, "\(plan.decodeOffset.count) rooms in the arena (\(image))")
        for (pos, at) in plan.decodeOffset {
            let count = try #require(program.steps[plan.steps[pos]].palette).packedCount
            #expect(at >= 0 && at + count <= plan.arenaFloats && at % 16 == 0, "room at \(pos): \(at)")
            let pair = plan.fused.contains(pos) || plan.residual[pos] != nil
            let room = try #require(plan.lifetimes.first { $0.value == -1 - pos })
            #expect(room.first == pos && room.last == (pair ? pos + 1 : pos) && room.floats == count)
            for l in plan.lifetimes where l.value >= 0 && l.first <= room.last && room.first <= l.last {
                let o = try #require(plan.offset[l.value])
                #expect(o >= at + count || at >= o + (l.floats + 15) / 16 * 16 || l.floats == 0,
                        "the room of step \(pos) overlaps value \(l.value) live at \(l.first)...\(l.last)")
            }
        }
    }

    func checkGemv(bits: Int, k: Int, n: Int, rows: Int, layout: Layout, level: Int32) throws -> Int {
        var g = GraphBuilder(seed: UInt64(bits * 31 + k + n), input: [])
        let entries = 1 << bits
        let tables = layout == .rowTables ? 3 : 1
        let lut = g.values(tables * entries, -2, 2)
        let indices = (0..<(k * n)).map { _ in min(entries - 1, Int(g.rng.nextUnit() * Float(entries))) }
        let panels = (n + 15) / 16
        var rowBase = [Int32](repeating: 0, count: k), rowScale = [Float](repeating: 1, count: k)
        var colScale = [Float](repeating: 0, count: panels * 16)
        let colBase = [Int32](repeating: 0, count: panels * 16)
        for c in 0..<n { colScale[c] = layout == .columnScales ? g.values(1, 0.1, 3)[0] : 1 }
        if layout == .rowTables { for r in 0..<k { rowBase[r] = Int32(r % 3 * entries); rowScale[r] = g.values(1, 0.1, 3)[0] } }
        if layout == .rowScales { for r in 0..<k { rowScale[r] = g.values(1, 0.1, 3)[0] } }
        let stream = GuardedBytes(PackedBits.pack(indices, bits: bits))
        let bytes = Int64((k * n * bits + 7) / 8)
        let lda = k + 3
        let a = g.values(rows * lda), bias = g.values(n), residual = g.values(rows * n)
        // Aligned as the engine aligns packed weights (the GEMM tiles' aligned loads rely on it).
        let count = Int(mlk_packed_count(Int64(k), Int64(n)))
        let decoded = UnsafeMutableRawPointer.allocate(byteCount: count * 4, alignment: 64)
            .initializeMemory(as: Float.self, repeating: .nan, count: count)
        defer { UnsafeMutableRawPointer(decoded).deallocate() }
        mlk_palette_unpack(stream.pointer, bytes, Int32(bits), Int64(k), Int64(n), lut, rowBase, rowScale, colBase,
                           colScale, 0, Int64(panels), decoded)
        var ran = 0
        for (act, withBias, withResidual) in [(GemmKernelTests.acts[2], true, false), (GemmKernelTests.acts[8], false, false),
                                              (GemmKernelTests.acts[0], true, true)] {
            for (pa, pb) in [(0, panels), (panels / 2, panels), (0, (panels + 1) / 2)] where pa < pb {
                let (c0, c1) = (pa * 16, min(n, pb * 16))
                var want = [Float](repeating: 777, count: rows * n), got = want
                want.withUnsafeMutableBufferPointer { y in
                    residual.withUnsafeBufferPointer { r in
                        mlk_gemm_packed_res(a, Int64(lda), decoded + pa * k * 16, 0, Int64(rows), Int64(c1 - c0), Int64(k),
                                            withBias ? bias.withUnsafeBufferPointer { $0.baseAddress! + c0 } : nil,
                                            withResidual ? r.baseAddress! + c0 : nil, y.baseAddress! + c0, Int64(n),
                                            act.code, act.p0, act.p1)
                    }
                }
                var work = [Float](repeating: .nan, count: Int(mlk_palette_gemv_work(Int64(rows), Int64(k))))
                let did = mlk_palette_gemv(a, Int64(rows), Int64(lda), stream.pointer, bytes, Int32(bits), Int64(k),
                                           Int64(n), lut, rowBase, rowScale, colBase, colScale, Int64(pa), Int64(pb),
                                           withBias ? bias : nil, withResidual ? residual : nil, &got, act.code,
                                           act.p0, act.p1, &work, 0)
                let place = "level \(level), \(bits) bits, \(rows) × \(k)×\(n), \(layout), panels \(pa)..<\(pb), act \(act.code), residual \(withResidual)"
                let supported = layout != .rowTables && (level >= Int32(MLK_CPU_AVX512)
                    ? bits <= 6 && (rows <= 4 || (bits == 4 && n % 2 == 0 && rows <= 63))
                    : level >= Int32(MLK_CPU_AVX2) && bits == 4 && n % 2 == 0 && rows <= 4)
                // Tall tiles whole: the rows packed once (the tiles in two calls, as threads split them), then
                // given to the kernel as packed.
                let tiles = Int(mlk_palette_tall_tiles(Int64(rows), Int32(bits), Int64(k), Int64(n), rowBase, colBase))
                #expect((tiles > 0) == (supported && rows > 4 && level >= Int32(MLK_CPU_AVX512)), "\(place): \(tiles) tall tiles")
                if did == 0 {
                    #expect(got.allSatisfy { $0 == 777 }, "\(place): declined but wrote")
                    #expect(!supported, "\(place): declined a case it has a variant for")
                    continue
                }
                ran += 1
                let differ = zip(got, want).filter { $0.bitPattern != $1.bitPattern }.count
                #expect(differ == 0, "\(place): \(differ) of \(rows * n) outputs differ from the decoded GEMM")
                guard tiles > 0 else { continue }
                var packed = [Float](repeating: .nan, count: Int(mlk_palette_gemv_work(Int64(rows), Int64(k)))), again = [Float](repeating: 777, count: rows * n)
                mlk_palette_tall_pack(a, Int64(rows), Int64(lda), Int64(k), Int64(tiles / 2), Int64(tiles), &packed)
                mlk_palette_tall_pack(a, Int64(rows), Int64(lda), Int64(k), 0, Int64(tiles / 2), &packed)
                #expect(mlk_palette_gemv(nil, Int64(rows), Int64(lda), stream.pointer, bytes, Int32(bits), Int64(k),
                                         Int64(n), lut, rowBase, rowScale, colBase, colScale, Int64(pa), Int64(pb),
                                         withBias ? bias : nil, withResidual ? residual : nil, &again, act.code,
                                         act.p0, act.p1, &packed, 1) == 1)
                let differPacked = zip(again, want).filter { $0.bitPattern != $1.bitPattern }.count
                #expect(differPacked == 0, "\(place), packed once: \(differPacked) of \(rows * n) outputs differ")
            }
        }
        return ran
    }

    /// `model` with its conv (groups 1) and dense weights palettized in turn in the layouts the engine reads: one
    /// table (axis absent), per-output-channel scales on a shared table (what `mltool quantize --bits 4/6` writes),
    /// and a table per input channel (a Core ML-style grouping along another axis); and the same with those
    /// weights stored as their float dequantization.
    static func palettized(_ model: Model) throws -> (palette: Model, float: Model) {
        let graph = try #require(model.metadata.graph)
        let weights = Set(graph.nodes.filter { $0.op == .dense || ($0.op == .conv && $0.attributes.groups ?? 1 == 1) }.map { $0.inputs[1] })
        var g = GraphBuilder(seed: 77, input: [])
        var palette = model
        var which = 0
        let dtypes: [Int: DType] = [1: .palette1, 2: .palette2, 4: .palette4, 6: .palette6, 8: .palette8]
        palette.tensors = model.tensors.map { t in
            guard weights.contains(t.name) else { return t }
            which += 1
            let bits = [4, 6, 2, 8, 1][which % 5]
            let entries = 1 << bits
            let indices = (0..<t.elementCount).map { _ in min(entries - 1, Int(g.rng.nextUnit() * Float(entries))) }
            let quant: QuantParams
            switch which % 3 {
            case 0: quant = QuantParams(lut: g.values(entries))
            case 1: quant = QuantParams(axis: t.shape.count - 1, scales: g.values(t.shape.last!, 0.1, 1),
                                        groupSize: t.shape.last!, lut: g.values(entries))
            default:
                let axis = t.shape.count - 2
                quant = QuantParams(axis: axis, groupSize: 1, lut: g.values(t.shape[axis] * entries))
            }
            return StoredTensor(name: t.name, dtype: dtypes[bits]!, shape: t.shape, quant: quant,
                                bytes: TensorBytes(copying: PackedBits.pack(indices, bits: bits)))
        }
        var dequantized = palette
        dequantized.tensors = try palette.tensors.map { t in
            t.dtype.traits.isPalette ? StoredTensor(name: t.name, tensor: try t.tensor()) : t
        }
        return (palette, dequantized)
    }

    /// An expansion 1×1 conv feeding a depthwise conv on a map big enough for the two to run fused (`Fused`).
    static func fusedNetwork() -> Model {
        var g = GraphBuilder(seed: 41, input: [-1, 90, 90, 8])
        var x = g.conv("x", cin: 8, cout: 40, k: (1, 1), act: .relu6)
        x = g.conv(x, cin: 40, cout: 40, k: (3, 3), pads: [1, 1, 1, 1], groups: 40, act: .relu6)
        return g.model(outputs: [x])
    }

    /// Palettized layers decoded as they run compute the same bits as the same weights stored as float, at every
    /// level, on 1 and 2 threads, for a batch and for one image (which takes the few-rows, block-by-block path).
    /// Batches of 3 images on 2 threads and of 9 on 1 (chunks of 4 and a last image) have workers that run more
    /// than one chunk, which decode every palette once for the call (`Arena.decodedSteps`).
    @Test func palettizedLayersComputeTheBitsOfTheirFloatDequantization() throws {
        let (palette, float) = try Self.palettized(try int8Network())
        #expect(palette.tensors.filter { $0.dtype.traits.isPalette }.count == 5)
        let (fusedPalette, fusedFloat) = try Self.palettized(Self.fusedNetwork())
        var g = GraphBuilder(seed: 5, input: [])
        let batch = g.input([3, 15, 13, 3]), one = g.input([1, 15, 13, 3]), big = g.input([2, 90, 90, 8])
        let nine = g.input([9, 15, 13, 3])
        _ = try forEachCPULevel { level in
            for threads in [1, 2] {
                for (p, f, inputs) in [(palette, float, [batch, one, nine]), (fusedPalette, fusedFloat, [big])] {
                    // The palettes the CPU level keeps as indices (the rest are decoded at load).
                    let layers = p.tensors.filter { $0.dtype.traits.isPalette && PaletteWeights.keepsIndices(bits: $0.dtype.traits.bits) }.count
                    #expect(level < Int32(MLK_CPU_AVX2) || layers > 0 || p.metadata.graph?.nodes.count == 2)
                    let engine = try Engine(model: p, threads: threads)
                    #expect(engine.paletteLayers == layers, "level \(level): \(engine.paletteLayers) layers kept as palettes")
                    let reference = try Engine(model: f, threads: threads)
                    #expect(reference.paletteLayers == 0)
                    for input in inputs {
                        if p.metadata.graph?.nodes.count == 2 {
                            #expect(try engine.plannedKernels(batch: input.shape[0]).allSatisfy { $0.fused },
                                    "the expansion and depthwise convs did not run fused")
                        }
                        let y = try #require(try engine.run(["x": input]).values.first)
                        let want = try #require(try reference.run(["x": input]).values.first)
                        #expect(y.shape == want.shape && y.data == want.data,
                                "level \(level), \(threads) threads, input \(input.shape): palette decoded ≠ float")
                    }
                }
            }
        }
    }
}
