#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, Tests/Fixtures/fuzz/<target>/seeds/ (committed; small, real files).

    python3 fuzz/make_seeds.py MLTOOL [--out Tests/Fixtures/fuzz]

Copies small fixtures of the repository (ONNX, Core ML, Keras .h5), generates photos (Pillow, fixed pixels), tables,
annotations, tagged corpora and feature-cache entries, imports small models with MLTOOL into native .bin files (and,
for the engine target, quantizes some to int8 and 4- and 6-bit palettes), and
records what the sandboxed HDF5 reader answers for small Keras files (strace of `mltool import`: the parent's reads
on its end of the socket pair) as seeds of hdf5-replies. Targets that read one file picked by a first byte (table,
annotations, conll) get that byte in front. Deterministic apart from the .bin provenance fields.
"""
import argparse
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIX = os.path.join(ROOT, "Tests", "Fixtures")
MAX_SEED = 50_000


def put(out, target, name, data):
    d = os.path.join(out, target, "seeds")
    os.makedirs(d, exist_ok=True)
    if len(data) > MAX_SEED:
        sys.exit(f"make_seeds: {target}/{name} is {len(data)} bytes (> {MAX_SEED})")
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def copy(out, target, src, name=None):
    with open(os.path.join(FIX, src), "rb") as f:
        put(out, target, name or os.path.basename(src), f.read())


def images(out):
    from PIL import Image
    w, h = 16, 12
    rgb = Image.new("RGB", (w, h))
    rgb.putdata([((x * 16) % 256, (y * 20) % 256, ((x + y) * 8) % 256) for y in range(h) for x in range(w)])

    def jpeg(img, **kw):
        b = io.BytesIO()
        img.save(b, "JPEG", quality=80, **kw)
        return b.getvalue()

    def png(img, **kw):
        b = io.BytesIO()
        img.save(b, "PNG", **kw)
        return b.getvalue()

    exif = Image.Exif()
    exif[0x0112] = 6   # orientation: rotate 90° clockwise
    put(out, "image", "baseline.jpg", jpeg(rgb))
    put(out, "image", "progressive.jpg", jpeg(rgb, progressive=True))
    put(out, "image", "gray.jpg", jpeg(rgb.convert("L")))
    put(out, "image", "cmyk.jpg", jpeg(rgb.convert("CMYK")))
    put(out, "image", "exif6.jpg", jpeg(rgb, exif=exif.tobytes()))
    put(out, "image", "rgb.png", png(rgb))
    put(out, "image", "palette.png", png(rgb.convert("P")))
    put(out, "image", "gray16.png", png(rgb.convert("I;16")))
    put(out, "image", "rgba.png", png(rgb.convert("RGBA")))
    put(out, "image", "exif6.png", png(rgb, exif=exif.tobytes()))
    # The annotation folders' photo is 8 × 6 (FuzzEntries.annotationFolder).


def tables(out):
    csv = b"text,label\nthe cat sat,animal\n\"a \"\"quoted\"\", text\",quote\nstocks fell,finance\n"
    tsv = b"label\ttext\nanimal\tthe cat sat\nfinance\tstocks fell\n"
    jsonl = b'{"text": "the cat sat", "label": "animal"}\n{"text": "stocks \\u00e9 fell", "label": 3}\n\n'
    put(out, "table", "csv", b"\x00" + csv)
    put(out, "table", "tsv", b"\x01" + tsv)
    put(out, "table", "jsonl", b"\x02" + jsonl)


def annotations(out):
    createml = [{"image": "a.png", "annotations": [{"label": "cat", "coordinates": {"x": 4, "y": 3, "width": 4, "height": 2}}]}]
    put(out, "annotations", "createml.json", b"\x00" + json.dumps(createml).encode())
    put(out, "annotations", "boxes.csv",
        b"\x01filename,width,height,class,xmin,ymin,xmax,ymax\na.png,8,6,cat,1,1,5,4\na.png,8,6,dog,0,0,8,6\n")
    voc = (b"<annotation><filename>a.png</filename><size><width>8</width><height>6</height></size>"
           b"<object><name>cat</name><bndbox><xmin>1</xmin><ymin>1</ymin><xmax>5</xmax><ymax>4</ymax></bndbox></object>"
           b"</annotation>\n")
    put(out, "annotations", "voc.xml", b"\x02<?xml version=\"1.0\"?>\n" + voc)
    put(out, "annotations", "yolo.txt", b"\x030 0.5 0.5 0.25 0.5\n1 0.2 0.3 0.1 0.1\n")


def corpora(out):
    conllu = ("# text = The cat sat.\n1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\t_\n2\tcat\tcat\tNOUN\tNN\t_\t3\tnsubj\t_\tNE=B-ANI\n"
              "3-4\tsat.\t_\t_\t_\t_\t_\t_\t_\t_\n3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\t_\n4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_\n\n")
    put(out, "conll", "ud.conllu", b"\x00" + conllu.encode())
    put(out, "conll", "ner.conll", b"\x01" + "EU B-ORG\nrejects O\nGerman B-MISC\n\nPeter B-PER\nBlackburn I-PER\n".encode())
    put(out, "conll", "tagger.json", b"\x02" + json.dumps([{"tokens": ["The", "cat"], "labels": ["DET", "NOUN"]}]).encode())
    put(out, "conll", "xpos.conllu", b"\x04" + conllu.encode())


def request_bodies(out):
    """mltool serve's bodies: 0x00 + multipart/form-data (boundary fuzz-boundary), 0x01 + a JSON text body."""
    b = b"--fuzz-boundary"
    form = (b + b"\r\nContent-Disposition: form-data; name=\"image\"; filename=\"a.png\"\r\nContent-Type: image/png\r\n\r\n"
            + b"\x89PNG\r\n\x1a\n" + b"\r\n" + b + b"\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nhello\r\n"
            + b + b"--\r\n")
    put(out, "request-body", "form.multipart", b"\x00" + form)
    put(out, "request-body", "empty.multipart", b"\x00" + b + b"--")
    put(out, "request-body", "text.json", b"\x01" + json.dumps({"text": "The cat sat on the mat."}).encode())
    put(out, "request-body", "texts.json", b"\x01" + json.dumps({"texts": ["Ein Satz.", "Une phrase.", ""]}).encode())
    put(out, "request-body", "row.json", b"\x02" + json.dumps({"row": {"glucose": 148, "mass": 33.6, "sex": "F", "x": None}}).encode())
    put(out, "request-body", "rows.json", b"\x02" + json.dumps({"rows": [{"a": True, "b": "1"}, {"a": 2.5e3}]}).encode())


def feature_cache(out):
    key = bytes.fromhex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    for n in (0, 1, 5):
        body = b"MLFC" + struct.pack("<I", 1) + key + struct.pack("<Q", n) + struct.pack(f"<{n}f", *[i * 0.5 - 1 for i in range(n)])
        put(out, "feature-cache", f"entry{n}.f32", body + struct.pack("<I", zlib.crc32(body)))


def keras_configs(out):
    import h5py
    for name in ("k2_mlp", "k3_mlp", "k2_nested", "k3_ops", "k2_residual_cnn"):
        with h5py.File(os.path.join(FIX, "keras", name + ".h5"), "r") as f:
            c = f.attrs["model_config"]
            put(out, "keras-config", name + ".json", c.encode() if isinstance(c, str) else bytes(c))


def native_models(out, mltool, tmp):
    for src in ("onnx/mlp_opset9.onnx", "onnx/softmax_legacy.onnx", "onnx/qdq_weights.onnx", "keras/k2_mlp.h5"):
        stem = os.path.splitext(os.path.basename(src))[0]
        dst = os.path.join(tmp, stem + ".bin")
        subprocess.run([mltool, "import", os.path.join(FIX, src), "-o", dst], check=True, capture_output=True)
        with open(dst, "rb") as f:
            put(out, "native-model", stem + ".bin", f.read())
    q = os.path.join(tmp, "mlp_q8.bin")
    subprocess.run([mltool, "quantize", os.path.join(tmp, "mlp_opset9.bin"), "--bits", "8", "--out", q, "--quiet", "--no-eval"],
                   check=True, capture_output=True)
    with open(q, "rb") as f:
        put(out, "native-model", "mlp_opset9_q8.bin", f.read())


def engine_models(out, mltool, tmp):
    """Small networks for the engine target: convs (depthwise, residual, squeeze-excite), a dense network, and the
    same with int8 and 4- and 6-bit palette weights (every layer quantized), so the engine's packing, its int8 and
    palette paths and its fusions all have a seed."""
    for src in ("onnx/depthwise_cnn.onnx", "onnx/residual_cnn.onnx", "onnx/squeeze_excite.onnx", "onnx/mlp_opset9.onnx",
                "onnx/flatten_nchw.onnx"):
        stem = os.path.splitext(os.path.basename(src))[0]
        dst = os.path.join(tmp, "engine-" + stem + ".bin")
        subprocess.run([mltool, "import", os.path.join(FIX, src), "-o", dst], check=True, capture_output=True)
        with open(dst, "rb") as f:
            put(out, "engine", stem + ".bin", f.read())
        if stem in ("depthwise_cnn", "residual_cnn"):
            for bits in ("8", "4", "6"):
                q = os.path.join(tmp, f"engine-{stem}-{bits}.bin")
                subprocess.run([mltool, "quantize", dst, "--bits", bits, "--min-elements", "16", "--out", q, "--quiet",
                                "--no-eval"], check=True, capture_output=True)
                with open(q, "rb") as f:
                    put(out, "engine", f"{stem}_q{bits}.bin", f.read())


# What issue 48 added to the ONNX importer and the engine: control flow, free dimensions, recurrent layers, dynamic
# int8, attention, and the op breadth of op_breadth.
GRAPH_SEEDS = ("control/if_runtime.onnx", "control/if_nested.onnx", "control/if_rank_guard.onnx", "control/loop_counted.onnx",
               "control/scan_axes.onnx", "control/squeeze_free_batch.onnx", "dynamic/reshape_heads.onnx",
               "dynamic/slice_sized.onnx", "dynamic/gather_free.onnx", "dynamic/same_pad_resize.onnx",
               "dynamic-int8/conv_runtime_bias.onnx", "dynamic-int8/lstm_dynamic.onnx", "recurrent/onnx_lstm_functions.onnx",
               "recurrent/onnx_gru_linear_before_reset.onnx", "einsum_attention.onnx", "attention_block.onnx")
GRAPH_ENGINE_SEEDS = ("if_runtime", "if_rank_guard", "slice_sized", "reshape_heads", "lstm_dynamic", "conv_runtime_bias",
                      "onnx_gru_linear_before_reset", "einsum_attention", "op_breadth")


def op_breadth():
    """One graph (fixed sizes) through the op families issue 48 added: reductions, unary math, PRelu, ConvTranspose,
    Einsum, comparisons and Where on live tensors, GatherElements / ScatterElements, CumSum, Tile, DepthToSpace,
    ArgMax, LogSoftmax, Cast."""
    import numpy as np
    from onnx import helper as h, TensorProto as T, numpy_helper as nh
    rng = np.random.default_rng(48)
    c = lambda name, v: nh.from_array(np.asarray(v), name)
    inits = [c("slope", rng.normal(0, 0.1, (4, 1, 1)).astype(np.float32)),
             c("wt", rng.normal(0, 0.3, (4, 8, 2, 2)).astype(np.float32)),
             c("axes", np.array([2], np.int64)), c("zero", np.array(0.0, np.float32)),
             c("axis", np.array(1, np.int64)), c("reps", np.array([1, 1, 1, 2], np.int64)),
             c("idx", np.zeros((1, 8, 1, 1), np.int64))]
    n = h.make_node
    nodes = [
        n("PRelu", ["x", "slope"], ["p"]),
        n("ConvTranspose", ["p", "wt"], ["ct"], strides=[2, 2], pads=[0, 0, 0, 0]),
        n("Softplus", ["ct"], ["inorm"]),
        n("Erf", ["inorm"], ["e"]),
        n("ReduceMax", ["e", "axes"], ["rmax"], keepdims=1),
        n("Sub", ["e", "rmax"], ["centered"]),
        n("Exp", ["centered"], ["ex"]),
        n("CumSum", ["ex", "axis"], ["cs"]),
        n("Greater", ["cs", "zero"], ["pos"]),
        n("Where", ["pos", "cs", "centered"], ["w"]),
        n("Tile", ["w", "reps"], ["tiled"]),
        n("DepthToSpace", ["tiled"], ["d2s"], blocksize=2, mode="CRD"),
        n("ReduceMean", ["d2s", "axes"], ["rmean"], keepdims=1),
        n("GatherElements", ["ct", "idx"], ["ge"], axis=2),
        n("ScatterElements", ["ct", "idx", "ge"], ["se"], axis=2),
        n("Einsum", ["se", "se"], ["gram"], equation="nchw,ndhw->ncdw"),
        n("LogSoftmax", ["gram"], ["ls"], axis=-1),
        n("ArgMax", ["ls"], ["am"], axis=1, keepdims=0),
        n("Cast", ["am"], ["amf"], to=T.FLOAT),
    ]
    g = h.make_graph(nodes, "op_breadth", [h.make_tensor_value_info("x", T.FLOAT, [1, 4, 6, 5])],
                     [h.make_tensor_value_info("rmean", T.FLOAT, None), h.make_tensor_value_info("amf", T.FLOAT, None)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)], producer_name="make_seeds.py")
    m.ir_version = 8
    return m.SerializeToString()


def graph_seeds(out, mltool, tmp):
    """ONNX seeds of the graphs in GRAPH_SEEDS and op_breadth, and the engine seeds of those in GRAPH_ENGINE_SEEDS
    imported (plan-time values and guards of free dimensions, ifElse, recurrent steps, int8 matMul and conv on
    dynamically quantized codes)."""
    paths = {}
    for src in GRAPH_SEEDS:
        copy(out, "onnx", "onnx/" + src)
        paths[os.path.splitext(os.path.basename(src))[0]] = os.path.join(FIX, "onnx", src)
    put(out, "onnx", "op_breadth.onnx", op_breadth())
    paths["op_breadth"] = os.path.join(out, "onnx", "seeds", "op_breadth.onnx")
    for stem in GRAPH_ENGINE_SEEDS:
        dst = os.path.join(tmp, "graph-" + stem + ".bin")
        subprocess.run([mltool, "import", paths[stem], "-o", dst], check=True, capture_output=True)
        with open(dst, "rb") as f:
            put(out, "engine", stem + ".bin", f.read())


def hdf5_replies(out, mltool, tmp):
    """The bytes the parent reads from its end of the sandbox's socket pair during `mltool import x.h5`."""
    for name in ("k2_mlp", "k3_mlp", "k2_nested", "unsupported"):
        log = os.path.join(tmp, name + ".strace")
        subprocess.run(["strace", "-o", log, "-xx", "-s", "100000000", "-e", "trace=socketpair,read", "-e", "signal=none",
                        mltool, "import", os.path.join(FIX, "keras", name + ".h5"), "-o", os.path.join(tmp, name + ".bin")],
                       capture_output=True)
        channel, data = None, bytearray()
        with open(log) as f:
            for line in f:
                m = re.match(r"socketpair\(AF_UNIX, SOCK_STREAM\|SOCK_CLOEXEC, 0, \[(\d+), \d+\]\) = 0", line)
                if m:
                    channel = m.group(1)
                    continue
                m = re.match(r"read\((\d+), \"((?:\\x[0-9a-f]{2})*)\"(?:\.\.\.)?, \d+\)\s+=\s+(\d+)", line)
                if m and channel is not None and m.group(1) == channel:
                    data += bytes.fromhex(m.group(2).replace("\\x", ""))[: int(m.group(3))]
        if not data:
            sys.exit(f"make_seeds: no replies recorded for {name} (strace log {log})")
        put(out, "hdf5-replies", name + ".replies", bytes(data))


def nested_pipelines(levels):
    """A Core ML Model whose pipeline holds a Model whose pipeline holds ..., `levels` deep (Model.pipeline = 202,
    Pipeline.models = 1), built inside-out. protobuf-c recursed into 5,000 levels (40 KB) until its stack ran out;
    mltool refuses more than 100 nested messages (InputLimits.maxProtobufDepth) before protobuf-c runs."""
    def varint(n):
        out = bytearray()
        while True:
            b, n = n & 0x7F, n >> 7
            out.append(b | 0x80 if n else b)
            if not n:
                return bytes(out)
    sizes, size = [], 0
    for _ in range(levels):
        models = 1 + len(varint(size)) + size
        sizes.append((size, models))
        size = 2 + len(varint(models)) + models
    out = bytearray(varint(1 << 3) + varint(4))
    for inner, models in reversed(sizes):
        out += varint(202 << 3 | 2) + varint(models) + varint(1 << 3 | 2) + varint(inner)
    return bytes(out)


def coreml_packages(out):
    """coreml-package seeds: each fixture package as the entry's archive (2-byte LE length + Manifest.json, 4-byte
    LE length + model.mlmodel, then weights/weight.bin)."""
    for name in ("small_cnn.mlpackage", "small_cnn_fp16.mlpackage", "unsupported.mlpackage"):
        root = os.path.join(FIX, "coreml", name)
        manifest = open(os.path.join(root, "Manifest.json"), "rb").read()
        spec = open(os.path.join(root, "Data", "com.apple.CoreML", "model.mlmodel"), "rb").read()
        wpath = os.path.join(root, "Data", "com.apple.CoreML", "weights", "weight.bin")
        weights = open(wpath, "rb").read() if os.path.exists(wpath) else b""
        put(out, "coreml-package", name.replace(".mlpackage", ".pkg"),
            struct.pack("<H", len(manifest)) + manifest + struct.pack("<I", len(spec)) + spec + weights)


def protobuf_depth(out):
    put(out, "coreml", "nested-pipelines-49.mlmodel", nested_pipelines(49))   # 99 messages deep: accepted
    d = os.path.join(out, "coreml", "regressions")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "nested-pipelines-5000.mlmodel"), "wb") as f:
        f.write(nested_pipelines(5000))


def tflite_seeds(out):
    """Tests/Fixtures/tflite/make_tflite.py's tiny files (needs ai_edge_litert for its schema and references)."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, os.path.join(FIX, "tflite", "make_tflite.py"), "--out", tmp], check=True)
        for name in ("ops_conv", "ops_elementwise", "ops_shapes", "int8", "unsupported"):
            with open(os.path.join(tmp, name + ".tflite"), "rb") as f:
                put(out, "tflite", name + ".tflite", f.read())


def safetensors_seeds(out):
    """safetensors files in the layout of Hugging Face's writer: a float32 matrix, float16 and bfloat16 vectors, an
    int64 row like BERT's position_ids, a header padded with spaces to 8 bytes, and an empty file (`{}`)."""
    def file(tensors, metadata=None):
        header, data = {}, b""
        if metadata:
            header["__metadata__"] = metadata
        for name, dtype, shape, raw in tensors:
            header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
            data += raw
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        return struct.pack("<Q", len(h)) + h + data

    put(out, "safetensors", "matrix.safetensors", file(
        [("dense.weight", "F32", [2, 3], struct.pack("<6f", 0.5, -1, 2, 0, 1e-3, 3)),
         ("dense.bias", "F16", [3], struct.pack("<3e", 1, -2, 0.25)),
         ("norm.weight", "BF16", [2], bytes([0x80, 0x3F, 0x00, 0xC0])),
         ("embeddings.position_ids", "I64", [1, 4], struct.pack("<4q", 0, 1, 2, 3))], {"format": "pt"}))
    put(out, "safetensors", "scalar.safetensors", file([("s", "F64", [], struct.pack("<d", 1.5)),
                                                        ("e", "U8", [0], b"")]))
    put(out, "safetensors", "empty.safetensors", file([]))


def tokenizer_seeds(out):
    """BERT tokenizer.json files as Hugging Face writes them: a TemplateProcessing one with a 12-token vocabulary
    and a special token, and a BertProcessing one without truncation."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able",
                                         "hello", ",", "w", "##orld", "中", "!"])}
    added = [{"id": 4, "content": "[MASK]", "special": True, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False}]
    normalizer = {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True, "strip_accents": None,
                  "lowercase": True}
    model = {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
             "max_input_chars_per_word": 100, "vocab": vocab}
    template = {"type": "TemplateProcessing",
                "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                           {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}},
                         {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [2], "tokens": ["[CLS]"]},
                                   "[SEP]": {"id": "[SEP]", "ids": [3], "tokens": ["[SEP]"]}}}
    for name, post, truncation in (("template.json", template, {"max_length": 8, "strategy": "LongestFirst", "stride": 0}),
                                   ("bert.json", {"type": "BertProcessing", "sep": ["[SEP]", 3], "cls": ["[CLS]", 2]}, None)):
        put(out, "tokenizer-json", name, json.dumps(
            {"version": "1.0", "truncation": truncation, "padding": None, "added_tokens": added, "normalizer": normalizer,
             "pre_tokenizer": {"type": "BertPreTokenizer"}, "post_processor": post, "model": model},
            ensure_ascii=False).encode())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mltool")
    ap.add_argument("--out", default=os.path.join(FIX, "fuzz"))
    ap.add_argument("--graphs-only", action="store_true",
                    help="write only graph_seeds' ONNX and engine seeds (the others' .bin provenance would change)")
    a = ap.parse_args()
    mltool = os.path.abspath(a.mltool)
    if a.graphs_only:
        with tempfile.TemporaryDirectory() as tmp:
            graph_seeds(a.out, mltool, tmp)
        return
    for t in os.listdir(a.out) if os.path.isdir(a.out) else []:
        shutil.rmtree(os.path.join(a.out, t, "seeds"), ignore_errors=True)
    for src in ("mlp_opset9.onnx", "softmax_legacy.onnx", "qdq_weights.onnx", "free_size.onnx", "depthwise_cnn.onnx",
                "quantize_activation.onnx", "unsupported.onnx", "int64_input.onnx"):
        copy(a.out, "onnx", "onnx/" + src)
    for src in ("unsupported.mlmodel", "detector_pipeline.mlmodel", "small_cnn.mlmodel", "resnet_palette4.mlmodel"):
        copy(a.out, "coreml", "coreml/" + src)
    for src in ("k2_mlp.h5", "k3_mlp.h5", "k2_nested.h5", "unsupported.h5"):
        copy(a.out, "keras-h5", "keras/" + src)
    images(a.out)
    tables(a.out)
    annotations(a.out)
    corpora(a.out)
    feature_cache(a.out)
    request_bodies(a.out)
    keras_configs(a.out)
    protobuf_depth(a.out)
    coreml_packages(a.out)
    tflite_seeds(a.out)
    safetensors_seeds(a.out)
    tokenizer_seeds(a.out)
    with tempfile.TemporaryDirectory() as tmp:
        native_models(a.out, mltool, tmp)
        engine_models(a.out, mltool, tmp)
        graph_seeds(a.out, mltool, tmp)
        hdf5_replies(a.out, mltool, tmp)


if __name__ == "__main__":
    main()
