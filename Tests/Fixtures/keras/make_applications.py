#!/usr/bin/env python3
"""Writes keras.applications networks (random, seeded weights) plus Keras's own outputs to DIR, for
KerasApplicationsTests (too large to commit: 2-17 MB each). `make test` runs the Keras 3 line into
.build/keras-applications (pip keras + jax, in the Makefile's PIP_PACKAGES); the Keras 2 line is by hand (tensorflow).

    KERAS_BACKEND=jax python3 make_applications.py DIR                           # Keras 3
    TF_USE_LEGACY_KERAS=1 /tmp/tf-venv/bin/python make_applications.py DIR       # Keras 2 (tf_keras)
    MLTOOL_KERAS_APPS_DIR=DIR swift test --filter KerasApplicationsTests

Files: app_<net>_k<major>.h5 and .json (same JSON layout as make_fixtures.py).
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
if os.environ.get("TF_USE_LEGACY_KERAS") == "1":
    import tf_keras as keras
else:
    import keras

out = sys.argv[1] if len(sys.argv) > 1 else "."
major = keras.__version__.split(".")[0]
rng = np.random.default_rng(0)
nets = {
    "mnv2": lambda: keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10),
    "effb0": lambda: keras.applications.EfficientNetB0(input_shape=(64, 64, 3), weights=None, classes=10),
    "mnv3": lambda: keras.applications.MobileNetV3Small(input_shape=(64, 64, 3), weights=None, classes=10,
                                                        include_preprocessing=False),
}
for name, make in nets.items():
    m = make()
    for layer in m.layers:
        ws = layer.get_weights()
        if ws:
            layer.set_weights([
                (rng.uniform(0.5, 1.5, w.shape) if ("variance" in v.name or "gamma" in v.name)
                 else rng.standard_normal(w.shape) / np.sqrt(max(1, int(np.prod(w.shape[:-1]))))).astype(w.dtype)
                for v, w in zip(layer.weights, ws)])
        if hasattr(layer, "finalize_state"):
            layer.finalize_state()
    path = os.path.join(out, f"app_{name}_k{major}.h5")
    m.save(path)
    x = rng.uniform(0, 255, (2,) + tuple(m.input_shape[1:])).astype(np.float32)
    y = np.asarray(m.predict(x, verbose=0), np.float32)
    with open(path[:-3] + ".json", "w") as f:
        json.dump({"input": {"shape": list(x.shape), "data": x.ravel().tolist()},
                   "output": {"shape": list(y.shape), "data": y.ravel().tolist()}}, f)
    print(path, os.path.getsize(path))
