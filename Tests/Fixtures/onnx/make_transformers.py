"""Transformer encoders exported by real PyTorch, with onnxruntime's outputs at several sequence lengths (issue 48,
items 4 and 5; run from the repository root):

    python3 Tests/Fixtures/onnx/make_transformers.py [--out .build/transformers]

Seeded weights, no hub download. Two networks, each exported with `torch.onnx.export` (opset 17, eval mode):

- bert: a BERT-style encoder as Hugging Face's BertModel computes it: token + position + segment embeddings,
  LayerNorm, 4 layers (hidden 256, 4 heads, intermediate 1024, GELU through erf, post-LayerNorm), the attention
  mask made additive as (1 − mask) · finfo(float32).min, position ids sliced from a buffer to the sequence length;
  outputs the last hidden state (batch, seq, 256) and the pooled [CLS] row (tanh dense, (batch, 256)). Inputs
  input_ids, attention_mask, token_type_ids: int64 (batch, seq) with dynamic axes batch and seq. Written by the
  TorchScript exporter (`dynamo=False`: what most files in the wild come from) as bert.onnx, and by the dynamo
  exporter as bert_dynamo.onnx when that exporter works here (it needs onnxscript).
- vit: a ViT-style image encoder: 16×16 patch conv (224×224 → 196 patches of 256), class token, position
  embeddings, 4 pre-LayerNorm layers, final LayerNorm, a 10-class head on the class token; outputs the hidden
  states (batch, 197, 256) and the logits (batch, 10); dynamic batch.

Then `onnxruntime.quantization.quantize_dynamic` on bert.onnx (QOperator: DynamicQuantizeLinear → MatMulInteger →
Cast → Mul per weight, the embedding tables as Gather → DequantizeLinear) with int8 weights (QInt8, the default) as
bert_int8.onnx, and with uint8 weights (QUInt8) as bert_uint8.onnx.

The token ids are real text: Debian package descriptions (datasets/debian-descriptions/test.csv, which
datasets/debian-descriptions.sh makes) through a word-hash tokenizer into BERT's 30,522 ids ([CLS] 101, [SEP] 102,
[PAD] 0): the synopsis is segment 0, the rest of the description segment 1. Each batch of 2 pairs a description
longer than the sequence with one shorter than it, so its attention mask has real padding.

Everything goes to OUT: the .onnx files, each input and onnxruntime's outputs as raw little-endian float32 files
(the int64 ids as their float32 values, exact below 2^24), and manifest.json:
{"torch": version, "onnxruntime": version, "runs": [{"model", "name", "inputs": [{name, shape, file}],
"outputs": [...]}]} — one run per model, batch (1, 2) and sequence length (8, 64, 128; ViT: its 197 tokens); the
int8 models' runs also have "spec": the outputs of onnx's reference evaluator (`specification`).
A complete OUT (its manifest written by this version of the script) is left alone.
"""
import argparse
import csv
import hashlib
import json
import os
import re
import sys
import zlib

import numpy as np

VOCAB = 30522
CLS, SEP, PAD = 101, 102, 0
HIDDEN, HEADS, LAYERS, INTERMEDIATE = 256, 4, 4, 1024
MAX_POSITIONS = 512
OPSET = 17
LENGTHS = [8, 64, 128]
BATCHES = [1, 2]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
DESCRIPTIONS = os.path.join(ROOT, "datasets", "debian-descriptions", "test.csv")


def word_ids(text):
    """Lower-cased words and punctuation marks, each hashed (CRC-32) into the ids above BERT's special ones."""
    return [1000 + zlib.crc32(w.encode()) % (VOCAB - 1000) for w in re.findall(r"[a-z0-9]+|[^\sa-z0-9]", text.lower())]


def encode(text, length):
    """[CLS] synopsis [SEP] body [SEP], truncated to `length`, padded with [PAD]: (ids, mask, segments)."""
    synopsis, _, body = text.partition("\n")
    a, b = word_ids(synopsis), word_ids(body)
    ids = [CLS] + a + [SEP] + b + [SEP]
    segments = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    ids, segments = ids[:length], segments[:length]
    mask = [1] * len(ids) + [0] * (length - len(ids))
    return ids + [PAD] * (length - len(ids)), mask, segments + [0] * (length - len(segments))


def texts():
    if not os.path.exists(DESCRIPTIONS):
        sys.exit(f"make_transformers.py: {DESCRIPTIONS} is missing: run datasets/debian-descriptions.sh first")
    with open(DESCRIPTIONS, newline="", encoding="utf-8") as f:
        return [row["text"] for row in csv.DictReader(f)]


def batch_texts(all_texts, length, batch):
    """A description longer than `length` tokens, then (batch 2) the first one between a quarter and three
    quarters of it, or (none such: length 8) the first words of the first synopsis, a row of 3/4 `length` tokens."""
    def count(t):
        synopsis, _, body = t.partition("\n")
        return len(word_ids(synopsis)) + len(word_ids(body)) + 3
    long_text = next(t for t in all_texts if count(t) > length)
    if batch == 1:
        return [long_text]
    short = next((t for t in all_texts if length // 4 <= count(t) <= 3 * length // 4), None)
    if short is None:
        short = " ".join(all_texts[0].partition("\n")[0].split()[:max(1, 3 * length // 4 - 3)])
    return [long_text, short]


def build_models():
    import torch
    from torch import nn

    class SelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.query, self.key, self.value = (nn.Linear(HIDDEN, HIDDEN) for _ in range(3))
            self.head = HIDDEN // HEADS

        def split(self, x):
            b, s, _ = x.shape
            return x.view(b, s, HEADS, self.head).permute(0, 2, 1, 3)

        def forward(self, x, additive_mask):
            q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
            scores = torch.matmul(q, k.transpose(-1, -2)) / (self.head ** 0.5)
            if additive_mask is not None:
                scores = scores + additive_mask
            context = torch.matmul(scores.softmax(-1), v).permute(0, 2, 1, 3).contiguous()
            return context.view(context.shape[0], context.shape[1], HIDDEN)

    class BertLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attention = SelfAttention()
            self.attention_out = nn.Linear(HIDDEN, HIDDEN)
            self.attention_norm = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.intermediate = nn.Linear(HIDDEN, INTERMEDIATE)
            self.output = nn.Linear(INTERMEDIATE, HIDDEN)
            self.output_norm = nn.LayerNorm(HIDDEN, eps=1e-12)

        def forward(self, x, additive_mask):
            x = self.attention_norm(x + self.attention_out(self.attention(x, additive_mask)))
            return self.output_norm(x + self.output(nn.functional.gelu(self.intermediate(x))))

    class Bert(nn.Module):
        def __init__(self):
            super().__init__()
            self.words = nn.Embedding(VOCAB, HIDDEN, padding_idx=PAD)
            self.positions = nn.Embedding(MAX_POSITIONS, HIDDEN)
            self.segments = nn.Embedding(2, HIDDEN)
            self.norm = nn.LayerNorm(HIDDEN, eps=1e-12)
            self.layers = nn.ModuleList(BertLayer() for _ in range(LAYERS))
            self.pooler = nn.Linear(HIDDEN, HIDDEN)
            self.register_buffer("position_ids", torch.arange(MAX_POSITIONS).unsqueeze(0), persistent=False)

        def forward(self, input_ids, attention_mask, token_type_ids):
            seq = input_ids.shape[1]
            positions = self.position_ids[:, :seq]
            x = self.norm(self.words(input_ids) + self.positions(positions) + self.segments(token_type_ids))
            # Hugging Face's get_extended_attention_mask: (batch, 1, 1, seq), 0 where attended, the float minimum
            # where padded.
            extended = attention_mask[:, None, None, :].to(x.dtype)
            additive = (1.0 - extended) * torch.finfo(x.dtype).min
            for layer in self.layers:
                x = layer(x, additive)
            return x, torch.tanh(self.pooler(x[:, 0]))

    class VitLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1 = nn.LayerNorm(HIDDEN, eps=1e-6)
            self.attention = SelfAttention()
            self.attention_out = nn.Linear(HIDDEN, HIDDEN)
            self.norm2 = nn.LayerNorm(HIDDEN, eps=1e-6)
            self.mlp1 = nn.Linear(HIDDEN, INTERMEDIATE)
            self.mlp2 = nn.Linear(INTERMEDIATE, HIDDEN)

        def forward(self, x):
            x = x + self.attention_out(self.attention(self.norm1(x), None))
            return x + self.mlp2(nn.functional.gelu(self.mlp1(self.norm2(x))))

    class Vit(nn.Module):
        def __init__(self):
            super().__init__()
            self.patches = nn.Conv2d(3, HIDDEN, 16, 16)
            self.cls = nn.Parameter(torch.randn(1, 1, HIDDEN) * 0.02)
            self.positions = nn.Parameter(torch.randn(1, 197, HIDDEN) * 0.02)
            self.layers = nn.ModuleList(VitLayer() for _ in range(LAYERS))
            self.norm = nn.LayerNorm(HIDDEN, eps=1e-6)
            self.head = nn.Linear(HIDDEN, 10)

        def forward(self, pixels):
            x = self.patches(pixels).flatten(2).transpose(1, 2)
            x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
            for layer in self.layers:
                x = layer(x)
            x = self.norm(x)
            return x, self.head(x[:, 0])

    torch.manual_seed(48)
    bert, vit = Bert().eval(), Vit().eval()
    # BERT's initialisation (normal, std 0.02) for the embeddings; LayerNorms away from the identity so that their
    # scale and bias matter.
    with torch.no_grad():
        for e in (bert.words, bert.positions, bert.segments):
            e.weight.normal_(0, 0.02)
        for m in list(bert.modules()) + list(vit.modules()):
            if isinstance(m, nn.LayerNorm):
                m.weight.uniform_(0.5, 1.5)
                m.bias.normal_(0, 0.1)
    return torch, bert, vit


def export(torch, module, args, path, input_names, output_names, dynamic_axes, dynamo):
    kwargs = dict(input_names=input_names, output_names=output_names, opset_version=OPSET)
    if dynamo:
        kwargs["dynamo"] = True
        kwargs["dynamic_shapes"] = {n: {a: torch.export.Dim.AUTO for a in axes} for n, axes in dynamic_axes.items()}
    else:
        kwargs.update(dynamo=False, dynamic_axes=dynamic_axes, do_constant_folding=True)
    with torch.no_grad():
        torch.onnx.export(module, args, path, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=os.path.join(ROOT, ".build", "transformers"))
    out = parser.parse_args().out
    with open(os.path.abspath(__file__), "rb") as f:
        stamp = hashlib.sha256(f.read()).hexdigest()
    manifest_path = os.path.join(out, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            if json.load(f).get("script") == stamp:
                print(f"make_transformers: {out} is complete")
                return
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as e:
        sys.exit(f"make_transformers.py needs onnx and onnxruntime: {e}")
    try:
        torch, bert, vit = build_models()
    except ImportError as e:
        sys.exit(f"make_transformers.py needs torch (pip install torch): {e}")
    os.makedirs(out, exist_ok=True)
    ids = ["input_ids", "attention_mask", "token_type_ids"]
    bert_axes = {n: {0: "batch", 1: "seq"} for n in ids}
    bert_axes.update(hidden={0: "batch", 1: "seq"}, pooled={0: "batch"})
    sample = [torch.ones(2, 16, dtype=torch.int64)] * 3
    models = ["bert"]
    export(torch, bert, tuple(sample), os.path.join(out, "bert.onnx"), ids, ["hidden", "pooled"], bert_axes, dynamo=False)
    try:
        export(torch, bert, tuple(sample), os.path.join(out, "bert_dynamo.onnx"), ids, ["hidden", "pooled"],
               {n: {0: "batch", 1: "seq"} for n in ids}, dynamo=True)
        models.append("bert_dynamo")
    except Exception as e:  # the dynamo exporter needs onnxscript and may fail on a given torch
        print(f"make_transformers: the dynamo exporter failed ({type(e).__name__}: {str(e).splitlines()[0][:200]}); "
              "bert_dynamo.onnx not written")
    export(torch, vit, (torch.zeros(1, 3, 224, 224),), os.path.join(out, "vit.onnx"), ["pixels"], ["hidden", "logits"],
           {"pixels": {0: "batch"}, "hidden": {0: "batch"}, "logits": {0: "batch"}}, dynamo=False)
    models.append("vit")
    quantize_dynamic(os.path.join(out, "bert.onnx"), os.path.join(out, "bert_int8.onnx"), weight_type=QuantType.QInt8)
    quantize_dynamic(os.path.join(out, "bert.onnx"), os.path.join(out, "bert_uint8.onnx"), weight_type=QuantType.QUInt8)
    models += ["bert_int8", "bert_uint8"]

    def write(name, array):
        path = os.path.join(out, name + ".f32")
        np.asarray(array, dtype="<f4").tofile(path)
        return {"name": name.rsplit(".", 1)[-1], "shape": list(array.shape), "file": os.path.basename(path)}

    all_texts = texts()
    rng = np.random.default_rng(48)
    runs = []
    for model in models:
        session = ort.InferenceSession(os.path.join(out, model + ".onnx"), providers=["CPUExecutionProvider"])
        spec = specification(os.path.join(out, model + ".onnx")) if model in ("bert_int8", "bert_uint8") else None
        for batch in BATCHES:
            for length in ([197] if model == "vit" else LENGTHS):
                if model == "vit":
                    feeds = {"pixels": rng.standard_normal((batch, 3, 224, 224)).astype(np.float32)}
                else:
                    rows = [encode(t, length) for t in batch_texts(all_texts, length, batch)]
                    feeds = {n: np.array([r[i] for r in rows], dtype=np.int64) for i, n in enumerate(ids)}
                results = session.run(None, feeds)
                tag = f"{model}.b{batch}.s{length}"
                runs.append({
                    "model": model + ".onnx", "name": tag,
                    "inputs": [write(f"{tag}.in.{n}", v) for n, v in feeds.items()],
                    "outputs": [write(f"{tag}.out.{o.name}", r) for o, r in zip(session.get_outputs(), results)],
                })
                if spec is not None:
                    runs[-1]["spec"] = [write(f"{tag}.spec.{o.name}", r)
                                        for o, r in zip(session.get_outputs(), spec.run(None, feeds))]
    with open(manifest_path, "w") as f:
        json.dump({"script": stamp, "torch": torch.__version__, "onnxruntime": ort.__version__, "runs": runs}, f, indent=1)
    print(f"make_transformers: {len(runs)} runs of {', '.join(models)} in {out}")


def specification(path):
    """onnx's reference evaluator (onnx.reference, pure numpy) on the file: ONNX's own definition of each op, here
    the exact integer arithmetic of DynamicQuantizeLinear → MatMulInteger, which onnxruntime's AVX2 kernel without VNNI
    does not keep for int8 weights (its vpmaddubsw saturates pairs of products in int16). The evaluator has no
    DequantizeLinear before opset 19, so the file is read as opset 21: every op this encoder uses means the same there
    for its types."""
    import onnx
    from onnx.reference import ReferenceEvaluator
    model = onnx.load(path)
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 21
    return ReferenceEvaluator(model)


if __name__ == "__main__":
    main()
