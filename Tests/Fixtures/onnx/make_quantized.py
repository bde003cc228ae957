"""Quantized ONNX fixtures for Tests/MLToolImportTests/ONNXQuantizedTests.swift and bench/run.py section 14.

Writes into OUT (default .build/onnx-quantized):
- efficientnet-lite0-qdq.onnx: models/efficientnet-lite0.onnx through onnxruntime's `quantize_static`, QDQ format,
  per-channel int8 weights (reduce_range: 7-bit codes, see below), uint8 activations, after onnxruntime's
  `quant_pre_process`, MinMax-calibrated on 200 Fashion-MNIST *training* images (the first 20
  of each class of datasets/fashion-mnist-small/train, in file order);
- efficientnet-lite0-qop.onnx: the same with `quant_format=QuantFormat.QOperator` (QLinearConv, QLinearAdd,
  QLinearGlobalAveragePool, QGemm, ...);
- fashion-test.u8: the 1,000 Fashion-MNIST *test* photos of datasets/fashion-mnist-small/test (class folders in order,
  files in order) preprocessed as recipes/efficientnet_lite0.py does (PIL bilinear to 256, centre crop 224), one
  grayscale 224×224 plane each as uint8 (the RGB conversion repeats it in 3 channels; the network's input is
  x/127.5 − 1 of it); fashion-test.labels.txt their class folders;
- efficientnet-lite0-{qdq,qop}.unfused.logits.f32: the same from onnxruntime with its graph optimizations off (each
  QuantizeLinear / DequantizeLinear run on its own, float ops between: the arithmetic the file states);
- efficientnet-lite0-{qdq,qop}.logits.f32 (and .float.logits.f32): onnxruntime's logits (1,000 × 1,000, float32
  little-endian) for those photos, 1 thread, all graph optimizations;
- ops/*.onnx with ops/*.in.*.f32 / ops/*.out.*.f32: one small graph per quantized op (QuantizeLinear,
  DequantizeLinear on computed tensors, QLinearConv, QLinearMatMul, QLinearAdd, QLinearMul, QLinearSigmoid,
  QLinearLeakyRelu, QLinearGlobalAveragePool, QLinearConcat, QGemm), seeded inputs, onnxruntime's outputs; integer
  tensors are written as float32 holding the codes. ops/manifest.json lists each graph's inputs and outputs.

Weights use 7 of their 8 bits (`reduce_range=True`; the small graphs' weight codes lie in −64…63): onnxruntime's uint8 ×
int8 kernel on AVX2 without VNNI (vpmaddubsw) saturates pairs of products in int16, so with full-range weights its int8
run is not the arithmetic the file states (measured on an AMD EPYC without VNNI: top-1 equal to its own unfused QDQ run,
optimizations off, on 31% of the photos; a QGemm output off by 10.3). Its documentation gives reduce_range as the remedy.

Usage: python3 Tests/Fixtures/onnx/make_quantized.py [--out DIR] [--only-ops] [--only-reference] [--force]
(the EfficientNet-Lite0 files are kept when complete: `make test` runs this each time)
Needs numpy, Pillow, onnx, onnxruntime (with onnxruntime.quantization); builds models/efficientnet-lite0.onnx and
datasets/fashion-mnist-small first when they are missing.
"""
import argparse
import glob
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../../.."))
MODEL = os.path.join(ROOT, "models/efficientnet-lite0.onnx")
DATA = os.path.join(ROOT, "datasets/fashion-mnist-small")
CLASSES = ["T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"]


def items(folder):
    out = []
    for label in sorted(os.listdir(folder)):
        d = os.path.join(folder, label)
        if os.path.isdir(d):
            out += [(p, label) for p in sorted(glob.glob(os.path.join(d, "*.png")))]
    return out


def plane(path):
    """recipes/efficientnet_lite0.py `preprocess` up to the scaling: PIL bilinear, shorter side 256, centre crop 224."""
    from PIL import Image
    img = Image.open(path).convert("RGB")
    w, h = img.size
    scale = 256 / min(w, h)
    img = img.resize((round(w * scale), round(h * scale)), Image.BILINEAR)
    w, h = img.size
    left, top = (w - 224) // 2, (h - 224) // 2
    arr = np.asarray(img.crop((left, top, left + 224, top + 224)), dtype=np.uint8)
    assert (arr[..., 0] == arr[..., 1]).all() and (arr[..., 0] == arr[..., 2]).all(), path
    return arr[..., 0]


def network_input(planes):
    x = planes.astype(np.float32) / 127.5 - 1.0
    return np.repeat(x[:, None], 3, axis=1)


def ensure_inputs():
    if not os.path.exists(MODEL):
        subprocess.run([sys.executable, os.path.join(ROOT, "recipes/efficientnet_lite0.py"), "--out",
                        os.path.join(ROOT, "models")], check=True)
    if not os.path.isdir(os.path.join(DATA, "test")):
        subprocess.run(["bash", os.path.join(ROOT, "datasets/fashion-mnist.sh"), "--small"], check=True)


def quantize(out):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    from onnxruntime.quantization.shape_inference import quant_pre_process

    train = items(os.path.join(DATA, "train"))
    calib = []
    for label in sorted({l for _, l in train}):
        calib += [p for p, l in train if l == label][:20]
    calib_x = network_input(np.stack([plane(p) for p in calib]))

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.i = 0

        def get_next(self):
            if self.i >= len(calib_x):
                return None
            self.i += 8
            return {"input": calib_x[self.i - 8:self.i]}

    # The pre-processing onnxruntime asks for before quantization: shape inference and its graph optimizations
    # (BatchNormalization folded into the convolutions).
    prepared = os.path.join(out, "efficientnet-lite0-prepared.onnx")
    quant_pre_process(MODEL, prepared)
    for fmt, name in ((QuantFormat.QDQ, "qdq"), (QuantFormat.QOperator, "qop")):
        path = os.path.join(out, f"efficientnet-lite0-{name}.onnx")
        quantize_static(prepared, path, Reader(), quant_format=fmt, per_channel=True, reduce_range=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
        ops = {}
        for n in onnx.load(path).graph.node:
            key = (n.domain + "." if n.domain else "") + n.op_type
            ops[key] = ops.get(key, 0) + 1
        print(f"{name}: {path}: {dict(sorted(ops.items()))}", flush=True)


def reference(out):
    import onnxruntime as ort
    test = items(os.path.join(DATA, "test"))
    planes = np.stack([plane(p) for p, _ in test])
    planes.tofile(os.path.join(out, "fashion-test.u8"))
    with open(os.path.join(out, "fashion-test.labels.txt"), "w") as f:
        f.write("".join(l + "\n" for _, l in test))
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    for name, path in (("qdq", f"efficientnet-lite0-qdq.onnx"), ("qop", f"efficientnet-lite0-qop.onnx"),
                       ("float", MODEL)):
        s = ort.InferenceSession(os.path.join(out, path), opts, providers=["CPUExecutionProvider"])
        logits = []
        for i in range(0, len(planes), 50):
            logits.append(s.run(["logits"], {"input": network_input(planes[i:i + 50])})[0])
        logits = np.concatenate(logits).astype("<f4")
        logits.tofile(os.path.join(out, f"efficientnet-lite0-{name}.logits.f32"))
        print(f"{name}: logits {logits.shape}, range {logits.min():.3f}…{logits.max():.3f}", flush=True)
        if name != "float":
            # The file's arithmetic as written (each QuantizeLinear / DequantizeLinear on its own, float ops between):
            # onnxruntime with its graph optimizations off.
            plain = ort.SessionOptions()
            plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            u = ort.InferenceSession(os.path.join(out, path), plain, providers=["CPUExecutionProvider"])
            ref = np.concatenate([u.run(["logits"], {"input": network_input(planes[i:i + 50])})[0]
                                  for i in range(0, len(planes), 50)]).astype("<f4")
            ref.tofile(os.path.join(out, f"efficientnet-lite0-{name}.unfused.logits.f32"))
            print(f"{name}: onnxruntime's int8 kernels vs its unfused arithmetic: top-1 equal on "
                  f"{(ref.argmax(1) == logits.argmax(1)).sum()} of {len(planes)}", flush=True)


# ---- one small graph per op ----------------------------------------------------------------------------------

def codes(rng, shape, dtype):
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def ttype(dtype):
    return {np.uint8: TensorProto.UINT8, np.int8: TensorProto.INT8, np.float32: TensorProto.FLOAT,
            np.int32: TensorProto.INT32}[dtype]


def save_op(folder, manifest, name, nodes, inputs, initializers, outputs, opset=21, ms_domain=False):
    """inputs: [(name, array)]; outputs: [(name, dtype, shape)]. Runs onnxruntime and writes every tensor."""
    import onnxruntime as ort
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, ttype(a.dtype.type), a.shape) for n, a in inputs],
        [helper.make_tensor_value_info(n, ttype(d), s) for n, d, s in outputs],
        initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    imports = [helper.make_opsetid("", opset)] + ([helper.make_opsetid("com.microsoft", 1)] if ms_domain else [])
    model = helper.make_model(graph, opset_imports=imports)
    model.ir_version = 10
    if not ms_domain and all(s is not None for _, _, s in outputs):
        onnx.checker.check_model(model)
    path = os.path.join(folder, name + ".onnx")
    onnx.save(model, path)
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    results = s.run(None, {n: a for n, a in inputs})
    entry = dict(inputs={}, outputs={})
    for n, a in inputs:
        a.astype("<f4").tofile(os.path.join(folder, f"{name}.in.{n}.f32"))
        entry["inputs"][n] = list(a.shape)
    for (n, _, _), r in zip(outputs, results):
        r.astype("<f4").tofile(os.path.join(folder, f"{name}.out.{n}.f32"))
        entry["outputs"][n] = list(r.shape)
    manifest[name] = entry


def make_ops(out):
    folder = os.path.join(out, "ops")
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(20261205)
    m = {}
    f32 = np.float32
    # QuantizeLinear on a computed tensor: per tensor uint8 (halves to even, saturation), per channel int8 (axis 1).
    x = (rng.standard_normal((2, 3, 4, 5)) * 3).astype(f32)
    x.flat[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, 100.0, -100.0, 3.5]  # scale 1 below: ties and saturation
    relu = helper.make_node("Relu", ["x"], ["r"])
    save_op(folder, m, "quantize_u8", [helper.make_node("Neg", ["x"], ["n"]), helper.make_node("Neg", ["n"], ["m"]),
                                        helper.make_node("QuantizeLinear", ["m", "s", "z"], ["y"])],
            [("x", x)], [("s", np.array(1.0, f32)), ("z", np.array(10, np.uint8))], [("y", np.uint8, x.shape)])
    save_op(folder, m, "quantize_i8_axis", [relu, helper.make_node("QuantizeLinear", ["r", "s", "z"], ["y"], axis=1)],
            [("x", x)], [("s", np.array([0.5, 1.0, 0.02], f32)), ("z", np.array([0, -3, 7], np.int8))],
            [("y", np.int8, x.shape)])
    # DequantizeLinear of a computed tensor (codes through Identity), per tensor and per channel.
    q8 = codes(rng, (2, 3, 4, 5), np.uint8)
    save_op(folder, m, "dequantize_u8", [helper.make_node("Identity", ["q"], ["c"]),
                                          helper.make_node("DequantizeLinear", ["c", "s", "z"], ["y"])],
            [("q", q8)], [("s", np.array(0.037, f32)), ("z", np.array(131, np.uint8))], [("y", f32, q8.shape)])
    qi = codes(rng, (2, 3, 4, 5), np.int8)
    save_op(folder, m, "dequantize_i8_axis", [helper.make_node("Identity", ["q"], ["c"]),
                                               helper.make_node("DequantizeLinear", ["c", "s", "z"], ["y"], axis=1)],
            [("q", qi)], [("s", np.array([0.5, 0.01, 2.0], f32)), ("z", np.array([1, 0, -5], np.int8))],
            [("y", f32, qi.shape)])
    # A QDQ pair on a computed tensor (what quantize_static writes on activations).
    save_op(folder, m, "qdq_pair", [relu, helper.make_node("QuantizeLinear", ["r", "s", "z"], ["q"]),
                                     helper.make_node("DequantizeLinear", ["q", "s", "z"], ["y"])],
            [("x", x)], [("s", np.array(0.05, f32)), ("z", np.array(3, np.uint8))], [("y", f32, x.shape)])
    # QLinearConv: uint8 activations, per-channel int8 weights, int32 bias; groups 1 and a depthwise one.
    xc = codes(rng, (1, 8, 9, 9), np.uint8)
    for name, groups, oc in (("qlinearconv", 1, 16), ("qlinearconv_depthwise", 8, 8)):
        w = codes(rng, (oc, 8 // groups, 3, 3), np.int8) // 2
        ws = (rng.uniform(0.002, 0.02, oc)).astype(f32)
        b = rng.integers(-2000, 2000, oc).astype(np.int32)
        save_op(folder, m, name, [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"], ["y"],
                                                   pads=[1, 1, 1, 1], strides=[2, 2] if groups == 1 else [1, 1],
                                                   group=groups)],
                [("x", xc)], [("xs", np.array(0.02, f32)), ("xz", np.array(120, np.uint8)), ("w", w), ("ws", ws),
                              ("wz", np.zeros(oc, np.int8)), ("ys", np.array(0.05, f32)), ("yz", np.array(100, np.uint8)),
                              ("b", b)],
                [("y", np.uint8, None)], opset=13)
    # QLinearMatMul: uint8 × int8 (per tensor), 2-D.
    a = codes(rng, (4, 24), np.uint8)
    bm = codes(rng, (24, 10), np.int8) // 2
    save_op(folder, m, "qlinearmatmul", [helper.make_node("QLinearMatMul", ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"])],
            [("a", a)], [("as", np.array(0.03, f32)), ("az", np.array(128, np.uint8)), ("b", bm), ("bs", np.array(0.01, f32)),
                         ("bz", np.array(0, np.int8)), ("ys", np.array(0.2, f32)), ("yz", np.array(120, np.uint8))],
            [("y", np.uint8, None)], opset=13)
    # com.microsoft ops: QLinearAdd, QLinearMul, QLinearSigmoid, QLinearLeakyRelu, QLinearGlobalAveragePool,
    # QLinearConcat, QGemm (float output and quantized output).
    xa, xb = codes(rng, (2, 4, 3, 3), np.uint8), codes(rng, (2, 4, 3, 3), np.uint8)
    sc = lambda v: np.array(v, f32)  # noqa: E731
    u8 = lambda v: np.array(v, np.uint8)  # noqa: E731
    for op in ("QLinearAdd", "QLinearMul"):
        save_op(folder, m, op.lower(), [helper.make_node(op, ["a", "as", "az", "b", "bs", "bz", "ys", "yz"], ["y"], domain="com.microsoft")],
                [("a", xa), ("b", xb)], [("as", sc(0.02)), ("az", u8(100)), ("bs", sc(0.03)), ("bz", u8(140)), ("ys", sc(0.04)),
                                         ("yz", u8(90))], [("y", np.uint8, None)], ms_domain=True)
    save_op(folder, m, "qlinearsigmoid", [helper.make_node("QLinearSigmoid", ["a", "as", "az", "ys", "yz"], ["y"], domain="com.microsoft")],
            [("a", xa)], [("as", sc(0.05)), ("az", u8(128)), ("ys", sc(1 / 256)), ("yz", u8(0))], [("y", np.uint8, None)],
            ms_domain=True)
    save_op(folder, m, "qlinearleakyrelu", [helper.make_node("QLinearLeakyRelu", ["a", "as", "az", "ys", "yz"], ["y"],
                                                             domain="com.microsoft", alpha=0.1)],
            [("a", xa)], [("as", sc(0.05)), ("az", u8(128)), ("ys", sc(0.04)), ("yz", u8(20))], [("y", np.uint8, None)],
            ms_domain=True)
    save_op(folder, m, "qlinearglobalaveragepool", [helper.make_node("QLinearGlobalAveragePool", ["a", "as", "az", "ys", "yz"], ["y"],
                                                                     domain="com.microsoft", channels_last=0)],
            [("a", xa)], [("as", sc(0.05)), ("az", u8(128)), ("ys", sc(0.01)), ("yz", u8(120))], [("y", np.uint8, None)],
            ms_domain=True)
    save_op(folder, m, "qlinearconcat", [helper.make_node("QLinearConcat", ["ys", "yz", "a", "as", "az", "b", "bs", "bz"], ["y"],
                                                          domain="com.microsoft", axis=1)],
            [("a", xa), ("b", xb)], [("as", sc(0.02)), ("az", u8(100)), ("bs", sc(0.03)), ("bz", u8(140)), ("ys", sc(0.04)),
                                     ("yz", u8(90))], [("y", np.uint8, None)], ms_domain=True)
    ag = codes(rng, (3, 40), np.uint8)
    bg = codes(rng, (12, 40), np.int8) // 2
    cg = rng.integers(-3000, 3000, 12).astype(np.int32)
    gemm_inits = [("as", sc(0.03)), ("az", u8(110)), ("b", bg), ("bs", rng.uniform(0.002, 0.01, 12).astype(f32)),
                  ("bz", np.zeros(12, np.int8)), ("c", cg)]
    save_op(folder, m, "qgemm_float", [helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c"], ["y"],
                                                        domain="com.microsoft", transB=1)],
            [("a", ag)], gemm_inits, [("y", f32, None)], ms_domain=True)
    save_op(folder, m, "qgemm_u8", [helper.make_node("QGemm", ["a", "as", "az", "b", "bs", "bz", "c", "ys", "yz"], ["y"],
                                                     domain="com.microsoft", transB=1)],
            [("a", ag)], gemm_inits + [("ys", sc(0.1)), ("yz", u8(128))], [("y", np.uint8, None)], ms_domain=True)
    with open(os.path.join(folder, "manifest.json"), "w") as f:
        json.dump(m, f, indent=1, sort_keys=True)
    print(f"ops: {len(m)} graphs in {folder}", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(ROOT, ".build/onnx-quantized"))
    p.add_argument("--only-ops", action="store_true")
    p.add_argument("--only-reference", action="store_true", help="keep the quantized models, redo the logits")
    p.add_argument("--force", action="store_true", help="redo the EfficientNet-Lite0 files even when they exist")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    make_ops(a.out)
    if a.only_ops:
        return
    last = os.path.join(a.out, "efficientnet-lite0-qop.unfused.logits.f32")
    if os.path.exists(last) and not a.force and not a.only_reference:
        print(f"EfficientNet-Lite0 files: {a.out} is complete (--force to redo them)")
        return
    ensure_inputs()
    if not a.only_reference:
        quantize(a.out)
    reference(a.out)


if __name__ == "__main__":
    main()
