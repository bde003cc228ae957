"""Materialises the ONNX backend test cases for the ops mltool claims (run from the repository root):

    python3 Tests/Fixtures/onnx/make_conformance.py [--out .build/onnx-conformance]

Sources: `onnx.backend.test.loader.load_model_tests(kind="node")` (generated in memory by pip `onnx`) plus the
on-disk `simple/`, `pytorch-converted/` and `pytorch-operator/` cases in the wheel. A case is kept when every op of
its graph is claimed (expanded function bodies are left out); cases whose outputs are not float32 are kept unchanged
as unclaimed variants, which the import must refuse.

mltool imports networks, so inputs that are parameters are made initializers with the case's own values: every
non-float input, and the weight-like inputs of Conv (W, B), Gemm (B, C), MatMul (B), BatchNormalization, Clip
(min, max), Reshape, Squeeze/Unsqueeze (axes), Pad and LSTM/GRU/RNN (W, R, B, P; their initial states stay inputs);
If's condition stays an input, bool or not (RUNTIME_INPUTS). A case's ops include those of If branches and loop bodies.
Remaining inputs and expected outputs are raw little-endian float32 files, listed in manifest.json with the op name
and the tolerance (rtol 1e-3, atol 1e-5). float16 and
float64 inputs and outputs are computed as float32 by mltool: they are fed and compared as float32 at that tolerance.
A case whose inputs would all become parameters keeps its integer and bool inputs as graph inputs instead (fed as
float32 values, exact below 2^24; a case with larger integers is not materialised).
Integer and bool outputs (TopK's indices, comparisons, casts) are kept as claimed cases with float32 expected
values (mltool carries integers and bools as float32). Ops the importer only folds (FOLD_ONLY) are not listed as
unsupported. Models of cases whose ops are not claimed go to unclaimed/ (listed in unclaimed.json): importing them must fail
with the clean "unsupported" error. Cases of claimed ops in a variant listed in UNCLAIMED_VARIANTS carry
"unclaimed": <why> in manifest.json: importing them must fail with a clean error; all other cases must pass.

onnxruntime's column (ort.json, one entry per case of all the above, claimed or not): each case's original model is run
by onnxruntime on the case's original inputs and its outputs are compared with the expected ones at mltool's tolerance
(rtol 1e-3, atol 1e-5, NaN equal to NaN; exact equality for integer, bool and string values, element by element for
sequences, None for an empty optional): "pass", "mismatch" or "error" (the session or the run raised), with the
case's ops and its category: "sequence/optional/string" (a sequence, optional or string op, or such a value among the
graph's inputs and outputs), "training" (losses, optimizers, Gradient, Dropout and BatchNormalization in training
mode) or "core" (the rest, over which ONNXConformanceTests.coverageAgainstOnnxruntime states mltool's share).
"""
import argparse
import json
import os
import re
import shutil
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

CLAIMED = set("""Conv Gemm MatMul BatchNormalization Relu Clip LeakyRelu Sigmoid HardSigmoid HardSwish Tanh Softmax
Add Sub Mul Div MaxPool AveragePool GlobalAveragePool GlobalMaxPool Concat Reshape Flatten Transpose Squeeze Unsqueeze
Pad Identity Dropout Constant Shape Gather Cast Slice
Resize Upsample Split TopK Pow Expand Range ConstantOfShape NonMaxSuppression
Neg Floor Ceil Round Sign Abs Exp Log Sqrt Reciprocal Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Erf
Softplus Softsign Mish Gelu Elu Celu Selu ThresholdedRelu Not IsNaN IsInf Equal Less LessOrEqual Greater
GreaterOrEqual And Or Xor PRelu Mod Max Min Sum Mean Where ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd
ReduceL1 ReduceL2 ReduceLogSum ReduceLogSumExp ReduceSumSquare ArgMax ArgMin LogSoftmax Hardmax
LSTM GRU RNN
ConvTranspose LayerNormalization InstanceNormalization GroupNormalization Einsum DepthToSpace SpaceToDepth Tile
Shrink Trilu CastLike CumSum RMSNormalization LpNormalization MeanVarianceNormalization LRN LpPool
GatherElements GatherND ScatterElements Scatter ScatterND OneHot Attention
BitShift BitwiseAnd BitwiseOr BitwiseXor BitwiseNot GridSample RotaryEmbedding CenterCropPad AffineGrid TensorScatter
CumProd Compress ReverseSequence
If Loop Scan
QuantizeLinear DequantizeLinear QLinearConv QLinearMatMul DynamicQuantizeLinear MatMulInteger ConvInteger""".split())
# op → input positions that are parameters (made initializers).
PARAMETER_INPUTS = {
    "Conv": {1, 2}, "Gemm": {1, 2}, "MatMul": {1}, "BatchNormalization": {1, 2, 3, 4}, "Clip": {1, 2},
    "Reshape": {1}, "Squeeze": {1}, "Unsqueeze": {1}, "Pad": {1, 2, 3}, "Dropout": {1, 2},
    "Resize": {1, 2, 3}, "Upsample": {1}, "Split": {1}, "TopK": {1}, "Expand": {1}, "Range": {0, 1, 2},
    "NonMaxSuppression": {2, 3, 4},
    # W, R, B, (sequence_lens, an int input, is made one anyway) and LSTM's P; initial states stay graph inputs.
    "LSTM": {1, 2, 3, 7}, "GRU": {1, 2, 3}, "RNN": {1, 2, 3},
    "ConvTranspose": {1, 2},
    "LayerNormalization": {1, 2}, "InstanceNormalization": {1, 2}, "GroupNormalization": {1, 2},
    "Tile": {1},
    **{op: {1} for op in ("ReduceSum ReduceMean ReduceMax ReduceMin ReduceProd ReduceL1 ReduceL2 ReduceLogSum "
                          "ReduceLogSumExp ReduceSumSquare").split()},
    "CastLike": {1}, "RMSNormalization": {1}, "CumSum": {1}, "CumProd": {1}, "Compress": {1}, "ReverseSequence": {1}, "Trilu": {1}, "OneHot": {0, 1},
    "GridSample": {1}, "RotaryEmbedding": {1, 2, 3}, "CenterCropPad": {1}, "AffineGrid": {1}, "TensorScatter": {2},
    "GatherElements": {1}, "GatherND": {1}, "ScatterElements": {1}, "Scatter": {1}, "ScatterND": {1},
    # Scales and zero points; QLinearConv's and QLinearMatMul's weights too (a quantized network's are constants).
    "QuantizeLinear": {1, 2}, "DequantizeLinear": {1, 2},
    "QLinearConv": {1, 2, 3, 4, 5, 6, 7, 8}, "QLinearMatMul": {1, 2, 3, 4, 5, 6, 7},
    "MatMulInteger": {1, 2, 3}, "ConvInteger": {1, 2, 3},
}
# op → input positions that stay graph inputs whatever their element type (fed as float32 values): If's condition,
# which would otherwise fold at import and leave nothing computed from the inputs. Loop's trip count and condition are
# made initializers (mltool unrolls a loop whose trip count is known at import).
RUNTIME_INPUTS = {"If": {0}}
# Ops the importer accepts only on constants (folded as shape arithmetic): a case that uses them on its inputs is
# refused with a clean error naming the node, and they are not listed among a case's unsupported ops.
FOLD_ONLY = {"Size"}
# Integer and bool outputs (indices, comparisons, casts) come out of mltool as float32 values (exact below 2^24), so
# expected outputs of these element types are compared as float32 instead of making the case an unclaimed variant.
INTEGER_OUTPUTS = {onnx.TensorProto.INT64, onnx.TensorProto.INT32, onnx.TensorProto.INT16, onnx.TensorProto.INT8,
                   onnx.TensorProto.UINT64, onnx.TensorProto.UINT32, onnx.TensorProto.UINT16, onnx.TensorProto.UINT8,
                   onnx.TensorProto.BOOL}
# float16 and float64 values mltool computes as float32 (compared at the manifest's tolerance).
FLOAT_AS_FLOAT32 = {onnx.TensorProto.FLOAT16, onnx.TensorProto.DOUBLE}
FLOAT_DTYPES = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))
# Variants of claimed ops that mltool does not claim (case-name pattern → why). Their cases stay in the manifest
# with "unclaimed": the import must refuse them with a clean error; every other case must pass.
UNCLAIMED_VARIANTS = [
    (r"^node/test_batchnorm_.*training_mode", "BatchNormalization training_mode=1 (batch statistics, running-mean outputs)"),
    (r"^node/test_training_dropout(_default)?$", "Dropout training_mode=1 with ratio > 0 (a random mask)"),
    (r"^node/test_identity_(sequence|opt)$", "sequence and optional values (mltool graphs carry tensors only)"),
    (r"^node/test_resize_tf_crop_and_resize", "Resize tf_crop_and_resize (a region of interest with extrapolation)"),
    (r"^node/test_(training_)?dropout.*mask", "Dropout's mask output (inference computes no mask)"),
    (r"^node/test_maxpool_with_argmax", "MaxPool's Indices output"),
    (r"^node/test_shape", "Shape as a graph output (mltool folds shapes at import: nothing is computed from the input)"),
    (r"^node/test_convtranspose_3d$", "ConvTranspose on a 3-D (N, C, D, H, W) input (1-D and 2-D are claimed)"),
    (r"^node/test_scan_sum$", "Scan of opset 8 (a batch axis and sequence_lens; opset 9 and later are claimed)"),
    (r"^node/test_((and|or|xor)_bcast4v3d|bitwise_(and|or|xor)_ui8_bcast_4v3d)$",
     "a rank-3 operand broadcast against a rank-4 one whose NCHW and NHWC orders differ"),
    (r"^node/test_attention_4d_diff_heads_mask4d_padded_kv$", "Attention with a computed float mask shorter than the keys"),
    (r"^node/test_wrap_pad$", "Pad mode wrap"),
    (r"^node/test_einsum_(batch_diagonal|sum)$", "Einsum with a diagonal or a one-operand sum"),
    (r"^node/test_constantofshape_", "ConstantOfShape of a graph input (mltool folds it at import: the shape must be a constant)"),
    (r"^node/test_(de)?quantizelinear_blocked", "blocked quantization (block_size > 0: per-tensor and per-axis are claimed)"),
]
# Claimed cases that fail today (case-name pattern → why): ONNXConformanceTests reports them and counts them as what
# they give, never as a test failure. Every other claimed case must pass.
KNOWN_FAILURES = [
    (r"^node/test_einsum_batch_matmul$", "Einsum batch matmul (5, 2, 3)·(5, 3, 4) at opset 28: the engine refuses a "
                                         "reshape the import emits (expected 30 elements for [5, 2, 3], found [1, 2, 3])"),
]
# The newest operator set the importer reads (ONNXFile): cases written for a later one must be refused cleanly.
MAX_OPSET = 28
MIN_OPSET = 6
# The categories counted apart from the headline (ort.json's "category"): sequence, optional and string ops…
SEQUENCE_OPTIONAL_STRING_OPS = set("""SequenceAt SequenceConstruct SequenceEmpty SequenceErase SequenceInsert
SequenceLength SequenceMap SplitToSequence ConcatFromSequence Optional OptionalGetElement OptionalHasElement
StringNormalizer StringConcat StringSplit RegexFullMatch LabelEncoder""".split())
# … and training ops (with the training-mode cases of Dropout and BatchNormalization, matched by name).
TRAINING_OPS = set("""SoftmaxCrossEntropyLoss NegativeLogLikelihoodLoss Adagrad Adam Momentum Gradient""".split())
TRAINING_CASES = r"^node/test_(training_dropout|batchnorm_.*training_mode)"
# mltool's tolerance, which onnxruntime's column uses too.
RTOL, ATOL = 1e-3, 1e-5
DISK_SUITES = ["simple", "pytorch-converted", "pytorch-operator"]
# Cases of claimed ops whose outputs are not float32 (int, bool, float16, bfloat16, float8…): mltool computes float32,
# so their unchanged models stay in the manifest as unclaimed variants that the import must refuse.
NON_FLOAT = "non-float32 outputs"


def tensor_from_pb(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def disk_cases(root):
    for suite in DISK_SUITES:
        d = os.path.join(root, suite)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            case_dir = os.path.join(d, name)
            model_path = os.path.join(case_dir, "model.onnx")
            data_dir = os.path.join(case_dir, "test_data_set_0")
            if not (os.path.exists(model_path) and os.path.isdir(data_dir)):
                continue
            model = onnx.load(model_path)
            files = sorted(os.listdir(data_dir))
            inputs = [tensor_from_pb(os.path.join(data_dir, f)) for f in files if f.startswith("input_")]
            outputs = [tensor_from_pb(os.path.join(data_dir, f)) for f in files if f.startswith("output_")]
            yield f"{suite}/{name}", model, inputs, outputs


def node_cases():
    from onnx.backend.test.loader import load_model_tests
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = load_model_tests(kind="node")
    for c in cases:
        if c.model is None or not c.data_sets:
            continue
        inputs, outputs = c.data_sets[0]
        yield f"node/{c.name}", c.model, list(inputs), list(outputs)


def graph_ops(g):
    """The op types of a graph and of the graphs in its nodes' attributes (If branches, Loop and Scan bodies)."""
    ops = set()
    for n in g.node:
        ops.add(n.op_type)
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                ops |= graph_ops(a.g)
    return ops


def convert(name, model, inputs, outputs):
    """The case as (model with parameters as initializers, float inputs, outputs) or a reason to skip it."""
    g = model.graph
    ops = graph_ops(g)
    if name.endswith("_expanded") or "_expanded_" in name:
        return None, "expanded function body"
    if not ops <= CLAIMED | FOLD_ONLY or ops & FOLD_ONLY:
        return None, "ops " + ",".join(sorted(ops - CLAIMED - FOLD_ONLY))
    numeric = {onnx.TensorProto.FLOAT} | FLOAT_AS_FLOAT32 | INTEGER_OUTPUTS
    if any(not o.type.HasField("tensor_type") or o.type.tensor_type.elem_type not in numeric for o in g.output):
        return None, NON_FLOAT
    if any(np.asarray(o).dtype.kind not in "fiub" or np.asarray(o).dtype.kind == "f" and np.asarray(o).dtype not in FLOAT_DTYPES
           for o in outputs):
        return None, "expected outputs in the data set are not float16/32/64, integer or bool arrays"
    init_names = {i.name for i in g.initializer}
    graph_inputs = [i for i in g.input if i.name not in init_names]
    if len(graph_inputs) != len(inputs):
        return None, "input count mismatch"
    params, runtime = set(), set()
    for n in g.node:
        for k in RUNTIME_INPUTS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k]:
                runtime.add(n.input[k])
        for k in PARAMETER_INPUTS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k]:
                params.add(n.input[k])
    values = [np.asarray(v) for v in inputs]
    fed = [vi.name not in params and v.dtype in FLOAT_DTYPES for vi, v in zip(graph_inputs, values)]
    if not any(fed):
        # Integer and bool inputs stay graph inputs rather than leave nothing to compute (Equal, Mod, BitShift…).
        fed = [vi.name not in params and v.dtype.kind in "iub" for vi, v in zip(graph_inputs, values)]
        if any(f and v.size and np.abs(v.astype(np.float64)).max() >= 2 ** 24 for f, v in zip(fed, values)):
            return None, "integer inputs beyond 2^24 (not exact in float32)"
    keep, feeds = [], []
    for vi, value, f in zip(graph_inputs, values, fed):
        if not f and vi.name not in runtime:
            g.initializer.append(numpy_helper.from_array(value, vi.name))
        else:
            keep.append(vi)
            feeds.append((vi.name, value))
    if not feeds:
        return None, "no float input left"
    del g.input[:]
    g.input.extend(keep)
    return (model, feeds), None


def category(name, model):
    """The case's category in ort.json: "sequence/optional/string", "training" or "core"."""
    g = model.graph
    ops = {n.op_type for n in g.node}
    values = list(g.input) + list(g.output)
    if ops & SEQUENCE_OPTIONAL_STRING_OPS or any(
            not v.type.HasField("tensor_type") or v.type.tensor_type.elem_type == onnx.TensorProto.STRING for v in values):
        return "sequence/optional/string"
    if ops & TRAINING_OPS or re.search(TRAINING_CASES, name):
        return "training"
    return "core"


def same(actual, expected):
    """onnxruntime's output against the expected one, at mltool's tolerance (see the docstring)."""
    if expected is None:
        return actual is None
    if isinstance(expected, (list, tuple)):
        return isinstance(actual, (list, tuple)) and len(actual) == len(expected) and all(
            same(a, e) for a, e in zip(actual, expected))
    if actual is None or isinstance(actual, (list, tuple)):
        return False
    actual, expected = np.asarray(actual), np.asarray(expected)
    if actual.shape != expected.shape:
        return False
    if expected.dtype.kind in "fc" and actual.dtype.kind in "fc":
        return bool(np.allclose(actual.astype(np.float64), expected.astype(np.float64), rtol=RTOL, atol=ATOL,
                                equal_nan=True))
    if expected.dtype.kind in "fc" or actual.dtype.kind in "fc":
        # float8/bfloat16 arrays come out of onnx as custom dtypes: compared through float32.
        try:
            return bool(np.allclose(actual.astype(np.float32), expected.astype(np.float32), rtol=RTOL, atol=ATOL,
                                    equal_nan=True))
        except (TypeError, ValueError):
            return False
    return bool(np.array_equal(actual, expected))


def plain(value):
    """A data-set value as numpy (TensorProto, numpy scalar) or a list of them; None stays None."""
    if isinstance(value, onnx.TensorProto):
        return numpy_helper.to_array(value)
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return None if value is None else np.asarray(value)


def ort_feed(value, vi):
    """A value as onnxruntime takes it: float8 and bfloat16 arrays (ml_dtypes, which it does not read from numpy)
    through an OrtValue of the graph input's element type."""
    import onnxruntime as ort
    if isinstance(value, np.ndarray) and value.dtype.kind == "V" or isinstance(value, np.ndarray) and \
            value.dtype.name.startswith(("bfloat16", "float8", "float4", "int4", "uint4", "int2", "uint2")):
        return ort.OrtValue.ortvalue_from_numpy_with_onnx_type(value, vi.type.tensor_type.elem_type)
    return value


def run_onnxruntime(model, inputs, outputs):
    """("pass" | "mismatch" | "error", why) for the case's original model on its original inputs."""
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.log_severity_level = 4
    inputs, outputs = plain(list(inputs)), plain(list(outputs))
    try:
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        init_names = {i.name for i in model.graph.initializer}
        graph_inputs = [i for i in model.graph.input if i.name not in init_names]
        got = session.run(None, {vi.name: ort_feed(v, vi) for vi, v in zip(graph_inputs, inputs)})
    except Exception as e:  # noqa: BLE001 — any failure of onnxruntime is its "error" outcome
        return "error", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
    if len(got) != len(outputs):
        return "mismatch", f"{len(got)} outputs, expected {len(outputs)}"
    for k, (a, e) in enumerate(zip(got, outputs)):
        try:
            ok = same(a, e)
        except Exception as err:  # noqa: BLE001 — an incomparable value is a mismatch
            return "mismatch", f"output {k}: {type(err).__name__}: {err}"
        if not ok:
            return "mismatch", f"output {k}"
    return "pass", ""


def main():
    ap = argparse.ArgumentParser()
    # ~15 MB: too big to commit, so by default it goes under .build/ (ignored), where the Swift test looks.
    ap.add_argument("--out", default=os.path.join(".build", "onnx-conformance"))
    args = ap.parse_args()
    root = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    manifest, skipped, unclaimed, ort_column = [], {}, [], []
    os.makedirs(os.path.join(args.out, "unclaimed"))
    for name, model, inputs, outputs in list(node_cases()) + list(disk_cases(root)):
        original = onnx.ModelProto()
        original.CopyFrom(model)
        if not (name.endswith("_expanded") or "_expanded_" in name):
            outcome, why = run_onnxruntime(original, inputs, outputs)
            ort_column.append({"name": name, "ops": ",".join(sorted({n.op_type for n in original.graph.node})),
                               "category": category(name, original), "ort": outcome, "why": why})
        inputs, outputs = plain(list(inputs)), plain(list(outputs))
        converted, reason = convert(name, model, inputs, outputs)
        if reason == NON_FLOAT:
            base = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            onnx.save(original, os.path.join(args.out, base + ".onnx"))
            types = sorted({onnx.TensorProto.DataType.Name(o.type.tensor_type.elem_type).lower()
                            if o.type.HasField("tensor_type") else o.type.WhichOneof("value") or "untyped"
                            for o in original.graph.output} - {"float"})
            manifest.append({"name": name, "op": ",".join(sorted({n.op_type for n in original.graph.node})),
                             "model": base + ".onnx", "inputs": [], "outputs": [], "rtol": 1e-3, "atol": 1e-5,
                             "unclaimed": f"{', '.join(types)} outputs (mltool computes float32)"})
            continue
        if converted is None:
            skipped[reason] = skipped.get(reason, 0) + 1
            if reason.startswith("ops ") and "_expanded" not in name:
                # Only the model: importing it must fail with the clean "unsupported" error.
                base = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
                onnx.save(model, os.path.join(args.out, "unclaimed", base + ".onnx"))
                unclaimed.append({"name": name, "model": "unclaimed/" + base + ".onnx", "ops": reason[4:]})
            continue
        model, feeds = converted
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
        onnx.save(model, os.path.join(args.out, base + ".onnx"))
        entry = {"name": name, "op": ",".join(sorted({n.op_type for n in model.graph.node})), "model": base + ".onnx",
                 "inputs": [], "outputs": [], "rtol": 1e-3, "atol": 1e-5}
        why = next((w for pattern, w in UNCLAIMED_VARIANTS if re.search(pattern, name)), None)
        opset = max((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), default=0)
        if opset > MAX_OPSET:
            why = f"operator set {opset} (mltool reads up to {MAX_OPSET})"
        if opset < MIN_OPSET:
            why = f"operator set {opset} (mltool reads {MIN_OPSET} to {MAX_OPSET})"
        if why:
            entry["unclaimed"] = why
        known = next((w for pattern, w in KNOWN_FAILURES if re.search(pattern, name)), None)
        if known and not why:
            entry["knownFailure"] = known
        for k, (n, v) in enumerate(feeds):
            f = f"{base}.in{k}.f32"
            v.astype("<f4").tofile(os.path.join(args.out, f))
            entry["inputs"].append({"name": n, "shape": list(v.shape), "file": f})
        for k, (vi, v) in enumerate(zip(model.graph.output, outputs)):
            f = f"{base}.out{k}.f32"
            np.asarray(v).astype("<f4").tofile(os.path.join(args.out, f))
            entry["outputs"].append({"name": vi.name, "shape": list(np.asarray(v).shape), "file": f})
        manifest.append(entry)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(args.out, "unclaimed.json"), "w") as f:
        json.dump(unclaimed, f, indent=1)
    with open(os.path.join(args.out, "ort.json"), "w") as f:
        json.dump(ort_column, f, indent=1)
    print(f"wrote {len(manifest)} cases and {len(unclaimed)} unclaimed-op models to {args.out}; "
          f"skipped {sum(skipped.values())}; onnxruntime passes "
          f"{sum(c['ort'] == 'pass' for c in ort_column)} of the {len(ort_column)} cases (ort.json)")


if __name__ == "__main__":
    main()
