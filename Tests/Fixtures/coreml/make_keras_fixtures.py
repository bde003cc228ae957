"""Writes Core ML models converted by coremltools from a small seeded Keras (TensorFlow 2) network, with Keras's own
outputs on the same real photos as make_fixtures.py (run once, by hand, from the repository root; the tests need
neither TensorFlow nor coremltools):

    python3 -m venv /tmp/kerasenv && /tmp/kerasenv/bin/pip install tensorflow-cpu==2.15.1 coremltools==9.0 pillow
    /tmp/kerasenv/bin/python Tests/Fixtures/coreml/make_keras_fixtures.py

TensorFlow 2.15 is the last release whose `tf.keras` is Keras 2, the API coremltools converts (coremltools 9.0
warns that it was tested with TensorFlow 2.12). The network is MobileNet-style: a stride-2 3×3 convolution with
"same" padding (TensorFlow pads the bottom and right more), batch normalization with non-trivial statistics, ReLU6,
depthwise convolutions, a residual add, global average pooling and a dense layer. coremltools keeps TensorFlow's
NHWC layout around its NCHW convolutions: the pooling becomes a transpose to NHWC and a mean over axes 1 and 2, and
the dense layer a `batchedMatmul` (NeuralNetwork) or `matmul` (ML Program).

Writes keras_mobilenet.mlmodel (NeuralNetwork, iOS 14) and keras_mobilenet.mlpackage (ML Program, iOS 15, float32),
both with the RGB image input and scaler of make_fixtures.py (x / 127.5 − 1) and its 10 class labels;
keras_mobilenet.out.f32: Keras's float32 outputs (3, 10) for photos.u8 (made by make_fixtures.py, read here);
and the two cases in manifest.json (every other entry left as it is).
"""
import json
import os

import numpy as np
import keras
import tensorflow as tf

import coremltools as ct

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "keras_mobilenet"


def network():
    tf.keras.utils.set_random_seed(7)
    L = tf.keras.layers

    def bn(x):
        return L.BatchNormalization(epsilon=1e-3)(x)

    inp = tf.keras.Input((64, 64, 3), name="image")
    x = L.ReLU(6.0)(bn(L.Conv2D(16, 3, strides=2, padding="same", use_bias=False)(inp)))
    x = L.ReLU(6.0)(bn(L.DepthwiseConv2D(3, padding="same", use_bias=False)(x)))
    x = bn(L.Conv2D(24, 1, use_bias=False)(x))
    y = L.ReLU(6.0)(bn(L.Conv2D(48, 1, use_bias=False)(x)))
    y = L.ReLU(6.0)(bn(L.DepthwiseConv2D(3, padding="same", use_bias=False)(y)))
    y = bn(L.Conv2D(24, 1, use_bias=False)(y))
    x = L.Add()([x, y])
    x = L.ReLU(6.0)(bn(L.DepthwiseConv2D(3, strides=2, padding="same", use_bias=False)(x)))
    x = L.GlobalAveragePooling2D()(x)
    out = L.Dense(10)(x)
    model = tf.keras.Model(inp, out)
    rng = np.random.default_rng(11)
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            c = layer.gamma.shape[0]
            layer.set_weights([rng.uniform(0.5, 1.5, c), rng.uniform(-0.3, 0.3, c), rng.uniform(-0.2, 0.2, c),
                               rng.uniform(0.5, 2.0, c)])
    return model


def main():
    man_path = os.path.join(HERE, "manifest.json")
    with open(man_path) as f:
        manifest = json.load(f)
    size, scale, bias, labels = manifest["size"], manifest["scale"], manifest["bias"], manifest["labels"]
    photos = np.fromfile(os.path.join(HERE, manifest["photos"]), dtype=np.uint8).reshape(3, 3, size, size)
    model = network()
    x = photos.transpose(0, 2, 3, 1).astype(np.float32) * np.float32(scale) + np.float32(bias)
    ref = model(x, training=False).numpy().astype("<f4")
    ref.tofile(os.path.join(HERE, NAME + ".out.f32"))
    image = ct.ImageType(name="image", shape=(1, size, size, 3), scale=scale, bias=[bias] * 3,
                         color_layout=ct.colorlayout.RGB)
    for ext, kw in (("mlmodel", dict(convert_to="neuralnetwork", minimum_deployment_target=ct.target.iOS14)),
                    ("mlpackage", dict(convert_to="mlprogram", compute_precision=ct.precision.FLOAT32,
                                       minimum_deployment_target=ct.target.iOS15))):
        converted = ct.convert(model, inputs=[image], classifier_config=ct.ClassifierConfig(labels), **kw)
        converted.save(os.path.join(HERE, NAME + "." + ext))
    cases = [c for c in manifest["cases"] if not c["model"].startswith(NAME + ".")]
    for ext in ("mlmodel", "mlpackage"):
        cases.append({"model": NAME + "." + ext, "reference": NAME + ".out.f32", "classes": 10, "kind": "float",
                      "source": "keras %s (tensorflow %s)" % (keras.__version__, tf.__version__)})
    manifest["cases"] = cases
    with open(man_path, "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print("wrote %s.mlmodel, %s.mlpackage, %s.out.f32; Keras outputs %s" % (NAME, NAME, NAME, ref[0, :4]))


if __name__ == "__main__":
    main()
