import CCoreMLProto
import CProtobufC
import Foundation

/// Packs a `CoreMLProgram` into Core ML Model specification bytes (a `.mlmodel` file) with protobuf-c.
enum CoreMLWriter {
    typealias Layer = CoreML__Specification__NeuralNetworkLayer

    static func pack(_ p: CoreMLProgram, modelName: String) throws -> [UInt8] {
        let arena = CArena()

        var layers = [Layer]()
        for l in p.layers { layers.append(layer(l, arena)) }

        let pre = preprocessing(p, arena)
        if let d = p.detector { return try pipeline(p, d, layers: layers, preprocessing: pre, arena: arena, modelName: modelName) }

        var labels = CoreML__Specification__StringVector()
        core_ml__specification__string_vector__init(&labels)
        labels.n_vector = p.labels.count; labels.vector = arena.strings(p.labels)

        var classifier = CoreML__Specification__NeuralNetworkClassifier()
        core_ml__specification__neural_network_classifier__init(&classifier)
        classifier.n_layers = layers.count; classifier.layers = arena.messages(layers)
        classifier.n_preprocessing = 1; classifier.preprocessing = arena.messages([pre])
        classifier.stringclasslabels = arena.new(labels)
        classifier.labelprobabilitylayername = arena.string(p.probabilityBlob)

        // Description: image in; class label and probability dictionary out.
        var image = CoreML__Specification__ImageFeatureType()
        core_ml__specification__image_feature_type__init(&image)
        image.width = Int64(p.width); image.height = Int64(p.height); image.colorspace = p.colorSpace
        var inType = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&inType)
        inType.imagetype = arena.new(image)

        var str = CoreML__Specification__StringFeatureType()
        core_ml__specification__string_feature_type__init(&str)
        var labelType = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&labelType)
        labelType.stringtype = arena.new(str)
        var dict = CoreML__Specification__DictionaryFeatureType()
        core_ml__specification__dictionary_feature_type__init(&dict)
        dict.stringkeytype = arena.new(str)
        var probType = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&probType)
        probType.dictionarytype = arena.new(dict)

        func feature(_ name: String, _ doc: String, _ type: CoreML__Specification__FeatureType) -> CoreML__Specification__FeatureDescription {
            var f = CoreML__Specification__FeatureDescription()
            core_ml__specification__feature_description__init(&f)
            f.name = arena.string(name); f.shortdescription = arena.string(doc); f.type = arena.new(type)
            return f
        }
        let inputs = [feature(p.inputName, "\(p.width)×\(p.height) image; scaled by the model's preprocessing", inType)]
        let outputs = [feature(CoreMLProgram.predictedFeatureName, "Most likely class", labelType),
                       feature(p.probabilityBlob, "Probability of each class", probType)]

        let meta = metadata(p, arena)

        var desc = CoreML__Specification__ModelDescription()
        core_ml__specification__model_description__init(&desc)
        desc.n_input = inputs.count; desc.input = arena.messages(inputs)
        desc.n_output = outputs.count; desc.output = arena.messages(outputs)
        desc.predictedfeaturename = arena.string(CoreMLProgram.predictedFeatureName)
        desc.predictedprobabilitiesname = arena.string(p.probabilityBlob)
        desc.metadata = arena.new(meta)

        var model = CoreML__Specification__Model()
        core_ml__specification__model__init(&model)
        model.specificationversion = CoreMLProgram.specificationVersion
        model.description = arena.new(desc)
        model.neuralnetworkclassifier = arena.new(classifier)

        return try serialize(&model, modelName: modelName)
    }

    /// A detector: Pipeline(NeuralNetwork → NonMaximumSuppression), as Xcode's object detectors are laid out.
    private static func pipeline(_ p: CoreMLProgram, _ d: CoreMLProgram.DetectorStage, layers: [Layer],
                                 preprocessing pre: CoreML__Specification__NeuralNetworkPreprocessing, arena: CArena,
                                 modelName: String) throws -> [UInt8] {
        let classes = p.labels.count
        let f = DetectorFeatures(arena: arena)
        let doubleType = f.doubleType(), imageType = f.imageType(p)
        let imageIn = f.feature(p.inputName, "\(p.width)×\(p.height) image; scaled by the model's preprocessing", imageType)
        let rawConfidence = f.feature(CoreMLLowering.rawConfidence, "Class scores (0…1) of every candidate box", f.array([d.boxes, classes]))
        let rawCoordinates = f.feature(CoreMLLowering.rawCoordinates,
                                       "Every candidate box: x-centre, y-centre, width, height as fractions of the input image", f.array([d.boxes, 4]))
        let iouIn = f.feature("iouThreshold", "IoU above which the lower-scoring of two boxes is suppressed (default \(d.iouThreshold))",
                              doubleType, optional: true)
        let confidenceIn = f.feature("confidenceThreshold", "Boxes scoring at or below this are dropped (default \(d.confidenceThreshold))",
                                     doubleType, optional: true)
        let confidenceOut = f.feature("confidence", "Class scores of each kept box (boxes × classes)", f.array([d.boxes, classes], flexibleRows: true))
        let coordinatesOut = f.feature("coordinates", "Kept boxes: x-centre, y-centre, width, height as fractions of the input image",
                                       f.array([d.boxes, 4], flexibleRows: true))

        var network = CoreML__Specification__NeuralNetwork()
        core_ml__specification__neural_network__init(&network)
        network.n_layers = layers.count; network.layers = arena.messages(layers)
        network.n_preprocessing = 1; network.preprocessing = arena.messages([pre])
        var first = CoreML__Specification__Model()
        core_ml__specification__model__init(&first)
        first.specificationversion = CoreMLProgram.specificationVersion
        first.description = f.description([imageIn], [rawConfidence, rawCoordinates])
        first.neuralnetwork = arena.new(network)

        var second = CoreML__Specification__Model()
        core_ml__specification__model__init(&second)
        second.specificationversion = CoreMLProgram.specificationVersion
        second.description = f.description([rawConfidence, rawCoordinates, iouIn, confidenceIn], [confidenceOut, coordinatesOut])
        second.nonmaximumsuppression = nonMaximumSuppression(p, d, arena)

        var pipe = CoreML__Specification__Pipeline()
        core_ml__specification__pipeline__init(&pipe)
        pipe.n_models = 2; pipe.models = arena.messages([first, second])
        pipe.n_names = 2; pipe.names = arena.strings(["network", "nonMaximumSuppression"])
        var model = CoreML__Specification__Model()
        core_ml__specification__model__init(&model)
        model.specificationversion = CoreMLProgram.specificationVersion
        let desc = f.description([imageIn, iouIn, confidenceIn], [confidenceOut, coordinatesOut])
        desc.pointee.metadata = arena.new(metadata(p, arena))
        model.description = desc
        model.pipeline = arena.new(pipe)
        return try serialize(&model, modelName: modelName)
    }

    /// The detector's second stage: non-maximum suppression of the network's raw boxes, thresholds as inputs.
    private static func nonMaximumSuppression(_ p: CoreMLProgram, _ d: CoreMLProgram.DetectorStage,
                                              _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__NonMaximumSuppression> {
        var labels = CoreML__Specification__StringVector()
        core_ml__specification__string_vector__init(&labels)
        labels.n_vector = p.labels.count; labels.vector = arena.strings(p.labels)
        var pick = CoreML__Specification__NonMaximumSuppression__PickTop()
        core_ml__specification__non_maximum_suppression__pick_top__init(&pick)
        pick.perclass = d.perClass ? 1 : 0
        var nms = CoreML__Specification__NonMaximumSuppression()
        core_ml__specification__non_maximum_suppression__init(&nms)
        nms.picktop = arena.new(pick)
        nms.stringclasslabels = arena.new(labels)
        nms.iouthreshold = d.iouThreshold; nms.confidencethreshold = d.confidenceThreshold
        nms.confidenceinputfeaturename = arena.string(CoreMLLowering.rawConfidence)
        nms.coordinatesinputfeaturename = arena.string(CoreMLLowering.rawCoordinates)
        nms.iouthresholdinputfeaturename = arena.string("iouThreshold")
        nms.confidencethresholdinputfeaturename = arena.string("confidenceThreshold")
        nms.confidenceoutputfeaturename = arena.string("confidence")
        nms.coordinatesoutputfeaturename = arena.string("coordinates")
        return arena.new(nms)
    }

    static func serialize(_ model: inout CoreML__Specification__Model, modelName: String) throws -> [UInt8] {
        let size = core_ml__specification__model__get_packed_size(&model)
        var out = [UInt8](repeating: 0, count: size)
        let written = out.withUnsafeMutableBufferPointer { core_ml__specification__model__pack(&model, $0.baseAddress) }
        guard written == size else {
            throw ExportError.encoding(model: modelName, format: "Core ML", reason: "packed \(written) of \(size) bytes")
        }
        return out
    }

    private static func preprocessing(_ p: CoreMLProgram, _ arena: CArena) -> CoreML__Specification__NeuralNetworkPreprocessing {
        var scaler = CoreML__Specification__NeuralNetworkImageScaler()
        core_ml__specification__neural_network_image_scaler__init(&scaler)
        scaler.channelscale = p.channelScale
        if p.colorSpace == 10 {
            scaler.graybias = p.channelBias.first ?? 0
        } else {
            let (r, g, b) = p.colorSpace == 30 ? (2, 1, 0) : (0, 1, 2)
            scaler.redbias = p.channelBias[r]; scaler.greenbias = p.channelBias[g]; scaler.bluebias = p.channelBias[b]
        }
        var pre = CoreML__Specification__NeuralNetworkPreprocessing()
        core_ml__specification__neural_network_preprocessing__init(&pre)
        pre.featurename = arena.string(p.inputName)
        pre.scaler = arena.new(scaler)
        return pre
    }

    static func metadata(_ p: CoreMLProgram, _ arena: CArena) -> CoreML__Specification__Metadata {
        var meta = CoreML__Specification__Metadata()
        core_ml__specification__metadata__init(&meta)
        meta.shortdescription = arena.string(p.shortDescription)
        meta.versionstring = arena.string(p.version)
        meta.author = arena.string(p.author)
        meta.license = arena.string(p.license)
        let entries = p.metadata.map { k, v -> CoreML__Specification__Metadata__UserDefinedEntry in
            var e = CoreML__Specification__Metadata__UserDefinedEntry()
            core_ml__specification__metadata__user_defined_entry__init(&e)
            e.key = arena.string(k); e.value = arena.string(v)
            return e
        }
        meta.n_userdefined = entries.count; meta.userdefined = arena.messages(entries)
        return meta
    }

    private static func layer(_ l: CoreMLProgram.Layer, _ arena: CArena) -> Layer {
        var layer = Layer()
        core_ml__specification__neural_network_layer__init(&layer)
        layer.name = arena.string(l.name)
        layer.n_input = l.inputs.count; layer.input = arena.strings(l.inputs)
        layer.n_output = l.outputs.count; layer.output = arena.strings(l.outputs)
        let u64 = { (v: [Int]) in Self.u64(v, arena) }
        switch l.kind {
        case let .convolution(oc, kc, groups, kernel, stride, dilation, pads, weights, bias):
            layer.convolution = convolutionParams(oc, kc, groups, kernel, stride, dilation, pads, weights, bias, arena)
        case let .innerProduct(inC, outC, weights, bias):
            var ip = CoreML__Specification__InnerProductLayerParams()
            core_ml__specification__inner_product_layer_params__init(&ip)
            ip.inputchannels = UInt64(inC); ip.outputchannels = UInt64(outC)
            ip.weights = weightParams(weights, arena)
            if let b = bias { ip.hasbias = 1; ip.bias = weightParams(.float(b), arena) }
            layer.innerproduct = arena.new(ip)
        case let .batchnorm(channels, epsilon, gamma, beta, mean, variance):
            layer.batchnorm = batchnormParams(channels, epsilon, gamma, beta, mean, variance, arena)
        case let .activation(a):
            layer.activation = activationParams(a, arena)
        case let .clip(lo, hi):
            var c = CoreML__Specification__ClipLayerParams()
            core_ml__specification__clip_layer_params__init(&c)
            c.minval = lo; c.maxval = hi
            layer.clip = arena.new(c)
        case let .pooling(type, kernel, stride, pads, exclude, global):
            layer.pooling = poolingParams(type, kernel, stride, pads, exclude: exclude, global: global, arena)
        case .softmax:
            var s = CoreML__Specification__SoftmaxLayerParams()
            core_ml__specification__softmax_layer_params__init(&s)
            layer.softmax = arena.new(s)
        case let .padding(mode, value, pads):
            layer.padding = paddingParams(mode, value, pads, arena)
        case .add:
            var a = CoreML__Specification__AddLayerParams(); core_ml__specification__add_layer_params__init(&a)
            layer.add = arena.new(a)
        case .multiply:
            var m = CoreML__Specification__MultiplyLayerParams(); core_ml__specification__multiply_layer_params__init(&m)
            layer.multiply = arena.new(m)
        case let .scale(scale, bias):
            layer.scale = scaleParams(scale, bias, arena)
        case let .bias(values):
            var b = CoreML__Specification__BiasLayerParams()
            core_ml__specification__bias_layer_params__init(&b)
            b.n_shape = 1; b.shape = u64([values.count])
            b.bias = weightParams(.float(values), arena)
            layer.bias = arena.new(b)
        case let .flatten(channelLast):
            var f = CoreML__Specification__FlattenLayerParams()
            core_ml__specification__flatten_layer_params__init(&f)
            f.mode = channelLast ? 1 : 0
            layer.flatten = arena.new(f)
        case .concat:
            var c = CoreML__Specification__ConcatLayerParams()
            core_ml__specification__concat_layer_params__init(&c)
            layer.concat = arena.new(c)
        case let .reshape(shape):
            var r = CoreML__Specification__ReshapeLayerParams()
            core_ml__specification__reshape_layer_params__init(&r)
            r.n_targetshape = shape.count; r.targetshape = arena.array(shape.map(Int64.init))
            layer.reshape = arena.new(r)
        case let .permute(axes):
            var pm = CoreML__Specification__PermuteLayerParams()
            core_ml__specification__permute_layer_params__init(&pm)
            pm.n_axis = axes.count; pm.axis = u64(axes)
            layer.permute = arena.new(pm)
        case let .loadConstant(shape, values):
            var c = CoreML__Specification__LoadConstantLayerParams()
            core_ml__specification__load_constant_layer_params__init(&c)
            c.n_shape = shape.count; c.shape = u64(shape)
            c.data = weightParams(.float(values), arena)
            layer.loadconstant = arena.new(c)
        }
        return layer
    }

    /// Sizes as the unsigned integers Core ML stores (negative ones as 0).
    private static func u64(_ v: [Int], _ arena: CArena) -> UnsafeMutablePointer<UInt64>? {
        arena.array(v.map { UInt64(max($0, 0)) })
    }

    private static func convolutionParams(_ oc: Int, _ kc: Int, _ groups: Int, _ kernel: [Int], _ stride: [Int], _ dilation: [Int],
                                          _ pads: [Int], _ weights: CoreMLProgram.Weights, _ bias: [Float]?,
                                          _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__ConvolutionLayerParams> {
        let u64 = { (v: [Int]) in Self.u64(v, arena) }
        var c = CoreML__Specification__ConvolutionLayerParams()
        core_ml__specification__convolution_layer_params__init(&c)
        c.outputchannels = UInt64(oc); c.kernelchannels = UInt64(kc); c.ngroups = UInt64(groups)
        c.n_kernelsize = 2; c.kernelsize = u64(kernel)
        c.n_stride = 2; c.stride = u64(stride)
        c.n_dilationfactor = 2; c.dilationfactor = u64(dilation)
        c.valid = validPadding(pads, arena)
        c.weights = weightParams(weights, arena)
        if let b = bias { c.hasbias = 1; c.bias = weightParams(.float(b), arena) }
        return arena.new(c)
    }

    private static func poolingParams(_ type: Int, _ kernel: [Int], _ stride: [Int], _ pads: [Int], exclude: Bool, global: Bool,
                                      _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__PoolingLayerParams> {
        let u64 = { (v: [Int]) in Self.u64(v, arena) }
        var pl = CoreML__Specification__PoolingLayerParams()
        core_ml__specification__pooling_layer_params__init(&pl)
        pl.type = Int32(type)
        pl.n_kernelsize = 2; pl.kernelsize = u64(kernel)
        pl.n_stride = 2; pl.stride = u64(stride)
        pl.valid = validPadding(pads, arena)
        pl.avgpoolexcludepadding = exclude ? 1 : 0
        pl.globalpooling = global ? 1 : 0
        return arena.new(pl)
    }

    private static func batchnormParams(_ channels: Int, _ epsilon: Float, _ gamma: [Float], _ beta: [Float], _ mean: [Float],
                                        _ variance: [Float], _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__BatchnormLayerParams> {
        var bn = CoreML__Specification__BatchnormLayerParams()
        core_ml__specification__batchnorm_layer_params__init(&bn)
        bn.channels = UInt64(channels); bn.epsilon = epsilon
        bn.gamma = weightParams(.float(gamma), arena); bn.beta = weightParams(.float(beta), arena)
        bn.mean = weightParams(.float(mean), arena); bn.variance = weightParams(.float(variance), arena)
        return arena.new(bn)
    }

    private static func activationParams(_ a: CoreMLProgram.Activation, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__ActivationParams> {
        var p = CoreML__Specification__ActivationParams()
        core_ml__specification__activation_params__init(&p)
        switch a {
        case .relu:
            var r = CoreML__Specification__ActivationReLU(); core_ml__specification__activation_re_lu__init(&r)
            p.relu = arena.new(r)
        case .sigmoid:
            var s = CoreML__Specification__ActivationSigmoid(); core_ml__specification__activation_sigmoid__init(&s)
            p.sigmoid = arena.new(s)
        case .tanh:
            var t = CoreML__Specification__ActivationTanh(); core_ml__specification__activation_tanh__init(&t)
            p.tanh = arena.new(t)
        case let .leakyRelu(alpha):
            var r = CoreML__Specification__ActivationLeakyReLU(); core_ml__specification__activation_leaky_re_lu__init(&r)
            r.alpha = alpha
            p.leakyrelu = arena.new(r)
        case let .linear(alpha, beta):
            var r = CoreML__Specification__ActivationLinear(); core_ml__specification__activation_linear__init(&r)
            r.alpha = alpha; r.beta = beta
            p.linear = arena.new(r)
        case let .sigmoidHard(alpha, beta):
            var r = CoreML__Specification__ActivationSigmoidHard(); core_ml__specification__activation_sigmoid_hard__init(&r)
            r.alpha = alpha; r.beta = beta
            p.sigmoidhard = arena.new(r)
        }
        return arena.new(p)
    }

    private static func paddingParams(_ mode: String, _ value: Float, _ pads: [Int],
                                      _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__PaddingLayerParams> {
        var pd = CoreML__Specification__PaddingLayerParams()
        core_ml__specification__padding_layer_params__init(&pd)
        switch mode {
        case "reflect":
            var r = CoreML__Specification__PaddingLayerParams__PaddingReflection()
            core_ml__specification__padding_layer_params__padding_reflection__init(&r)
            pd.reflection = arena.new(r)
        case "edge":
            var r = CoreML__Specification__PaddingLayerParams__PaddingReplication()
            core_ml__specification__padding_layer_params__padding_replication__init(&r)
            pd.replication = arena.new(r)
        default:
            var c = CoreML__Specification__PaddingLayerParams__PaddingConstant()
            core_ml__specification__padding_layer_params__padding_constant__init(&c)
            c.value = value
            pd.constant = arena.new(c)
        }
        pd.paddingamounts = borderAmounts(pads, arena)
        return arena.new(pd)
    }

    private static func scaleParams(_ scale: [Float], _ bias: [Float]?, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__ScaleLayerParams> {
        let u64 = { (v: [Int]) in Self.u64(v, arena) }
        var s = CoreML__Specification__ScaleLayerParams()
        core_ml__specification__scale_layer_params__init(&s)
        s.n_shapescale = 1; s.shapescale = u64([scale.count])
        s.scale = weightParams(.float(scale), arena)
        if let b = bias {
            s.hasbias = 1
            s.n_shapebias = 1; s.shapebias = u64([b.count])
            s.bias = weightParams(.float(b), arena)
        }
        return arena.new(s)
    }

    private static func weightParams(_ w: CoreMLProgram.Weights, _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__WeightParams> {
        var p = CoreML__Specification__WeightParams()
        core_ml__specification__weight_params__init(&p)
        func binary(_ b: [UInt8]) -> ProtobufCBinaryData {
            let (len, data) = arena.bytes(b)
            return ProtobufCBinaryData(len: len, data: data)
        }
        switch w {
        case let .float(v):
            p.n_floatvalue = v.count; p.floatvalue = arena.array(v)
        case let .float16(b):
            p.float16value = binary(b)
        case let .linear(codes, scale, bias):
            p.rawvalue = binary(codes)
            var lin = CoreML__Specification__LinearQuantizationParams()
            core_ml__specification__linear_quantization_params__init(&lin)
            lin.n_scale = scale.count; lin.scale = arena.array(scale)
            lin.n_bias = bias.count; lin.bias = arena.array(bias)
            var q = CoreML__Specification__QuantizationParams()
            core_ml__specification__quantization_params__init(&q)
            q.numberofbits = 8
            q.linearquantization = arena.new(lin)
            p.quantization = arena.new(q)
        case let .lookupTable(bits, packed, table):
            p.rawvalue = binary(packed)
            var lut = CoreML__Specification__LookUpTableQuantizationParams()
            core_ml__specification__look_up_table_quantization_params__init(&lut)
            lut.n_floatvalue = table.count; lut.floatvalue = arena.array(table)
            var q = CoreML__Specification__QuantizationParams()
            core_ml__specification__quantization_params__init(&q)
            q.numberofbits = UInt64(bits)
            q.lookuptablequantization = arena.new(lut)
            p.quantization = arena.new(q)
        }
        return arena.new(p)
    }

    /// (top, left, bottom, right) → border amounts for height then width.
    private static func borderAmounts(_ pads: [Int], _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts> {
        let p = pads.count == 4 ? pads : [0, 0, 0, 0]
        let edges = [(p[0], p[2]), (p[1], p[3])].map { start, end -> CoreML__Specification__BorderAmounts__EdgeSizes in
            var e = CoreML__Specification__BorderAmounts__EdgeSizes()
            core_ml__specification__border_amounts__edge_sizes__init(&e)
            e.startedgesize = UInt64(max(start, 0)); e.endedgesize = UInt64(max(end, 0))
            return e
        }
        var b = CoreML__Specification__BorderAmounts()
        core_ml__specification__border_amounts__init(&b)
        b.n_borderamounts = edges.count; b.borderamounts = arena.messages(edges)
        return arena.new(b)
    }

    private static func validPadding(_ pads: [Int], _ arena: CArena) -> UnsafeMutablePointer<CoreML__Specification__ValidPadding> {
        var v = CoreML__Specification__ValidPadding()
        core_ml__specification__valid_padding__init(&v)
        v.paddingamounts = borderAmounts(pads, arena)
        return arena.new(v)
    }
}

/// The feature descriptions of a detector pipeline's stages, allocated in one arena.
private struct DetectorFeatures {
    let arena: CArena

    func feature(_ name: String, _ doc: String, _ type: CoreML__Specification__FeatureType,
                 optional: Bool = false) -> CoreML__Specification__FeatureDescription {
        var t = type
        t.isoptional = optional ? 1 : 0
        var f = CoreML__Specification__FeatureDescription()
        core_ml__specification__feature_description__init(&f)
        f.name = arena.string(name); f.shortdescription = arena.string(doc); f.type = arena.new(t)
        return f
    }

    /// A double MultiArray of `shape`; `flexibleRows` lets the first dimension be 0…shape[0].
    func array(_ shape: [Int], flexibleRows: Bool = false) -> CoreML__Specification__FeatureType {
        var a = CoreML__Specification__ArrayFeatureType()
        core_ml__specification__array_feature_type__init(&a)
        a.n_shape = shape.count; a.shape = arena.array(shape.map(Int64.init))
        a.datatype = 65600
        if flexibleRows {
            let ranges = shape.enumerated().map { i, n -> CoreML__Specification__SizeRange in
                var r = CoreML__Specification__SizeRange()
                core_ml__specification__size_range__init(&r)
                r.lowerbound = i == 0 ? 0 : UInt64(n); r.upperbound = Int64(n)
                return r
            }
            var range = CoreML__Specification__ArrayFeatureType__ShapeRange()
            core_ml__specification__array_feature_type__shape_range__init(&range)
            range.n_sizeranges = ranges.count; range.sizeranges = arena.messages(ranges)
            a.shaperange = arena.new(range)
        }
        var t = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&t)
        t.multiarraytype = arena.new(a)
        return t
    }

    func doubleType() -> CoreML__Specification__FeatureType {
        var dbl = CoreML__Specification__DoubleFeatureType()
        core_ml__specification__double_feature_type__init(&dbl)
        var doubleType = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&doubleType)
        doubleType.doubletype = arena.new(dbl)
        return doubleType
    }

    func imageType(_ p: CoreMLProgram) -> CoreML__Specification__FeatureType {
        var image = CoreML__Specification__ImageFeatureType()
        core_ml__specification__image_feature_type__init(&image)
        image.width = Int64(p.width); image.height = Int64(p.height); image.colorspace = p.colorSpace
        var imageType = CoreML__Specification__FeatureType()
        core_ml__specification__feature_type__init(&imageType)
        imageType.imagetype = arena.new(image)
        return imageType
    }

    func description(_ inputs: [CoreML__Specification__FeatureDescription],
                     _ outputs: [CoreML__Specification__FeatureDescription]) -> UnsafeMutablePointer<CoreML__Specification__ModelDescription> {
        var desc = CoreML__Specification__ModelDescription()
        core_ml__specification__model_description__init(&desc)
        desc.n_input = inputs.count; desc.input = arena.messages(inputs)
        desc.n_output = outputs.count; desc.output = arena.messages(outputs)
        return arena.new(desc)
    }
}
