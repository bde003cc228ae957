#!/usr/bin/env python3
"""Oracle for MLToolExportTests: loads an exported Core ML model with coremltools on Linux.

Usage: check_coreml.py MODEL.mlmodel [FLOAT.mlmodel]
Prints a JSON summary read through coremltools: specification version, input type and size, colour space, output
names and types, class labels, metadata, the image scaler, the layer types and how each weight is stored. With a
second (float) model, also dequantizes MODEL's weights with coremltools' own routine and reports the largest
error from FLOAT's weights in quantization steps ("dequantized_max_error_in_steps", at most 0.5 when the encoding is right). Exit 3 when
coremltools is missing, so the caller can skip loudly.
"""
import json
import logging
import sys
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)
try:
    import io, contextlib
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        import numpy as np
        import coremltools as ct
        from coremltools.models.neural_network import quantization_utils as qu
except ImportError as e:  # pragma: no cover
    print(f"missing: {e}", file=sys.stderr)
    sys.exit(3)


def storage(wp):
    if len(wp.floatValue):
        return "float32"
    if len(wp.float16Value):
        return "float16"
    q = wp.quantization.WhichOneof("QuantizationType")
    return f"{q}{wp.quantization.numberOfBits}" if q else "empty"


def weights(spec):
    out = {}
    for layer in spec.neuralNetworkClassifier.layers:
        kind = layer.WhichOneof("layer")
        if kind in ("convolution", "innerProduct"):
            out[layer.name] = getattr(layer, kind).weights
    return out


def shape_of(layer):
    kind = layer.WhichOneof("layer")
    p = getattr(layer, kind)
    if kind == "convolution":
        return (p.outputChannels, p.kernelChannels, p.kernelSize[0], p.kernelSize[1])
    return (p.outputChannels, p.inputChannels)


path = sys.argv[1]
spec = ct.utils.load_spec(path)
model = ct.models.MLModel(spec, skip_model_load=True)
d = spec.description
nn = spec.neuralNetworkClassifier
inp = d.input[0]
scaler = nn.preprocessing[0].scaler if len(nn.preprocessing) else None
summary = {
    "specification_version": spec.specificationVersion,
    "model_type": spec.WhichOneof("Type"),
    "input": {"name": inp.name, "type": inp.type.WhichOneof("Type"), "width": inp.type.imageType.width,
              "height": inp.type.imageType.height,
              "color_space": ct.proto.FeatureTypes_pb2.ImageFeatureType.ColorSpace.Name(inp.type.imageType.colorSpace)},
    "outputs": [{"name": o.name, "type": o.type.WhichOneof("Type")} for o in d.output],
    "predicted_feature_name": d.predictedFeatureName,
    "predicted_probabilities_name": d.predictedProbabilitiesName,
    "class_labels": list(nn.stringClassLabels.vector),
    "metadata": {"author": model.author, "license": model.license, "short_description": model.short_description,
                 "version": model.version, "user_defined": dict(model.user_defined_metadata)},
    "scaler": None if scaler is None else {"channel_scale": scaler.channelScale, "red_bias": scaler.redBias,
                                           "green_bias": scaler.greenBias, "blue_bias": scaler.blueBias},
    "layer_types": sorted({l.WhichOneof("layer") for l in nn.layers}),
    "weight_storage": sorted({storage(w) for w in weights(spec).values()}),
}
if len(sys.argv) > 2:
    ref = ct.utils.load_spec(sys.argv[2])
    ref_weights = weights(ref)
    # Largest |dequantized − float| per output channel, in units of that channel's quantization step.
    worst, compared = 0.0, 0
    for layer in nn.layers:
        if layer.name not in ref_weights:
            continue
        w = getattr(layer, layer.WhichOneof("layer")).weights
        q = w.quantization
        if q.WhichOneof("QuantizationType") != "linearQuantization":
            continue
        shape = shape_of(layer)
        scale = np.array(q.linearQuantization.scale, dtype=np.float64)
        qu._dequantize_wp(w, shape, axis=0)
        a = np.array(w.floatValue, dtype=np.float64).reshape(shape[0], -1)
        b = np.array(ref_weights[layer.name].floatValue, dtype=np.float64).reshape(shape[0], -1)
        diff = np.max(np.abs(a - b), axis=1)
        steps = np.broadcast_to(scale, diff.shape)
        worst = max(worst, float(np.max(diff / steps)))
        compared += 1
    summary["dequantized_layers"] = compared
    summary["dequantized_max_error_in_steps"] = worst
print(json.dumps(summary))
