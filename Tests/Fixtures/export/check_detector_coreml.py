#!/usr/bin/env python3
"""Oracle for the detector export tests: reads an exported Core ML detector pipeline with coremltools on Linux and
evaluates its decoder layers with numpy (Core ML itself runs only on Apple's systems).

Usage: check_detector_coreml.py MODEL.mlmodel REQUEST.json
REQUEST: {"photos": [{"<head blob name>": "<head>.npy", ...}, ...]}, each .npy one image's head output as Core ML
holds it, (C, H, W) float32. The layers of the pipeline's first model that can run from those blobs (the decoder
after the heads) are evaluated in numpy with Core ML's classic-layer semantics (blobs (C, H, W); permute over
(Seq, C, H, W)); the layers before the heads are skipped. Prints one JSON line: the spec's structure read through
coremltools (pipeline stages, NMS settings, feature names and types, flexible shapes, metadata) and per photo
raw_confidence and raw_coordinates as lists. Exit 3 when coremltools is missing, so the caller can skip loudly.
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
except ImportError as e:  # pragma: no cover
    print(f"missing: {e}", file=sys.stderr)
    sys.exit(3)


def weights(wp):
    if len(wp.floatValue):
        return np.array(wp.floatValue, dtype=np.float32)
    raise ValueError("only float32 weights are evaluated here")


def run_layer(layer, blobs):
    kind = layer.WhichOneof("layer")
    x = [blobs[i] for i in layer.input]
    if kind == "convolution":
        c = layer.convolution
        assert list(c.kernelSize) == [1, 1] and list(c.stride) == [1, 1] and c.nGroups == 1, "1×1 convolutions only"
        w = weights(c.weights).reshape(c.outputChannels, c.kernelChannels)
        y = np.einsum("oi,ihw->ohw", w, x[0])
        if c.hasBias:
            y = y + weights(c.bias)[:, None, None]
        return y
    if kind == "loadConstant":
        return weights(layer.loadConstant.data).reshape(list(layer.loadConstant.shape))
    if kind == "add":
        return sum(x[1:], x[0])
    if kind == "multiply":
        return np.prod(np.stack(x), axis=0)
    if kind == "activation":
        f = layer.activation.WhichOneof("NonlinearityType")
        assert f in ("sigmoid", "ReLU"), f
        return 1 / (1 + np.exp(-x[0])) if f == "sigmoid" else np.maximum(x[0], 0)
    if kind == "reshape":
        assert layer.reshape.mode == 0
        return x[0].reshape(list(layer.reshape.targetShape))
    if kind == "permute":
        axes = list(layer.permute.axis)
        assert axes[0] == 0, "the sequence axis stays first"
        return np.transpose(x[0][None], axes)[0]
    if kind == "softmax":
        e = np.exp(x[0] - x[0].max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)
    if kind == "concat":
        return np.concatenate(x, axis=0)
    raise ValueError(f"layer type {kind} is not evaluated")


def array_type(f):
    t = f.type
    kind = t.WhichOneof("Type")
    out = {"name": f.name, "type": kind, "optional": bool(t.isOptional)}
    if kind == "multiArrayType":
        a = t.multiArrayType
        out["shape"] = list(a.shape)
        out["data_type"] = ct.proto.FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(a.dataType)
        if a.WhichOneof("ShapeFlexibility") == "shapeRange":
            out["ranges"] = [[r.lowerBound, r.upperBound] for r in a.shapeRange.sizeRanges]
    if kind == "imageType":
        out.update(width=t.imageType.width, height=t.imageType.height,
                   color_space=ct.proto.FeatureTypes_pb2.ImageFeatureType.ColorSpace.Name(t.imageType.colorSpace))
    return out


model_path, request_path = sys.argv[1:3]
spec = ct.utils.load_spec(model_path)
request = json.load(open(request_path))
summary = {
    "specification_version": spec.specificationVersion,
    "model_type": spec.WhichOneof("Type"),
    "inputs": [array_type(f) for f in spec.description.input],
    "outputs": [array_type(f) for f in spec.description.output],
    "metadata": dict(spec.description.metadata.userDefined),
}
stages = list(spec.pipeline.models)
summary["stages"] = [m.WhichOneof("Type") for m in stages]
summary["stage_versions"] = [m.specificationVersion for m in stages]
if len(stages) == 2:
    net, nms = stages
    summary["network_outputs"] = [array_type(f) for f in net.description.output]
    summary["network_inputs"] = [array_type(f) for f in net.description.input]
    summary["nms_inputs"] = [array_type(f) for f in nms.description.input]
    summary["nms_outputs"] = [array_type(f) for f in nms.description.output]
    n = nms.nonMaximumSuppression
    summary["nms"] = {
        "iou_threshold": n.iouThreshold, "confidence_threshold": n.confidenceThreshold,
        "per_class": n.pickTop.perClass, "labels": list(n.stringClassLabels.vector),
        "confidence_input": n.confidenceInputFeatureName, "coordinates_input": n.coordinatesInputFeatureName,
        "iou_input": n.iouThresholdInputFeatureName, "confidence_threshold_input": n.confidenceThresholdInputFeatureName,
        "confidence_output": n.confidenceOutputFeatureName, "coordinates_output": n.coordinatesOutputFeatureName,
    }
    scaler = net.neuralNetwork.preprocessing[0].scaler if len(net.neuralNetwork.preprocessing) else None
    summary["scaler"] = {"channel_scale": scaler.channelScale, "red_bias": scaler.redBias} if scaler else None
    results = []
    evaluated = set()
    for photo in request["photos"]:
        blobs = {name: np.load(path).astype(np.float64) for name, path in photo.items()}
        for layer in net.neuralNetwork.layers:
            if all(i in blobs for i in layer.input) and (layer.input or layer.WhichOneof("layer") == "loadConstant") \
                    and not all(o in blobs for o in layer.output):
                if not layer.input and not any(layer.output[0] in l.input for l in net.neuralNetwork.layers):
                    continue
                blobs[layer.output[0]] = run_layer(layer, blobs)
                evaluated.add(layer.WhichOneof("layer"))
        conf, coords = blobs["raw_confidence"], blobs["raw_coordinates"]
        results.append({"confidence_shape": list(conf.shape), "coordinates_shape": list(coords.shape),
                        "raw_confidence": conf.reshape(conf.shape[-2], conf.shape[-1]).tolist(),
                        "raw_coordinates": coords.reshape(coords.shape[-2], coords.shape[-1]).tolist()})
    summary["evaluated_layer_types"] = sorted(evaluated)
    summary["results"] = results
print(json.dumps(summary))
