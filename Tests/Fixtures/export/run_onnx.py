#!/usr/bin/env python3
"""Oracle for MLToolExportTests: runs an exported ONNX model in onnxruntime.

Usage: run_onnx.py MODEL.onnx INPUT.npy OUTPUT.npy
INPUT is the preprocessed batch in NCHW float32; OUTPUT gets the model's first output, computed with the session
option session.disable_quant_qdq=1: with it onnxruntime dequantizes int8 weights exactly as written; by default its
extended optimizations fuse DequantizeLinear into int8 kernels, which changes the numbers (reported as
"default_session_max_diff"). Prints a JSON summary (input/output names and shapes, metadata, opset, initializer
dtypes) on stdout. Exit 3 when onnxruntime is
missing, so the caller can skip loudly.
"""
import json
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # pragma: no cover
    print(f"missing: {e}", file=sys.stderr)
    sys.exit(3)

model_path, input_path, output_path = sys.argv[1:4]
m = onnx.load(model_path)
onnx.checker.check_model(m)
options = ort.SessionOptions()
options.add_session_config_entry("session.disable_quant_qdq", "1")
s = ort.InferenceSession(model_path, options, providers=["CPUExecutionProvider"])
x = np.load(input_path).astype(np.float32)
y = s.run(None, {s.get_inputs()[0].name: x})[0]
default = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
y_default = default.run(None, {s.get_inputs()[0].name: x})[0]
np.save(output_path, y.astype(np.float32))
types = sorted({onnx.TensorProto.DataType.Name(t.data_type) for t in m.graph.initializer})
print(json.dumps({
    "input": s.get_inputs()[0].name, "input_shape": [str(d) for d in s.get_inputs()[0].shape],
    "outputs": [o.name for o in s.get_outputs()], "output_shape": list(y.shape),
    "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0],
    "metadata": {p.key: p.value for p in m.metadata_props},
    "initializer_types": types,
    "dequantize_nodes": sum(1 for n in m.graph.node if n.op_type == "DequantizeLinear"),
    "default_session_max_diff": float(np.max(np.abs(y - y_default))),
}))
