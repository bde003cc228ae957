"""Writes Core ML models with flexible input shapes and the ML Program ops real converted models use, converted by
coremltools from small seeded PyTorch networks, with torch's own outputs on real inputs (run once, by hand, from the
repository root; the tests need neither torch nor coremltools):

    python3 Tests/Fixtures/coreml/make_flexible_fixtures.py

Made with the system-wide torch 2.15.0 and coremltools 9.0 (make_fixtures.py's venv note names torch 2.13; the ops
written are the same), float32 compute precision so that torch's float32 outputs are the reference at 1e-4 of the
output's range.

block.mlpackage / block.mlmodel: a transformer-ish block (layer_norm, linear, matmul of two computed tensors with a
transpose, softmax, gelu, residual) followed by reductions, stack, slicing, gather and pow, on an input
"x" (1, L, 16) whose length L is a RangeDim 2…32 (default 8). The real input: rows of scikit-image's `camera` photo,
averaged to 16 columns and scaled to 0…1; block.L<n>.in.f32 holds the input at L = n, block.L<n>.out.f32 torch's
output (one row of 26 values per position, see Block.forward).

decoder.mlpackage / decoder.mlmodel: a conv_transpose / upsample decoder on an RGB image input "image" of enumerated
sizes 32×32, 48×48 (default) and 64×64; decoder.<s>.out.f32 holds torch's output on the chelsea photo resized to
s×s (PIL bilinear; decoder.<s>.in.u8 the uint8 NCHW pixels), (1, 1, s, s).

ops.mlpackage / ops.mlmodel (when coremltools can write it): the other ops on a fixed (1, 3, 16, 16) input (the
chelsea photo at 16×16, values / 255) — instance_norm, bilinear upsampling with aligned corners, reflect padding,
split, einsum of two computed tensors, tile, gather_along_axis, reduce_max and reduce_l2_norm over two axes,
reduce_argmax, tanh-approximated gelu — concatenated into one flat output, ops.out.f32.

manifest_flexible.json lists each case, its sizes and the output shapes.
"""
import json
import os

import numpy as np
import torch
from torch import nn

import coremltools as ct
from PIL import Image
from skimage import data

HERE = os.path.dirname(os.path.abspath(__file__))
D = 16
LENGTHS = [8, 3, 20]          # the default first
SIZES = [48, 32, 64]          # the default first


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(D)
        self.q, self.k, self.v = nn.Linear(D, D), nn.Linear(D, D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.norm2 = nn.LayerNorm(D)

    def forward(self, x):
        h = self.norm(x)
        a = torch.softmax(self.q(h) @ self.k(h).transpose(1, 2) / 4.0, dim=-1) @ self.v(h)
        x = x + a
        x = x + self.mlp(self.norm2(x))                                # (1, L, 16)
        s = torch.stack([x.sum(-1), x.mean(-1), x.amax(-1), x.amin(-1)], dim=-1)   # (1, L, 4)
        p = torch.pow(x.abs() + 1.0, 0.5)[:, :, 1:9:2]                   # (1, L, 4): pow, slice with a stride
        g = x[:, :, torch.tensor([3, 0, 7])]                            # (1, L, 3): gather
        n = torch.sqrt((x * x).sum(-1, keepdim=True))                    # (1, L, 1)
        e = torch.erf(x[:, :, :2]) * torch.exp(-x[:, :, 2:4].abs())       # (1, L, 2)
        c = torch.where(x[:, :, 4:8] > 0, x[:, :, 4:8], 0.1 * x[:, :, 4:8])   # (1, L, 4): comparison + select
        l = torch.logsumexp(x, dim=-1, keepdim=True)                     # (1, L, 1)
        r = torch.clamp(x[:, :, 8:15], -0.5, 0.5)                        # (1, L, 7)
        return torch.cat([s, p, g, n, e, c, l, r], dim=-1)               # (1, L, 26)


class Decoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.ReLU(), nn.Conv2d(8, 8, 3, 2, 1), nn.ReLU())
        self.up1 = nn.ConvTranspose2d(8, 8, 4, 2, 1)
        self.up2 = nn.ConvTranspose2d(8, 4, 3, 2, 1, output_padding=1)
        self.head = nn.Conv2d(4, 1, 1)
        self.side = nn.Conv2d(8, 1, 1)

    def forward(self, x):
        h = self.enc(x)                                                   # (1, 8, H/4, W/4)
        u = torch.relu(self.up1(h))                                       # (1, 8, H/2, W/2): conv_transpose
        u = u + nn.functional.interpolate(h, scale_factor=2.0, mode="bilinear", align_corners=False)
        u = torch.relu(self.up2(u))                                       # (1, 4, H, W): conv_transpose + crop
        n = nn.functional.interpolate(self.side(h), scale_factor=4.0, mode="nearest")
        return torch.sigmoid(self.head(u) + n)                            # (1, 1, H, W)


class Ops(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.InstanceNorm2d(3, affine=True)
        self.register_buffer("index", torch.randint(0, 4, (1, 2, 34, 34), generator=torch.Generator().manual_seed(5)))

    def forward(self, x):
        b = nn.functional.interpolate(self.norm(x), scale_factor=2.0, mode="bilinear", align_corners=True)
        c = nn.functional.pad(b, (1, 1, 1, 1), mode="reflect")                 # (1, 3, 34, 34)
        c1, c2 = torch.split(c, [1, 2], dim=1)
        e = torch.einsum("bchw,bdhw->bcd", c1, c2) / 1000.0                     # (1, 1, 2)
        f = c2.repeat(1, 2, 1, 1)                                              # (1, 4, 34, 34): tile
        g = torch.gather(f, 1, self.index)                                     # (1, 2, 34, 34)
        h = torch.amax(g, dim=(1, 2))                                          # (1, 34): a max over two axes
        i = torch.norm(f, dim=(2, 3))                                          # (1, 4)
        j = (f + g.sum(1, keepdim=True)).argmax(dim=1).float()                 # (1, 34, 34)
        k = nn.functional.gelu(f, approximate="tanh").mean((2, 3))             # (1, 4)
        return torch.cat([e.flatten(), i.flatten(), h.flatten(), j.flatten(), k.flatten()])


def seeded(cls, seed):
    torch.manual_seed(seed)
    m = cls().eval()
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return m


def write(path, a):
    np.ascontiguousarray(a).astype("<f4").tofile(os.path.join(HERE, path))


def camera_rows(n):
    img = data.camera().astype(np.float32) / 255.0                      # 512×512 grayscale
    cols = img.reshape(512, D, 512 // D).mean(axis=2)                    # 512×16
    return cols[100:100 + n][None]                                        # (1, n, 16)


def block_fixtures(manifest):
    net = seeded(Block, 7)
    traced = torch.jit.trace(net, torch.from_numpy(camera_rows(LENGTHS[0])))
    length = ct.RangeDim(lower_bound=2, upper_bound=32, default=LENGTHS[0], symbol="length")
    inputs = [ct.TensorType(name="x", shape=(1, length, D), dtype=np.float32)]
    ct.convert(traced, inputs=inputs, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
               minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "block.mlpackage"))
    try:
        ct.convert(traced, inputs=inputs, convert_to="neuralnetwork",
                   minimum_deployment_target=ct.target.iOS14).save(os.path.join(HERE, "block.mlmodel"))
        formats = ["block.mlpackage", "block.mlmodel"]
    except Exception as e:                                                # recorded, not hidden
        print("block: neuralnetwork conversion failed:", e)
        formats = ["block.mlpackage"]
    for n in LENGTHS:
        x = camera_rows(n)
        write("block.L%d.in.f32" % n, x)
        with torch.no_grad():
            write("block.L%d.out.f32" % n, net(torch.from_numpy(x)).numpy())
    manifest["block"] = {"models": formats, "input": "x", "lengths": LENGTHS, "range": [2, 32], "features": D, "outputs": 26}


def chelsea(size):
    im = Image.fromarray(data.chelsea()).convert("RGB").resize((size, size), Image.BILINEAR)
    return np.asarray(im).transpose(2, 0, 1)[None].astype(np.uint8)      # (1, 3, s, s)


def decoder_fixtures(manifest):
    net = seeded(Decoder, 11)
    scale = 1 / 255.0
    traced = torch.jit.trace(net, torch.from_numpy(chelsea(SIZES[0]).astype(np.float32) * scale))
    shape = ct.EnumeratedShapes(shapes=[(1, 3, s, s) for s in sorted(SIZES)], default=(1, 3, SIZES[0], SIZES[0]))
    image = ct.ImageType(name="image", shape=shape, scale=scale, color_layout=ct.colorlayout.RGB)
    ct.convert(traced, inputs=[image], convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
               minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "decoder.mlpackage"))
    formats = ["decoder.mlpackage"]
    try:
        ct.convert(traced, inputs=[image], convert_to="neuralnetwork",
                   minimum_deployment_target=ct.target.iOS14).save(os.path.join(HERE, "decoder.mlmodel"))
        formats.append("decoder.mlmodel")
    except Exception as e:
        print("decoder: neuralnetwork conversion failed:", e)
    for s in SIZES:
        px = chelsea(s)
        px.tofile(os.path.join(HERE, "decoder.%d.in.u8" % s))
        with torch.no_grad():
            write("decoder.%d.out.f32" % s, net(torch.from_numpy(px.astype(np.float32) * scale)).numpy())
    manifest["decoder"] = {"models": formats, "input": "image", "sizes": SIZES, "scale": scale, "channels": 1}


def ops_fixtures(manifest):
    net = seeded(Ops, 13)
    x = chelsea(16).astype(np.float32) / 255.0
    traced = torch.jit.trace(net, torch.from_numpy(x))
    inputs = [ct.TensorType(name="x", shape=x.shape, dtype=np.float32)]
    ct.convert(traced, inputs=inputs, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
               minimum_deployment_target=ct.target.iOS16).save(os.path.join(HERE, "ops.mlpackage"))
    formats = ["ops.mlpackage"]
    try:
        ct.convert(traced, inputs=inputs, convert_to="neuralnetwork",
                   minimum_deployment_target=ct.target.iOS14).save(os.path.join(HERE, "ops.mlmodel"))
        formats.append("ops.mlmodel")
    except Exception as e:
        print("ops: neuralnetwork conversion failed:", e)
    write("ops.in.f32", x)
    with torch.no_grad():
        out = net(torch.from_numpy(x)).numpy()
    write("ops.out.f32", out)
    manifest["ops"] = {"models": formats, "input": "x", "shape": list(x.shape), "outputs": int(out.size)}


if __name__ == "__main__":
    manifest = {"torch": torch.__version__, "coremltools": ct.__version__}
    block_fixtures(manifest)
    decoder_fixtures(manifest)
    ops_fixtures(manifest)
    with open(os.path.join(HERE, "manifest_flexible.json"), "w") as f:
        json.dump(manifest, f, indent=1)
