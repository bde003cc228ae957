"""The detection oracle: onnxruntime plus a reference decode and NMS in numpy, written from docs/FORMAT.md section 4.3
and Ultralytics' letterbox / scale_boxes (run by the Swift tests; needs numpy, pillow, onnxruntime):

    python3 Tests/Fixtures/detect/reference_detect.py < request.json > detections.json

request: {"model": path, "input": name, "size": [h, w], "resize": "letterbox" | "exact", "padValue": 114,
          "scale": 1/255, "decoder": {...}, "nms": {...}, "photos": [paths]}
`decoder` is a DetectionConfig (docs/FORMAT.md 4.3) whose tensors are ONNX output names, in ONNX layout: heads
(N, channels, H, W). Prints {"photos": [[{"class", "score", "box": [x1, y1, x2, y2]}...], ...]} in photo pixels,
highest score first.
"""
import json
import sys

import numpy as np
import onnxruntime as ort
from PIL import Image


def letterbox(img, h, w, pad):
    iw, ih = img.size
    r = min(h / ih, w / iw)
    nw, nh = max(1, int(round(iw * r))), max(1, int(round(ih * r)))
    canvas = Image.new("RGB", (w, h), (int(pad),) * 3)
    canvas.paste(img.resize((nw, nh), Image.BILINEAR) if (nw, nh) != (iw, ih) else img, ((w - nw) // 2, (h - nh) // 2))
    gain = r
    pad_x = round((w - iw * gain) / 2 - 0.1)
    pad_y = round((h - ih * gain) / 2 - 0.1)
    return canvas, (gain, gain, pad_x, pad_y)


def sigmoid(x):
    return 1 / (1 + np.exp(-x.astype(np.float64)))


def decode(cfg, outs, item):
    """Candidates as rows (x1, y1, x2, y2, class, score) in decoding order."""
    rows = []
    c = cfg["classCount"]
    if cfg["decoder"] == "anchorGrid":
        for head in cfg["heads"]:
            t = outs[head["tensor"]][item]                      # (A·(5 + C), H, W)
            a_n = len(head["anchors"])
            _, gh, gw = t.shape
            t = t.reshape(a_n, 5 + c, gh, gw)
            s = head["stride"]
            for a, (aw, ah) in enumerate(head["anchors"]):
                p = t[a].astype(np.float64)
                gy, gx = np.mgrid[0:gh, 0:gw]
                if cfg["boxEncoding"] == "yolov5":
                    cx = (sigmoid(p[0]) * 2 - 0.5 + gx) * s
                    cy = (sigmoid(p[1]) * 2 - 0.5 + gy) * s
                    bw = (sigmoid(p[2]) * 2) ** 2 * aw
                    bh = (sigmoid(p[3]) * 2) ** 2 * ah
                else:
                    cx, cy = (sigmoid(p[0]) + gx) * s, (sigmoid(p[1]) + gy) * s
                    bw, bh = np.exp(p[2]) * aw, np.exp(p[3]) * ah
                cls = p[5:].argmax(0)
                score = sigmoid(p[4]) * sigmoid(np.take_along_axis(p[5:], cls[None], 0)[0])
                rows.append(np.stack([cx - bw / 2, cy - bh / 2, cx + bw / 2, cy + bh / 2, cls, score], -1).reshape(-1, 6))
    elif cfg["decoder"] == "anchorFree":
        bins = cfg.get("regMax") or 1
        for head in cfg["heads"]:
            t = outs[head["tensor"]][item].astype(np.float64)  # (4·bins + C, H, W)
            _, gh, gw = t.shape
            s = head["stride"]
            if bins > 1:
                b = t[:4 * bins].reshape(4, bins, gh, gw)
                e = np.exp(b - b.max(1, keepdims=True))
                d = (e * np.arange(bins)[None, :, None, None]).sum(1) / e.sum(1)
            else:
                d = t[:4]
            gy, gx = np.mgrid[0:gh, 0:gw] + 0.5
            logits = t[4 * bins:]
            cls = logits.argmax(0)
            score = sigmoid(np.take_along_axis(logits, cls[None], 0)[0])
            rows.append(np.stack([(gx - d[0]) * s, (gy - d[1]) * s, (gx + d[2]) * s, (gy + d[3]) * s, cls, score], -1).reshape(-1, 6))
    else:
        spec = cfg["boxes"]
        t = outs[spec["tensor"]][item].astype(np.float64)
        if spec["layout"] == "nkb":
            t = t.T                                          # (B, K)
        if spec.get("scoresTensor"):
            sc = outs[spec["scoresTensor"]][item].astype(np.float64)
            if spec["scoresLayout"] == "ncb":
                sc = sc.T
        else:
            first = 5 if spec["objectness"] else 4
            sc = t[:, first:first + c]
        if spec.get("scoreActivation") == "sigmoid":
            sc = sigmoid(sc)
        cls = sc.argmax(1)
        score = sc[np.arange(len(sc)), cls]
        if spec["objectness"] and not spec.get("scoresTensor"):
            obj = sigmoid(t[:, 4]) if spec.get("scoreActivation") == "sigmoid" else t[:, 4]
            score = score * obj
        a = t[:, :4]
        enc = cfg["boxEncoding"]
        if enc == "cxcywh":
            box = np.stack([a[:, 0] - a[:, 2] / 2, a[:, 1] - a[:, 3] / 2, a[:, 0] + a[:, 2] / 2, a[:, 1] + a[:, 3] / 2], 1)
        elif enc == "yxyx":
            box = np.stack([np.minimum(a[:, 1], a[:, 3]), np.minimum(a[:, 0], a[:, 2]), np.maximum(a[:, 1], a[:, 3]), np.maximum(a[:, 0], a[:, 2])], 1)
        else:
            box = np.stack([np.minimum(a[:, 0], a[:, 2]), np.minimum(a[:, 1], a[:, 3]), np.maximum(a[:, 0], a[:, 2]), np.maximum(a[:, 1], a[:, 3])], 1)
        rows.append(np.concatenate([box, cls[:, None], score[:, None]], 1))
    return np.concatenate(rows, 0) if rows else np.zeros((0, 6))


def iou(a, b):
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return 0.0
    aa, ab = (a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1])
    if aa <= 0 or ab <= 0:
        return 0.0
    inter = w * h
    return inter / (aa + ab - inter)


def nms(rows, s):
    keep_idx = [i for i in range(len(rows)) if rows[i, 5] > s["confidenceThreshold"]]
    keep_idx.sort(key=lambda i: (-rows[i, 5], i))
    kept, per_class = [], {}
    for i in keep_idx:
        if len(kept) >= s["maxDetections"]:
            break
        c = int(rows[i, 4])
        if s.get("maxPerClass") and per_class.get(c, 0) >= s["maxPerClass"]:
            continue
        if any((not s["perClass"] or int(rows[k, 4]) == c) and iou(rows[i], rows[k]) > s["iouThreshold"] for k in kept):
            continue
        kept.append(i)
        per_class[c] = per_class.get(c, 0) + 1
    return kept


def main():
    req = json.load(sys.stdin)
    sess = ort.InferenceSession(req["model"], providers=["CPUExecutionProvider"])
    h, w = req["size"]
    cfg = req["decoder"]
    result = []
    for path in req["photos"]:
        img = Image.open(path).convert("RGB")
        iw, ih = img.size
        if req["resize"] == "letterbox":
            canvas, (gx, gy, px, py) = letterbox(img, h, w, req.get("padValue", 0))
        else:
            canvas = img.resize((w, h), Image.BILINEAR) if (iw, ih) != (w, h) else img
            gx, gy, px, py = w / iw, h / ih, 0, 0
        x = (np.asarray(canvas, dtype=np.float32) * np.float32(req["scale"])).transpose(2, 0, 1)[None]
        names = [o.name for o in sess.get_outputs()]
        outs = dict(zip(names, sess.run(None, {req["input"]: x})))
        rows = decode(cfg, outs, 0)
        objects = []
        for i in nms(rows, req["nms"]):
            x1, y1, x2, y2, c, score = rows[i]
            box = [(x1 - px) / gx, (y1 - py) / gy, (x2 - px) / gx, (y2 - py) / gy]
            box = [min(max(box[0], 0), iw), min(max(box[1], 0), ih), min(max(box[2], 0), iw), min(max(box[3], 0), ih)]
            objects.append({"class": int(c), "score": float(score), "box": [float(v) for v in box]})
        result.append(objects)
    json.dump({"photos": result}, sys.stdout)


if __name__ == "__main__":
    main()
