#!/usr/bin/env python3
"""Writes ort_cases.json: small single-op ONNX graphs run through onnxruntime, translated to the mltool IR (NHWC,
conv weights (KH,KW,C/g,OC)). The engine's reference and fast paths must reproduce onnxruntime's outputs.
Run: python3 make_ort_fixtures.py  (needs numpy, onnx, onnxruntime). Seeded: the output is reproducible."""
import json, os
import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(1234)
cases = []


def run(node, inputs, inits, opset=13):
    """Runs one ONNX node; inputs: {name: array}, inits: {name: array}."""
    vi = [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape) for k, v in inputs.items()]
    out = helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, None)
    g = helper.make_graph([node], "g", vi, [out], [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    s = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    return s.run(None, inputs)[0]


def nhwc(a):
    return np.ascontiguousarray(a.transpose(0, 2, 3, 1)) if a.ndim == 4 else a


def add(name, op, x, y, attributes, weights=None, x_ir=None):
    """x: NCHW input (converted to NHWC unless x_ir given); weights: list of IR-layout arrays."""
    xi = nhwc(x) if x_ir is None else x_ir
    cases.append({
        "name": name, "op": op, "attributes": attributes,
        "input": {"shape": list(xi.shape), "data": xi.ravel().round(6).tolist()},
        "weights": [{"shape": list(w.shape), "data": w.ravel().round(6).tolist()} for w in (weights or [])],
        "expected": {"shape": list(nhwc(y).shape), "data": nhwc(y).ravel().tolist()},
    })


def r(*shape):
    return rng.uniform(-1, 1, shape).astype(np.float32).round(6)


def conv(name, c, oc, k, strides, pads, dil=(1, 1), groups=1, hw=(7, 8)):
    x = r(2, c, *hw)
    w = r(oc, c // groups, *k)
    b = r(oc)
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], kernel_shape=list(k), strides=list(strides),
                            pads=[pads[0], pads[1], pads[2], pads[3]], dilations=list(dil), group=groups)
    y = run(node, {"x": x}, {"w": w, "b": b})
    add(name, "conv", x, y, {"strides": list(strides), "dilations": list(dil), "pads": list(pads), "groups": groups},
        [np.ascontiguousarray(w.transpose(2, 3, 1, 0)), b])


conv("conv3x3_asym_stride2", 3, 4, (3, 3), (2, 2), (1, 2, 3, 0))
conv("conv3x3_dil2_groups2", 4, 6, (3, 3), (1, 1), (2, 2, 2, 2), dil=(2, 2), groups=2)
conv("depthwise5x5_stride2", 5, 5, (5, 5), (2, 2), (1, 2, 2, 1), groups=5, hw=(11, 9))
conv("conv1x1_stride2", 6, 3, (1, 1), (2, 2), (0, 0, 0, 0))
conv("conv2x3_rect", 3, 5, (2, 3), (1, 2), (0, 1, 1, 1))


def pool(name, op, k, s, pads, ceil, include=None, hw=(7, 8)):
    x = r(2, 3, *hw)
    attrs = dict(kernel_shape=list(k), strides=list(s), pads=list(pads), ceil_mode=int(ceil))
    if include is not None:
        attrs["count_include_pad"] = int(include)
    y = run(helper.make_node(op, ["x"], ["y"], **attrs), {"x": x}, {})
    ir = {"kernel": list(k), "strides": list(s), "pads": list(pads), "ceilMode": ceil}
    if include is not None:
        ir["countIncludePad"] = include
    add(name, "maxPool" if op == "MaxPool" else "avgPool", x, y, ir)


pool("maxpool3x3_s2_ceil", "MaxPool", (3, 3), (2, 2), (1, 1, 1, 1), True)
pool("maxpool2x2_s2_floor_odd", "MaxPool", (2, 2), (2, 2), (0, 0, 0, 0), False, hw=(7, 9))
pool("avgpool3x3_s2_ceil_include", "AveragePool", (3, 3), (2, 2), (1, 1, 1, 1), True, True)
pool("avgpool3x3_s2_ceil_exclude", "AveragePool", (3, 3), (2, 2), (1, 1, 0, 0), True, False)
pool("avgpool2x3_include_floor", "AveragePool", (2, 3), (1, 2), (1, 1, 1, 1), False, True)

for mode in ["constant", "reflect", "edge"]:
    x = r(2, 3, 5, 6)
    pads = np.array([0, 0, 2, 1, 0, 0, 1, 3], np.int64)
    inputs = ["x", "p"] + (["v"] if mode == "constant" else [])
    inits = {"v": np.array(0.25, np.float32)} if mode == "constant" else {}
    vi = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    node = helper.make_node("Pad", inputs, ["y"], mode=mode)
    g = helper.make_graph([node], "g", vi, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                          [numpy_helper.from_array(pads, "p")] + [numpy_helper.from_array(v, k) for k, v in inits.items()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    y = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    ir = {"pads": [0, 2, 1, 0, 0, 1, 3, 0], "mode": mode}
    if mode == "constant":
        ir["value"] = 0.25
    add(f"pad_{mode}", "pad", x, y, ir)

x = r(3, 4, 5) * 4
add("softmax_last", "softmax", x, run(helper.make_node("Softmax", ["x"], ["y"], axis=-1), {"x": x}, {}), {"axis": -1}, x_ir=x)
add("softmax_axis1", "softmax", x, run(helper.make_node("Softmax", ["x"], ["y"], axis=1), {"x": x}, {}), {"axis": 1}, x_ir=x)
x = r(2, 3, 4, 5) * 5
add("hardsigmoid", "hardSigmoid", x, run(helper.make_node("HardSigmoid", ["x"], ["y"], alpha=0.3, beta=0.4), {"x": x}, {}),
    {"alpha": 0.3, "beta": 0.4})
add("hardswish", "hardSwish", x, run(helper.make_node("HardSwish", ["x"], ["y"]), {"x": x}, {}, opset=14), {})
add("leakyrelu", "leakyRelu", x, run(helper.make_node("LeakyRelu", ["x"], ["y"], alpha=0.15), {"x": x}, {}), {"alpha": 0.15})
add("sigmoid", "sigmoid", x, run(helper.make_node("Sigmoid", ["x"], ["y"]), {"x": x}, {}), {})
add("tanh", "tanh", x, run(helper.make_node("Tanh", ["x"], ["y"]), {"x": x}, {}), {})
add("globalavgpool", "globalAvgPool", x, run(helper.make_node("GlobalAveragePool", ["x"], ["y"]), {"x": x}, {}), {})
add("globalmaxpool", "globalMaxPool", x, run(helper.make_node("GlobalMaxPool", ["x"], ["y"]), {"x": x}, {}), {})

# Broadcasting binaries on plain (non-image) ranks, so no layout question arises.
for op, a_shape, b_shape in [("Add", (2, 3, 4), (3, 1)), ("Sub", (2, 1, 4), (3, 1)), ("Mul", (2, 3, 4), (4,)),
                             ("Div", (2, 3, 1), (1, 3, 4))]:
    a = r(*a_shape)
    b = (r(*b_shape) + 2).astype(np.float32)
    y = run(helper.make_node(op, ["x", "b"], ["y"]), {"x": a}, {"b": b})
    add(f"{op.lower()}_broadcast", op.lower(), a, y, {}, [b], x_ir=a)

x = r(3, 7)
w = r(7, 5)
b = r(5)
y = run(helper.make_node("Gemm", ["x", "w", "b"], ["y"]), {"x": x}, {"w": w, "b": b})
add("gemm_dense", "dense", x, y, {}, [w, b], x_ir=x)

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ort_cases.json")
with open(path, "w") as f:
    json.dump({"generator": "make_ort_fixtures.py", "onnxruntime": ort.__version__, "cases": cases}, f)
print(path, len(cases), "cases,", os.path.getsize(path), "bytes")
