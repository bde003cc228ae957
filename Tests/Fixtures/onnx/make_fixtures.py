"""Writes the ONNX whole-network fixtures and their onnxruntime outputs (run from the repository root):

    python3 Tests/Fixtures/onnx/make_fixtures.py

Each network is written with the onnx helper API; its input (seeded) and onnxruntime's outputs are stored as raw
little-endian float32 files, described in manifest.json. Also writes the refusal fixtures (external data paths).
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng(20261129)


def w(*shape, scale=0.5):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


def init(name, arr, typed=False):
    if typed:  # float_data / int64_data instead of raw_data
        return helper.make_tensor(name, helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape, arr.flatten().tolist())
    return numpy_helper.from_array(arr, name)


def conv_bn(nodes, inits, x, name, cin, cout, k=3, stride=1, pads=None, group=1, typed=False, auto_pad=None):
    inits.append(init(name + ".w", w(cout, cin // group, k, k), typed))
    inits.append(init(name + ".b", w(cout, scale=0.1), typed))
    attrs = dict(kernel_shape=[k, k], strides=[stride, stride], group=group)
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    else:
        attrs["pads"] = pads if pads is not None else [k // 2] * 4
    nodes.append(helper.make_node("Conv", [x, name + ".w", name + ".b"], [name + ".c"], name=name, **attrs))
    for n, v in (("scale", rng.uniform(0.5, 1.5, cout)), ("bias", rng.standard_normal(cout) * 0.1),
                 ("mean", rng.standard_normal(cout) * 0.1), ("var", rng.uniform(0.5, 1.5, cout))):
        inits.append(init(f"{name}.bn.{n}", v.astype(np.float32)))
    nodes.append(helper.make_node("BatchNormalization", [name + ".c"] + [f"{name}.bn.{n}" for n in ("scale", "bias", "mean", "var")],
                                  [name + ".bn"], name=name + ".bn", epsilon=1e-3))
    return name + ".bn"


def model(nodes, inits, inputs, outputs, opset):
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in outputs], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name="mltool-fixtures")
    m.ir_version = 7
    # (no check_model: outputs carry no shape on purpose; onnxruntime validates the graph)
    return m


def residual_cnn():
    n, i = [], []
    x = conv_bn(n, i, "x", "stem", 3, 8, stride=2, pads=[0, 0, 1, 1])
    n.append(helper.make_node("Relu", [x], ["r0"], name="relu0"))
    y = conv_bn(n, i, "r0", "c1", 8, 8)
    n.append(helper.make_node("Relu", [y], ["r1"], name="relu1"))
    y = conv_bn(n, i, "r1", "c2", 8, 8, typed=True)
    n.append(helper.make_node("Add", [y, "r0"], ["res"], name="add"))
    n.append(helper.make_node("Relu", ["res"], ["r2"], name="relu2"))
    n.append(helper.make_node("MaxPool", ["r2"], ["mp"], name="maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("GlobalAveragePool", ["mp"], ["gap"], name="gap"))
    n.append(helper.make_node("Flatten", ["gap"], ["feat"], name="flatten"))
    i.append(init("fc.w", w(5, 8)))
    i.append(init("fc.b", w(5)))
    n.append(helper.make_node("Gemm", ["feat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1))
    return model(n, i, [("x", ["N", 3, 12, 12])], ["logits", "feat"], 13), {"x": (2, 3, 12, 12)}


def depthwise_cnn():
    n, i = [], []
    x = conv_bn(n, i, "x", "stem", 3, 8, stride=2, auto_pad="SAME_UPPER")
    i += [init("lo", np.array(0, np.float32)), init("hi", np.array(6, np.float32))]
    n.append(helper.make_node("Clip", [x, "lo", "hi"], ["a0"], name="relu6"))
    y = conv_bn(n, i, "a0", "dw", 8, 8, k=5, stride=2, pads=[1, 1, 2, 2], group=8)
    n.append(helper.make_node("HardSwish", [y], ["a1"], name="hswish"))
    y = conv_bn(n, i, "a1", "pw", 8, 12, k=1, pads=[0, 0, 0, 0])
    n.append(helper.make_node("LeakyRelu", [y], ["a2"], name="leaky", alpha=0.1))
    n.append(helper.make_node("AveragePool", ["a2"], ["ap"], name="avgpool", kernel_shape=[3, 3], strides=[2, 2],
                              pads=[1, 1, 0, 0], ceil_mode=1, count_include_pad=0))
    n.append(helper.make_node("AveragePool", ["a2"], ["ap2"], name="avgpool_same", kernel_shape=[2, 2], strides=[2, 2],
                              auto_pad="SAME_LOWER", count_include_pad=1))
    n.append(helper.make_node("Concat", ["ap", "ap2"], ["cat"], name="concat", axis=1))
    n.append(helper.make_node("GlobalMaxPool", ["cat"], ["gmp"], name="gmp"))
    n.append(helper.make_node("Softmax", ["gmp"], ["prob"], name="softmax", axis=1))
    return model(n, i, [("x", ["N", 3, 17, 19])], ["prob", "cat"], 14), {"x": (2, 3, 17, 19)}


def squeeze_excite():
    n, i = [], []
    x = conv_bn(n, i, "x", "c0", 4, 16)
    n.append(helper.make_node("Sigmoid", [x], ["s0"], name="sig0"))
    n.append(helper.make_node("Mul", [x, "s0"], ["swish"], name="swish"))
    n.append(helper.make_node("GlobalAveragePool", ["swish"], ["se.gap"], name="se.gap"))
    i += [init("se.r.w", w(4, 16, 1, 1)), init("se.r.b", w(4)), init("se.e.w", w(16, 4, 1, 1)), init("se.e.b", w(16))]
    n.append(helper.make_node("Conv", ["se.gap", "se.r.w", "se.r.b"], ["se.r"], name="se.reduce", kernel_shape=[1, 1]))
    n.append(helper.make_node("Relu", ["se.r"], ["se.rr"], name="se.relu"))
    n.append(helper.make_node("Conv", ["se.rr", "se.e.w", "se.e.b"], ["se.e"], name="se.expand", kernel_shape=[1, 1]))
    n.append(helper.make_node("HardSigmoid", ["se.e"], ["se.gate"], name="se.hsig", alpha=0.2, beta=0.5))
    n.append(helper.make_node("Mul", ["swish", "se.gate"], ["se.out"], name="se.scale"))
    i.append(init("chan.bias", w(16, 1, 1)))
    n.append(helper.make_node("Add", ["se.out", "chan.bias"], ["biased"], name="chan_bias"))
    n.append(helper.make_node("Tanh", ["biased"], ["y"], name="tanh"))
    return model(n, i, [("x", ["N", 4, 6, 5])], ["y"], 13), {"x": (2, 4, 6, 5)}


def mlp_opset9():
    n, i = [], []
    i += [init("w1", w(16, 10)), init("b1", w(16)), init("w2", w(3, 16)), init("b2", w(3)),
          init("mu", w(10)), init("sd", rng.uniform(0.5, 2, 10).astype(np.float32))]
    n.append(helper.make_node("Sub", ["x", "mu"], ["xc"], name="center"))
    n.append(helper.make_node("Div", ["xc", "sd"], ["xs"], name="scale"))
    n.append(helper.make_node("Gemm", ["xs", "w1", "b1"], ["h"], name="fc1", transB=1, alpha=0.5, beta=2.0))
    n.append(helper.make_node("Clip", ["h"], ["hc"], name="clip", min=-1.0, max=2.0))
    n.append(helper.make_node("Dropout", ["hc"], ["hd"], name="dropout"))
    n.append(helper.make_node("Gemm", ["hd", "w2", "b2"], ["z"], name="fc2", transB=1))
    n.append(helper.make_node("Softmax", ["z"], ["p"], name="softmax"))
    return model(n, i, [("x", ["N", 10])], ["p", "z"], 9), {"x": (3, 10)}


def flatten_nchw():
    """Conv → PyTorch-style x.view(x.size(0), -1) (Shape→Gather→Unsqueeze→Concat→Reshape), plus Flatten, Transpose,
    Pad, Squeeze/Unsqueeze (input forms), MatMul and an opset-11 Softmax over a rank-4 tensor."""
    n, i = [], []
    i += [init("cw", w(6, 3, 3, 3)), init("cb", w(6))]
    n.append(helper.make_node("Pad", ["x", "pads"], ["xp"], name="pad", mode="reflect"))
    i.append(init("pads", np.array([0, 0, 1, 2, 0, 0, 1, 0], np.int64)))
    n.append(helper.make_node("Conv", ["xp", "cw", "cb"], ["c"], name="conv", kernel_shape=[3, 3], strides=[2, 1]))
    n.append(helper.make_node("Shape", ["c"], ["shp"], name="shape"))
    i += [init("zero", np.array(0, np.int64)), init("minus1", np.array([-1], np.int64)), init("ax0", np.array([0], np.int64))]
    n.append(helper.make_node("Gather", ["shp", "zero"], ["n"], name="gather", axis=0))
    n.append(helper.make_node("Unsqueeze", ["n", "ax0"], ["n1"], name="unsq_n"))
    n.append(helper.make_node("Concat", ["n1", "minus1"], ["newshape"], name="concat_shape", axis=0))
    n.append(helper.make_node("Reshape", ["c", "newshape"], ["flat"], name="view"))
    n.append(helper.make_node("Flatten", ["c"], ["flat2"], name="flatten", axis=1))
    n.append(helper.make_node("Add", ["flat", "flat2"], ["flatsum"], name="sum"))
    # flatsum is (N, 6·H·W); project with a MatMul against a constant.
    return n, i


def flatten_model():
    n, i = flatten_nchw()
    h, wd = 7, 6                       # input spatial; pad → 9×8; conv 3×3 stride (2,1) → 4×6
    feat = 6 * 4 * 6
    i.append(init("mm", w(feat, 4, scale=0.1)))
    n.append(helper.make_node("MatMul", ["flatsum", "mm"], ["proj"], name="matmul"))
    i.append(init("ax12", np.array([2, 3], np.int64)))
    n.append(helper.make_node("Unsqueeze", ["proj", "ax12"], ["proj4"], name="unsq"))          # (N,4,1,1)
    n.append(helper.make_node("Squeeze", ["proj4", "ax12"], ["proj2"], name="sq"))            # (N,4)
    n.append(helper.make_node("Transpose", ["c"], ["ct"], name="transpose", perm=[0, 2, 3, 1]))  # (N,4,6,6)
    n.append(helper.make_node("Relu", ["ct"], ["ctr"], name="relu"))
    i.append(init("shape3", np.array([0, 4, -1], np.int64)))
    n.append(helper.make_node("Reshape", ["ctr", "shape3"], ["c3"], name="reshape3"))       # (N,4,36)
    i.append(init("shape4", np.array([0, 6, 4, 6], np.int64)))
    n.append(helper.make_node("Reshape", ["c3", "shape4"], ["c4"], name="reshape4"))        # (N,6,4,6)
    n.append(helper.make_node("Conv", ["c4", "cw2", "cb2"], ["c5"], name="conv2", kernel_shape=[1, 1]))
    i += [init("cw2", w(2, 6, 1, 1)), init("cb2", w(2))]
    return model(n, i, [("x", ["N", 3, h, wd])], ["proj2", "c5", "ct"], 13), {"x": (2, 3, h, wd)}


def softmax_legacy():
    n, i = [], []
    i += [init("cw", w(3, 2, 1, 1)), init("cb", w(3))]
    n.append(helper.make_node("Conv", ["x", "cw", "cb"], ["c"], name="conv", kernel_shape=[1, 1]))
    n.append(helper.make_node("Softmax", ["c"], ["p"], name="softmax", axis=1))  # opset 11: over C·H·W
    n.append(helper.make_node("Constant", [], ["k"], name="const", value=numpy_helper.from_array(np.array([0.5], np.float16).astype(np.float32), "k")))
    n.append(helper.make_node("Mul", ["p", "k"], ["y"], name="mul"))
    i.append(helper.make_tensor("h16", TensorProto.FLOAT16, [3, 1, 1], np.array([1, 2, 3], np.float16).view(np.uint16).tolist()))
    n.append(helper.make_node("Cast", ["h16"], ["h32"], name="cast", to=TensorProto.FLOAT))
    n.append(helper.make_node("Add", ["y", "h32"], ["z"], name="add16"))
    i.append(init("d64", np.array([0.25], np.float64)))
    n.append(helper.make_node("Cast", ["d64"], ["d32"], name="cast64", to=TensorProto.FLOAT))
    n.append(helper.make_node("Sub", ["z", "d32"], ["out"], name="sub64"))
    return model(n, i, [("x", ["N", 2, 3, 4])], ["out"], 11), {"x": (2, 2, 3, 4)}


def free_size():
    """Height and width left free (dim_param): the import needs --input-size for the SAME padding."""
    n, i = [], []
    x = conv_bn(n, i, "x", "c", 3, 4, stride=2, auto_pad="SAME_UPPER")
    n.append(helper.make_node("Relu", [x], ["r"], name="relu"))
    n.append(helper.make_node("GlobalAveragePool", ["r"], ["y"], name="gap"))
    return model(n, i, [("x", ["N", 3, "H", "W"])], ["y"], 13), {"x": (2, 3, 9, 11)}


def qdq_weights():
    """Quantized weights as onnxruntime's quantizer and `mltool export` write them: int8 per-channel and uint8
    per-tensor codes behind DequantizeLinear, and a QuantizeLinear → DequantizeLinear pair on a float constant."""
    n, i = [], []
    wq = rng.integers(-127, 128, (8, 3, 3, 3)).astype(np.int8)
    i += [init("c1.wq", wq), init("c1.scale", rng.uniform(0.002, 0.02, 8).astype(np.float32)),
          init("c1.zp", rng.integers(-3, 4, 8).astype(np.int8)), init("c1.b", w(8, scale=0.1))]
    n.append(helper.make_node("DequantizeLinear", ["c1.wq", "c1.scale", "c1.zp"], ["c1.w"], name="c1.dq", axis=0))
    n.append(helper.make_node("Conv", ["x", "c1.w", "c1.b"], ["c1"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
    n.append(helper.make_node("Relu", ["c1"], ["r1"], name="relu1"))
    i += [init("c2.wq", rng.integers(0, 256, (4, 8, 1, 1)).astype(np.uint8)),
          init("c2.scale", np.array(0.01, np.float32)), init("c2.zp", np.array(131, np.uint8))]
    n.append(helper.make_node("DequantizeLinear", ["c2.wq", "c2.scale", "c2.zp"], ["c2.w"], name="c2.dq"))
    n.append(helper.make_node("Conv", ["r1", "c2.w"], ["c2"], name="c2", kernel_shape=[1, 1]))
    n.append(helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="gap"))
    n.append(helper.make_node("Flatten", ["g"], ["f"], name="flat"))
    i += [init("fc.w", w(4, 5)), init("fc.scale", np.array([0.004, 0.003, 0.005, 0.004, 0.002], np.float32)),
          init("fc.zp", np.zeros(5, np.int8))]
    n.append(helper.make_node("QuantizeLinear", ["fc.w", "fc.scale", "fc.zp"], ["fc.q"], name="fc.q", axis=1))
    n.append(helper.make_node("DequantizeLinear", ["fc.q", "fc.scale", "fc.zp"], ["fc.dq"], name="fc.dq", axis=1))
    n.append(helper.make_node("MatMul", ["f", "fc.dq"], ["y"], name="fc"))
    return model(n, i, [("x", ["N", 3, 8, 8])], ["y"], 13), {"x": (2, 3, 8, 8)}


def decoder_upsample():
    """A segmentation-style decoder: ConvTranspose (output_padding, groups, SAME_UPPER, output_shape cropping one row
    and adding one column), Instance-,
    Group- and LayerNormalization (over H, W: not NHWC's trailing axes), and a 1-D ConvTranspose branch."""
    n, i = [], []
    i.append(init("up1.w", w(4, 6, 3, 3)))
    i.append(init("up1.b", w(6, scale=0.1)))
    n.append(helper.make_node("ConvTranspose", ["x", "up1.w", "up1.b"], ["up1"], name="up1", strides=[2, 2], pads=[1, 1, 1, 1],
                              output_padding=[1, 1]))
    n.append(helper.make_node("Relu", ["up1"], ["r1"], name="relu1"))
    i.append(init("in.scale", rng.uniform(0.5, 1.5, 6).astype(np.float32)))
    i.append(init("in.bias", w(6, scale=0.1)))
    n.append(helper.make_node("InstanceNormalization", ["r1", "in.scale", "in.bias"], ["in"], name="instnorm", epsilon=1e-4))
    i.append(init("up2.w", w(6, 2, 2, 3)))
    n.append(helper.make_node("ConvTranspose", ["in", "up2.w"], ["up2"], name="up2", strides=[2, 1], group=3, dilations=[1, 2],
                              auto_pad="SAME_UPPER"))
    i.append(init("gn.scale", rng.uniform(0.5, 1.5, 6).astype(np.float32)))
    i.append(init("gn.bias", w(6, scale=0.1)))
    n.append(helper.make_node("GroupNormalization", ["up2", "gn.scale", "gn.bias"], ["gn"], name="groupnorm", num_groups=2))
    i.append(init("ln.scale", rng.uniform(0.5, 1.5, (20, 12)).astype(np.float32)))
    i.append(init("ln.bias", w(12, scale=0.1)))
    n.append(helper.make_node("LayerNormalization", ["gn", "ln.scale", "ln.bias"], ["ln"], name="layernorm", axis=2))
    i.append(init("up3.w", w(6, 3, 3, 3)))
    n.append(helper.make_node("ConvTranspose", ["ln", "up3.w"], ["y"], name="up3", strides=[2, 2], output_shape=[40, 26]))
    # 1-D: (N, 4, 5) → (N, 3, L)
    i.append(init("up1d.w", w(4, 3, 4)))
    i.append(init("up1d.b", w(3, scale=0.1)))
    n.append(helper.make_node("ConvTranspose", ["x1d", "up1d.w", "up1d.b"], ["y1d"], name="up1d", strides=[3], dilations=[2],
                              pads=[1, 2]))
    return model(n, i, [("x", ["N", 4, 5, 6]), ("x1d", ["N", 4, 5])], ["y", "y1d"], 21), {"x": (2, 4, 5, 6), "x1d": (2, 4, 5)}


def attention_block():
    """One self-attention block on (N, T, D): MatMuls of two computed tensors (rank 4, Q·Kᵀ and weights·V),
    a vector MatMul, and LayerNormalization over the last axis."""
    n, i = [], []
    t, d, h = 6, 8, 2
    for p in ("q", "k", "v"):
        i.append(init(f"w{p}", w(d, d, scale=0.4)))
        n.append(helper.make_node("MatMul", ["x", f"w{p}"], [p], name=f"proj_{p}"))
        i.append(init(f"{p}.heads", np.array([0, t, h, d // h], np.int64)))
        n.append(helper.make_node("Reshape", [p, f"{p}.heads"], [f"{p}4"], name=f"heads_{p}"))
        n.append(helper.make_node("Transpose", [f"{p}4"], [f"{p}h"], name=f"perm_{p}", perm=[0, 2, 3, 1] if p == "k" else [0, 2, 1, 3]))
    n.append(helper.make_node("MatMul", ["qh", "kh"], ["scores"], name="qk"))
    i.append(init("scale", np.array(0.5, np.float32)))
    n.append(helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scale"))
    n.append(helper.make_node("Softmax", ["scaled"], ["attn"], name="softmax", axis=-1))
    n.append(helper.make_node("MatMul", ["attn", "vh"], ["ctx"], name="av"))
    n.append(helper.make_node("Transpose", ["ctx"], ["ctxt"], name="merge_perm", perm=[0, 2, 1, 3]))
    i.append(init("merge.shape", np.array([0, t, d], np.int64)))
    n.append(helper.make_node("Reshape", ["ctxt", "merge.shape"], ["ctx3"], name="merge"))
    n.append(helper.make_node("Add", ["ctx3", "x"], ["res"], name="residual"))
    i.append(init("ln.scale", rng.uniform(0.5, 1.5, d).astype(np.float32)))
    i.append(init("ln.bias", w(d, scale=0.1)))
    n.append(helper.make_node("LayerNormalization", ["res", "ln.scale", "ln.bias"], ["y"], name="layernorm", epsilon=1e-5))
    # A computed vector: each row's dot product with the first row of its own sequence.
    i.append(init("first.idx", np.array(0, np.int64)))
    n.append(helper.make_node("Gather", ["y", "first.idx"], ["first"], name="first", axis=1))
    n.append(helper.make_node("Unsqueeze", ["first", "first.axes"], ["first3"], name="first3"))
    i.append(init("first.axes", np.array([2], np.int64)))
    n.append(helper.make_node("MatMul", ["y", "first3"], ["dots"], name="dots"))
    return model(n, i, [("x", ["N", t, d])], ["y", "dots"], 17), {"x": (2, t, d)}


def einsum_attention():
    """Attention written with Einsum: rank 3 and rank 4 (NHWC in the IR) operands, a transpose, an ellipsis against
    a constant, and a plain matrix product."""
    n, i = [], []
    t, d = 6, 8
    for p in ("q", "k"):
        i.append(init(f"w{p}", w(d, d, scale=0.4)))
        n.append(helper.make_node("MatMul", ["x", f"w{p}"], [p], name=f"proj_{p}"))
        i.append(init(f"{p}.heads", np.array([0, t, 2, d // 2], np.int64)))
        n.append(helper.make_node("Reshape", [p, f"{p}.heads"], [f"{p}4"], name=f"heads_{p}"))
    n.append(helper.make_node("Einsum", ["q", "k"], ["scores"], name="scores", equation="bid,bjd->bij"))
    n.append(helper.make_node("Softmax", ["scores"], ["attn"], name="softmax", axis=-1))
    n.append(helper.make_node("Einsum", ["attn", "x"], ["ctx"], name="ctx", equation="bij,bjd->bid"))
    n.append(helper.make_node("Einsum", ["q4", "k4"], ["scores4"], name="scores4", equation="bihd,bjhd->bhij"))
    n.append(helper.make_node("Softmax", ["scores4"], ["attn4"], name="softmax4", axis=-1))
    n.append(helper.make_node("Einsum", ["attn4", "k4"], ["ctx4"], name="ctx4", equation="bhij,bjhd->bihd"))
    n.append(helper.make_node("Einsum", ["ctx"], ["ctxT"], name="transpose", equation="bij->bji"))
    i.append(init("wo", w(d, 5, scale=0.4)))
    n.append(helper.make_node("Einsum", ["ctx", "wo"], ["proj"], name="ellipsis", equation="...id,de->...ie"))
    i.append(init("sel", np.array([0], np.int64)))
    n.append(helper.make_node("Gather", ["ctx", "sel"], ["row"], name="row", axis=0))
    i.append(init("row.shape", np.array([t, d], np.int64)))
    n.append(helper.make_node("Reshape", ["row", "row.shape"], ["row2"], name="row2"))
    n.append(helper.make_node("Einsum", ["row2", "row2"], ["gram"], name="gram", equation="id,jd->ij"))
    # A fixed batch: "row" gathers along it.
    return model(n, i, [("x", [2, t, d])], ["ctx", "ctx4", "ctxT", "proj", "gram"], 13), {"x": (2, t, d)}


def pixel_shuffle():
    """DepthToSpace in both modes, SpaceToDepth and Tile (their conformance cases are opset 28 or int64)."""
    n, i = [], []
    i.append(init("c.w", w(8, 3, 1, 1)))
    n.append(helper.make_node("Conv", ["x", "c.w"], ["c"], name="expand"))
    n.append(helper.make_node("DepthToSpace", ["c"], ["dcr"], name="d2s_dcr", blocksize=2))
    n.append(helper.make_node("DepthToSpace", ["c"], ["crd"], name="d2s_crd", blocksize=2, mode="CRD"))
    n.append(helper.make_node("SpaceToDepth", ["dcr"], ["back"], name="s2d", blocksize=2))
    n.append(helper.make_node("SpaceToDepth", ["x"], ["s2d3"], name="s2d3", blocksize=3))
    i.append(init("reps", np.array([1, 2, 3, 1], np.int64)))
    n.append(helper.make_node("Tile", ["x", "reps"], ["tiled"], name="tile"))
    return model(n, i, [("x", ["N", 3, 6, 9])], ["dcr", "crd", "back", "s2d3", "tiled"], 13), {"x": (2, 3, 6, 9)}


NETWORKS = {
    "residual_cnn": residual_cnn,
    "depthwise_cnn": depthwise_cnn,
    "squeeze_excite": squeeze_excite,
    "mlp_opset9": mlp_opset9,
    "flatten_nchw": flatten_model,
    "softmax_legacy": softmax_legacy,
    "free_size": free_size,   # last: adding it left the other fixtures' random values unchanged
    "qdq_weights": qdq_weights,  # after it, for the same reason
    "decoder_upsample": decoder_upsample,   # ConvTranspose and the normalizations (after the others: same reason)
    "attention_block": attention_block,     # MatMul of computed tensors
    "einsum_attention": einsum_attention,   # Einsum lowered to batchMatMul
    "pixel_shuffle": pixel_shuffle,         # DepthToSpace, SpaceToDepth, Tile
}
# Run without graph optimizations: onnxruntime may otherwise fuse DequantizeLinear into approximate int8 kernels.
UNOPTIMIZED = {"qdq_weights"}


def write_refusals():
    """Small models whose one initializer points at external data in various (bad and good) places."""
    d = os.path.join(HERE, "external")
    os.makedirs(d, exist_ok=True)
    data = np.arange(6, dtype=np.float32)
    with open(os.path.join(d, "weights.bin"), "wb") as f:
        f.write(b"\0" * 16 + data.tobytes())

    def ext_model(name, location, offset=16, length=24):
        t = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 6])
        t.data_location = TensorProto.EXTERNAL
        for k, v in (("location", location), ("offset", str(offset)), ("length", str(length))):
            e = t.external_data.add()
            e.key, e.value = k, v
        node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
        g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(os.path.join(d, name), "wb") as f:
            f.write(m.SerializeToString())

    ext_model("ok.onnx", "weights.bin")
    ext_model("dotdot.onnx", "../x")
    ext_model("absolute.onnx", "/etc/passwd")
    ext_model("symlink.onnx", "link.bin")
    ext_model("toolong.onnx", "weights.bin", offset=16, length=24 + 0)  # fine length, bad offset below
    ext_model("past_end.onnx", "weights.bin", offset=32, length=24)
    os.remove(os.path.join(d, "toolong.onnx"))
    link = os.path.join(d, "link.bin")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../unsupported.onnx", link)  # resolves to a real file outside the model's directory

    # Quantization ops only fold on constants: on an activation, and with a per-axis scale of the wrong length.
    def qdq_model(name, nodes, inits):
        g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(m.SerializeToString())

    qdq_model("quantize_activation.onnx",
              [helper.make_node("QuantizeLinear", ["x", "s"], ["q"], name="q"),
               helper.make_node("DequantizeLinear", ["q", "s"], ["y"], name="dq")],
              [numpy_helper.from_array(np.array(0.1, np.float32), "s")])
    qdq_model("dequantize_bad_scales.onnx",
              [helper.make_node("DequantizeLinear", ["wq", "ws"], ["w"], name="dq", axis=1),
               helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")],
              [numpy_helper.from_array(np.arange(12, dtype=np.int8).reshape(4, 3), "wq"),
               numpy_helper.from_array(np.full(5, 0.1, np.float32), "ws")])

    # Integers flow through the engine as float32 values: an int64 graph input and output import and run; a string
    # input is refused, never run as floats.
    for name, elem in [("int64_input.onnx", TensorProto.INT64), ("string_input.onnx", TensorProto.STRING)]:
        g = helper.make_graph([helper.make_node("Add", ["ids", "ids"], ["y"], name="add")], "g",
                              [helper.make_tensor_value_info("ids", elem, ["N", 4])],
                              [helper.make_tensor_value_info("y", elem, ["N", 4])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(m.SerializeToString())

    # Every unsupported op listed at once.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="relu"),
             helper.make_node("Det", ["a"], ["b"], name="det1"),
             helper.make_node("Det", ["b"], ["c"], name="det2"),
             helper.make_node("NonZero", ["c"], ["d"], name="nonzero"),
             helper.make_node("Det", ["d"], ["e"], name="det3"),
             helper.make_node("Det", ["e"], ["f"], name="det4"),
             helper.make_node("Custom", ["f"], ["y"], name="mine", domain="com.example")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20), helper.make_opsetid("com.example", 1)])
    m.ir_version = 9
    with open(os.path.join(HERE, "unsupported.onnx"), "wb") as f:
        f.write(m.SerializeToString())


def main():
    manifest = []
    for name, make in NETWORKS.items():
        m, feeds_shapes = make()
        path = os.path.join(HERE, name + ".onnx")
        onnx.save(m, path)
        feeds = {k: rng.standard_normal(s).astype(np.float32) for k, s in feeds_shapes.items()}
        options = ort.SessionOptions()
        if name in UNOPTIMIZED:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        names = [o.name for o in sess.get_outputs()]
        outs = sess.run(names, feeds)
        entry = {"model": name + ".onnx", "inputs": [], "outputs": []}
        for k, v in feeds.items():
            v.astype("<f4").tofile(os.path.join(HERE, f"{name}.in.{k}.f32"))
            entry["inputs"].append({"name": k, "shape": list(v.shape), "file": f"{name}.in.{k}.f32"})
        for k, v in zip(names, outs):
            v.astype("<f4").tofile(os.path.join(HERE, f"{name}.out.{k}.f32"))
            entry["outputs"].append({"name": k, "shape": list(v.shape), "file": f"{name}.out.{k}.f32"})
        manifest.append(entry)
        print(f"{name}: outputs {[(k, v.shape) for k, v in zip(names, outs)]}")
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    write_refusals()


if __name__ == "__main__":
    main()
