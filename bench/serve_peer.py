"""make bench part 17's peer: FastAPI + uvicorn + onnxruntime serving the same model mltool serves, exported to ONNX by
`mltool export`, with the preprocessing the model records (`mltool info --json`). An image classifier: PIL bilinear,
shorter side to resizeTo, centre crop, x * scale + bias (recipes/efficientnet_lite0.py's `preprocess`), answered
with the top three labels as `mltool predict --json` does. A detector (the export holds the decoder and NMS:
detected_boxes in model-input pixels, detected_scores, detected_labels): PIL bilinear letterbox onto a canvas of
padValue (docs/FORMAT.md, ImagePreprocessing), boxes mapped back to the photo's pixels, answered with the photo's
size and its objects as `mltool predict --json` does.

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


def center_crop(img):
    w, h = img.size
    s = prep["resizeTo"] / min(w, h)
    img = img.resize((round(w * s), round(h * s)), Image.BILINEAR)
    w, h = img.size
    left, top = (w - prep["width"]) // 2, (h - prep["height"]) // 2
    return img.crop((left, top, left + prep["width"], top + prep["height"])), None


def letterbox(img):
    w, h = img.size
    r = min(prep["height"] / h, prep["width"] / w)
    nw, nh = max(1, round(w * r)), max(1, round(h * r))
    left, top = (prep["width"] - nw) // 2, (prep["height"] - nh) // 2
    pad = int(prep.get("padValue", 0))
    canvas = Image.new("RGB", (prep["width"], prep["height"]), (pad, pad, pad))
    canvas.paste(img.resize((nw, nh), Image.BILINEAR), (left, top))
    return canvas, (r, left, top)


def preprocess(body):
    img = Image.open(io.BytesIO(body)).convert("RGB")
    fitted, placement = (letterbox if prep["resize"] == "letterbox" else center_crop)(img)
    x = np.asarray(fitted, dtype=np.float32) * scale + bias
    return (x.transpose(2, 0, 1) if nchw else x)[None], img.size, placement


def classify(x):
    y = session.run(None, {first.name: x})[0][0]
    if not (y.min() >= 0 and abs(float(y.sum()) - 1) < 1e-3):  # logits (the export may end in a softmax already)
        e = np.exp(y - y.max())
        y = e / e.sum()
    top = np.argsort(-y, kind="stable")[:3]
    return {"file": "body", "top": [{"label": labels[i], "index": int(i), "probability": float(y[i])} for i in top]}


def detect(x, size, placement):
    boxes, scores, classes = session.run(["detected_boxes", "detected_scores", "detected_labels"], {first.name: x})
    (w, h), (r, left, top) = size, placement
    objects = []
    for (x1, y1, x2, y2), score, c in zip(boxes.reshape(-1, 4), scores.reshape(-1), classes.reshape(-1)):
        x1, x2 = (min(max((v - left) / r, 0), w) for v in (x1, x2))
        y1, y2 = (min(max((v - top) / r, 0), h) for v in (y1, y2))
        box = {"x": float(x1), "y": float(y1), "width": float(x2 - x1), "height": float(y2 - y1)}
        normalized = {"x": box["x"] / w, "y": 1 - float(y2) / h, "width": box["width"] / w, "height": box["height"] / h}
        objects.append({"label": labels[int(c)], "classIndex": int(c), "confidence": float(score), "box": box,
                        "normalizedBox": normalized})
    return {"path": "body", "width": w, "height": h, "objects": objects}


@app.post("/v1/models/{name}/predict")
async def predict(name: str, request: Request):
    x, size, placement = preprocess(await request.body())
    out = detect(x, size, placement) if placement is not None else classify(x)
    return Response(json.dumps(out), media_type="application/json")


@app.get("/healthz")
def healthz():
    return Response("ok\n", media_type="text/plain")


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
