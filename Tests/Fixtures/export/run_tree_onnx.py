#!/usr/bin/env python3
"""Oracle for TreeEnsembleExportTests: runs an exported tabular model (ONNX-ML tree ensemble) in onnxruntime.

Usage: run_tree_onnx.py MODEL.onnx FEATURES.npy OUTPUT.npy
FEATURES is the (N, F) float32 input `features`; OUTPUT gets `probabilities` (N, C) of a classifier or `prediction`
(N, 1) of a regressor. Prints a JSON summary on stdout: the input's name and shape, the outputs' names, the opsets,
the op types, the metadata and (classifiers) the `label` output as a list of strings. The model must pass
onnx.checker. Exit 3 when onnx or onnxruntime is missing, so the caller can skip loudly.
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
onnx.checker.check_model(m, full_check=True)
s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
x = np.load(input_path).astype(np.float32)
names = [o.name for o in s.get_outputs()]
results = dict(zip(names, s.run(None, {"features": x})))
summary = {
    "input": s.get_inputs()[0].name,
    "input_shape": [str(d) for d in s.get_inputs()[0].shape],
    "outputs": names,
    "opsets": {o.domain: o.version for o in m.opset_import},
    "ops": sorted({n.op_type for n in m.graph.node}),
    "metadata": {p.key: p.value for p in m.metadata_props},
}
if "label" in results:
    summary["labels"] = [str(v) for v in results["label"]]
    np.save(output_path, results["probabilities"].astype(np.float32))
else:
    np.save(output_path, results["prediction"].astype(np.float32))
print(json.dumps(summary))
