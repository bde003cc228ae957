#!/usr/bin/env python3
"""Writes the Keras HDF5 fixtures of MLToolImportTests, with Keras's own outputs as the expected values.

Keras 3 (JAX backend, CPU):   python3 -m venv /tmp/keras-venv && /tmp/keras-venv/bin/pip install keras jax jaxlib h5py
                              KERAS_BACKEND=jax /tmp/keras-venv/bin/python make_fixtures.py
Keras 2 (tf.keras, optional): python3 -m venv /tmp/tf-venv && /tmp/tf-venv/bin/pip install tensorflow-cpu tf-keras h5py
                              TF_USE_LEGACY_KERAS=1 /tmp/tf-venv/bin/python make_fixtures.py

Each model NAME is written as k<major>_NAME.h5 (the model, saved with model.save) plus k<major>_NAME.json
({"input": {"shape", "data"}, "output": {"shape", "data"}}: float32 values, row-major, from model.predict).
Weights are randomised (seeded), BatchNormalization statistics included, so that the comparison means something.
The Lambda model and the external-link file only need to be refused, so they have no .json.

The h5py-only files (written by either run, from k3_mlp.h5 / k2_mlp.h5 when present):
  k3_external_link.h5      the Keras 3 MLP with model_weights/fc1 made an external link to another file
  k2_mlp_fixed_strings.h5  the Keras 2 MLP with every string attribute rewritten as fixed-length (as h5py 2 wrote)
  custom_object.h5         a model_config whose layer comes from a package module (no weights: it must be refused)
  unsupported.h5           a model_config with several unsupported layers (no weights: it must be listed)
  hdf5_cases.h5            attributes of every string kind, float datasets of every size, a dataset never written,
                           a soft link, an external link, a dataset with external raw storage and a virtual dataset
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras  # Keras 2 (tf.keras)
else:
    import keras

import h5py

MAJOR = int(keras.__version__.split(".")[0])
HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = f"k{MAJOR}_"
L = keras.layers
rng = np.random.default_rng(1234)


def randomize(model):
    """Replaces every weight with seeded random values (BN variances positive) so nothing is trivial."""
    for layer in model.layers:
        ws = layer.get_weights()
        if not ws:
            continue
        new = []
        names = [w.name for w in layer.weights]
        for name, w in zip(names, ws):
            if "variance" in name:
                new.append(rng.uniform(0.5, 1.5, w.shape).astype(np.float32))
            elif "gamma" in name:
                new.append(rng.uniform(0.5, 1.5, w.shape).astype(np.float32))
            else:
                fan = max(1, int(np.prod(w.shape[:-1])) if w.ndim > 1 else 1)
                new.append((rng.standard_normal(w.shape) / np.sqrt(fan)).astype(np.float32))
        layer.set_weights(new)


def save(model, name, x):
    path = os.path.join(HERE, PREFIX + name + ".h5")
    model.save(path)
    y = np.asarray(model.predict(x, verbose=0), dtype=np.float32)
    def values(a):
        # The shortest text that reads back as the same float32.
        return "[" + ",".join(np.format_float_positional(v, unique=True, trim="-") if abs(v) < 1e6 and (v == 0 or abs(v) >= 1e-4)
                              else np.format_float_scientific(v, unique=True, trim="-")
                              for v in np.asarray(a, np.float32).ravel()) + "]"
    with open(os.path.join(HERE, PREFIX + name + ".json"), "w") as f:
        f.write('{"keras":%s,"input":{"shape":%s,"data":%s},"output":{"shape":%s,"data":%s}}\n' % (
            json.dumps(keras.__version__), json.dumps(list(x.shape)), values(x), json.dumps(list(y.shape)), values(y)))
    print(f"{path}: {os.path.getsize(path)} bytes, output {y.shape}")


def mlp():
    m = keras.Sequential([
        keras.Input(shape=(10,), name="features"),
        L.Dense(16, activation="relu", name="fc1"),
        L.Dropout(0.3, name="drop"),
        L.Dense(12, activation="tanh", name="fc2"),
        L.Dense(12, name="fc3"),
        L.Activation("sigmoid", name="act_sigmoid"),
        L.Dense(5, activation="softmax", name="probs"),
    ], name="mlp")
    randomize(m)
    save(m, "mlp", rng.standard_normal((3, 10)).astype(np.float32))


def residual_cnn():
    x = inp = keras.Input(shape=(12, 12, 3), name="image")
    x = L.Rescaling(1.0 / 127.5, offset=-1.0, name="rescale")(x)
    x = L.Conv2D(8, 3, padding="same", activation="relu", name="conv1")(x)
    y = L.Conv2D(8, 3, padding="same", name="conv2a")(x)
    y = L.BatchNormalization(name="bn2a")(y)
    y = L.ReLU(name="relu2a")(y)
    y = L.Conv2D(8, 3, padding="same", name="conv2b")(y)
    y = L.BatchNormalization(name="bn2b")(y)
    x = L.Add(name="residual")([x, y])
    x = L.ReLU(name="relu2")(x)
    x = L.MaxPooling2D(2, name="pool")(x)
    x = L.Conv2D(6, 3, strides=2, padding="valid", name="conv3")(x)
    x = L.Flatten(name="flatten")(x)
    x = L.Dense(4, name="logits")(x)
    m = keras.Model(inp, x, name="residual_cnn")
    randomize(m)
    save(m, "residual_cnn", rng.uniform(0, 255, (2, 12, 12, 3)).astype(np.float32))


def mobilenet():
    x = inp = keras.Input(shape=(15, 15, 3), name="image")
    x = L.Conv2D(8, 3, strides=2, padding="same", use_bias=False, name="stem")(x)
    x = L.BatchNormalization(name="stem_bn")(x)
    x = L.ReLU(6.0, name="stem_relu")(x)
    x = L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2, use_bias=False, name="dw1")(x)
    x = L.BatchNormalization(name="dw1_bn")(x)
    x = L.ReLU(6.0, name="dw1_relu")(x)
    x = L.Conv2D(12, 1, use_bias=False, name="pw1")(x)
    x = L.BatchNormalization(name="pw1_bn")(x)
    x = L.Activation("relu6", name="pw1_relu")(x)
    x = L.SeparableConv2D(16, 3, padding="same", activation="relu", name="sep2")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Dropout(0.2, name="drop")(x)
    x = L.Dense(6, activation="softmax", name="probs")(x)
    m = keras.Model(inp, x, name="mobilenet_tiny")
    randomize(m)
    save(m, "mobilenet", rng.standard_normal((2, 15, 15, 3)).astype(np.float32))


def zoo():
    """The remaining layers: padding, average pooling, concat, multiply, reshape, the other activations."""
    inp = keras.Input(shape=(9, 9, 4), name="image")
    x = L.ZeroPadding2D(((1, 2), (0, 1)), name="zpad")(inp)
    a = L.Conv2D(6, 3, strides=2, padding="same", dilation_rate=1, activation="swish", name="conv_a")(x)
    b = L.AveragePooling2D(3, strides=2, padding="same", name="avg")(x)
    b = L.Conv2D(6, 1, activation="hard_sigmoid", name="conv_b")(b)
    x = L.Multiply(name="gate")([a, b])
    c = L.Conv2D(5, 2, padding="same", activation="tanh", name="conv_c")(x)
    x = L.Concatenate(name="cat")([x, c])
    x = L.ReLU(negative_slope=0.1, name="leaky")(x)
    x = L.MaxPooling2D(2, strides=2, padding="same", name="maxpool")(x)
    g = L.GlobalMaxPooling2D(name="gmp")(x)
    x = L.Reshape((-1,), name="reshape")(x)
    x = L.Dense(11, activation="silu", name="fc")(x)
    x = L.Concatenate(name="cat2")([x, g])
    x = L.Reshape((1, 1, 22), name="to_image")(x)
    x = L.Conv2D(3, 1, name="head")(x)
    x = L.Activation("linear", name="lin")(x)
    x = L.Flatten(name="out")(x)
    m = keras.Model(inp, x, name="zoo")
    randomize(m)
    save(m, "zoo", rng.standard_normal((2, 9, 9, 4)).astype(np.float32))


def zoo2():
    """Grouped and dilated convs, Dense on an image tensor, LeakyReLU, Softmax, Subtract, Average, capped leaky ReLU."""
    inp = keras.Input(shape=(10, 10, 4), name="image")
    x = L.Conv2D(8, 3, dilation_rate=2, padding="same", groups=2, name="grouped")(inp)
    x = L.LeakyReLU(name="leaky")(x)
    a = L.DepthwiseConv2D(3, padding="valid", activation="tanh", name="dw")(x)
    b = L.Conv2D(8, 3, strides=1, padding="valid", name="c2")(x)
    d = L.Subtract(name="diff")([a, b])
    m = L.Average(name="mean3")([a, b, d])
    r = L.ReLU(max_value=0.8, negative_slope=0.05, name="capped")(m)
    e = L.Dense(6, activation="relu", name="dense4d")(r)
    p = L.GlobalMaxPooling2D(keepdims=True, name="gmp")(e)
    q = L.Conv2D(5, 1, name="head")(p)
    q = L.Flatten(name="flat")(q)
    out = L.Softmax(name="sm")(q)
    m = keras.Model(inp, out, name="zoo2")
    randomize(m)
    save(m, "zoo2", rng.standard_normal((2, 10, 10, 4)).astype(np.float32))


def nested():
    """Transfer-learning shape: a Sequential holding a Functional backbone and a nested Sequential head."""
    b_in = keras.Input(shape=(8, 8, 3), name="backbone_in")
    y = L.Conv2D(6, 3, strides=2, padding="same", use_bias=False, name="conv")(b_in)
    y = L.BatchNormalization(name="bn")(y)
    y = L.ReLU(6.0, name="relu")(y)
    backbone = keras.Model(b_in, y, name="backbone")
    head = keras.Sequential([L.GlobalAveragePooling2D(name="gap"), L.Dense(3, activation="softmax", name="fc")],
                            name="head")
    m = keras.Sequential([keras.Input(shape=(8, 8, 3), name="image"), backbone, head], name="nested")
    randomize(backbone)
    randomize(head)
    save(m, "nested", rng.standard_normal((2, 8, 8, 3)).astype(np.float32))


def free_size():
    """A fully convolutional model with free H and W: 'same' stride-2 padding needs the size given at import."""
    if MAJOR != 3:
        return
    x = inp = keras.Input(shape=(None, None, 3), name="image")
    x = L.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="conv")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    x = L.Dense(3, name="logits")(x)
    m = keras.Model(inp, x, name="free_size")
    randomize(m)
    save(m, "free_size", rng.standard_normal((2, 9, 11, 3)).astype(np.float32))


def ops():
    """Normalization, and the arithmetic on tensors that keras.applications writes: x + 3.0 and x * (1/6) (Keras 3
    op layers with number arguments, Keras 2 TFOpLambda with y=)."""
    inp = keras.Input(shape=(6, 6, 3), name="image")
    x = L.Normalization(name="norm")(inp)
    x = L.Conv2D(4, 3, padding="same", name="conv")(x)
    h = L.ReLU(6.0, name="relu6")(x + 3.0) * (1.0 / 6.0)
    x = L.Multiply(name="hard_swish")([x, h])
    x = L.GlobalAveragePooling2D(name="gap")(x) / 2.0
    x = L.Dense(3, name="logits")(x)
    m = keras.Model(inp, x, name="ops")
    randomize(m)
    m.get_layer("norm").set_weights([np.array([0.5, -1.0, 2.0], np.float32), np.array([4.0, 0.25, 1e-16], np.float32),
                                     np.array(10)])
    m.get_layer("norm").finalize_state()  # Keras 3 only uses set weights after this
    save(m, "ops", rng.standard_normal((2, 6, 6, 3)).astype(np.float32))


def lambda_model():
    m = keras.Sequential([
        keras.Input(shape=(4,)),
        L.Dense(3, name="fc"),
        L.Lambda(lambda t: t * 2.0, name="double_it"),
    ], name="with_lambda")
    m.save(os.path.join(HERE, PREFIX + "lambda.h5"))


def external_link():
    """A copy of the MLP whose first weight group is an HDF5 external link to another file (written by h5py)."""
    src = os.path.join(HERE, "k3_mlp.h5")
    dst = os.path.join(HERE, "k3_external_link.h5")
    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        for k, v in s.attrs.items():
            d.attrs[k] = v
        w = d.create_group("model_weights")
        for k, v in s["model_weights"].attrs.items():
            w.attrs[k] = v
        for name in s["model_weights"]:
            if name == "fc1":
                w["fc1"] = h5py.ExternalLink("elsewhere.h5", "/fc1")
            else:
                s.copy(s["model_weights"][name], w, name=name)
    print(dst)


def fixed_strings():
    """The Keras 2 MLP with fixed-length string attributes, as Keras 2 with h5py 2 wrote them."""
    src = os.path.join(HERE, "k2_mlp.h5")
    dst = os.path.join(HERE, "k2_mlp_fixed_strings.h5")

    def fixed(v):
        if isinstance(v, str):
            return np.bytes_(v.encode("utf8"))
        if isinstance(v, np.ndarray) and v.dtype == object:
            return np.array([x.encode("utf8") if isinstance(x, str) else x for x in v], dtype="S")
        return v

    with h5py.File(src, "r") as s, h5py.File(dst, "w") as d:
        def copy_attrs(a, b):
            for k, v in a.attrs.items():
                b.attrs[k] = fixed(v)
        copy_attrs(s, d)
        def visit(name, obj):
            if isinstance(obj, h5py.Group):
                copy_attrs(obj, d.require_group(name))
            else:
                d.create_dataset(name, data=obj[()])
        s.visititems(visit)
    print(dst)


def config_only(name, layers):
    """A file holding only a Sequential model_config (for errors raised before any weight is read)."""
    cfg = {"class_name": "Sequential", "config": {"name": name, "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [None, 8, 8, 3], "name": "image"}}] + layers}}
    with h5py.File(os.path.join(HERE, name + ".h5"), "w") as f:
        f.attrs["keras_version"] = "3.15.1"
        f.attrs["model_config"] = json.dumps(cfg)
        f.create_group("model_weights").attrs["layer_names"] = np.array([], dtype=np.float64)


def hdf5_cases():
    path = os.path.join(HERE, "hdf5_cases.h5")
    with h5py.File(path, "w") as f:
        f.attrs["vlen"] = "héllo"
        f.attrs["fixed"] = np.bytes_(b"fixed")
        f.attrs["vlen_list"] = np.array(["a", "bc", ""], dtype=h5py.string_dtype())
        f.attrs["fixed_list"] = np.array([b"ab", b"c"])
        f.attrs["empty"] = np.array([], dtype=np.float64)
        f.attrs["number"] = 3
        g = f.create_group("g")
        g["f32"] = np.arange(6, dtype=np.float32).reshape(2, 3) / 4
        g["f64"] = np.array([1.5, -2.25], dtype=np.float64)
        g["f16"] = np.array([0.5, 3.0, -1.0], dtype=np.float16)
        g["ints"] = np.array([1, 2], dtype=np.int32)
        g["strings"] = np.array([b"a", b"b"])
        g.create_dataset("chunked", data=np.linspace(0, 1, 100, dtype=np.float32), chunks=(10,), compression="gzip")
        g.create_dataset("unwritten", shape=(1000, 1000), dtype=np.float32)  # no bytes stored: must not be read
        f["soft"] = h5py.SoftLink("/g")
        f["ext"] = h5py.ExternalLink("other.h5", "/g")
        raw = os.path.join(HERE, "hdf5_cases.raw")
        f.create_dataset("external_storage", shape=(4,), dtype=np.float32, external=[(os.path.basename(raw), 0, 16)])
        layout = h5py.VirtualLayout(shape=(2, 3), dtype=np.float32)
        layout[:] = h5py.VirtualSource(".", "g/f32", shape=(2, 3))
        f.create_virtual_dataset("virtual", layout)
    if os.path.exists(raw):
        os.remove(raw)  # never needed: the dataset must be refused before anything is read
    print(path)


def h5py_files():
    if os.path.exists(os.path.join(HERE, "k3_mlp.h5")):
        external_link()
    if os.path.exists(os.path.join(HERE, "k2_mlp.h5")):
        fixed_strings()
    config_only("custom_object", [
        {"module": "my_package.layers", "class_name": "MyDense", "registered_name": "my_package>MyDense",
         "config": {"name": "mystery", "units": 4}}])
    config_only("unsupported", [
        {"class_name": "Conv3D", "config": {"name": "c3d"}},
        {"class_name": "LSTM", "config": {"name": "lstm_a"}},
        {"class_name": "LSTM", "config": {"name": "lstm_b"}},
        {"class_name": "ZeroPadding1D", "config": {"name": "cf", "data_format": "channels_first", "padding": 1}},
        {"class_name": "Dense", "config": {"name": "shrink_fc", "units": 3, "activation": "hard_shrink"}},
        {"class_name": "ReLU", "config": {"name": "negative_cap", "max_value": -1.0}},
        {"class_name": "Dense", "config": {"name": "fine", "units": 3}}])
    hdf5_cases()


if __name__ == "__main__":
    print("keras", keras.__version__, file=sys.stderr)
    mlp()
    residual_cnn()
    mobilenet()
    zoo()
    zoo2()
    free_size()
    nested()
    ops()
    lambda_model()
    h5py_files()
