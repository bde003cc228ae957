"""Graphs with dimensions known only at run time (issue 48, item 3), with onnxruntime's outputs at several input
sizes (run from the repository root):

    python3 Tests/Fixtures/onnx/make_dynamic.py [--out Tests/Fixtures/onnx/dynamic]

Each model is written as <name>.onnx with <name>.json: per input size, the inputs and onnxruntime's outputs (NCHW
/ ONNX layout, float32 values). The shapes are what PyTorch, paddle2onnx and tf2onnx exports compute: Shape →
Gather/Slice → Concat → Reshape with several free dimensions, SAME_* padding and scale-factor Resize on a free
height and width, ConstantOfShape / Expand to a computed shape, Slice along a free axis (and bounded by another
input's free size), Gather along a free axis, Clip with computed bounds, a 3-D convolution on one frame of a free
height and width, InstanceNormalization over a free height and width. Weights are seeded.
"""
import argparse
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(48)


def const(name, values, dtype=np.int64):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def model(name, nodes, inputs, outputs, inits, opset=17):
    g = helper.make_graph(nodes, name, inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="make_dynamic.py")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def free(name, dims):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, dims)


def reshape_heads():
    """Attention-style head split and merge: both reshape targets from Shape, plus a constant [0, 0, -1]."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"]),
        n("Gather", ["s", "i0"], ["b"], axis=0), n("Gather", ["s", "i1"], ["t"], axis=0),
        n("Unsqueeze", ["b", "ax0"], ["b1"]), n("Unsqueeze", ["t", "ax0"], ["t1"]),
        n("Concat", ["b1", "t1", "heads"], ["split_shape"], axis=0),
        n("MatMul", ["x", "w"], ["proj"]),
        n("Reshape", ["proj", "split_shape"], ["split"]),
        n("Transpose", ["split"], ["bhtd"], perm=[0, 2, 1, 3]),
        n("Softmax", ["bhtd"], ["att"], axis=-1),
        n("Transpose", ["att"], ["bthd"], perm=[0, 2, 1, 3]),
        n("Reshape", ["bthd", "merge"], ["y"]),
        n("Concat", ["b1", "t1", "minus1"], ["flat_shape"], axis=0),
        n("Reshape", ["bhtd", "flat_shape"], ["z"]),
    ]
    inits = [const("i0", 0), const("i1", 1), const("ax0", [0]), const("heads", [4, 4]), const("merge", [0, 0, -1]),
             const("minus1", [-1]), numpy_helper.from_array(RNG.standard_normal((12, 16)).astype(np.float32), "w")]
    m = model("reshape_heads", nodes, [free("x", ["batch", "time", 12])],
              [free("y", ["batch", "time", 16]), free("z", ["batch", "time", 16])], inits)
    return m, [{"x": (1, 5, 12)}, {"x": (2, 7, 12)}, {"x": (3, 1, 12)}]


def same_pad_resize():
    """A strided conv and a pool with SAME_* padding, then a scale-factor Resize, on a free height and width."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER"),
        n("Relu", ["c"], ["r"]),
        n("MaxPool", ["r"], ["p"], kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_LOWER"),
        n("Resize", ["p", "", "scales"], ["y"], mode="nearest", coordinate_transformation_mode="asymmetric",
          nearest_mode="floor"),
        n("Resize", ["r", "", "half"], ["h"], mode="linear"),
    ]
    inits = [numpy_helper.from_array(RNG.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(RNG.standard_normal(8).astype(np.float32), "b"),
             const("scales", [1, 1, 2, 2], np.float32), const("half", [1, 1, 0.5, 0.75], np.float32)]
    m = model("same_pad_resize", nodes, [free("x", ["n", 3, "h", "w"])],
              [free("y", ["n", 8, "oh", "ow"]), free("h", ["n", 8, "hh", "hw"])], inits)
    return m, [{"x": (1, 3, 17, 23)}, {"x": (2, 3, 32, 32)}, {"x": (1, 3, 9, 40)}]


def expand_fill():
    """ConstantOfShape and Expand to shapes computed from a free batch and length."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"]),
        n("Concat", ["s", "three"], ["target"], axis=0),
        n("ConstantOfShape", ["target"], ["fill"], value=numpy_helper.from_array(np.array([0.5], np.float32))),
        n("Unsqueeze", ["x", "last"], ["x3"]),
        n("Expand", ["x3", "target"], ["wide"]),
        n("Add", ["fill", "wide"], ["sum"]),
        n("Mul", ["sum", "scale"], ["y"]),
        n("Shape", ["x"], ["b"], end=1),
        n("Concat", ["b", "eight"], ["state_shape"], axis=0),
        n("Expand", ["zero", "state_shape"], ["state"]),
    ]
    inits = [const("three", [3]), const("last", [-1]), const("eight", [8]),
             numpy_helper.from_array(np.array([1.0, -2.0, 0.25], np.float32), "scale"),
             numpy_helper.from_array(np.zeros((1, 1), np.float32), "zero")]
    m = model("expand_fill", nodes, [free("x", ["batch", "length"])],
              [free("y", ["batch", "length", 3]), free("state", ["batch", 8])], inits)
    return m, [{"x": (1, 4)}, {"x": (3, 9)}, {"x": (2, 1)}]


def slice_free():
    """Slices along a free axis: ONNX bounds (negative, past the end, backwards) resolved per length."""
    n = helper.make_node
    nodes = [
        n("Slice", ["x", "s1", "e1", "a1"], ["inner"]),
        n("Slice", ["x", "s2", "e2", "a1", "st2"], ["back"]),
        n("Slice", ["x", "s3", "e3", "a1"], ["tail"]),
        n("ReduceSum", ["inner", "a1"], ["y"], keepdims=1),
    ]
    big = np.iinfo(np.int64).max
    inits = [const("s1", [1]), const("e1", [-1]), const("a1", [1]), const("s2", [-1]), const("e2", [-big]),
             const("st2", [-2]), const("s3", [-3]), const("e3", [big])]
    m = model("slice_free", nodes, [free("x", ["batch", "time", 6])],
              [free("y", ["batch", 1, 6]), free("back", ["batch", "half", 6]), free("tail", ["batch", "three", 6])], inits)
    return m, [{"x": (1, 5, 6)}, {"x": (2, 8, 6)}, {"x": (1, 3, 6)}]


def clip_computed():
    """Clip whose minimum is computed (a log-mel spectrogram's top-80 dB floor)."""
    n = helper.make_node
    nodes = [
        n("ReduceMax", ["x"], ["top"], keepdims=0),
        n("Sub", ["top", "range"], ["floor"]),
        n("Clip", ["x", "floor"], ["y"]),
    ]
    inits = [const("range", 1.5, np.float32)]
    m = model("clip_computed", nodes, [free("x", ["batch", "frames"])], [free("y", ["batch", "frames"])], inits)
    return m, [{"x": (1, 10)}, {"x": (2, 33)}]


def slice_sized():
    """RivaGAN's encoder: Slice(x, 0, n) along a free axis, n the free size of another input (x[:, :, :m.shape[1]])."""
    n = helper.make_node
    nodes = [
        n("Shape", ["m"], ["ms"]),
        n("Gather", ["ms", "one"], ["k"], axis=0),
        n("Unsqueeze", ["k", "zero_axis"], ["end"]),
        n("Slice", ["x", "start", "end", "two"], ["y"]),
    ]
    inits = [const("one", 1), const("zero_axis", [0]), const("start", [0]), const("two", [2])]
    m = model("slice_sized", nodes, [free("x", ["batch", 6, "time"]), free("m", ["batch", "k"])], [free("y", ["batch", 6, "k"])], inits)
    return m, [{"x": (1, 6, 7), "m": (1, 3)}, {"x": (2, 6, 5), "m": (2, 5)}, {"x": (1, 6, 2), "m": (1, 4)}]


def gather_free():
    """silero-vad op18: Gather along a free axis with constant indices (the last frame; two frames)."""
    n = helper.make_node
    nodes = [n("Gather", ["x", "last"], ["y"], axis=2), n("Gather", ["x", "pair"], ["z"], axis=2)]
    inits = [const("last", -1), const("pair", [0, -2])]
    m = model("gather_free", nodes, [free("x", ["batch", 4, "time"])], [free("y", ["batch", 4]), free("z", ["batch", 4, 2])], inits)
    return m, [{"x": (1, 4, 3)}, {"x": (2, 4, 6)}]


def conv3d_frame():
    """RivaGAN: 3-D convolution and batch norm on one frame (depth 1) of a free height and width, flattened."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w", "b"], ["c"], kernel_shape=[1, 3, 3], pads=[0, 1, 1, 0, 1, 1]),
        n("BatchNormalization", ["c", "g", "beta", "mean", "var"], ["bn"]),
        n("Flatten", ["bn"], ["y"], axis=1),
    ]
    f = lambda shape: RNG.standard_normal(shape).astype(np.float32)
    inits = [numpy_helper.from_array(f((4, 3, 1, 3, 3)), "w"), numpy_helper.from_array(f(4), "b"),
             numpy_helper.from_array(f(4), "g"), numpy_helper.from_array(f(4), "beta"), numpy_helper.from_array(f(4), "mean"),
             numpy_helper.from_array(np.abs(f(4)) + 0.5, "var")]
    m = model("conv3d_frame", nodes, [free("x", ["batch", 3, 1, "h", "w"])], [free("y", ["batch", "hw4"])], inits)
    return m, [{"x": (1, 3, 1, 5, 7)}, {"x": (2, 3, 1, 4, 4)}]


def instance_norm_free():
    """Style-transfer and GAN generators: InstanceNormalization on a free height and width, then Relu."""
    n = helper.make_node
    nodes = [n("InstanceNormalization", ["x", "s", "b"], ["n"], epsilon=1e-3), n("Relu", ["n"], ["y"])]
    inits = [numpy_helper.from_array((1 + 0.2 * RNG.standard_normal(5)).astype(np.float32), "s"),
             numpy_helper.from_array((0.2 * RNG.standard_normal(5)).astype(np.float32), "b")]
    m = model("instance_norm_free", nodes, [free("x", ["batch", 5, "h", "w"])], [free("y", ["batch", 5, "h", "w"])], inits)
    return m, [{"x": (1, 5, 7, 9)}, {"x": (2, 5, 3, 16)}]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "dynamic"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for make in [reshape_heads, same_pad_resize, expand_fill, slice_free, clip_computed, slice_sized, gather_free, conv3d_frame,
                 instance_norm_free]:
        m, sizes = make()
        name = m.graph.name
        onnx.save(m, os.path.join(args.out, name + ".onnx"))
        session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        runs = []
        for size in sizes:
            feeds = {k: RNG.standard_normal(v).astype(np.float32) for k, v in size.items()}
            outs = session.run(None, feeds)
            runs.append({"inputs": {k: {"shape": list(v.shape), "data": v.ravel().tolist()} for k, v in feeds.items()},
                         "outputs": {o.name: {"shape": list(r.shape), "data": r.ravel().tolist()}
                                     for o, r in zip(session.get_outputs(), outs)}})
        with open(os.path.join(args.out, name + ".json"), "w") as f:
            json.dump({"model": name + ".onnx", "runs": runs}, f)
        print(f"wrote {name}: {len(runs)} sizes")


if __name__ == "__main__":
    main()
