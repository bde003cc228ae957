#!/usr/bin/env python3
"""Oracle for the detector TFLite export tests: runs an exported detector (decoder + NMS inside the graph) in LiteRT.

Usage: run_detector_tflite.py MODEL.tflite INPUT.npy [INPUT.npy ...]
Each INPUT is one preprocessed image, NHWC float32 (1, H, W, C). Prints one JSON line: the input's name and shape,
the outputs' names, types and shape signatures, the builtin operators in order (LiteRT's generated schema), the
"mltool" metadata entry, and per input the outputs ("boxes" (K, 4), "scores" (K), "labels" (K)) read by name.
Exit 3 when ai_edge_litert (pip install ai-edge-litert) is missing, so the caller can skip loudly.
"""
import json
import sys

try:
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.interpreter import Interpreter
except ImportError as e:  # pragma: no cover
    print(f"ai_edge_litert missing: {e}", file=sys.stderr)
    sys.exit(3)

model_path, inputs = sys.argv[1], sys.argv[2:]
data = open(model_path, "rb").read()
interpreter = Interpreter(model_path=model_path, num_threads=1)
interpreter.allocate_tensors()
inp = interpreter.get_input_details()[0]
outs = {o["name"]: o for o in interpreter.get_output_details()}
results = []
for path in inputs:
    interpreter.set_tensor(inp["index"], np.load(path).astype(np.float32))
    interpreter.invoke()
    get = lambda name: interpreter.get_tensor(outs[name]["index"])
    labels = get("detected_labels")
    results.append({
        "boxes": get("detected_boxes").astype(float).tolist(),
        "scores": get("detected_scores").astype(float).tolist(),
        "labels": [int(v) for v in labels],
        "label_dtype": str(labels.dtype),
    })

m = schema.ModelT.InitFromPackedBuf(data, 0)
names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
g = m.subgraphs[0]
metadata = {e.name.decode(): bytes(m.buffers[e.buffer].data).decode("utf-8", "replace") for e in m.metadata or []}
print(json.dumps({
    "input": inp["name"], "input_shape": [int(d) for d in inp["shape"]],
    "outputs": [{"name": o["name"], "type": np.dtype(o["dtype"]).name, "signature": [int(d) for d in o["shape_signature"]]}
                for o in interpreter.get_output_details()],
    "ops": [names[m.operatorCodes[o.opcodeIndex].builtinCode] for o in g.operators],
    "mltool": json.loads(metadata.get("mltool", "{}")),
    "results": results,
}))
