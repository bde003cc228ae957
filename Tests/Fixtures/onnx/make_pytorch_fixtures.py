"""Writes ONNX files exported by real PyTorch, with torch's own outputs (run from the repository root):

    python3 -m venv --system-site-packages /tmp/torchenv && /tmp/torchenv/bin/pip install torch
    /tmp/torchenv/bin/python Tests/Fixtures/onnx/make_pytorch_fixtures.py

Made with torch 2.13.0+cpu (TorchScript exporter, `dynamo=False`, opset 17, eval mode, constant folding on).
Three small seeded nets: a residual CNN (conv-BN-ReLU blocks with an identity and a projected shortcut, max pool,
global pool, `view(size(0), -1)` with a dynamic batch, Linear), a MobileNet-style depthwise CNN (ReLU6, depthwise
3×3 stride 2, pointwise, Hardswish, inverted residual, a ShuffleNet-style channel split by slicing + concat), and a
squeeze-excite block (global pool → 1×1 conv → ReLU → 1×1 conv → sigmoid → Mul).
Each goes to Tests/Fixtures/onnx/pytorch/<name>.onnx with its input and torch's outputs as raw little-endian
float32 files, described in pytorch/manifest.json (the format of ../manifest.json). The test needs no torch.
"""
import json
import os

import numpy as np
import torch
from torch import nn

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pytorch")
OPSET = 17


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, stride=stride)
        self.b = conv_bn(cout, cout, act=None)
        self.short = nn.Identity() if stride == 1 and cin == cout else conv_bn(cin, cout, k=1, stride=stride, act=None)

    def forward(self, x):
        return torch.relu(self.b(self.a(x)) + self.short(x))


class ResidualCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 8)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.blocks = nn.Sequential(Residual(8, 8, 1), Residual(8, 16, 2))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        f = nn.functional.adaptive_avg_pool2d(self.blocks(self.pool(self.stem(x))), 1)
        # view(size(0), -1) with a dynamic batch: Shape → Gather → Unsqueeze → Concat → Reshape in the export.
        return self.head(f.view(f.size(0), -1))


class InvertedResidual(nn.Module):
    def __init__(self, c, expand):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(conv_bn(c, h, k=1, act=nn.ReLU6), conv_bn(h, h, groups=h, act=nn.ReLU6),
                                  conv_bn(h, c, k=1, act=None))

    def forward(self, x):
        return x + self.body(x)


class SplitShuffle(nn.Module):
    """ShuffleNet-style: half the channels pass, the other half goes through a depthwise block; then concat."""
    def __init__(self, c):
        super().__init__()
        self.half = c // 2
        self.branch = nn.Sequential(conv_bn(self.half, self.half, groups=self.half, act=None),
                                    conv_bn(self.half, self.half, k=1))

    def forward(self, x):
        return torch.cat([x[:, :self.half], self.branch(x[:, self.half:])], dim=1)


class DepthwiseCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            conv_bn(3, 16, stride=2, act=nn.ReLU6),
            conv_bn(16, 16, groups=16, act=nn.ReLU6), conv_bn(16, 24, k=1, act=None),
            conv_bn(24, 24, k=5, stride=2, groups=24, act=nn.Hardswish), conv_bn(24, 32, k=1, act=nn.Hardswish),
            InvertedResidual(32, 4), SplitShuffle(32))
        self.classifier = nn.Sequential(nn.Flatten(), nn.Dropout(0.2), nn.Linear(32, 7))

    def forward(self, x):
        return torch.softmax(self.classifier(nn.functional.adaptive_avg_pool2d(self.features(x), 1)), dim=1)


class SqueezeExcite(nn.Module):
    def __init__(self, c=24, r=4):
        super().__init__()
        self.conv = conv_bn(3, c)
        self.reduce = nn.Conv2d(c, c // r, 1)
        self.expand = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        y = self.conv(x)
        s = torch.sigmoid(self.expand(torch.relu(self.reduce(nn.functional.adaptive_avg_pool2d(y, 1)))))
        return y * s


def randomize_bn(model, g):
    # Fresh BatchNorm layers are identities: give them statistics so that folding them is actually exercised.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.copy_(torch.rand(m.num_features, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def main():
    torch.manual_seed(20261129)
    g = torch.Generator().manual_seed(11)
    os.makedirs(HERE, exist_ok=True)
    nets = [("torch_residual_cnn", ResidualCNN(), (2, 3, 16, 16)),
            ("torch_depthwise_cnn", DepthwiseCNN(), (2, 3, 20, 18)),
            ("torch_squeeze_excite", SqueezeExcite(), (2, 3, 9, 11))]
    manifest = []
    for name, net, shape in nets:
        randomize_bn(net, g)
        net.eval()
        x = torch.randn(*shape, generator=g)
        with torch.no_grad():
            y = net(x)
        path = os.path.join(HERE, name + ".onnx")
        dynamic = {"x": {0: "batch"}, "y": {0: "batch"}} if name == "torch_residual_cnn" else None
        torch.onnx.export(net, (x,), path, input_names=["x"], output_names=["y"], opset_version=OPSET,
                          dynamo=False, do_constant_folding=True, dynamic_axes=dynamic)
        x.numpy().astype("<f4").tofile(os.path.join(HERE, name + ".in.x.f32"))
        y.numpy().astype("<f4").tofile(os.path.join(HERE, name + ".out.y.f32"))
        manifest.append({"model": name + ".onnx",
                         "inputs": [{"name": "x", "shape": list(shape), "file": name + ".in.x.f32"}],
                         "outputs": [{"name": "y", "shape": list(y.shape), "file": name + ".out.y.f32"}]})
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"torch": torch.__version__, "opset": OPSET, "cases": manifest}, f, indent=1)
    print(f"torch {torch.__version__}: wrote {len(nets)} networks to {HERE}")


if __name__ == "__main__":
    main()
