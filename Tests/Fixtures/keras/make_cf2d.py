#!/usr/bin/env python3
"""Writes the Keras channels_first 2-D fixtures of MLToolImportTests (KerasChannelsFirstTests), with Keras's outputs.

Keras 3 (JAX backend, CPU), as make_fixtures.py:  KERAS_BACKEND=jax python3 make_cf2d.py   (about 10 s)
Each model as k3_NAME.h5 / .json (the input in Keras's own (N, C, H, W) layout). Weights are seeded random
(make_fixtures.randomize's rule), inputs seeded normal values.

  k3_cf_classifier.h5  Conv2D → BatchNormalization(axis=1) → MaxPooling2D → Conv2D 'same' strided → ZeroPadding2D →
                       AveragePooling2D 'same' → Flatten (channels_last: C, H, W order) → Dense softmax
  k3_cf_separable.h5   DepthwiseConv2D (multiplier 2), SeparableConv2D, Cropping2D, a softmax conv activation (over
                       W, the last axis), GlobalMaxPooling2D keepdims, Flatten(data_format="channels_first") (H, W, C
                       order), Reshape
  k3_cf_branches.h5    Concatenate(axis=1) and Add of channels_first branches, BatchNormalization(axis=1) on the
                       merged tensor, GlobalAveragePooling2D → Dense
  k3_cf_global.h5      keras.config.set_image_data_format("channels_first") for the whole model: every layer (Flatten
                       included) takes its data_format from there
  k3_cf_dense_map.h5   an image-to-image network (conv → UpSampling2D → conv) whose output is a (N, C, H, W) map
  k3_cf_deconv.h5      Conv2DTranspose channels_first (the channels_last form is the same converter without the
                       transposes): 'same' and 'valid', strides 2 and (3, 1) (a stride above the kernel), dilation,
                       output_padding
  k3_deconv_last.h5    Conv2DTranspose channels_last ('same' stride 2, 'valid' stride 3 over a kernel of 2, dilation)

Run with function names (`make_cf2d.py dense_map`) to write only those fixtures; k3_cf_dense_map.h5,
k3_cf_deconv.h5 and k3_deconv_last.h5 were written alone that way (the weights come from one shared seeded
generator, so they depend on what ran before).
"""
import os
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import keras  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_fixtures import PREFIX, randomize, save  # noqa: E402

L = keras.layers
CF = "channels_first"
rng = np.random.default_rng(2049)


def classifier():
    x = inp = keras.Input(shape=(3, 16, 14), name="image")
    x = L.Conv2D(8, 3, activation="relu", data_format=CF, name="conv1")(x)
    x = L.BatchNormalization(axis=1, name="bn1")(x)
    x = L.MaxPooling2D(2, data_format=CF, name="pool1")(x)
    x = L.Conv2D(6, 3, strides=2, padding="same", data_format=CF, name="conv2")(x)
    x = L.ZeroPadding2D(((1, 0), (0, 2)), data_format=CF, name="pad")(x)
    x = L.AveragePooling2D(2, padding="same", data_format=CF, name="avg")(x)
    x = L.Flatten(name="flat")(x)
    out = L.Dense(5, activation="softmax", name="probs")(x)
    model = keras.Model(inp, out, name="cf_classifier")
    randomize(model)
    save(model, "cf_classifier", rng.standard_normal((3, 3, 16, 14)).astype(np.float32))


def separable():
    x = inp = keras.Input(shape=(4, 12, 11), name="image")
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="tanh", data_format=CF, name="dw")(x)
    x = L.SeparableConv2D(6, 3, depth_multiplier=1, dilation_rate=2, activation="relu", data_format=CF, name="sep")(x)
    x = L.Cropping2D(((1, 0), (1, 1)), data_format=CF, name="crop")(x)
    x = L.Conv2D(5, 1, activation="softmax", data_format=CF, name="conv_softmax")(x)
    x = L.GlobalMaxPooling2D(keepdims=True, data_format=CF, name="gmp")(x)
    x = L.Flatten(data_format=CF, name="flat_cf")(x)
    x = L.Reshape((5, 1), name="reshape")(x)
    out = L.Flatten(name="flat")(x)
    model = keras.Model(inp, out, name="cf_separable")
    randomize(model)
    save(model, "cf_separable", rng.standard_normal((2, 4, 12, 11)).astype(np.float32))


def branches():
    x = inp = keras.Input(shape=(3, 10, 10), name="image")
    a = L.Conv2D(4, 3, padding="same", activation="relu", data_format=CF, name="branch_a")(x)
    b = L.Conv2D(2, 1, padding="same", data_format=CF, name="branch_b")(x)
    c = L.Concatenate(axis=1, name="concat")([a, b])
    d = L.Conv2D(6, 3, padding="same", data_format=CF, name="conv_d")(c)
    x = L.Add(name="add")([c, d])
    x = L.BatchNormalization(axis=1, name="bn")(x)
    x = L.MaxPooling2D(2, strides=2, data_format=CF, name="pool")(x)
    x = L.GlobalAveragePooling2D(data_format=CF, name="gap")(x)
    out = L.Dense(3, name="logits")(x)
    model = keras.Model(inp, out, name="cf_branches")
    randomize(model)
    save(model, "cf_branches", rng.standard_normal((2, 3, 10, 10)).astype(np.float32))


def global_format():
    keras.config.set_image_data_format(CF)
    try:
        model = keras.Sequential([
            keras.Input(shape=(1, 12, 12), name="image"),
            L.Conv2D(4, 3, activation="relu", name="conv"),
            L.BatchNormalization(axis=1, name="bn"),
            L.MaxPooling2D(2, name="pool"),
            L.Flatten(name="flat"),
            L.Dense(3, name="logits"),
        ], name="cf_global")
        randomize(model)
        save(model, "cf_global", rng.standard_normal((2, 1, 12, 12)).astype(np.float32))
    finally:
        keras.config.set_image_data_format("channels_last")


def dense_map():
    x = inp = keras.Input(shape=(2, 6, 5), name="image")
    x = L.Conv2D(4, 3, padding="same", activation="relu", data_format=CF, name="conv1")(x)
    x = L.UpSampling2D(2, data_format=CF, name="up")(x)
    out = L.Conv2D(3, 3, padding="same", data_format=CF, name="conv2")(x)
    model = keras.Model(inp, out, name="cf_dense_map")
    randomize(model)
    save(model, "cf_dense_map", np.random.default_rng(77).standard_normal((2, 2, 6, 5)).astype(np.float32))


def deconv():
    x = inp = keras.Input(shape=(3, 3, 2), name="image")
    x = L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu", data_format=CF, name="up_same")(x)
    x = L.Conv2DTranspose(3, (2, 3), strides=(3, 1), padding="valid", data_format=CF, name="up_valid")(x)
    x = L.Conv2DTranspose(2, 3, dilation_rate=2, padding="same", data_format=CF, name="dilated")(x)
    x = L.Conv2DTranspose(2, 3, strides=2, padding="same", output_padding=0, data_format=CF, name="out_pad_same")(x)
    x = L.Conv2DTranspose(2, 2, strides=2, padding="valid", output_padding=1, data_format=CF, name="out_pad_valid")(x)
    out = L.Flatten(name="flat")(x)
    model = keras.Model(inp, out, name="cf_deconv")
    randomize(model)
    save(model, "cf_deconv", np.random.default_rng(78).standard_normal((1, 3, 3, 2)).astype(np.float32))


def deconv_last():
    x = inp = keras.Input(shape=(3, 4, 3), name="image")
    x = L.Conv2DTranspose(4, 3, strides=2, padding="same", activation="relu", name="up_same")(x)
    x = L.Conv2DTranspose(3, 2, strides=3, padding="valid", name="up_valid")(x)
    x = L.Conv2DTranspose(2, 3, dilation_rate=2, padding="same", name="dilated")(x)
    out = L.Flatten(name="flat")(x)
    model = keras.Model(inp, out, name="deconv_last")
    randomize(model)
    save(model, "deconv_last", np.random.default_rng(79).standard_normal((1, 3, 4, 3)).astype(np.float32))


if __name__ == "__main__":
    assert PREFIX == "k3_", "channels_first convolutions need Keras 3 (TensorFlow 2 runs them on a GPU only)"
    for make in [classifier, separable, branches, global_format, dense_map, deconv, deconv_last]:
        if len(sys.argv) < 2 or make.__name__ in sys.argv[1:]:
            make()
