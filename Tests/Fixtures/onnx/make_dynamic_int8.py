"""Writes dynamically quantized ONNX graphs with onnxruntime's outputs (run from the repository root):

    python3 Tests/Fixtures/onnx/make_dynamic_int8.py

Float graphs made with onnx.helper (opset 13, seeded weights and inputs), then quantized the ways files in the wild are:
- conv_dynamic: three convolutions (3×3 stride 2, depthwise 3×3, 1×1, each with a bias, Relu between) through
  onnxruntime's `quantize_dynamic` (uint8 weights, one scale per tensor): DynamicQuantizeLinear → ConvInteger →
  Cast → Mul(Mul(xs, Ws)) → Add(bias).
- conv_dynamic_per_channel: the same graph, int8 weights with one scale per output channel.
- conv_runtime_bias: ddddocr's older quantizer, written by hand: the bias is quantized at run time with the
  activation's scale and added in int32 before the Cast (Add(·, Reshape(Cast(to: int32, Floor(Div(b, Mul(xs,
  Ws))))))), uint8 weights with a zero point.
- lstm_dynamic: a bidirectional LSTM (hidden 12, initial states as inputs) and a MatMul through `quantize_dynamic`:
  com.microsoft.DynamicQuantizeLSTM (int8 weights [directions, inputs, 4·hidden], a scale per direction) and
  MatMulInteger.
Each goes to Tests/Fixtures/onnx/dynamic-int8/<name>.onnx with its inputs as raw little-endian float32 files, the
float graph's outputs (what the quantized weights compute exactly: the reference mltool must meet) in
manifest.json's `cases`, and onnxruntime's own run of the quantized file (its activations rounded to uint8 at every
product) in `int8`. The tests need neither onnx nor onnxruntime.
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize_dynamic

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic-int8")
OPSET = 13
rng = np.random.default_rng(4848)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def init(name, value):
    return numpy_helper.from_array(np.asarray(value), name)


def model(name, nodes, inputs, outputs, initializers=(), domains=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    opsets = [helper.make_opsetid("", OPSET)] + [helper.make_opsetid(d, 1) for d in domains]
    m = helper.make_model(g, opset_imports=opsets, producer_name="make_dynamic_int8.py")
    m.ir_version = 8
    return m


def conv_float():
    w1 = rng.normal(0, 0.3, (8, 3, 3, 3)).astype(np.float32)
    w2 = rng.normal(0, 0.4, (8, 1, 3, 3)).astype(np.float32)
    w3 = rng.normal(0, 0.3, (6, 8, 1, 1)).astype(np.float32)
    b = [rng.normal(0, 0.1, n).astype(np.float32) for n in (8, 8, 6)]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("Conv", ["r2", "w3", "b3"], ["y"])]
    inits = [init("w1", w1), init("w2", w2), init("w3", w3)] + [init(f"b{i + 1}", v) for i, v in enumerate(b)]
    return model("conv", nodes, [f32("x", [1, 3, 20, "width"])], [f32("y", None)], inits)


def conv_feeds():
    return [{"x": rng.uniform(-1, 1, (1, 3, 20, w)).astype(np.float32)} for w in (24, 37)]


def quantized(m, name, **options):
    """The file `quantize_dynamic` makes of `m`, and the float graph of its dequantized weights (`m` with each weight
    replaced by scale · (code − zero point): the reference, exact for a run that does not round activations)."""
    src, dst = os.path.join(HERE, name + ".float.onnx"), os.path.join(HERE, name + ".onnx")
    onnx.save(m, src)
    quantize_dynamic(src, dst, **options)
    q = {t.name: numpy_helper.to_array(t) for t in onnx.load(dst).graph.initializer}
    for t in m.graph.initializer:
        if t.name + "_quantized" not in q:
            continue
        codes, scale, zero = (q[t.name + s].astype(np.float32) for s in ("_quantized", "_scale", "_zero_point"))
        along = (-1,) + (1,) * (codes.ndim - 1)   # one value, or one per index of axis 0
        w = (codes - zero.reshape(along if zero.size > 1 else ())) * scale.reshape(along if scale.size > 1 else ())
        if w.shape != tuple(t.dims):   # an LSTM's weights, stored [directions, inputs, 4·hidden]
            w = w.transpose(0, 2, 1)
        t.CopyFrom(numpy_helper.from_array(np.ascontiguousarray(w, dtype=np.float32), t.name))
    onnx.save(m, src)
    return src, dst


def conv_runtime_bias():
    """Two convolutions as the older quantizer wrote them (uint8 weights, zero points, an int32 bias quantized at run
    time), and the float graph they stand for."""
    nodes, inits, fnodes, finits, x = [], [], [], [], "x"
    for k, (cout, cin) in enumerate(((6, 3), (5, 6))):
        w = rng.normal(0, 0.3, (cout, cin, 3, 3)).astype(np.float32)
        b = rng.normal(0, 0.2, cout).astype(np.float32)
        lo, hi = min(w.min(), 0), max(w.max(), 0)
        ws = np.float32((hi - lo) / 255)
        wz = np.uint8(np.clip(np.round(-lo / ws), 0, 255))
        wq = np.clip(np.round(w / ws) + wz, 0, 255).astype(np.uint8)
        p, y = f"c{k}", f"y{k}"
        inits += [init(f"{p}_wq", wq), init(f"{p}_ws", ws), init(f"{p}_wz", wz), init(f"{p}_b", b),
                  init(f"{p}_shape", np.array([1, cout, 1, 1], np.int64))]
        nodes += [helper.make_node("DynamicQuantizeLinear", [x], [f"{p}_xq", f"{p}_xs", f"{p}_xz"]),
                  helper.make_node("Mul", [f"{p}_xs", f"{p}_ws"], [f"{p}_bias_scale"]),
                  helper.make_node("Div", [f"{p}_b", f"{p}_bias_scale"], [f"{p}_bias_div"]),
                  helper.make_node("Floor", [f"{p}_bias_div"], [f"{p}_bias_floor"]),
                  helper.make_node("Cast", [f"{p}_bias_floor"], [f"{p}_bias_int"], to=TensorProto.INT32),
                  helper.make_node("Reshape", [f"{p}_bias_int", f"{p}_shape"], [f"{p}_bias_q"]),
                  helper.make_node("ConvInteger", [f"{p}_xq", f"{p}_wq", f"{p}_xz", f"{p}_wz"], [f"{p}_acc"], pads=[1, 1, 1, 1]),
                  helper.make_node("Add", [f"{p}_acc", f"{p}_bias_q"], [f"{p}_biased"]),
                  helper.make_node("Cast", [f"{p}_biased"], [f"{p}_float"], to=TensorProto.FLOAT),
                  helper.make_node("Mul", [f"{p}_xs", f"{p}_ws"], [f"{p}_scale"]),
                  helper.make_node("Mul", [f"{p}_float", f"{p}_scale"], [f"{p}_out"]),
                  helper.make_node("Sigmoid", [f"{p}_out"], [y])]
        dequantized = ((wq.astype(np.float32) - np.float32(wz)) * ws).astype(np.float32)
        finits += [init(f"{p}_w", dequantized), init(f"{p}_b", b)]
        fnodes += [helper.make_node("Conv", [x, f"{p}_w", f"{p}_b"], [f"{p}_out"], pads=[1, 1, 1, 1]),
                   helper.make_node("Sigmoid", [f"{p}_out"], [y])]
        x = y
    inputs, outputs = [f32("x", [1, 3, 20, "width"])], [f32(x, None)]
    return (model("conv_runtime_bias", nodes, inputs, outputs, inits),
            model("conv_runtime_bias_float", fnodes, inputs, outputs, finits))


def lstm_float():
    d, n, h = 2, 16, 12
    w = rng.normal(0, 0.25, (d, 4 * h, n)).astype(np.float32)
    r = rng.normal(0, 0.25, (d, 4 * h, h)).astype(np.float32)
    b = rng.normal(0, 0.1, (d, 8 * h)).astype(np.float32)
    proj = rng.normal(0, 0.3, (2 * h, 10)).astype(np.float32)
    nodes = [helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["seq", "h", "c"], direction="bidirectional",
                              hidden_size=h),
             helper.make_node("Transpose", ["seq"], ["seq_t"], perm=[0, 2, 1, 3]),
             helper.make_node("Reshape", ["seq_t", "shape"], ["flat"]),
             helper.make_node("MatMul", ["flat", "proj"], ["y"])]
    inits = [init("W", w), init("R", r), init("B", b), init("proj", proj), init("shape", np.array([0, 0, 2 * h], np.int64))]
    inputs = [f32("x", ["time", 1, n]), f32("h0", [d, 1, h]), f32("c0", [d, 1, h])]
    return model("lstm", nodes, inputs, [f32("y", None), f32("h", None), f32("c", None)], inits)


def lstm_feeds():
    return [{"x": rng.normal(0, 1, (t, 1, 16)).astype(np.float32), "h0": rng.normal(0, 0.3, (2, 1, 12)).astype(np.float32),
             "c0": rng.normal(0, 0.3, (2, 1, 12)).astype(np.float32)} for t in (5, 11)]


def run(path, feeds):
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return names, [session.run(names, feed) for feed in feeds]


def write_case(name, quantized_path, float_path, feeds, manifest):
    names, reference = run(float_path, feeds)
    _, int8 = run(quantized_path, feeds)
    for k, feed in enumerate(feeds):
        base = f"{name}.{k}"
        case = {"model": name + ".onnx", "inputs": [], "outputs": []}
        for n, v in feed.items():
            v.astype("<f4").tofile(os.path.join(HERE, f"{base}.in.{n}.f32"))
            case["inputs"].append({"name": n, "shape": list(v.shape), "file": f"{base}.in.{n}.f32"})
        ort_case = dict(case, outputs=[])
        for n, v, q in zip(names, reference[k], int8[k]):
            v.astype("<f4").tofile(os.path.join(HERE, f"{base}.out.{n}.f32"))
            q.astype("<f4").tofile(os.path.join(HERE, f"{base}.int8.{n}.f32"))
            case["outputs"].append({"name": n, "shape": list(v.shape), "file": f"{base}.out.{n}.f32"})
            ort_case["outputs"].append({"name": n, "shape": list(q.shape), "file": f"{base}.int8.{n}.f32"})
        manifest["cases"].append(case)
        manifest["int8"].append(ort_case)
    os.remove(float_path)


def main():
    os.makedirs(HERE, exist_ok=True)
    for f in os.listdir(HERE):
        os.remove(os.path.join(HERE, f))
    manifest = {"onnx": onnx.__version__, "onnxruntime": ort.__version__, "opset": OPSET, "cases": [], "int8": []}
    src, dst = quantized(conv_float(), "conv_dynamic", op_types_to_quantize=["Conv"], weight_type=QuantType.QUInt8)
    write_case("conv_dynamic", dst, src, conv_feeds(), manifest)
    src, dst = quantized(conv_float(), "conv_dynamic_per_channel", op_types_to_quantize=["Conv"],
                         weight_type=QuantType.QInt8, per_channel=True)
    write_case("conv_dynamic_per_channel", dst, src, conv_feeds(), manifest)
    q, f = conv_runtime_bias()
    dst, src = os.path.join(HERE, "conv_runtime_bias.onnx"), os.path.join(HERE, "conv_runtime_bias.float.onnx")
    onnx.save(q, dst)
    onnx.save(f, src)
    write_case("conv_runtime_bias", dst, src, conv_feeds(), manifest)
    src, dst = quantized(lstm_float(), "lstm_dynamic", op_types_to_quantize=["LSTM", "MatMul"], weight_type=QuantType.QInt8)
    write_case("lstm_dynamic", dst, src, lstm_feeds(), manifest)
    with open(os.path.join(HERE, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    print(f"wrote {len(manifest['cases'])} cases to {HERE}")


if __name__ == "__main__":
    main()
