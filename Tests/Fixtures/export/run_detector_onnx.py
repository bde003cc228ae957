#!/usr/bin/env python3
"""Oracle for the detector export tests: runs an exported detector (decode + NMS inside the graph) in onnxruntime.

Usage: run_detector_onnx.py MODEL.onnx INPUT.npy [INPUT.npy ...]
Each INPUT is one preprocessed image, NCHW float32 (1, C, H, W). Prints one JSON line: the graph's input and output
names, element types and shapes, its opset, metadata_props, the op types it uses, and per input the outputs
("boxes" (K, 4), "scores" (K), "labels" (K)). Exit 3 when onnxruntime is missing, so the caller can skip loudly.
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

model_path, inputs = sys.argv[1], sys.argv[2:]
m = onnx.load(model_path)
onnx.checker.check_model(m, full_check=True)
s = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
names = [o.name for o in s.get_outputs()]
results = []
for path in inputs:
    x = np.load(path).astype(np.float32)
    out = dict(zip(names, s.run(None, {s.get_inputs()[0].name: x})))
    results.append({
        "boxes": out["detected_boxes"].astype(float).tolist(),
        "scores": out["detected_scores"].astype(float).tolist(),
        "labels": [int(v) for v in out["detected_labels"]],
        "label_dtype": str(out["detected_labels"].dtype),
    })
print(json.dumps({
    "input": s.get_inputs()[0].name, "input_shape": [str(d) for d in s.get_inputs()[0].shape],
    "outputs": [{"name": o.name, "type": o.type, "shape": [str(d) for d in o.shape]} for o in s.get_outputs()],
    "opset": [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")][0],
    "metadata": {p.key: p.value for p in m.metadata_props},
    "ops": sorted({n.op_type for n in m.graph.node}),
    "results": results,
}))
