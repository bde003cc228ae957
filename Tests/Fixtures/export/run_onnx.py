#!/usr/bin/env python3
"""Oracle for MLToolExportTests: runs an exported ONNX model in onnxruntime.

Usage: run_onnx.py MODEL.onnx INPUT.npy OUTPUT.npy
INPUT is the preprocessed batch in NCHW float32; OUTPUT gets the model's first output. Prints a JSON summary
(input/output names and shapes, metadata keys, opset, initializer dtypes) on stdout. Exit 3 when onnxruntime is
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
s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
x = np.load(input_path).astype(np.float32)
y = s.run(None, {s.get_inputs()[0].name: x})[0]
np.save(output_path, y.astype(np.float32))
types = sorted({onnx.TensorProto.DataType.Name(t.data_type) for t in m.graph.initializer})
print(json.dumps({
    "input": s.get_inputs()[0].name, "input_shape": [str(d) for d in s.get_inputs()[0].shape],
    "outputs": [o.name for o in s.get_outputs()], "output_shape": list(y.shape),
    "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0],
    "metadata": {p.key: p.value for p in m.metadata_props},
    "initializer_types": types,
    "dequantize_nodes": sum(1 for n in m.graph.node if n.op_type == "DequantizeLinear"),
}))
