#!/usr/bin/env python3
"""The safetensors oracle of SafetensorsTests: reads {"path": FILE} on stdin, parses the file with json and numpy
(independently of mltool's reader: numpy views of the data buffer by each tensor's data_offsets) and writes, per
float tensor, its dtype, shape, the float64 sum of its values and its first 8 values: {"tensors": {name: {...}}}."""
import json, struct, sys

import numpy as np

DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}

request = json.load(sys.stdin)
with open(request["path"], "rb") as f:
    raw = f.read()
(n,) = struct.unpack("<Q", raw[:8])
header = json.loads(raw[8:8 + n])
data = memoryview(raw)[8 + n:]
out = {}
for name, t in header.items():
    if name == "__metadata__":
        continue
    begin, end = t["data_offsets"]
    entry = {"dtype": t["dtype"], "shape": t["shape"]}
    if t["dtype"] in DTYPES:
        v = np.frombuffer(data[begin:end], dtype=DTYPES[t["dtype"]]).astype(np.float64)
        entry["sum"] = float(v.sum())
        entry["first"] = [float(x) for x in v[:8]]
    out[name] = entry
json.dump({"tensors": out}, sys.stdout)
