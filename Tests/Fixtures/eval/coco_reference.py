"""pycocotools' COCOeval on boxes given as JSON (run by the Swift tests; needs pip pycocotools and numpy):

    python3 Tests/Fixtures/eval/coco_reference.py < request.json

request: {"labels": [...], "truth": [[{"label", "box": [x, y, w, h]}...] per photo],
          "detections": [[{"label", "score", "box": [x, y, w, h]}...] per photo]}
Prints {"mAP50", "mAP50to95", "perClass": {label: {"ap50", "ap50to95"}}} (-1 where pycocotools has no value),
with iouType "bbox", area "all", maxDets 100 (the last of the default [1, 10, 100]).
"""
import contextlib
import io
import json
import sys

import numpy as np
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval


def main():
    req = json.load(sys.stdin)
    labels = req["labels"]
    cat = {l: i + 1 for i, l in enumerate(labels)}
    images, anns, dets = [], [], []
    for i, (truth, found) in enumerate(zip(req["truth"], req["detections"])):
        images.append({"id": i + 1, "width": 10000, "height": 10000})
        for t in truth:
            x, y, w, h = t["box"]
            anns.append({"id": len(anns) + 1, "image_id": i + 1, "category_id": cat[t["label"]], "bbox": [x, y, w, h],
                         "area": w * h, "iscrowd": 0})
        for d in found:
            dets.append({"image_id": i + 1, "category_id": cat[d["label"]], "bbox": d["box"], "score": d["score"]})
    gt = COCO()
    gt.dataset = {"images": images, "annotations": anns, "categories": [{"id": v, "name": k} for k, v in cat.items()]}
    with contextlib.redirect_stdout(io.StringIO()):
        gt.createIndex()
        dt = gt.loadRes(dets) if dets else COCO()
        ev = COCOeval(gt, dt, "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    p = ev.eval["precision"]                              # (T, R, K, A, M)
    per = {}
    for k, label in enumerate(labels):
        s = p[:, :, k, 0, 2]
        s50 = p[0, :, k, 0, 2]
        per[label] = {"ap50": float(np.mean(s50[s50 > -1])) if (s50 > -1).any() else -1,
                      "ap50to95": float(np.mean(s[s > -1])) if (s > -1).any() else -1}
    json.dump({"mAP50": float(ev.stats[1]), "mAP50to95": float(ev.stats[0]), "perClass": per}, sys.stdout)


if __name__ == "__main__":
    main()
