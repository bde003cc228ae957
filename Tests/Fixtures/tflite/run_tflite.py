#!/usr/bin/env python3
"""Oracle for TFLiteExportTests: runs an exported TensorFlow Lite model in LiteRT's interpreter.

Usage: run_tflite.py MODEL.tflite INPUT.npy OUTPUT.npy
INPUT is the preprocessed batch in NHWC float32 (the input is resized to its batch); OUTPUT gets the model's first
output. Prints a JSON summary on stdout: the file identifier, schema version, input/output names, shapes and shape
signatures, the builtin operators in order, tensor types, each int8 tensor's quantization (quantized_dimension,
scale count, zero-point count, shape), the metadata entry names and the "mltool" metadata entry (JSON), read back
from the flatbuffer with LiteRT's generated schema (ModelT.InitFromPackedBuf), and the files of the zip appended to
the model (Python's zipfile, CRCs checked).
Exit 3 when ai_edge_litert (pip install ai-edge-litert) is missing, so the caller can skip loudly.
"""
import json
import sys
import zipfile

try:
    import numpy as np
    from ai_edge_litert import schema_py_generated as schema
    from ai_edge_litert.interpreter import Interpreter
except ImportError as e:  # pragma: no cover
    print(f"ai_edge_litert missing: {e}", file=sys.stderr)
    sys.exit(3)

model_path, input_path, output_path = sys.argv[1:4]
data = open(model_path, "rb").read()
x = np.load(input_path).astype(np.float32)

interpreter = Interpreter(model_path=model_path, num_threads=1)
inp = interpreter.get_input_details()[0]
interpreter.resize_tensor_input(inp["index"], list(x.shape))
interpreter.allocate_tensors()
interpreter.set_tensor(inp["index"], x)
interpreter.invoke()
out = interpreter.get_output_details()[0]
y = interpreter.get_tensor(out["index"])
np.save(output_path, y.astype(np.float32))

m = schema.ModelT.InitFromPackedBuf(data, 0)
names = {v: k for k, v in vars(schema.BuiltinOperator).items() if not k.startswith("_")}
types = {v: k for k, v in vars(schema.TensorType).items() if not k.startswith("_")}
g = m.subgraphs[0]
ops = [names[m.operatorCodes[o.opcodeIndex].builtinCode] for o in g.operators]
metadata = {}
for e in m.metadata or []:
    raw = m.buffers[e.buffer].data
    metadata[e.name.decode()] = bytes(raw).decode("utf-8", "replace") if raw is not None else ""
with zipfile.ZipFile(model_path) as z:  # the associated files appended after the flatbuffer
    assert z.testzip() is None
    files = {n: z.read(n).decode("utf-8", "replace") for n in z.namelist()}
def dims(t):
    return [int(d) for d in (t.shape if t.shape is not None else [])]
def count(v):
    return 0 if v is None else len(v)
quantized = {t.name.decode(): [int(t.quantization.quantizedDimension), count(t.quantization.scale),
                                count(t.quantization.zeroPoint), dims(t)]
             for t in g.tensors if types[t.type] == "INT8" and t.quantization is not None}
print(json.dumps({
    "identifier": data[4:8].decode("latin-1"), "version": int(m.version),
    "input": g.tensors[g.inputs[0]].name.decode(), "input_shape": dims(g.tensors[g.inputs[0]]),
    "input_signature": [int(d) for d in g.tensors[g.inputs[0]].shapeSignature],
    "output": g.tensors[g.outputs[0]].name.decode(), "output_shape": list(y.shape),
    "ops": ops, "tensor_types": sorted({types[t.type] for t in g.tensors}), "quantized": quantized,
    "metadata_names": sorted(metadata), "mltool": json.loads(metadata.get("mltool", "{}")),
    "description": (m.description or b"").decode(), "zip": files,
}))
