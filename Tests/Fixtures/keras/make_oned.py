#!/usr/bin/env python3
"""Writes the Keras 1-D, resampling and lambda-activation fixtures of MLToolImportTests, with Keras's own outputs.

Keras 3 (JAX backend, CPU), as make_fixtures.py:  KERAS_BACKEND=jax python3 make_oned.py
Keras 2 (tf_keras 2.21, TensorFlow 2.21):           python3 -m venv /tmp/tf-venv &&
    /tmp/tf-venv/bin/pip install tensorflow-cpu==2.21.* tf-keras==2.21.* h5py && TF_USE_LEGACY_KERAS=1 /tmp/tf-venv/bin/python make_oned.py
(each model as k<major>_NAME.h5 / .json; Keras 2 leaves out what it lacks or TensorFlow cannot run on a CPU:
channels_first convolutions and pools, mish, hard_silu, log_softmax, keras.ops).
Inputs are real data: spoken digits of the Free Spoken Digit Dataset (WAV, 8 kHz; SHARED_DATASETS, default
../shared/datasets from the checkout) and token ids of UD English EWT sentences (the 300 most frequent words of the
train file, 1 = unknown, 0 = padding). Weights are seeded random (make_fixtures.randomize's rule).

  k3_audio1d.h5     a 1-D CNN on waveforms: Conv1D causal/same/valid, strides, dilation, groups, channels_first,
                    DepthwiseConv1D, SeparableConv1D, Max/AveragePooling1D valid and same, ZeroPadding1D,
                    Cropping1D, UpSampling1D, the global 1-D pools (keepdims), and the activations Keras 3 names
                    (gelu, elu, selu, softplus, softsign, mish, exponential, log_softmax, ReLU with a threshold)
  k3_free_length.h5 a waveform CNN on sequences of free length ('same' strided convs and pools, causal conv,
                    UpSampling1D, ZeroPadding1D), run at 101 samples
  k3_text1d.h5      Embedding → Conv1D → MaxPooling1D → dilated Conv1D → GlobalMaxPooling1D → Dense, on token ids
  k3_resample2d.h5  Cropping2D and UpSampling2D (nearest and bilinear, channels_last and channels_first)
  k3_lambdas.h5     Lambda layers that are only a known activation: keras.activations.swish, lambda x:
                    keras.activations.relu6(x), lambda x: keras.ops.gelu(x), lambda x: tf.nn.relu6(x) (without
                    TensorFlow, `tf` is a stand-in namespace whose nn.relu6 is keras.ops.relu6, so the file records
                    exactly the bytecode of that lambda, and its output is relu6's); k2_lambdas.h5: lambda x: tf.nn.swish(x),
                    lambda x: keras.activations.relu(x), lambda x: tf.nn.gelu(x), lambda x: tf.nn.relu6(x) with real
                    TensorFlow
  k3_lambda_scaled.h5  Lambda(lambda x: keras.activations.relu(x) * 2): must be refused (no .json; k2_ alike)
  hostile_1d_*.h5   (h5py only, no weights) a Sequential on (16, 4) sequences whose one layer has a hostile config:
                    negative strides, a kernel longer than the input, a huge dilation, a crop longer than the input

Run with --templates to print the bytecode of `lambda x: a.b(x)` for the running Python (KerasLambda.lambdaBytecode).
"""
import collections
import json
import os
import sys
import types
import wave

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

HERE = os.path.dirname(os.path.abspath(__file__))
DATASETS = os.environ.get("SHARED_DATASETS", os.path.join(HERE, "..", "..", "..", "..", "shared", "datasets"))

if "--templates" in sys.argv:
    for src in ["lambda x: a.b(x)", "lambda x: a.b.c(x)", "lambda x: a.b.c.d(x)"]:
        print(sys.version_info[:2], src, eval(src).__code__.co_code.hex())
    sys.exit(0)

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tensorflow as tf  # noqa: E402
    import tf_keras as keras  # noqa: E402
else:
    import keras  # noqa: E402
    # A stand-in for TensorFlow: the lambda below compiles to the same bytecode as with the real module.
    tf = types.SimpleNamespace(nn=types.SimpleNamespace(relu6=keras.ops.relu6))

sys.path.insert(0, HERE)
from make_fixtures import PREFIX, randomize, save  # noqa: E402  (seeded rng, k<major>_ prefix, JSON writer)

K3 = PREFIX == "k3_"

L = keras.layers
rng = np.random.default_rng(4321)


def quiet_biases(model):
    """Biases a tenth of randomize's size, so that the outputs follow the input rather than the biases."""
    for layer in model.layers:
        ws = layer.get_weights()
        if ws and any("bias" in w.name for w in layer.weights):
            layer.set_weights([v * 0.1 if "bias" in w.name else v for w, v in zip(layer.weights, ws)])


def waveforms(n, length):
    """n real recordings (FSDD, speaker jackson, digits 0..n-1): the middle `length` samples, each clip scaled to
    unit standard deviation (as an audio front end normalises)."""
    out = []
    for digit in range(n):
        with wave.open(os.path.join(DATASETS, "fsdd", "recordings", f"{digit}_jackson_0.wav")) as w:
            assert w.getsampwidth() == 2 and w.getnchannels() == 1
            x = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float32) / 32768.0
        start = max(0, (len(x) - length) // 2)
        clip = np.pad(x[start:start + length], (0, max(0, length - len(x))))
        out.append(clip / max(float(clip.std()), 1e-6))
    return np.stack(out)[..., None].astype(np.float32)


def token_ids(n, length, vocab=300):
    words = []
    with open(os.path.join(DATASETS, "ud-english-ewt", "en_ewt-ud-train.conllu"), encoding="utf8") as f:
        sentences, current = [], []
        for line in f:
            if line.startswith("#"):
                continue
            cols = line.rstrip("\n").split("\t")
            if len(cols) < 2:
                if current:
                    sentences.append(current)
                current = []
            elif cols[0].isdigit():
                current.append(cols[1].lower())
                words.append(cols[1].lower())
    ids = {w: i + 2 for i, (w, _) in enumerate(collections.Counter(words).most_common(vocab - 2))}
    chosen = [s for s in sentences if len(s) >= 8][:n]
    rows = [[ids.get(w, 1) for w in s[:length]] + [0] * max(0, length - len(s)) for s in chosen]
    return np.array(rows, dtype=np.int32)


def audio1d():
    x = inp = keras.Input(shape=(256, 1), name="waveform")
    x = L.Conv1D(8, 9, strides=2, padding="causal", activation="gelu", name="conv_causal")(x)
    x = L.DepthwiseConv1D(5, depth_multiplier=2, padding="same", activation="elu", name="dw")(x)
    x = L.MaxPooling1D(3, strides=2, padding="same", name="maxpool_same")(x)
    x = L.SeparableConv1D(12, 3, depth_multiplier=2, dilation_rate=2, padding="valid", activation="selu", name="sep")(x)
    x = L.AveragePooling1D(3, strides=2, padding="same", name="avgpool_same")(x)
    x = L.ZeroPadding1D((1, 2), name="zpad")(x)
    x = L.Cropping1D((2, 1), name="crop")(x)
    x = L.UpSampling1D(2, name="up")(x)
    x = L.Conv1D(8, 3, groups=4, padding="same", activation="softsign", name="grouped")(x)
    x = L.AveragePooling1D(2, name="avgpool_valid")(x)
    x = L.MaxPooling1D(2, strides=1, name="maxpool_valid")(x)
    if K3:
        # channels_first on a (N, steps, channels) tensor reads the steps as channels: the transposes are exercised.
        c = L.Conv1D(6, 3, strides=2, dilation_rate=1, padding="valid", data_format="channels_first",
                     activation="softmax", name="conv_cf")(x)
        c = L.MaxPooling1D(2, data_format="channels_first", name="pool_cf")(c)
    x = L.Conv1D(10, 4, strides=3, padding="same", use_bias=False, activation="mish" if K3 else "swish",
                 name="strided")(x)
    x = L.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.05, name="relu_t")(x)
    a = L.GlobalAveragePooling1D(name="gap")(x)
    m = L.GlobalMaxPooling1D(keepdims=True, name="gmp")(x)
    m = L.Flatten(name="gmp_flat")(m)
    parts = [a, m]
    if K3:
        g = L.GlobalAveragePooling1D(data_format="channels_first", name="gap_cf")(c)
        parts.append(L.ReLU(threshold=0.16, name="relu_t2")(g))
    s = L.Activation("softplus", name="softplus")(L.Concatenate(name="cat")(parts))
    s = L.Dense(6, activation="exponential", name="fc")(s)
    s = L.Dense(5, name="fc2")(s)
    out = L.Activation("log_softmax" if K3 else "softmax", name="log_probs")(s)
    model = keras.Model(inp, out, name="audio1d")
    randomize(model)
    quiet_biases(model)
    save(model, "audio1d", waveforms(3, 256))


def free_length():
    x = inp = keras.Input(shape=(None, 1), name="waveform")
    x = L.Conv1D(4, 5, strides=2, padding="same", activation="relu", name="conv_same")(x)
    x = L.MaxPooling1D(3, strides=2, padding="same", name="maxpool_same")(x)
    x = L.Conv1D(6, 3, padding="causal", dilation_rate=2, activation="tanh", name="conv_causal")(x)
    x = L.AveragePooling1D(2, padding="same", name="avgpool_same")(x)
    x = L.UpSampling1D(2, name="up")(x)
    x = L.ZeroPadding1D(1, name="zpad")(x)
    x = L.GlobalAveragePooling1D(name="gap")(x)
    out = L.Dense(3, name="logits")(x)
    model = keras.Model(inp, out, name="free_length")
    randomize(model)
    quiet_biases(model)
    save(model, "free_length", waveforms(2, 101))


def text1d():
    inp = keras.Input(shape=(20,), dtype="int32", name="tokens")
    x = L.Embedding(300, 16, name="embed")(inp)
    x = L.Conv1D(12, 3, padding="same", activation="relu", name="conv1")(x)
    x = L.MaxPooling1D(2, name="pool")(x)
    x = L.Conv1D(8, 3, dilation_rate=2, padding="valid", activation="hard_silu" if K3 else "hard_sigmoid",
                 name="conv2")(x)
    x = L.GlobalMaxPooling1D(name="gmp")(x)
    out = L.Dense(4, activation="softmax", name="probs")(x)
    model = keras.Model(inp, out, name="text1d")
    randomize(model)
    save(model, "text1d", token_ids(4, 20))


def resample2d():
    x = inp = keras.Input(shape=(6, 7, 3), name="image")
    x = L.Conv2D(4, 3, padding="same", activation="tanh", name="conv")(x)
    x = L.Cropping2D(((1, 0), (0, 2)), name="crop")(x)
    x = L.UpSampling2D(2, name="up_nearest")(x)
    x = L.UpSampling2D((2, 1), interpolation="bilinear", name="up_bilinear")(x)
    x = L.Cropping2D((1, 1), data_format="channels_first", name="crop_cf")(x)
    x = L.UpSampling2D((1, 2), interpolation="bilinear", data_format="channels_first", name="up_cf")(x)
    x = L.UpSampling2D(3, data_format="channels_first", name="up_cf_nearest")(x)
    x = L.Conv2D(3, 3, strides=3, name="head")(x)
    out = L.Flatten(name="flat")(x)
    model = keras.Model(inp, out, name="resample2d")
    randomize(model)
    save(model, "resample2d", rng.standard_normal((2, 6, 7, 3)).astype(np.float32))


def lambdas():
    x = inp = keras.Input(shape=(10,), name="features")
    x = L.Dense(12, name="fc1")(x)
    if K3:
        x = L.Lambda(keras.activations.swish, name="swish")(x)
    else:
        # tf_keras records keras.activations.swish as the marshalled code of its dispatch wrapper (refused).
        x = L.Lambda(lambda t: tf.nn.swish(t), name="swish")(x)
    x = L.Dense(12, name="fc2")(x)
    if K3:
        x = L.Lambda(lambda t: keras.activations.relu6(t), name="relu6")(x)
    else:
        x = L.Lambda(lambda t: keras.activations.relu(t), name="relu6")(x)   # tf_keras has no relu6 activation
    x = L.Dense(12, name="fc3")(x)
    if K3:
        x = L.Activation("leaky_relu", name="leaky")(x)   # Keras 3's string: slope 0.2
    if K3:
        x = L.Lambda(lambda t: keras.ops.gelu(t), name="gelu_tanh")(x)
    else:
        x = L.Lambda(lambda t: tf.nn.gelu(t), name="gelu_tanh")(x)   # the exact form
    x = L.Dense(12, name="fc4")(x)
    x = L.Lambda(lambda t: tf.nn.relu6(t), name="tf_relu6")(x)
    out = L.Dense(3, name="logits")(x)
    model = keras.Model(inp, out, name="lambdas")
    randomize(model)
    save(model, "lambdas", (3 * rng.standard_normal((4, 10))).astype(np.float32))


def lambda_scaled():
    model = keras.Sequential([keras.Input(shape=(4,)), L.Dense(3, name="fc"),
                              L.Lambda(lambda t: keras.activations.relu(t) * 2, name="scaled_relu")], name="scaled")
    model.save(os.path.join(HERE, PREFIX + "lambda_scaled.h5"))


def hostile():
    import h5py
    cases = {
        "strides": {"class_name": "Conv1D", "config": {"name": "conv", "filters": 2, "kernel_size": [3], "strides": [-2]}},
        "kernel": {"class_name": "Conv1D", "config": {"name": "conv", "filters": 2, "kernel_size": [40]}},
        "dilation": {"class_name": "SeparableConv1D", "config": {"name": "sep", "filters": 2, "kernel_size": [3],
                                                                 "dilation_rate": [2 ** 30], "padding": "same"}},
        "crop": {"class_name": "Cropping1D", "config": {"name": "crop", "cropping": [10, 6]}},
    }
    for case, layer in cases.items():
        cfg = {"class_name": "Sequential", "config": {"name": "hostile", "layers": [
            {"class_name": "InputLayer", "config": {"batch_shape": [None, 16, 4], "name": "x"}}, layer]}}
        with h5py.File(os.path.join(HERE, f"hostile_1d_{case}.h5"), "w") as f:
            f.attrs["keras_version"] = "3.15.1"
            f.attrs["model_config"] = json.dumps(cfg)
            f.create_group("model_weights").attrs["layer_names"] = np.array([], dtype=np.float64)


if __name__ == "__main__":
    audio1d()
    text1d()
    resample2d()
    lambdas()
    lambda_scaled()
    hostile()
    free_length()
