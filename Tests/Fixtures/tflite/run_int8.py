#!/usr/bin/env python3
"""Oracle for TFLiteInt8Tests: runs a quantized TensorFlow Lite model in LiteRT's interpreter, one input at a time.

Usage: run_int8.py MODEL.tflite INPUT.npy OUTPUT.npy USED.npy [--threads N] [--codes DIR]
INPUT is a float32 NHWC batch of real values. For an int8/uint8 input, each is quantized as the file says
(round half to even, then the zero point, clipped to the codes) and USED gets the real values of those codes,
scale · (q − zero point), what mltool is fed so that its own quantize gives the same codes (for a float input USED
is INPUT). OUTPUT gets the first output as real values (an 8-bit output dequantized). With --codes, DIR gets the
codes of every int8/uint8 tensor of the first input (experimental_preserve_all_tensors), one <index>.npy each, and
index.json maps the tensor names to their files, scale and zero point.
Prints a JSON summary: input and output types and quantization, ops. Exit 3 when ai_edge_litert is missing."""
import argparse
import json
import os
import sys

try:
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter
except ImportError as e:  # pragma: no cover
    print(f"ai_edge_litert missing: {e}", file=sys.stderr)
    sys.exit(3)

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("input")
ap.add_argument("output")
ap.add_argument("used")
ap.add_argument("--threads", type=int, default=1)
ap.add_argument("--codes")
a = ap.parse_args()

x = np.load(a.input).astype(np.float32)
it = Interpreter(model_path=a.model, num_threads=a.threads, experimental_preserve_all_tensors=a.codes is not None)
it.allocate_tensors()
inp, out = it.get_input_details()[0], it.get_output_details()[0]


def limits(dtype):
    return (-128, 127) if dtype == np.int8 else (0, 255)


ys, used = [], []
for k in range(x.shape[0]):
    v = x[k:k + 1]
    if inp["dtype"] in (np.int8, np.uint8):
        s, z = inp["quantization"]
        lo, hi = limits(inp["dtype"])
        q = np.clip(np.round(v / np.float32(s)) + z, lo, hi)
        v_used = ((q - z) * np.float32(s)).astype(np.float32)
        it.set_tensor(inp["index"], q.astype(inp["dtype"]))
    else:
        v_used = v
        it.set_tensor(inp["index"], v)
    it.invoke()
    y = it.get_tensor(out["index"])
    if out["dtype"] in (np.int8, np.uint8):
        s, z = out["quantization"]
        y = (y.astype(np.float32) - z) * np.float32(s)
    ys.append(y.astype(np.float32))
    used.append(v_used)
    if k == 0 and a.codes:
        os.makedirs(a.codes, exist_ok=True)
        index = {}
        for d in it.get_tensor_details():
            if d["dtype"] not in (np.int8, np.uint8) or len(d["quantization_parameters"]["scales"]) != 1:
                continue
            try:
                t = it.get_tensor(d["index"])
            except ValueError:
                continue
            np.save(os.path.join(a.codes, f"{d['index']}.npy"), t.astype(np.float32))
            s, z = d["quantization"]
            index[d["name"]] = {"file": f"{d['index']}.npy", "scale": float(s), "zero_point": int(z)}
        with open(os.path.join(a.codes, "index.json"), "w") as f:
            json.dump(index, f)
np.save(a.output, np.concatenate(ys))
np.save(a.used, np.concatenate(used))


def describe(d):
    return {"name": d["name"], "type": np.dtype(d["dtype"]).name, "scale": float(d["quantization"][0]),
            "zero_point": int(d["quantization"][1])}


print(json.dumps({"input": describe(inp), "output": describe(out)}))
