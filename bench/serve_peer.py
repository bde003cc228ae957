"""make bench part 17's peer: FastAPI + uvicorn + onnxruntime serving the same model mltool serves, exported to ONNX by
`mltool export`, with the preprocessing the model records (`mltool info --json`: PIL bilinear, shorter side to
resizeTo, centre crop, x * scale + bias) — recipes/efficientnet_lite0.py's `preprocess` for the Fashion-MNIST model.
Answers POST /v1/models/NAME/predict (image bytes) with the top three labels as `mltool predict --json` does.

    python3 bench/serve_peer.py MODEL.onnx INFO.json PORT
"""
import io
import json
import sys

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, Request, Response
from PIL import Image

onnx_path, info_path, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(info_path) as f:
    info = json.load(f)
prep, labels = info["preprocessing"], info["labels"]
session = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
first = session.get_inputs()[0]
nchw = first.shape[1] == 3
scale, bias = np.float32(prep["scale"]), np.asarray(prep["bias"], dtype=np.float32)
app = FastAPI()


def preprocess(body):
    img = Image.open(io.BytesIO(body)).convert("RGB")
    w, h = img.size
    s = prep["resizeTo"] / min(w, h)
    img = img.resize((round(w * s), round(h * s)), Image.BILINEAR)
    w, h = img.size
    left, top = (w - prep["width"]) // 2, (h - prep["height"]) // 2
    x = np.asarray(img.crop((left, top, left + prep["width"], top + prep["height"])), dtype=np.float32) * scale + bias
    return (x.transpose(2, 0, 1) if nchw else x)[None]


@app.post("/v1/models/{name}/predict")
async def predict(name: str, request: Request):
    body = await request.body()
    y = session.run(None, {first.name: preprocess(body)})[0][0]
    if not (y.min() >= 0 and abs(float(y.sum()) - 1) < 1e-3):  # logits (the export may end in a softmax already)
        e = np.exp(y - y.max())
        y = e / e.sum()
    top = np.argsort(-y, kind="stable")[:3]
    out = {"file": "body", "top": [{"label": labels[i], "index": int(i), "probability": float(y[i])} for i in top]}
    return Response(json.dumps(out), media_type="application/json")


@app.get("/healthz")
def healthz():
    return Response("ok\n", media_type="text/plain")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
