#!/usr/bin/env python3
"""The sentence-embedding oracle of SentenceEncoderTests: all-MiniLM-L6-v2 computed in numpy (float64; scipy's erf) from the same
model.safetensors, config.json and tokenizer.json, as Hugging Face's BertModel and sentence-transformers' Pooling
(mean over the attention mask) and Normalize compute it; token ids from the `tokenizers` library.

Request (stdin): {"dir": the folder of the three files, "ewt": an EWT .conllu, "count": N}. The texts: the first N
`# text =` sentences of the EWT file. Answer (stdout): {"texts": [...], "embeddings": [[float] * hidden, ...]}.
Each text is run alone (no padding), so the reference does not depend on batching."""
import json, math, os, struct, sys

import numpy as np
import scipy.special
from tokenizers import Tokenizer


def tensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__" or t["dtype"] != "F32":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[begin:end], dtype="<f4").reshape(t["shape"]).astype(np.float64)
    return out


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + scipy.special.erf(x / math.sqrt(2)))


def encode(w, cfg, ids):
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    t = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:t] \
        + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
    d = h // heads
    for l in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{l}."
        def dense(z, name):
            return z @ w[p + name + ".weight"].T + w[p + name + ".bias"]
        q, k, v = (dense(x, "attention.self." + n).reshape(t, heads, d).transpose(1, 0, 2) for n in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        c = (s @ v).transpose(1, 0, 2).reshape(t, h)
        x = layer_norm(dense(c, "attention.output.dense") + x, w[p + "attention.output.LayerNorm.weight"],
                       w[p + "attention.output.LayerNorm.bias"], eps)
        f = dense(gelu(dense(x, "intermediate.dense")), "output.dense")
        x = layer_norm(f + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
    mean = x.mean(0)
    return mean / max(np.linalg.norm(mean), 1e-12)


request = json.load(sys.stdin)
folder = request["dir"]
with open(os.path.join(folder, "config.json")) as f:
    cfg = json.load(f)
weights = tensors(os.path.join(folder, "model.safetensors"))
tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
tokenizer.no_padding()
with open(request["ewt"], encoding="utf-8") as f:
    texts = [line[len("# text = "):].rstrip("\n") for line in f if line.startswith("# text = ")][:request["count"]]
embeddings = [encode(weights, cfg, tokenizer.encode(t).ids).tolist() for t in texts]
json.dump({"texts": texts, "embeddings": embeddings}, sys.stdout)
