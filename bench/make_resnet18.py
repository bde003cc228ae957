#!/usr/bin/env python3
"""Writes a ResNet-18 (torchvision's layout) with seeded random weights as ONNX, for `make bench`'s ResNet row.

Stem 7×7/2 conv + BatchNorm + ReLU + 3×3/2 MaxPool, four stages of two basic blocks (64, 128, 256, 512 channels;
stride 2 and a 1×1 projection at the start of stages 2–4), global average pool, flatten, 512 → 1000 Gemm. Input
"input" (N, 3, 224, 224) with a free batch dimension, output "logits". BatchNormalization nodes are kept (as an
eval-mode export writes them unless it folds them); weights are He-normal so activations stay in range. Needs only
numpy and onnx (the Makefile's pip list). 3.63 GFLOP (1.82 G multiply-adds) per image, 11.7 M parameters.
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(seed=18):
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    count = [0]

    def name(base):
        count[0] += 1
        return f"{base}_{count[0]}"

    def tensor(base, array):
        n = name(base)
        inits.append(numpy_helper.from_array(array.astype(np.float32), n))
        return n

    def conv(x, cin, cout, k, stride, pad):
        w = rng.standard_normal((cout, cin, k, k)) * np.sqrt(2.0 / (cin * k * k))
        y = name("conv")
        nodes.append(helper.make_node("Conv", [x, tensor("w", w)], [y], kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[pad] * 4))
        return y

    def bn(x, c):
        y = name("bn")
        params = [rng.uniform(0.5, 1.0, c), rng.uniform(-0.1, 0.1, c), rng.uniform(-0.1, 0.1, c),
                  rng.uniform(0.5, 1.5, c)]
        nodes.append(helper.make_node("BatchNormalization", [x] + [tensor("bn", p) for p in params], [y],
                                      epsilon=1e-5))
        return y

    def relu(x):
        y = name("relu")
        nodes.append(helper.make_node("Relu", [x], [y]))
        return y

    def block(x, cin, cout, stride):
        h = relu(bn(conv(x, cin, cout, 3, stride, 1), cout))
        h = bn(conv(h, cout, cout, 3, 1, 1), cout)
        skip = x if stride == 1 and cin == cout else bn(conv(x, cin, cout, 1, stride, 0), cout)
        y = name("add")
        nodes.append(helper.make_node("Add", [h, skip], [y]))
        return relu(y)

    x = relu(bn(conv("input", 3, 64, 7, 2, 3), 64))
    p = name("maxpool")
    nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = block(x, cin, cout, stride)
        x = block(x, cout, cout, 1)
        cin = cout
    g = name("pool")
    nodes.append(helper.make_node("GlobalAveragePool", [x], [g]))
    f = name("flatten")
    nodes.append(helper.make_node("Flatten", [g], [f], axis=1))
    w = rng.standard_normal((1000, 512)) * np.sqrt(1.0 / 512)
    nodes.append(helper.make_node("Gemm", [f, tensor("fc_w", w), tensor("fc_b", rng.uniform(-0.1, 0.1, 1000))],
                                  ["logits"], transB=1))
    graph = helper.make_graph(nodes, "resnet18_random",
                              [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 3, 224, 224])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 1000])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="mltool bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, help="the .onnx file to write")
    ap.add_argument("--seed", type=int, default=18)
    a = ap.parse_args()
    onnx.save(build(a.seed), a.out)


if __name__ == "__main__":
    main()
