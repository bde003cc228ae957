"""Writes two small detectors trained and exported by real PyTorch (run from the repository root, once, by hand):

    /usr/bin/python3 Tests/Fixtures/detect/make_detect_fixtures.py     # Debian's python3-torch (1.13) is enough

Both learn the same synthetic task in about a minute on a CPU: 96×96 images of noise and soft gradients holding one
to three objects of two classes, filled squares ("square") and filled disks ("disk"), 12–44 px wide, random colours.
Training is seeded; the losses are simplified YOLO losses (centre-cell assignment), enough for confident, separated
detections. The networks (eval mode, BatchNorm statistics from training):

- tiny_yolov3: YOLOv3-tiny-style. Conv-BN-LeakyReLU(0.1) with MaxPools, heads at strides 8 and 16, 3 anchors each,
  the stride-16 branch upsampled (nn.Upsample nearest → Resize asymmetric/floor) and concatenated. Its forward
  decodes like YOLOv5's Detect (in the graph: reshape to (N, 3, 7, H, W), permute, sigmoid, xy = (2σ − 0.5 + grid)·s,
  wh = (2σ)²·anchor, concat → (N, boxes, 4 + 1 + classes) in input pixels) and also returns the raw head maps.
- tiny_yolov8: YOLOv8-style. Conv-BN-SiLU, C2f blocks (Split + bottlenecks + Concat), SPPF (three 5×5 MaxPools),
  a bilinear upsample (Resize linear / pytorch_half_pixel), anchor-free DFL heads (16 bins, Softmax over the bin
  axis, a fixed 1×1 conv) at strides 8 and 16. Exported with dynamic batch, height and width like Ultralytics'
  exports, so the anchor grid is shape arithmetic (Shape, Gather, Range, Expand, ConstantOfShape...) that the
  importer folds for a fixed input size. Output (N, 4 + classes, boxes): centre x, y, width, height in input pixels,
  then class probabilities; the raw head maps are outputs too.

Written to Tests/Fixtures/detect/: <name>.onnx, test photos test<k>.png (96×96 and a 128×80 one that letterboxes),
<name>.in.f32 (test0 as the network input, NCHW, pixel/255) with torch's outputs <name>.out.<output>.f32, and
manifest.json (anchors, strides, classes, shapes). The Swift tests need no torch.
"""
import json
import math
import os

import numpy as np
import torch
from PIL import Image
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
OPSET = 17
SIZE = 96
CLASSES = ["square", "disk"]
NC = len(CLASSES)
ANCHORS = {8: [(12, 12), (20, 20), (28, 28)], 16: [(28, 28), (38, 38), (48, 48)]}
REG_MAX = 16


# ---------------------------------------------------------------- data

def draw_scene(rng, w=SIZE, h=SIZE, count=None):
    """An RGB float image in [0, 1] and its boxes [(class, x1, y1, x2, y2)] in pixels."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    base = rng.uniform(0.2, 0.8, 3).astype(np.float32)
    grad = rng.uniform(-0.3, 0.3, 2).astype(np.float32)
    img = base[None, None, :] + (grad[0] * xx / w + grad[1] * yy / h)[:, :, None]
    img = img + rng.normal(0, 0.06, (h, w, 3)).astype(np.float32)
    boxes = []
    n = count if count is not None else rng.integers(1, 4)
    tries = 0
    while len(boxes) < n and tries < 50:
        tries += 1
        c = int(rng.integers(0, NC))
        s = float(rng.uniform(12, 44))
        x1, y1 = rng.uniform(0, w - s), rng.uniform(0, h - s)
        x2, y2 = x1 + s, y1 + s
        if any(not (x2 < b[1] - 2 or x1 > b[3] + 2 or y2 < b[2] - 2 or y1 > b[4] + 2) for b in boxes):
            continue
        colour = rng.uniform(0, 1, 3).astype(np.float32)
        if np.abs(colour - base).max() < 0.35:
            colour = 1 - base
        if c == 0:
            mask = (xx >= x1) & (xx < x2) & (yy >= y1) & (yy < y2)
        else:
            mask = (xx + 0.5 - (x1 + x2) / 2) ** 2 + (yy + 0.5 - (y1 + y2) / 2) ** 2 <= (s / 2) ** 2
        img[mask] = colour
        boxes.append((c, x1, y1, x2, y2))
    return np.clip(img, 0, 1), boxes


def batch(rng, n):
    imgs, targets = [], []
    for i in range(n):
        img, boxes = draw_scene(rng)
        imgs.append(img.transpose(2, 0, 1))
        targets.append(boxes)
    return torch.from_numpy(np.stack(imgs)), targets


# ---------------------------------------------------------------- tiny YOLOv3 (anchor grid)

class ConvL(nn.Sequential):
    def __init__(self, cin, cout, k=3, s=1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.LeakyReLU(0.1))


class TinyYOLOv3(nn.Module):
    def __init__(self):
        super().__init__()
        self.na, self.no = 3, 5 + NC
        self.b1 = nn.Sequential(ConvL(3, 16), nn.MaxPool2d(2), ConvL(16, 32), nn.MaxPool2d(2), ConvL(32, 48),
                                nn.MaxPool2d(2), ConvL(48, 64))                  # stride 8
        self.b2 = nn.Sequential(nn.MaxPool2d(2), ConvL(64, 96), ConvL(96, 64, 1))  # stride 16
        self.head16 = nn.Sequential(ConvL(64, 96), nn.Conv2d(96, self.na * self.no, 1))
        self.lateral = ConvL(64, 32, 1)
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.head8 = nn.Sequential(ConvL(96, 64), nn.Conv2d(64, self.na * self.no, 1))
        self.decode = False
        for h in (self.head8[-1], self.head16[-1]):
            with torch.no_grad():
                h.bias.view(self.na, self.no)[:, 4] = -4.0

    def raw(self, x):
        p8 = self.b1(x)
        p16 = self.b2(p8)
        r16 = self.head16(p16)
        r8 = self.head8(torch.cat([self.up(self.lateral(p16)), p8], 1))
        return r8, r16

    def forward(self, x):
        r8, r16 = self.raw(x)
        if not self.decode:
            return r8, r16
        out = []
        for r, s in ((r8, 8), (r16, 16)):
            n, _, ny, nx = r.shape
            y = r.view(n, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).sigmoid()
            gy, gx = torch.meshgrid(torch.arange(ny, dtype=torch.float32), torch.arange(nx, dtype=torch.float32), indexing="ij")
            grid = torch.stack((gx, gy), 2).view(1, 1, ny, nx, 2)
            anchor = torch.tensor(ANCHORS[s], dtype=torch.float32).view(1, self.na, 1, 1, 2)
            xy = (y[..., 0:2] * 2 - 0.5 + grid) * s
            wh = (y[..., 2:4] * 2) ** 2 * anchor
            out.append(torch.cat((xy, wh, y[..., 4:]), 4).view(n, -1, self.no))
        return torch.cat(out, 1), r8, r16


def v3_loss(model, r8, r16, targets):
    bce = nn.BCEWithLogitsLoss(reduction="sum")
    total = 0.0
    for r, s in ((r8, 8), (r16, 16)):
        n, _, ny, nx = r.shape
        p = r.view(n, model.na, model.no, ny, nx).permute(0, 1, 3, 4, 2)
        obj_t = torch.zeros(n, model.na, ny, nx)
        anchors = torch.tensor(ANCHORS[s], dtype=torch.float32)
        box_loss, cls_loss = 0.0, 0.0
        for b, boxes in enumerate(targets):
            for c, x1, y1, x2, y2 in boxes:
                w, h = x2 - x1, y2 - y1
                ratio = torch.max(torch.tensor([w, h]) / anchors, anchors / torch.tensor([w, h])).max(1).values
                a = int(ratio.argmin())
                if ratio[a] > 2.0:
                    continue
                cx, cy = (x1 + x2) / 2 / s, (y1 + y2) / 2 / s
                gi, gj = min(int(cx), nx - 1), min(int(cy), ny - 1)
                obj_t[b, a, gj, gi] = 1
                q = p[b, a, gj, gi]
                xy = q[0:2].sigmoid() * 2 - 0.5
                wh = (q[2:4].sigmoid() * 2) ** 2 * anchors[a]
                box_loss = box_loss + (xy - torch.tensor([cx - gi, cy - gj])).abs().sum() + ((wh - torch.tensor([w, h])) / anchors[a]).abs().sum()
                cls_t = torch.zeros(NC)
                cls_t[c] = 1
                cls_loss = cls_loss + bce(q[5:], cls_t)
        total = total + bce(p[..., 4], obj_t) / n + (box_loss * 2 + cls_loss) / n
    return total


# ---------------------------------------------------------------- tiny YOLOv8 (anchor-free, DFL)

class ConvS(nn.Sequential):
    def __init__(self, cin, cout, k=3, s=1):
        super().__init__(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), nn.SiLU())


class Bottleneck(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1, self.cv2 = ConvS(c, c), ConvS(c, c)

    def forward(self, x):
        return x + self.cv2(self.cv1(x))


class C2f(nn.Module):
    def __init__(self, cin, cout, n=1):
        super().__init__()
        self.c = cout // 2
        self.cv1 = ConvS(cin, 2 * self.c, 1)
        self.cv2 = ConvS((2 + n) * self.c, cout, 1)
        self.m = nn.ModuleList(Bottleneck(self.c) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).split((self.c, self.c), 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cv1 = ConvS(c, c // 2, 1)
        self.cv2 = ConvS(c // 2 * 4, c, 1)
        self.m = nn.MaxPool2d(5, 1, 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class TinyYOLOv8(nn.Module):
    def __init__(self):
        super().__init__()
        self.p3 = nn.Sequential(ConvS(3, 16, 3, 2), ConvS(16, 32, 3, 2), C2f(32, 32), ConvS(32, 48, 3, 2), C2f(48, 48))
        self.p4 = nn.Sequential(ConvS(48, 56, 3, 2), C2f(56, 56), SPPF(56))
        self.up = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.n3 = C2f(104, 48)
        self.down = ConvS(48, 48, 3, 2)
        self.n4 = C2f(104, 56)
        self.box = nn.ModuleList(nn.Sequential(ConvS(c, 24), ConvS(24, 24), nn.Conv2d(24, 4 * REG_MAX, 1)) for c in (48, 56))
        self.cls = nn.ModuleList(nn.Sequential(ConvS(c, 24), ConvS(24, 24), nn.Conv2d(24, NC, 1)) for c in (48, 56))
        self.dfl = nn.Conv2d(REG_MAX, 1, 1, bias=False).requires_grad_(False)
        with torch.no_grad():
            self.dfl.weight.copy_(torch.arange(REG_MAX, dtype=torch.float32).view(1, REG_MAX, 1, 1))
            for m, s in zip(self.cls, (8, 16)):
                m[-1].bias.fill_(math.log(5 / NC / (SIZE / s) ** 2))
        self.decode = False

    def raw(self, x):
        p3 = self.p3(x)
        p4 = self.p4(p3)
        n3 = self.n3(torch.cat([self.up(p4), p3], 1))
        n4 = self.n4(torch.cat([self.down(n3), p4], 1))
        return [torch.cat([self.box[i](f), self.cls[i](f)], 1) for i, f in enumerate((n3, n4))]

    def forward(self, x):
        heads = self.raw(x)
        if not self.decode:
            return heads
        # As Ultralytics' Detect in export mode: anchors from the feature sizes (dynamic shapes), DFL, xywh · stride.
        anchors, strides = [], []
        for f, s in zip(heads, (8, 16)):
            _, _, h, w = f.shape
            sx = torch.arange(end=w, dtype=torch.float32) + 0.5
            sy = torch.arange(end=h, dtype=torch.float32) + 0.5
            sy, sx = torch.meshgrid(sy, sx, indexing="ij")
            anchors.append(torch.stack((sx, sy), -1).view(-1, 2))
            strides.append(torch.full((h * w, 1), s, dtype=torch.float32))
        anchor_points = torch.cat(anchors).transpose(0, 1).unsqueeze(0)
        stride_tensor = torch.cat(strides).transpose(0, 1)
        b = heads[0].shape[0]
        x_cat = torch.cat([f.view(b, 4 * REG_MAX + NC, -1) for f in heads], 2)
        box, cls = x_cat.split((4 * REG_MAX, NC), 1)
        a = box.shape[2]
        dist = self.dfl(box.view(b, 4, REG_MAX, a).transpose(2, 1).softmax(1)).view(b, 4, a)
        lt, rb = dist.chunk(2, 1)
        x1y1, x2y2 = anchor_points - lt, anchor_points + rb
        xywh = torch.cat(((x1y1 + x2y2) / 2, x2y2 - x1y1), 1) * stride_tensor
        return torch.cat((xywh, cls.sigmoid()), 1), heads[0], heads[1]


def v8_loss(model, heads, targets):
    bce = nn.BCEWithLogitsLoss(reduction="sum")
    total = 0.0
    for f, s in zip(heads, (8, 16)):
        n, _, ny, nx = f.shape
        cls_t = torch.zeros(n, NC, ny, nx)
        dfl_loss = 0.0
        for b, boxes in enumerate(targets):
            for c, x1, y1, x2, y2 in boxes:
                side = max(x2 - x1, y2 - y1)
                if (s == 8) != (side < 28):
                    continue
                cx, cy = (x1 + x2) / 2 / s, (y1 + y2) / 2 / s
                gi, gj = min(int(cx), nx - 1), min(int(cy), ny - 1)
                cls_t[b, c, gj, gi] = 1
                ax, ay = gi + 0.5, gj + 0.5
                dist = torch.tensor([ax - x1 / s, ay - y1 / s, x2 / s - ax, y2 / s - ay]).clamp(0, REG_MAX - 1.01)
                logits = f[b, :4 * REG_MAX, gj, gi].view(4, REG_MAX)
                lo = dist.floor().long()
                wl = (lo + 1).float() - dist
                logp = logits.log_softmax(1)
                dfl_loss = dfl_loss - (logp.gather(1, lo[:, None])[:, 0] * wl + logp.gather(1, (lo + 1)[:, None])[:, 0] * (1 - wl)).sum()
        total = total + bce(f[:, 4 * REG_MAX:], cls_t) / n + dfl_loss / n
    return total


# ---------------------------------------------------------------- main

def train(model, loss_fn, steps, seed):
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps)
    model.train()
    for step in range(steps):
        x, t = batch(rng, 16)
        loss = loss_fn(model, model.raw(x), t)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 200 == 0 or step == steps - 1:
            print(f"  step {step}: loss {float(loss):.3f}")
    model.eval()


def save(path, a):
    np.ascontiguousarray(a, dtype="<f4").tofile(path)


def main():
    torch.manual_seed(20261201)
    torch.set_num_threads(1)   # one thread: on a busy 2-core machine a second one only spins
    os.makedirs(HERE, exist_ok=True)
    # Test photos: three 96×96 scenes and one 128×80 scene (letterboxed to 96×96 by the tests).
    rng = np.random.default_rng(7)
    photos = [draw_scene(rng, count=k) for k in (2, 3, 1)] + [draw_scene(rng, w=128, h=80, count=2)]
    for k, (img, _) in enumerate(photos):
        Image.fromarray((img * 255 + 0.5).astype(np.uint8)).save(os.path.join(HERE, f"test{k}.png"))
    x = torch.from_numpy(np.asarray(Image.open(os.path.join(HERE, "test0.png")), dtype=np.float32).transpose(2, 0, 1)[None] / 255)

    manifest = {"torch": torch.__version__, "opset": OPSET, "inputSize": SIZE, "classes": CLASSES,
                "photos": [{"file": f"test{k}.png", "boxes": [[CLASSES[c], x1, y1, x2, y2] for c, x1, y1, x2, y2 in p[1]]}
                           for k, p in enumerate(photos)], "models": []}
    nets = [("tiny_yolov3", TinyYOLOv3(), lambda m, r, t: v3_loss(m, r[0], r[1], t), ["boxes", "raw8", "raw16"], None, 3),
            ("tiny_yolov8", TinyYOLOv8(), v8_loss, ["output0", "raw8", "raw16"],
             {"images": {0: "batch", 2: "height", 3: "width"}, "output0": {0: "batch", 2: "anchors"}}, 8)]
    for name, net, loss_fn, outputs, dynamic, seed in nets:
        print(f"{name}: training")
        train(net, loss_fn, 800, seed=seed)
        net.decode = True
        with torch.no_grad():
            ys = net(x)
        path = os.path.join(HERE, name + ".onnx")
        torch.onnx.export(net, (x,), path, input_names=["images"], output_names=outputs, opset_version=OPSET,
                          do_constant_folding=True, dynamic_axes=dynamic)
        # Committed fixtures stay under 1 MB each.
        assert os.path.getsize(path) < 1_000_000, f"{path}: {os.path.getsize(path)} bytes, over the 1 MB fixture budget"
        save(os.path.join(HERE, name + ".in.f32"), x.numpy())
        entry = {"model": name + ".onnx", "input": {"name": "images", "shape": list(x.shape), "file": name + ".in.f32"},
                 "outputs": []}
        for o, y in zip(outputs, ys):
            save(os.path.join(HERE, f"{name}.out.{o}.f32"), y.numpy())
            entry["outputs"].append({"name": o, "shape": list(y.shape), "file": f"{name}.out.{o}.f32"})
        manifest["models"].append(entry)
    manifest["anchors"] = {str(s): [list(a) for a in v] for s, v in ANCHORS.items()}
    manifest["strides"] = [8, 16]
    manifest["regMax"] = REG_MAX
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"torch {torch.__version__}: wrote {len(nets)} detectors and {len(photos)} photos to {HERE}")


if __name__ == "__main__":
    main()
