"""Writes Core ML models converted by coremltools from small seeded PyTorch networks, with torch's own outputs on
real photos (run once, by hand, from the repository root; the tests need neither torch nor coremltools):

    python3 -m venv --system-site-packages /tmp/cmlenv && /tmp/cmlenv/bin/pip install "torch==2.13.0+cpu"
    /tmp/cmlenv/bin/python Tests/Fixtures/coreml/make_fixtures.py

Made with torch 2.13.0+cpu and coremltools 9.0 (pip; the python3 that has them must also have scikit-image).
small_cnn_fp16.mlpackage is the small CNN converted with every default (float16
weights and compute). Each network goes to Tests/Fixtures/coreml/<name>.mlmodel (NeuralNetwork, `convert_to="neuralnetwork"`,
minimum_deployment_target iOS14) and <name>.mlpackage (ML Program, float32 compute precision so that torch's
float32 outputs are the reference at 1e-4), both with an RGB image input whose scaler is the network's
preprocessing, and class labels. Quantized variants come from coremltools' own compressors:
`quantization_utils.quantize_weights` (NeuralNetwork, 8-bit linear / 4-bit k-means look-up table) and
`ct.optimize.coreml.linear_quantize_weights` / `palettize_weights` (ML Program, iOS16 constexpr ops).

photos.u8: chelsea, coffee and astronaut from scikit-image, each resized (PIL bilinear) to 64×64, as uint8 NCHW
(3, 3, 64, 64). <name>.out.f32: torch's float32 logits for the three photos (3, classes), little-endian.
For the quantized models, <name>.dequant.out.f32 holds the outputs of the same network with every weight replaced
by its dequantized value as coremltools stored it (dequantized here with numpy, independently of mltool); those
are matched at 1e-4, and the float network's outputs within the bound the test states.
tiny_detector.mlmodel / tiny_detector.mlpackage: a YOLO-like torch detector converted to each format and wrapped with
a NonMaximumSuppression model in a pipeline (`detector_fixtures`; `make_fixtures.py --detector` writes only these
files and the manifest's "detectors" entries, leaving every other fixture's bytes alone; `--unsupported` writes only
unsupported.mlpackage).
manifest.json lists every case. unsupported.mlmodel / unsupported.mlpackage and detector_pipeline.mlmodel are
built directly (NeuralNetworkBuilder, the MIL builder, the protobuf messages) for the refusal tests.
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn

import coremltools as ct
from coremltools.models.neural_network import quantization_utils
from PIL import Image
from skimage import data

HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 64
LABELS = ["class_%d" % i for i in range(10)]
SCALE, BIAS = 1 / 127.5, -1.0


def photos():
    out = []
    for f in (data.chelsea, data.coffee, data.astronaut):
        im = Image.fromarray(f()).convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
        out.append(np.asarray(im).transpose(2, 0, 1))
    return np.stack(out).astype(np.uint8)


def conv_bn(cin, cout, k=3, stride=1, groups=1, act=nn.ReLU, dilation=1):
    pad = dilation * (k // 2)
    layers = [nn.Conv2d(cin, cout, k, stride, pad, groups=groups, bias=False, dilation=dilation), nn.BatchNorm2d(cout)]
    if act is not None:
        layers.append(act())
    return nn.Sequential(*layers)


class SmallCNN(nn.Module):
    """conv-BN-ReLU, max pool, dilated conv + PReLU, avg pool, conv + LeakyReLU, nearest ×2 upsample, conv + Hardsigmoid,
    Tanh/Sigmoid mix, global pool, Linear."""
    def __init__(self):
        super().__init__()
        self.a = conv_bn(3, 8)
        self.pool = nn.MaxPool2d(2)
        self.b = nn.Sequential(nn.Conv2d(8, 12, 3, padding=2, dilation=2), nn.PReLU(12))
        self.avg = nn.AvgPool2d(2)
        self.c = nn.Sequential(nn.Conv2d(12, 12, 3, padding=1), nn.LeakyReLU(0.1))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.d = nn.Sequential(nn.Conv2d(12, 16, 3, stride=2, padding=1), nn.Hardsigmoid())
        self.e = nn.Conv2d(16, 16, 1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        x = self.c(self.avg(self.b(self.pool(self.a(x)))))
        x = self.d(self.up(x))
        x = torch.tanh(self.e(x)) * torch.sigmoid(x)
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


class InvertedResidual(nn.Module):
    def __init__(self, c, expand):
        super().__init__()
        h = c * expand
        self.body = nn.Sequential(conv_bn(c, h, k=1, act=nn.ReLU6), conv_bn(h, h, groups=h, act=nn.ReLU6),
                                  conv_bn(h, c, k=1, act=None))

    def forward(self, x):
        return x + self.body(x)


class MobileNetStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, stride=2, act=nn.Hardswish)
        self.dw = conv_bn(16, 16, groups=16, stride=2, act=nn.ReLU6)
        self.pw = conv_bn(16, 24, k=1, act=nn.ReLU6)
        self.block = InvertedResidual(24, 4)
        self.dw2 = conv_bn(24, 24, groups=24, act=nn.Hardswish, dilation=2)
        self.head = nn.Linear(24, 10)

    def forward(self, x):
        x = self.dw2(self.block(self.pw(self.dw(self.stem(x)))))
        return self.head(x.mean(dim=(2, 3)))


class Residual(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, stride=stride)
        self.b = conv_bn(cout, cout, act=None)
        self.short = nn.Identity() if stride == 1 and cin == cout else conv_bn(cin, cout, k=1, stride=stride, act=None)

    def forward(self, x):
        return torch.relu(self.b(self.a(x)) + self.short(x))


class ResNetStyle(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = conv_bn(3, 16, k=3, stride=2)
        self.pool = nn.MaxPool2d(3, 2, 1)
        self.blocks = nn.Sequential(Residual(16, 16, 1), Residual(16, 32, 2), Residual(32, 32, 1))
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        f = nn.functional.adaptive_avg_pool2d(self.blocks(self.pool(self.stem(x))), 1)
        return self.head(torch.flatten(f, 1))


def seeded(cls, seed):
    torch.manual_seed(seed)
    m = cls()
    # Non-trivial BatchNorm statistics, as after training.
    for mod in m.modules():
        if isinstance(mod, nn.BatchNorm2d):
            mod.running_mean.uniform_(-0.2, 0.2)
            mod.running_var.uniform_(0.5, 1.5)
            mod.weight.data.uniform_(0.5, 1.5)
            mod.bias.data.uniform_(-0.2, 0.2)
        if isinstance(mod, nn.PReLU):
            mod.weight.data.uniform_(0.05, 0.4)
    return m.eval()


def image_input():
    return ct.ImageType(name="image", shape=(1, 3, SIZE, SIZE), scale=SCALE, bias=[BIAS] * 3,
                        color_layout=ct.colorlayout.RGB)


def convert(traced, neural_network, target=None):
    kwargs = dict(inputs=[image_input()], classifier_config=ct.ClassifierConfig(LABELS))
    if neural_network:
        return ct.convert(traced, convert_to="neuralnetwork", minimum_deployment_target=ct.target.iOS14, **kwargs)
    return ct.convert(traced, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                      minimum_deployment_target=target or ct.target.iOS15, **kwargs)


def write_f32(path, a):
    np.ascontiguousarray(a, dtype="<f4").tofile(path)


def nn_dequantized(spec):
    """A copy of a NeuralNetwork spec whose quantized weights are float again (numpy, from the spec's own fields)."""
    from coremltools.proto import Model_pb2
    out = Model_pb2.Model()
    out.CopyFrom(spec)
    nnet = out.neuralNetworkClassifier
    for layer in nnet.layers:
        kind = layer.WhichOneof("layer")
        p = getattr(layer, kind)
        for field in ("weights", "bias"):
            if field not in [f.name for f in p.DESCRIPTOR.fields] or not p.HasField(field):
                continue
            w = getattr(p, field)
            if not w.HasField("quantization"):
                continue
            q = w.quantization
            bits = q.numberOfBits
            channels = p.outputChannels
            if field == "bias":
                per = 1
            elif kind == "convolution":
                per = p.kernelChannels * p.kernelSize[0] * p.kernelSize[1]
            else:
                per = p.inputChannels
            raw = np.unpackbits(np.frombuffer(w.rawValue, dtype=np.uint8))[: channels * per * bits]
            codes = raw.reshape(-1, bits).dot(1 << np.arange(bits - 1, -1, -1)).reshape(channels, per)
            if q.HasField("linearQuantization"):
                s = np.array(q.linearQuantization.scale, dtype=np.float32)
                b = np.array(q.linearQuantization.bias, dtype=np.float32)
                vals = codes.astype(np.float32) * (s[:, None] if len(s) > 1 else s[0]) + (b[:, None] if len(b) > 1 else b[0])
            else:
                vals = np.array(q.lookupTableQuantization.floatValue, dtype=np.float32)[codes]
            w.Clear()
            w.floatValue.extend(np.asarray(vals, dtype=np.float32).ravel().tolist())
    return out


def patch_kmeans():
    """coremltools 9.0's NeuralNetwork k-means path hands protobuf a (2^bits, 1) table, which protobuf 6 rejects;
    flatten it (the values are unchanged)."""
    original = quantization_utils._get_kmeans_lookup_table_and_weight

    def flat(nbits, weight, *args, **kwargs):
        lut, wq = original(nbits, weight, *args, **kwargs)
        return np.asarray(lut).reshape(-1), wq

    quantization_utils._get_kmeans_lookup_table_and_weight = flat


def fp16_fixture(traced):
    """small_cnn_fp16.mlpackage: the small CNN converted with coremltools' defaults (ML Program, float16 precision)."""
    ct.convert(traced, inputs=[image_input()], classifier_config=ct.ClassifierConfig(LABELS)).save(
        os.path.join(HERE, "small_cnn_fp16.mlpackage"))


def unsupported_fixtures():
    """unsupported.mlmodel (2 LRN, 1 L2 normalization, 1 MVN layer) and unsupported.mlpackage (2 cumsum, 1
    band_part ops): the importer must list every unsupported type at once."""
    unsupported_program()
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder
    b = NeuralNetworkBuilder([("x", datatypes.Array(3, 8, 8))], [("y", None)], disable_rank5_shape_mapping=True)
    b.add_lrn("lrn_a", "x", "a", alpha=1e-4, beta=0.75, local_size=3)
    b.add_activation("relu", "RELU", "a", "r")
    b.add_lrn("lrn_b", "r", "b", alpha=1e-4, beta=0.75, local_size=3)
    b.add_l2_normalize("l2", "b", "c")
    b.add_mvn("mvn", "c", "y")
    ct.models.utils.save_spec(b.spec, os.path.join(HERE, "unsupported.mlmodel"))



def unsupported_program():
    """unsupported.mlpackage alone (`make_fixtures.py --unsupported`)."""
    from coremltools.converters.mil import Builder as mb

    @mb.program(input_specs=[mb.TensorSpec(shape=(1, 3, 8, 8))])
    def prog(x):
        a = mb.cumsum(x=x, axis=3, name="cumsum_a")
        r = mb.relu(x=a, name="relu")
        c = mb.band_part(x=r, lower=1, upper=1, name="band")
        return mb.cumsum(x=c, axis=2, name="cumsum_b")

    ct.convert(prog, convert_to="mlprogram", compute_precision=ct.precision.FLOAT32).save(os.path.join(HERE, "unsupported.mlpackage"))


def detector_pipeline():
    """detector_pipeline.mlmodel: a network (one inner product each for 'confidence' (6, 2) and 'coordinates' (6, 4))
    followed by a NonMaximumSuppression model, as a pipeline: it imports as a detector with a "boxes" decoder."""
    from coremltools.models import datatypes
    from coremltools.models.neural_network import NeuralNetworkBuilder
    from coremltools.proto import Model_pb2
    rng = np.random.default_rng(7)
    b = NeuralNetworkBuilder([("x", datatypes.Array(16))], [("raw_confidence", None), ("raw_coordinates", None)],
                             disable_rank5_shape_mapping=True)
    b.add_inner_product("conf", rng.standard_normal((12, 16)).astype(np.float32), None, 16, 12, False, "x", "c12")
    b.add_reshape_static("conf_shape", "c12", "raw_confidence", [6, 2])
    b.add_inner_product("box", rng.standard_normal((24, 16)).astype(np.float32), None, 16, 24, False, "x", "b24")
    b.add_reshape_static("box_shape", "b24", "raw_coordinates", [6, 4])
    net = b.spec
    nms = Model_pb2.Model()
    nms.specificationVersion = 4
    n = nms.nonMaximumSuppression
    n.iouThreshold = 0.45
    n.confidenceThreshold = 0.25
    n.pickTop.perClass = True
    n.stringClassLabels.vector.extend(["raccoon", "cat"])
    n.confidenceInputFeatureName = "raw_confidence"
    n.coordinatesInputFeatureName = "raw_coordinates"
    n.confidenceOutputFeatureName = "confidence"
    n.coordinatesOutputFeatureName = "coordinates"
    pipe = Model_pb2.Model()
    pipe.specificationVersion = 4
    pipe.description.input.add().CopyFrom(net.description.input[0])
    for name in ("confidence", "coordinates"):
        o = pipe.description.output.add()
        o.name = name
        o.type.multiArrayType.dataType = Model_pb2.ArrayFeatureType.DOUBLE
    pipe.pipeline.models.add().CopyFrom(net)
    pipe.pipeline.models.add().CopyFrom(nms)
    with open(os.path.join(HERE, "detector_pipeline.mlmodel"), "wb") as f:
        f.write(pipe.SerializeToString())


DETECTOR_LABELS = ["raccoon", "cat", "person"]
DETECTOR_IOU, DETECTOR_CONFIDENCE = 0.45, 0.25


class TinyDetector(nn.Module):
    """YOLO-like: three stride-2 conv-BN-ReLU stages to an 8×8 grid, then two 1×1 heads. Boxes: sigmoid, then centre =
    (cell + sigmoid) / 8 and size = 0.6·sigmoid, as fractions of the input (normalized cx, cy, w, h); classes: sigmoid
    of the class head's logits. Outputs confidence (64, 3) and coordinates (64, 4), the shapes Core ML's NMS model
    reads (a batch of one)."""
    G = 8

    def __init__(self):
        super().__init__()
        g = self.G
        self.body = nn.Sequential(conv_bn(3, 8, stride=2), conv_bn(8, 16, stride=2), conv_bn(16, 16, stride=2))
        self.box = nn.Conv2d(16, 4, 1)
        self.cls = nn.Conv2d(16, len(DETECTOR_LABELS), 1)
        r = torch.arange(g, dtype=torch.float32) / g
        gy, gx = torch.meshgrid(r, r, indexing="ij")
        z = torch.zeros(g, g)
        self.register_buffer("offset", torch.stack([gx, gy, z, z]).unsqueeze(0))
        self.register_buffer("gain", torch.tensor([1 / g, 1 / g, 0.6, 0.6]).view(1, 4, 1, 1))

    def forward(self, x):
        f = self.body(x)
        n = self.G * self.G
        boxes = torch.sigmoid(self.box(f)) * self.gain + self.offset
        conf = torch.sigmoid(self.cls(f))
        return conf.reshape(len(DETECTOR_LABELS), n).t(), boxes.reshape(4, n).t()


def numpy_nms(conf, coords, iou=DETECTOR_IOU, threshold=DETECTOR_CONFIDENCE):
    """Core ML's NMS on one image, class-agnostic (pickTop.perClass false), in float64 from torch's float32 outputs:
    each box's score is its best class's; boxes scoring above the threshold, highest first (ties: lower index), each
    kept unless its IoU with a kept box is above `iou`. Returns the kept indices and the smallest distance of any
    deciding score or IoU from its threshold (so that float32 differences cannot change the result)."""
    conf = conf.astype(np.float64)
    c = coords.astype(np.float64)
    corners = np.stack([c[:, 0] - c[:, 2] / 2, c[:, 1] - c[:, 3] / 2, c[:, 0] + c[:, 2] / 2, c[:, 1] + c[:, 3] / 2], 1)
    score = conf.max(1)
    margin = float(np.abs(score - threshold).min())
    order = [i for i in np.argsort(-score, kind="stable") if score[i] > threshold]
    kept = []
    for i in order:
        suppressed = False
        for k in kept:
            w = min(corners[i, 2], corners[k, 2]) - max(corners[i, 0], corners[k, 0])
            h = min(corners[i, 3], corners[k, 3]) - max(corners[i, 1], corners[k, 1])
            inter = max(w, 0) * max(h, 0)
            union = np.prod(corners[i, 2:] - corners[i, :2]) + np.prod(corners[k, 2:] - corners[k, :2]) - inter
            v = inter / union if union > 0 else 0.0
            margin = min(margin, abs(v - iou))
            if v > iou:
                suppressed = True
                break
        if not suppressed:
            kept.append(int(i))
    return kept, margin, len(order)


def nms_spec(net_spec, version):
    """A NonMaximumSuppression model reading the network's raw_confidence / raw_coordinates (coremltools' recipe)."""
    from coremltools.proto import Model_pb2
    nms = Model_pb2.Model()
    nms.specificationVersion = version
    for i, (raw, out, width) in enumerate((("raw_confidence", "confidence", len(DETECTOR_LABELS)), ("raw_coordinates", "coordinates", 4))):
        src = next(o for o in net_spec.description.output if o.name == raw)
        nms.description.input.add().CopyFrom(src)
        o = nms.description.output.add()
        o.CopyFrom(src)
        o.name = out
        t = o.type.multiArrayType
        del t.shape[:]
        t.shapeRange.sizeRanges.add(lowerBound=0, upperBound=-1)
        t.shapeRange.sizeRanges.add(lowerBound=width, upperBound=width)
        t.dataType = Model_pb2.ArrayFeatureType.DOUBLE if version < 6 else t.dataType
    n = nms.nonMaximumSuppression
    n.iouThreshold = DETECTOR_IOU
    n.confidenceThreshold = DETECTOR_CONFIDENCE
    n.pickTop.perClass = False
    n.stringClassLabels.vector.extend(DETECTOR_LABELS)
    n.confidenceInputFeatureName = "raw_confidence"
    n.coordinatesInputFeatureName = "raw_coordinates"
    n.confidenceOutputFeatureName = "confidence"
    n.coordinatesOutputFeatureName = "coordinates"
    return nms


def detector_fixtures():
    """tiny_detector.mlmodel (NeuralNetwork → NMS pipeline) and tiny_detector.mlpackage (ML Program → NMS pipeline,
    made by ct.utils.make_pipeline; the program's weights are Data/com.apple.CoreML/weights/0-weight.bin), with torch's
    raw outputs on the photos (tiny_detector.confidence.f32 (3, 64, 3), tiny_detector.coordinates.f32 (3, 64, 4)) and
    the boxes numpy's NMS keeps, recorded under "detectors" in manifest.json. Writes only these files."""
    px = np.fromfile(os.path.join(HERE, "photos.u8"), dtype=np.uint8).reshape(3, 3, SIZE, SIZE)
    assert np.array_equal(px, photos()), "photos.u8 differs from photos()"
    x = torch.from_numpy(px.astype(np.float32) * SCALE + BIAS)
    m = seeded(TinyDetector, 14)
    with torch.no_grad():
        # A random head's logits barely vary (std ≈ 0.1): spread them to std 2.5 on the photos, each class centred at
        # −2 (about a quarter of the boxes score above 0.25), and the box head's ×10, so that boxes differ in size
        # and NMS both keeps and suppresses several.
        f = m.body(x)
        raw = m.cls(f)
        s = 2.5 / raw.std()
        m.cls.weight.mul_(s)
        m.cls.bias.copy_((m.cls.bias - raw.mean(dim=(0, 2, 3))) * s - 2.0)
        m.box.weight.mul_(10)
        m.box.bias.mul_(10)
    confs, coords, kept, margins, above = [], [], [], [], []
    with torch.no_grad():
        for i in range(len(x)):
            c, b = m(x[i:i + 1])
            confs.append(c.numpy())
            coords.append(b.numpy())
            k, margin, n = numpy_nms(confs[-1], coords[-1])
            kept.append(k); margins.append(margin); above.append(n)
    print("detector: boxes above the threshold %s, kept %s, smallest margin %.2e" % (above, [len(k) for k in kept], min(margins)))
    assert all(len(k) >= 2 and n - len(k) >= 2 for k, n in zip(kept, above)), "NMS must keep several boxes and suppress some"
    assert min(margins) > 1e-3, "a score or IoU too close to its threshold"
    write_f32(os.path.join(HERE, "tiny_detector.confidence.f32"), np.stack(confs))
    write_f32(os.path.join(HERE, "tiny_detector.coordinates.f32"), np.stack(coords))
    t = torch.jit.trace(m, x[:1])
    outputs = [ct.TensorType(name="raw_confidence"), ct.TensorType(name="raw_coordinates")]
    nn_model = ct.convert(t, inputs=[image_input()], outputs=outputs, convert_to="neuralnetwork",
                          minimum_deployment_target=ct.target.iOS14)
    nn_spec = nn_model.get_spec()
    nms = ct.models.MLModel(nms_spec(nn_spec, 5))
    pipe = ct.utils.make_pipeline(nn_model, nms)
    ct.models.utils.save_spec(pipe.get_spec(), os.path.join(HERE, "tiny_detector.mlmodel"))
    ml_model = ct.convert(t, inputs=[image_input()], outputs=outputs, convert_to="mlprogram",
                          compute_precision=ct.precision.FLOAT32, minimum_deployment_target=ct.target.iOS15)
    nms = ct.models.MLModel(nms_spec(ml_model.get_spec(), 6))
    path = os.path.join(HERE, "tiny_detector.mlpackage")
    if os.path.exists(path):
        import shutil
        shutil.rmtree(path)
    ct.utils.make_pipeline(ml_model, nms).save(path)
    manifest_path = os.path.join(HERE, "manifest.json")
    with open(manifest_path) as f:
        manifest = json.load(f)
    entry = {"torch": torch.__version__, "coremltools": ct.__version__, "labels": DETECTOR_LABELS, "boxes": TinyDetector.G ** 2,
             "confidence": "tiny_detector.confidence.f32", "coordinates": "tiny_detector.coordinates.f32",
             "iou": DETECTOR_IOU, "threshold": DETECTOR_CONFIDENCE, "per_class": False, "kept": kept}
    manifest["detectors"] = [dict(entry, model=name) for name in ("tiny_detector.mlmodel", "tiny_detector.mlpackage")]
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


def main():
    patch_kmeans()
    px = photos()
    px.tofile(os.path.join(HERE, "photos.u8"))
    x = torch.from_numpy(px.astype(np.float32) * SCALE + BIAS)
    cases = []
    nets = [("small_cnn", SmallCNN, 1), ("mobilenet_style", MobileNetStyle, 2), ("resnet_style", ResNetStyle, 3)]
    traced = {}
    for name, cls, seed in nets:
        m = seeded(cls, seed)
        with torch.no_grad():
            y = m(x).numpy()
        write_f32(os.path.join(HERE, name + ".out.f32"), y)
        t = torch.jit.trace(m, x[:1])
        traced[name] = (m, t, y)
        convert(t, True).save(os.path.join(HERE, name + ".mlmodel"))
        convert(t, False).save(os.path.join(HERE, name + ".mlpackage"))
        for ext in ("mlmodel", "mlpackage"):
            cases.append({"model": name + "." + ext, "reference": name + ".out.f32", "classes": 10, "kind": "float"})

    # coremltools' default ML Program: float16 weights and compute (casts around every op); mltool computes in float32.
    fp16_fixture(traced["small_cnn"][1])
    cases.append({"model": "small_cnn_fp16.mlpackage", "reference": "small_cnn.out.f32", "classes": 10, "kind": "fp16"})

    # Compressed: the ResNet-style net, 8-bit linear and 4-bit palettes, in both formats.
    m, t, y = traced["resnet_style"]
    base_nn = convert(t, True)
    for mode, bits, qname in (("linear", 8, "resnet_linear8"), ("kmeans", 4, "resnet_palette4")):
        q = quantization_utils.quantize_weights(base_nn, nbits=bits, quantization_mode=mode)
        spec = q.get_spec() if hasattr(q, "get_spec") else q
        ct.models.utils.save_spec(spec, os.path.join(HERE, qname + ".mlmodel"))
        deq = nn_dequantized(spec)
        ct.models.utils.save_spec(deq, os.path.join(HERE, qname + ".dequant.mlmodel"))
        cases.append({"model": qname + ".mlmodel", "reference": "resnet_style.out.f32", "classes": 10, "kind": mode + str(bits),
                      "dequantized": qname + ".dequant.mlmodel"})
    base_ml = convert(t, False, target=ct.target.iOS16)
    lin = ct.optimize.coreml.linear_quantize_weights(
        base_ml, ct.optimize.coreml.OptimizationConfig(
            global_config=ct.optimize.coreml.OpLinearQuantizerConfig(mode="linear_symmetric", weight_threshold=0)))
    lin.save(os.path.join(HERE, "resnet_linear8.mlpackage"))
    pal = ct.optimize.coreml.palettize_weights(
        base_ml, ct.optimize.coreml.OptimizationConfig(
            global_config=ct.optimize.coreml.OpPalettizerConfig(mode="kmeans", nbits=4, weight_threshold=0)))
    pal.save(os.path.join(HERE, "resnet_palette4.mlpackage"))
    for qname, kind in (("resnet_linear8", "linear8"), ("resnet_palette4", "kmeans4")):
        cases.append({"model": qname + ".mlpackage", "reference": "resnet_style.out.f32", "classes": 10, "kind": kind})
    unsupported_fixtures()
    detector_pipeline()
    with open(os.path.join(HERE, "manifest.json"), "w") as f:
        json.dump({"torch": torch.__version__, "coremltools": ct.__version__, "photos": "photos.u8", "size": SIZE,
                   "scale": SCALE, "bias": BIAS, "labels": LABELS, "cases": cases}, f, indent=1)
        f.write("\n")
    detector_fixtures()


if __name__ == "__main__":
    if sys.argv[1:] == ["--detector"]:
        detector_fixtures()
    elif sys.argv[1:] == ["--unsupported"]:
        unsupported_program()
    else:
        main()
