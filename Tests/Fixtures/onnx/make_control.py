"""Writes ONNX If graphs with onnxruntime's outputs (run from the repository root):

    python3 Tests/Fixtures/onnx/make_control.py

Made with onnx.helper (opset 17), seeded inputs:
- if_constant: the condition is shape arithmetic (Equal(Gather(Shape(x), 1), 3), true): the importer folds it and
  inlines the then branch only, which reads the outer `x` and its own initializer; the else branch would fail.
- if_runtime: the condition is Equal(sr, 16000) on a scalar int64 graph input (silero-vad's sample rate): both
  branches are inlined and give two outputs, one of rank 2 (x·w, w a row, or x − 1) and one of rank 4 (NCHW: img scaled
  per channel, or a branch constant), run with sr = 16000 and sr = 8000.
- if_nested: data-dependent conditions (openWakeWord's hey_jarvis: Cast(GreaterOrEqual(...))): an outer If on
  max(x) ≥ 0.5 whose then branch holds an inner If on min(x) < 0; the inner branches read `h` (computed by the main
  graph) and `t` (computed by the enclosing branch); three inputs take the three paths.
- loop_counted: a Loop with M = 3 (an initializer) and no condition, carrying a (2, 3) activation (v · w + i, the
  iteration number folded in) and stacking a scan output of each iteration's row sums, (3, 2).
- scan_axes: a Scan over axis 1 of x (2, 4, 3), read backwards, carrying a (2, 3) running sum and stacking its
  states along output axis 1 in reverse, (2, 4, 3).
- if_rank_flatten, if_rank_guard: silero-vad's decoder, an If on whether the input's free last size T is 1 that
  squeezes that axis or keeps it (rank 2 or 3 after it), then Flatten (both ranks convert: T = 1 and T = 3) or Gemm
  (only the squeezed one does: T = 1).
- squeeze_free_batch: speechmos AECMOS's Squeeze without axes on a free batch of 1, then a Slice along axis 0; the
  file declares the rank-1 output that only the squeezing variant gives (N = 1).
Each goes to Tests/Fixtures/onnx/control/<name>.onnx with its inputs and onnxruntime's outputs as raw
little-endian float32 files, listed in control/manifest.json (the format of ../manifest.json; a case per input
set). The tests need neither onnx nor onnxruntime.

It also writes the If files the importer must refuse (control/bad_<why>.onnx; ONNXControlFlowTests names each
one's message) and control/branch_shapes.onnx, whose branches give different shapes on a run-time condition (the
engine refuses it when it plans the input).
"""
import json
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "control")
OPSET = 17
rng = np.random.default_rng(48)


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def const(name, value):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value), name))


def branch(name, nodes, outputs, initializers=()):
    return helper.make_graph(nodes, name, [], outputs, list(initializers))


def model(name, nodes, inputs, outputs, initializers=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="make_control.py")
    m.ir_version = 8
    return m


def if_constant():
    x = f32("x", [2, 3])
    w = numpy_helper.from_array(rng.standard_normal((2, 3)).astype(np.float32), "w")
    then = branch("then", [helper.make_node("Mul", ["x", "w"], ["t"])], [f32("t", [2, 3])], [w])
    # Reshape to an impossible shape: converting this branch would fail.
    otherwise = branch("else", [const("bad_shape", np.array([7, 5], np.int64)),
                                helper.make_node("Reshape", ["x", "bad_shape"], ["e"])], [f32("e", [7, 5])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("one", np.array(1, np.int64)),
             helper.make_node("Gather", ["s", "one"], ["width"]), const("three", np.array(3, np.int64)),
             helper.make_node("Equal", ["width", "three"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], name="if_width", then_branch=then, else_branch=otherwise)]
    m = model("if_constant", nodes, [x], [f32("y", [2, 3])])
    return m, [{"x": rng.standard_normal((2, 3)).astype(np.float32)}]


def if_runtime():
    x, img = f32("x", [2, 3]), f32("img", [1, 2, 2, 3])
    sr = helper.make_tensor_value_info("sr", TensorProto.INT64, [])
    w = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "w")
    scale = numpy_helper.from_array(np.array([2, -3], np.float32).reshape(1, 2, 1, 1), "scale")
    then = branch("then", [helper.make_node("Mul", ["x", "w"], ["t"]), helper.make_node("Mul", ["img", "scale"], ["t4"])],
                  [f32("t", [2, 3]), f32("t4", [1, 2, 2, 3])], [w, scale])
    e4 = np.arange(12, dtype=np.float32).reshape(1, 2, 2, 3)
    otherwise = branch("else", [const("one", np.float32(1)), helper.make_node("Sub", ["x", "one"], ["e"]), const("e4", e4)],
                       [f32("e", [2, 3]), f32("e4", [1, 2, 2, 3])])
    nodes = [const("rate", np.array(16000, np.int64)), helper.make_node("Equal", ["sr", "rate"], ["cond"]),
             helper.make_node("If", ["cond"], ["y", "y4"], name="if_rate", then_branch=then, else_branch=otherwise),
             helper.make_node("Relu", ["y4"], ["z4"])]
    m = model("if_runtime", nodes, [x, img, sr], [f32("y", [2, 3]), f32("z4", [1, 2, 2, 3])])
    feeds = [{"x": rng.standard_normal((2, 3)).astype(np.float32), "img": rng.standard_normal((1, 2, 2, 3)).astype(np.float32),
              "sr": np.array(rate, np.int64)} for rate in (16000, 8000)]
    return m, feeds


def if_nested():
    x = f32("x", [1, 4])
    inner_then = branch("inner_then", [helper.make_node("Add", ["h", "t"], ["a"])], [f32("a", [1, 4])])
    inner_else = branch("inner_else", [helper.make_node("Sub", ["t", "h"], ["b"])], [f32("b", [1, 4])])
    outer_then = branch("outer_then", [
        const("two", np.float32(2)), helper.make_node("Mul", ["x", "two"], ["t"]),
        helper.make_node("ReduceMin", ["x"], ["lo"], keepdims=0), const("zero", np.float32(0)),
        helper.make_node("Less", ["lo", "zero"], ["negative"]),
        helper.make_node("If", ["negative"], ["inner"], name="if_negative", then_branch=inner_then, else_branch=inner_else),
    ], [f32("inner", [1, 4])])
    outer_else = branch("outer_else", [helper.make_node("Identity", ["h"], ["same"])], [f32("same", [1, 4])])
    nodes = [helper.make_node("Sigmoid", ["x"], ["h"]), helper.make_node("ReduceMax", ["x"], ["hi"], keepdims=0),
             const("half", np.float32(0.5)), helper.make_node("GreaterOrEqual", ["hi", "half"], ["ge"]),
             helper.make_node("Cast", ["ge"], ["cond"], to=TensorProto.BOOL),
             helper.make_node("If", ["cond"], ["y"], name="if_high", then_branch=outer_then, else_branch=outer_else)]
    m = model("if_nested", nodes, [x], [f32("y", [1, 4])])
    feeds = [{"x": np.array([[v0, 0.25, 0.75, 0.1]], np.float32)} for v0 in (-1.0, 0.3)]   # high: negative, not
    feeds.append({"x": np.array([[0.1, 0.2, -0.3, 0.4]], np.float32)})                      # not high
    return m, feeds


def loop_counted():
    v = f32("v", [2, 3])
    w = numpy_helper.from_array(rng.standard_normal(3).astype(np.float32), "w")
    body = helper.make_graph([
        helper.make_node("Mul", ["v_in", "w"], ["scaled"]), helper.make_node("Cast", ["i"], ["fi"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["scaled", "fi"], ["v_out"]), helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        helper.make_node("ReduceSum", ["v_out"], ["rows"], keepdims=0, axes=[1]) if OPSET < 13 else
        helper.make_node("ReduceSum", ["v_out", "axes1"], ["rows"], keepdims=0),
    ], "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                f32("v_in", [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), f32("v_out", [2, 3]), f32("rows", [2])],
        [numpy_helper.from_array(np.array([1], np.int64), "axes1")])
    m3 = numpy_helper.from_array(np.array(3, np.int64), "M")
    nodes = [helper.make_node("Loop", ["M", "", "v"], ["v_final", "stacked"], name="loop3", body=body)]
    m = model("loop_counted", nodes, [v], [f32("v_final", [2, 3]), f32("stacked", [3, 2])], [w, m3])
    return m, [{"v": rng.standard_normal((2, 3)).astype(np.float32)}]


def scan_axes():
    x, s0 = f32("x", [2, 4, 3]), f32("s0", [2, 3])
    body = helper.make_graph([helper.make_node("Add", ["s_in", "x_t"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["y_t"])],
                             "body", [f32("s_in", [2, 3]), f32("x_t", [2, 3])], [f32("s_out", [2, 3]), f32("y_t", [2, 3])])
    nodes = [helper.make_node("Scan", ["s0", "x"], ["s_final", "ys"], name="scan4", body=body, num_scan_inputs=1,
                              scan_input_axes=[1], scan_input_directions=[1], scan_output_axes=[1], scan_output_directions=[1])]
    m = model("scan_axes", nodes, [s0, x], [f32("s_final", [2, 3]), f32("ys", [2, 4, 3])])
    return m, [{"s0": rng.standard_normal((2, 3)).astype(np.float32), "x": rng.standard_normal((2, 4, 3)).astype(np.float32)}]


def rank_if(name, after, after_inits=()):
    """silero-vad's decoder: an If on Equal(T, 1), T the input's last (free) size, whose then branch squeezes that
    axis and whose else branch keeps it: its output has rank 2 or 3, and `after` reads it."""
    x = f32("x", ["N", 4, "T"])
    then = branch("t", [const("ax", np.array([2], np.int64)), helper.make_node("Squeeze", ["x", "ax"], ["sq"])], [f32("sq", ["N", 4])])
    otherwise = branch("e", [helper.make_node("Identity", ["x"], ["same"])], [f32("same", ["N", 4, "T"])])
    nodes = [helper.make_node("Shape", ["x"], ["s"]), const("two", np.array(2, np.int64)),
             helper.make_node("Gather", ["s", "two"], ["t"], axis=0), const("one", np.array(1, np.int64)),
             helper.make_node("Equal", ["t", "one"], ["cond"]),
             helper.make_node("If", ["cond"], ["h"], name="the_if", then_branch=then, else_branch=otherwise), after]
    return model(name, nodes, [x], [f32("y", ["N", "M"])], after_inits)


def if_rank_flatten():
    """Flatten(axis 1) after the rank-varying If: (N, 4) for one frame, (N, 4·T) for more; both variants convert."""
    m = rank_if("if_rank_flatten", helper.make_node("Flatten", ["h"], ["y"], axis=1))
    return m, [{"x": rng.standard_normal((2, 4, 1)).astype(np.float32)}, {"x": rng.standard_normal((2, 4, 3)).astype(np.float32)}]


def if_rank_guard():
    """Gemm after the rank-varying If: only the one-frame variant converts (onnxruntime fails on more frames too)."""
    w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")
    m = rank_if("if_rank_guard", helper.make_node("Gemm", ["h", "w"], ["y"]), [w])
    return m, [{"x": rng.standard_normal((2, 4, 1)).astype(np.float32)}]


def squeeze_free_batch():
    """speechmos AECMOS: Squeeze without axes drops a batch of 1, then slices the (former class) axis 0; the file
    declares a rank-1 output, so only the variant that squeezes the batch converts to it (N = 1)."""
    x = f32("x", ["N", 1, 4])
    nodes = [helper.make_node("Squeeze", ["x"], ["sq"]), const("s", np.array([0], np.int64)), const("e", np.array([2], np.int64)),
             const("a", np.array([0], np.int64)), helper.make_node("Slice", ["sq", "s", "e", "a"], ["y"])]
    m = model("squeeze_free_batch", nodes, [x], [f32("y", ["M"])])
    return m, [{"x": rng.standard_normal((1, 1, 4)).astype(np.float32)}]


def write_case(name, m, feeds, manifest):
    onnx.checker.check_model(m, full_check=True)
    path = os.path.join(HERE, name + ".onnx")
    onnx.save(m, path)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    outs = [o.name for o in m.graph.output]
    for k, feed in enumerate(feeds):
        got = session.run(outs, feed)
        base = f"{name}.{k}"
        case = {"model": name + ".onnx", "inputs": [], "outputs": []}
        for n, v in feed.items():
            v.astype("<f4").tofile(os.path.join(HERE, f"{base}.in.{n}.f32"))
            case["inputs"].append({"name": n, "shape": list(v.shape), "file": f"{base}.in.{n}.f32"})
        for n, v in zip(outs, got):
            v.astype("<f4").tofile(os.path.join(HERE, f"{base}.out.{n}.f32"))
            case["outputs"].append({"name": n, "shape": list(v.shape), "file": f"{base}.out.{n}.f32"})
        manifest.append(case)


def bad_files():
    """Files the importer refuses, by name."""
    x = f32("x", [2, 3])
    one_out = branch("b", [helper.make_node("Relu", ["x"], ["r"])], [f32("r", [2, 3])])
    two_out = branch("b2", [helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"])],
                     [f32("r", [2, 3]), f32("n", [2, 3])])
    cond_nodes = [helper.make_node("ReduceMax", ["x"], ["hi"], keepdims=0), const("zero", np.float32(0)),
                  helper.make_node("Greater", ["hi", "zero"], ["cond"])]

    def one_if(name, attrs, outputs=("y",), inputs=None, extra=()):
        node = helper.make_node("If", ["cond"], list(outputs), name="the_if", **attrs)
        return model(name, cond_nodes + [node] + list(extra), inputs or [x], [f32(o, None) for o in outputs])

    undefined = branch("u", [helper.make_node("Add", ["x", "nowhere"], ["s"])], [f32("s", [2, 3])])
    unsupported = branch("d", [helper.make_node("Det", ["x"], ["det"])], [f32("det", [])])
    n = f32("n", ["N", 3])
    by_dim = [helper.make_node("Shape", ["n"], ["s"]), const("zero_i", np.array(0, np.int64)),
              helper.make_node("Gather", ["s", "zero_i"], ["rows"]), const("one_i", np.array(1, np.int64)),
              helper.make_node("Equal", ["rows", "one_i"], ["cond"])]
    one_n = branch("bn", [helper.make_node("Relu", ["n"], ["r"])], [f32("r", ["N", 3])])
    rank3 = branch("r3", [const("s3", np.array([2, 3, 1], np.int64)), helper.make_node("Reshape", ["x", "s3"], ["r"])],
                   [f32("r", [2, 3, 1])])
    loop_body = helper.make_graph([helper.make_node("Relu", ["v_in"], ["v_out"]), helper.make_node("ReduceMax", ["v_out"], ["hi"], keepdims=0),
                                   const("zero_f", np.float32(0)), helper.make_node("Greater", ["hi", "zero_f"], ["cond_out"])],
                                  "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                                           helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []), f32("v_in", [2, 3])],
                                  [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), f32("v_out", [2, 3])])
    true = numpy_helper.from_array(np.array(True), "go")
    many = numpy_helper.from_array(np.array(5000, np.int64), "M")
    return {
        "bad_loop_condition": model("bad_loop_condition", [helper.make_node("Loop", ["", "go", "x"], ["y"], name="the_loop", body=loop_body)],
                                    [x], [f32("y", [2, 3])], [true]),
        "bad_loop_count": model("bad_loop_count", [helper.make_node("Loop", ["M", "", "x"], ["y"], name="the_loop", body=loop_body)],
                                [x], [f32("y", [2, 3])], [many]),
        "bad_branch_outputs": one_if("bad_branch_outputs", {"then_branch": one_out, "else_branch": two_out}),
        "bad_node_outputs": one_if("bad_node_outputs", {"then_branch": one_out, "else_branch": one_out}, outputs=("y", "y2")),
        "bad_missing_branch": one_if("bad_missing_branch", {"then_branch": one_out}),
        "bad_undefined": one_if("bad_undefined", {"then_branch": undefined, "else_branch": one_out}),
        "bad_unsupported": one_if("bad_unsupported", {"then_branch": unsupported, "else_branch": one_out},
                                  outputs=("y",), extra=[helper.make_node("Unique", ["x"], ["u"])]),
        "bad_runtime_dim": model("bad_runtime_dim", by_dim + [helper.make_node("If", ["cond"], ["y"], name="the_if",
                                                                                 then_branch=one_n, else_branch=one_n)],
                                 [n], [f32("y", ["N", 3])]),
        "bad_branch_rank": one_if("bad_branch_rank", {"then_branch": one_out, "else_branch": rank3}),
    }


def branch_shapes():
    x = f32("x", [2, 3])
    then = branch("t", [helper.make_node("Relu", ["x"], ["r"])], [f32("r", [2, 3])])
    otherwise = branch("e", [helper.make_node("Transpose", ["x"], ["tr"], perm=[1, 0])], [f32("tr", [3, 2])])
    nodes = [helper.make_node("ReduceMax", ["x"], ["hi"], keepdims=0), const("zero", np.float32(0)),
             helper.make_node("Greater", ["hi", "zero"], ["cond"]),
             helper.make_node("If", ["cond"], ["y"], name="the_if", then_branch=then, else_branch=otherwise)]
    return model("branch_shapes", nodes, [x], [f32("y", None)])


def main():
    os.makedirs(HERE, exist_ok=True)
    for f in os.listdir(HERE):
        os.remove(os.path.join(HERE, f))
    manifest = []
    for make in (if_constant, if_runtime, if_nested, loop_counted, scan_axes, if_rank_flatten, if_rank_guard, squeeze_free_batch):
        m, feeds = make()
        write_case(make.__name__, m, feeds, manifest)
    for name, m in bad_files().items():
        onnx.save(m, os.path.join(HERE, name + ".onnx"))
    onnx.save(branch_shapes(), os.path.join(HERE, "branch_shapes.onnx"))
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"onnx": onnx.__version__, "onnxruntime": ort.__version__, "opset": OPSET, "cases": manifest}, f, indent=1)
    print(f"wrote {len(manifest)} cases to {HERE}")


if __name__ == "__main__":
    main()
