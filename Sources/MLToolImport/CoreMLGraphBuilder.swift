import CCoreMLProto
import CProtobufC
import Foundation
import MLToolCore

/// Converts the layers of a Core ML NeuralNetworkClassifier into IR nodes and float32 weights.
struct CoreMLGraphBuilder {
    typealias Layer = CoreML__Specification__NeuralNetworkLayer
    let file: String
    private var nodes: [Node] = []
    private var tensors: [StoredTensor] = []
    private var names: Set<String> = []
    private var rank: [String: Int] = [:]
    private var counter = 0

    init(file: String) { self.file = file }

    mutating func build(_ m: CoreML__Specification__Model) throws -> Model {
        guard let nn = m.neuralnetworkclassifier?.pointee else {
            throw ImportError.refused(file: file, place: "model type",
                                      reason: "only NeuralNetworkClassifier models are imported (the form mltool exports)")
        }
        guard let desc = m.description?.pointee, desc.n_input == 1, let input = desc.input[0]?.pointee,
              let image = input.type?.pointee.imagetype?.pointee else {
            throw ImportError.invalid(file: file, place: "description.input", expected: "one image input", actual: "another input")
        }
        let inputName = cString(input.name)
        let (height, width) = (Int(clamping: image.height), Int(clamping: image.width))
        guard height > 0, width > 0, height <= 1 << 15, width <= 1 << 15 else {
            throw ImportError.invalid(file: file, place: "input '\(inputName)' size", expected: "1…32768 pixels", actual: "\(width)×\(height)")
        }
        let color: String
        switch image.colorspace {
        case 10: color = "gray"
        case 20: color = "rgb"
        case 30: color = "bgr"
        default: throw ImportError.invalid(file: file, place: "input colour space", expected: "GRAYSCALE, RGB or BGR", actual: "\(image.colorspace)")
        }
        let channels = color == "gray" ? 1 : 3
        rank[inputName] = 4

        // Preprocessing: the image scaler for this input, if any.
        var prep = ImagePreprocessing(height: height, width: width, colorOrder: color, scale: 1,
                                      bias: [Float](repeating: 0, count: channels), mean: [Float](repeating: 0, count: channels),
                                      std: [Float](repeating: 1, count: channels), resize: "exact", crop: "none")
        for i in 0..<nn.n_preprocessing {
            guard let p = nn.preprocessing[i]?.pointee else { continue }
            let feature = cString(p.featurename)
            guard feature.isEmpty || feature == inputName else { continue }
            guard let s = p.scaler?.pointee else {
                throw ImportError.refused(file: file, place: "preprocessing", reason: "only an image scaler is supported (not a mean image)")
            }
            prep.scale = s.channelscale
            prep.bias = color == "gray" ? [s.graybias] : color == "rgb" ? [s.redbias, s.greenbias, s.bluebias] : [s.bluebias, s.greenbias, s.redbias]
        }

        for i in 0..<nn.n_layers {
            guard let layer = nn.layers[i]?.pointee else { continue }
            try convert(layer)
        }
        var labels = [String]()
        if let v = nn.stringclasslabels?.pointee {
            labels = (0..<v.n_vector).map { cString(v.vector[$0]) }
        } else if let v = nn.int64classlabels?.pointee {
            labels = (0..<v.n_vector).map { String(v.vector[$0]) }
        }
        var output = cString(nn.labelprobabilitylayername)
        if output.isEmpty { output = nodes.last?.outputs.first ?? "" }
        guard rank[output] != nil else {
            throw ImportError.invalid(file: file, place: "labelProbabilityLayerName", expected: "a blob computed by a layer", actual: "'\(output)'")
        }

        // Metadata; mltool's own exports also carry resize/crop and provenance in userDefined.
        var md = ModelMetadata(task: .imageClassifier, labels: labels,
                               provenance: Provenance(sources: [.init(path: file, sha256: try SHA256.hex(fileAt: file))]))
        var userDefined = [String: String]()
        if let meta = desc.metadata?.pointee {
            func nonEmpty(_ p: UnsafeMutablePointer<CChar>?) -> String? { let s = cString(p); return s.isEmpty ? nil : s }
            md.description = nonEmpty(meta.shortdescription)
            md.author = nonEmpty(meta.author)
            md.license = nonEmpty(meta.license)
            md.version = nonEmpty(meta.versionstring)
            for i in 0..<meta.n_userdefined {
                guard let e = meta.userdefined[i]?.pointee else { continue }
                userDefined[cString(e.key)] = cString(e.value)
            }
        }
        if let json = userDefined["preprocessing.json"],
           let recorded = try? JSONDecoder().decode(ImagePreprocessing.self, from: Data(json.utf8)),
           recorded.height == height, recorded.width == width {
            prep.resize = recorded.resize; prep.resizeTo = recorded.resizeTo; prep.crop = recorded.crop
        }
        md.name = userDefined["name"] ?? ((file as NSString).lastPathComponent as NSString).deletingPathExtension
        md.image = prep
        md.outputKind = "probabilities"
        md.graph = Graph(inputs: [GraphInput(name: inputName, shape: [-1, height, width, channels])], outputs: [output],
                         nodes: nodes, sourceLayout: "nhwc")
        var model = try GraphPasses.optimize(Model(metadata: md, tensors: tensors))
        model.metadata.graph?.outputs = [output]
        let used = Set(model.metadata.graph?.nodes.flatMap(\.inputs) ?? [])
        model.tensors = model.tensors.filter { used.contains($0.name) }
        return model
    }

    // MARK: Layers

    private mutating func convert(_ l: Layer) throws {
        let name = cString(l.name)
        let inputs = (0..<l.n_input).map { cString(l.input[$0]) }
        let outputs = (0..<l.n_output).map { cString(l.output[$0]) }
        guard let x = inputs.first, let out = outputs.first, outputs.count == 1 else {
            throw ImportError.invalid(file: file, place: "layer '\(name)'", expected: "inputs and one output", actual: "\(inputs.count) inputs, \(outputs.count) outputs")
        }
        for i in inputs where rank[i] == nil {
            throw ImportError.invalid(file: file, place: "layer '\(name)' input", expected: "a blob computed earlier", actual: "'\(i)'")
        }
        let xr = rank[x] ?? 4
        var outRank = xr
        let reader = CoreMLWeightReader(file: file)
        func place(_ what: String) -> String { "layer '\(name)' \(what)" }

        if let c = l.convolution?.pointee {
            guard c.isdeconvolution == 0, c.same == nil, c.n_kernelsize == 2, xr == 4 else {
                throw refused(name, "convolution: only 2-D, non-transposed, with explicit (valid) padding")
            }
            let oc = Int(clamping: c.outputchannels), kc = Int(clamping: c.kernelchannels)
            let groups = max(Int(clamping: c.ngroups), 1)
            let kh = Int(clamping: c.kernelsize[0]), kw = Int(clamping: c.kernelsize[1])
            let count = try Checked.elementCount([oc, kc, kh, kw], what: place("weights"))
            let w = try reader.floats(c.weights, count: count, channels: oc, place: place("weights"))
            let hwio = transpose(w, shape: [oc, kc, kh, kw], perm: [2, 3, 1, 0])
            var ins = [x, weight(name + ".weights", [kh, kw, kc, oc], hwio)]
            if c.hasbias != 0 {
                ins.append(weight(name + ".bias", [oc], try reader.floats(c.bias, count: oc, channels: oc, place: place("bias"))))
            }
            add(name, .conv, ins, out, Attributes(strides: pair(c.stride, c.n_stride, 1), dilations: pair(c.dilationfactor, c.n_dilationfactor, 1),
                                                 pads: pads(c.valid?.pointee.paddingamounts), groups: groups))
        } else if let p = l.pooling?.pointee {
            guard p.same == nil, p.includelastpixel == nil, p.type == 0 || p.type == 1, xr == 4 else {
                throw refused(name, "pooling: only max/average with explicit (valid) padding")
            }
            if p.globalpooling != 0 {
                add(name, p.type == 0 ? .globalMaxPool : .globalAvgPool, [x], out)
            } else {
                guard let k = pair(p.kernelsize, p.n_kernelsize, 0), k.allSatisfy({ $0 > 0 }) else { throw refused(name, "pooling without a kernel size") }
                add(name, p.type == 0 ? .maxPool : .avgPool, [x], out,
                    Attributes(kernel: k, strides: pair(p.stride, p.n_stride, 1), pads: pads(p.valid?.pointee.paddingamounts),
                               countIncludePad: p.avgpoolexcludepadding == 0))
            }
        } else if let a = l.activation?.pointee {
            if a.relu != nil { add(name, .relu, [x], out) }
            else if a.sigmoid != nil { add(name, .sigmoid, [x], out) }
            else if a.tanh != nil { add(name, .tanh, [x], out) }
            else if let r = a.leakyrelu?.pointee { add(name, .leakyRelu, [x], out, Attributes(alpha: r.alpha)) }
            else if let h = a.sigmoidhard?.pointee { add(name, .hardSigmoid, [x], out, Attributes(alpha: h.alpha, beta: h.beta)) }
            else if let lin = a.linear?.pointee {
                if lin.alpha == 1, lin.beta == 0 { add(name, .identity, [x], out) } else {
                    let t = fresh(out)
                    add(name + ".scale", .mul, [x, weight(name + ".alpha", [1], [lin.alpha])], t)
                    add(name, .add, [t, weight(name + ".beta", [1], [lin.beta])], out)
                }
            } else { throw refused(name, "activation type \(unknownFields(a.base))") }
        } else if let c = l.clip?.pointee {
            add(name, .clip, [x], out, Attributes(min: c.minval, max: c.maxval))
        } else if let ip = l.innerproduct?.pointee {
            let inC = Int(clamping: ip.inputchannels), outC = Int(clamping: ip.outputchannels)
            let count = try Checked.elementCount([outC, inC], what: place("weights"))
            let w = try reader.floats(ip.weights, count: count, channels: outC, place: place("weights"))
            var ins = [xr == 4 ? channelFirst(x, name) : x, weight(name + ".weights", [inC, outC], transpose(w, shape: [outC, inC], perm: [1, 0]))]
            if ip.hasbias != 0 {
                ins.append(weight(name + ".bias", [outC], try reader.floats(ip.bias, count: outC, channels: outC, place: place("bias"))))
            }
            add(name, .dense, ins, out)
            outRank = 2
        } else if let b = l.batchnorm?.pointee {
            guard b.computemeanvar == 0, b.instancenormalization == 0 else { throw refused(name, "batchnorm computing its own statistics") }
            let c = Int(clamping: b.channels)
            let params = try [("gamma", b.gamma), ("beta", b.beta), ("mean", b.mean), ("variance", b.variance)].map { key, w in
                weight(name + "." + key, [c], try reader.floats(w, count: c, channels: c, place: place(key)))
            }
            add(name, .batchNorm, [x] + params, out, Attributes(epsilon: b.epsilon))
        } else if l.softmax != nil {
            add(name, .softmax, [x], out, Attributes(axis: -1))
        } else if let p = l.padding?.pointee {
            guard xr == 4 else { throw refused(name, "padding of a non-image blob") }
            let t = pads(p.paddingamounts) ?? [0, 0, 0, 0]
            let mode = p.reflection != nil ? "reflect" : p.replication != nil ? "edge" : "constant"
            add(name, .pad, [x], out, Attributes(pads: [0, t[0], t[1], 0, 0, t[2], t[3], 0], value: p.constant?.pointee.value ?? 0, mode: mode))
        } else if l.add != nil || l.multiply != nil {
            guard inputs.count >= 2 else { throw refused(name, "add/multiply with a single input (constant alpha)") }
            let op: Op = l.add != nil ? .add : .mul
            var acc = inputs[0]
            for (i, y) in inputs.dropFirst().enumerated() {
                let target = i == inputs.count - 2 ? out : fresh(out)
                add(i == inputs.count - 2 ? name : "\(name).\(i)", op, [acc, y], target)
                acc = target
            }
            outRank = inputs.compactMap { rank[$0] }.max() ?? xr
        } else if let s = l.scale?.pointee {
            let n = try vectorLength(s.shapescale, s.n_shapescale, name)
            let scale = weight(name + ".scale", [n], try reader.floats(s.scale, count: n, channels: n, place: place("scale")))
            if s.hasbias != 0 {
                let nb = try vectorLength(s.shapebias, s.n_shapebias, name)
                let t = fresh(out)
                add(name + ".scale", .mul, [x, scale], t)
                add(name, .add, [t, weight(name + ".bias", [nb], try reader.floats(s.bias, count: nb, channels: nb, place: place("bias")))], out)
            } else {
                add(name, .mul, [x, scale], out)
            }
        } else if let b = l.bias?.pointee {
            let n = try vectorLength(b.shape, b.n_shape, name)
            add(name, .add, [x, weight(name + ".bias", [n], try reader.floats(b.bias, count: n, channels: n, place: place("bias")))], out)
        } else if let f = l.flatten?.pointee {
            if xr == 4 {
                add(name, .flatten, [f.mode == 1 ? x : channelFirst(x, name)], out, Attributes(axis: 1))
            } else {
                add(name, .identity, [x], out)
            }
            outRank = 2
        } else if let c = l.concat?.pointee {
            guard c.sequenceconcat == 0 else { throw refused(name, "sequence concat") }
            add(name, .concat, inputs, out, Attributes(axis: xr - 1))
        } else {
            throw refused(name, "layer type \(unknownFields(l.base))")
        }
        rank[out] = outRank
    }

    // MARK: Helpers

    /// `x` (N, H, W, C) transposed to (N, C, H, W), so a flatten reads it in Core ML's CHW order.
    private mutating func channelFirst(_ x: String, _ layer: String) -> String {
        let t = fresh(x)
        add(layer + ".chw", .transpose, [x], t, Attributes(perm: [0, 3, 1, 2]))
        return t
    }

    private func vectorLength(_ shape: UnsafeMutablePointer<UInt64>?, _ n: Int, _ layer: String) throws -> Int {
        guard n == 1, let s = shape, s[0] >= 1, s[0] <= 1 << 24 else {
            throw refused(layer, "a constant that is not one value per channel (shape [C] or [1])")
        }
        return Int(s[0])
    }

    private func pair(_ p: UnsafeMutablePointer<UInt64>?, _ n: Int, _ d: Int) -> [Int]? {
        guard n == 2, let p else { return n == 0 ? [d, d] : nil }
        return [Int(clamping: p[0]), Int(clamping: p[1])]
    }

    /// Border amounts (height, width) → (top, left, bottom, right).
    private func pads(_ b: UnsafeMutablePointer<CoreML__Specification__BorderAmounts>?) -> [Int]? {
        guard let b = b?.pointee, b.n_borderamounts == 2, let h = b.borderamounts[0]?.pointee, let w = b.borderamounts[1]?.pointee else {
            return [0, 0, 0, 0]
        }
        return [h.startedgesize, w.startedgesize, h.endedgesize, w.endedgesize].map { Int(clamping: $0) }
    }

    private func unknownFields(_ base: ProtobufCMessage) -> String {
        let tags = (0..<Int(base.n_unknown_fields)).map { String(base.unknown_fields[$0].tag) }
        return tags.isEmpty ? "(none set)" : "field " + tags.joined(separator: ", ") + " (not supported)"
    }

    private func transpose(_ v: [Float], shape: [Int], perm: [Int]) -> [Float] {
        let outShape = perm.map { shape[$0] }
        var strides = [Int](repeating: 1, count: shape.count)
        for i in stride(from: shape.count - 2, through: 0, by: -1) { strides[i] = strides[i + 1] * shape[i + 1] }
        let permStrides = perm.map { strides[$0] }
        var out = [Float](repeating: 0, count: v.count)
        var index = [Int](repeating: 0, count: shape.count)
        for o in 0..<v.count {
            var src = 0
            for d in 0..<index.count { src += index[d] * permStrides[d] }
            out[o] = v[src]
            var d = index.count - 1
            while d >= 0 { index[d] += 1; if index[d] < outShape[d] { break }; index[d] = 0; d -= 1 }
        }
        return out
    }

    private mutating func weight(_ base: String, _ shape: [Int], _ values: [Float]) -> String {
        var name = base
        while names.contains(name) { name = fresh(base) }
        names.insert(name)
        tensors.append(StoredTensor(name: name, tensor: Tensor(shape: shape, data: values)))
        return name
    }

    private mutating func fresh(_ base: String) -> String {
        counter += 1
        return "\(base)__\(counter)"
    }

    private mutating func add(_ name: String, _ op: Op, _ inputs: [String], _ output: String, _ a: Attributes = Attributes()) {
        nodes.append(Node(name: name, op: op, inputs: inputs, outputs: [output], attributes: a))
        rank[output] = rank[inputs.first ?? ""] ?? 4
    }

    private func refused(_ layer: String, _ what: String) -> ImportError {
        .refused(file: file, place: "layer '\(layer)'", reason: "\(what) is not supported")
    }
}
