#!/usr/bin/env python3
"""Writes a Keras 2 weights file whose one Dense kernel is a dataset claiming 2^40 float32 elements (4 TiB).

    python3 make_huge_h5.py OUT.h5

The model_config is a Sequential model of one Dense layer from 1,048,576 features to 1,048,576 units, so the kernel's
shape (2^20, 2^20) is the one the config asks for and the importer reaches the read. The datasets are chunked and
never written, so the file stays a few kilobytes. Used by Tests/MLToolCLITests/ResourceLimitTests.swift: `mltool
import` must refuse it (exit 65) through the HDF5 sandbox's per-dataset limit, quickly and in little memory.
"""
import json
import sys

import h5py
import numpy as np

N = 1 << 20


def main(out):
    cfg = {"class_name": "Sequential", "config": {"name": "huge", "layers": [
        {"class_name": "InputLayer", "config": {"batch_input_shape": [None, N], "dtype": "float32", "name": "features"}},
        {"class_name": "Dense", "config": {"name": "fc", "trainable": True, "dtype": "float32", "units": N,
                                           "activation": "linear", "use_bias": True}}]}}
    with h5py.File(out, "w") as f:
        f.attrs["backend"] = "tensorflow"
        f.attrs["keras_version"] = "2.21.0"
        f.attrs["model_config"] = json.dumps(cfg)
        w = f.create_group("model_weights")
        w.attrs["backend"] = "tensorflow"
        w.attrs["keras_version"] = "2.21.0"
        w.attrs["layer_names"] = np.array(["fc"], dtype=h5py.string_dtype())
        fc = w.create_group("fc")
        fc.attrs["weight_names"] = np.array(["fc/kernel:0", "fc/bias:0"], dtype=h5py.string_dtype())
        inner = fc.create_group("fc")
        inner.create_dataset("kernel:0", shape=(N, N), dtype=np.float32, chunks=(1024, 1024))
        inner.create_dataset("bias:0", shape=(N,), dtype=np.float32, chunks=(1024,))


if __name__ == "__main__":
    main(sys.argv[1])
