#!/usr/bin/env python3
"""Malformed corpus (issue 19 item 2): hand-made bad files and seeded mutants of small valid files of every format
mltool reads from the command line, each given to the command that reads it.

    run_corpus.py MLTOOL OUT.json [--seed 19] [--mutants 60] [--jobs 2]

Formats and commands (the valid base file of each is made here, or is a committed fixture):
    bin      mltool info F                 base: mlp_opset9.onnx imported by mltool (2,640 bytes)
    onnx     mltool import F -o out.bin     base: Tests/Fixtures/onnx/mlp_opset9.onnx
    mlmodel  mltool import F -o out.bin     base: Tests/Fixtures/coreml/detector_pipeline.mlmodel... (see BASES)
    png      mltool predict MODEL F         base: a 24×16 RGB PNG written here
    jpeg     mltool predict MODEL F         base: a 24×16 baseline JPEG written here (Pillow)
    csv      mltool train F --task text     base: 24 short labelled texts
    tsv      mltool train F --task text
    jsonl    mltool train F --task text
    conllu   mltool train F                 base: 12 tagged sentences
    tagjson  mltool train F --task tagger   base: the same sentences as Create ML's tagger JSON

Each file must end as exit 65 with the file's name and a place (a per-format regex: byte offset, line, field,
tensor, chunk...) on stderr, or exit 0 — for `bin` (checksummed) with `mltool info` output identical to the
original's. Anything else is a failure: another exit status, a signal, no place, or more than 1 s of CPU time
(user + system of mltool and its children, from wait4; a hard kill at 5 s of wall time). Writes a JSON report,
which MalformedCorpusTests checks.
"""
import argparse
import concurrent.futures as cf
import io
import json
import os
import random
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.dirname(HERE)

# Where in the file: what each format's errors must name besides the file (matched on the text after the file's
# name; a line number comes right after it, as "FILE:12: ...").
LINE = r"^:\d+:|byte offset \d+|byte \d+"
PLACE = {
    "bin": r"byte \d+",
    "onnx": r"bytes? \d+|initializer '|node '|graph (input|output) '|opset_import|ir_version|attribute '",
    "mlmodel": r"bytes? \d+|layer '|op '|input '|output '|itemInfoEntries|description\.",
    "png": r"byte \d+|\d+×\d+",
    "jpeg": r"byte \d+|\d+×\d+",
    "csv": LINE + r"|no column '",
    "tsv": LINE + r"|no column '",
    "jsonl": LINE,
    "conllu": LINE,
    "tagjson": LINE + r"|sentence \d+|token '",
}
# Places that stand for the whole file (an empty file).
WHOLE_FILE = r"^: empty file \(0 bytes\)|the file is empty"
# Data files whose every line is well formed but whose data set cannot train a model: the place is the whole set.
DATA_FORMATS = {"csv", "tsv", "jsonl", "conllu", "tagjson"}
DATASET = r"need at least \d+|needs at least \d+|no documents: header row only"
# Refusals (exit 65, the file named) whose place the underlying C library does not give. None is left: protobuf-c's
# refusals are placed by MLToolImport's ProtobufWire (byte and field path), libpng's and libjpeg-turbo's by
# MLToolData's ImageStructure (chunk or segment and byte). Kept so a regression is counted apart, not hidden.
UNLOCALISED = r"ModelProto does not parse|Model does not parse|^: truncated (PNG|JPEG)$"

# ------------------------------------------------------------------------------------------------ valid bases

def png_bytes(w, h, rng):
    raw = b"".join(b"\0" + bytes(rng.randrange(256) for _ in range(3 * w)) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def jpeg_bytes(w, h, rng):
    from PIL import Image
    img = Image.frombytes("RGB", (w, h), bytes(rng.randrange(256) for _ in range(3 * w * h)))
    b = io.BytesIO()
    img.save(b, "JPEG", quality=80)
    return b.getvalue()


WORDS = {"sport": "goal match team score league coach player win".split(),
         "food": "bread soup cheese apple dinner recipe salt cook".split()}


def texts(rng, n=24):
    rows = []
    for i in range(n):
        label = "sport" if i % 2 == 0 else "food"
        rows.append((" ".join(rng.choice(WORDS[label]) for _ in range(6)), label))
    return rows


def csv_bytes(rows, sep=","):
    return ("text" + sep + "label\n" + "".join(f"{t}{sep}{l}\n" for t, l in rows)).encode()


def jsonl_bytes(rows):
    return "".join(json.dumps({"text": t, "label": l}) + "\n" for t, l in rows).encode()


SENTENCES = [
    [("The", "DET"), ("cat", "NOUN"), ("sleeps", "VERB"), (".", "PUNCT")],
    [("A", "DET"), ("dog", "NOUN"), ("runs", "VERB"), ("fast", "ADV"), (".", "PUNCT")],
    [("Birds", "NOUN"), ("sing", "VERB"), ("loudly", "ADV"), (".", "PUNCT")],
    [("The", "DET"), ("old", "ADJ"), ("man", "NOUN"), ("walks", "VERB"), (".", "PUNCT")],
]


def conllu_bytes():
    out = []
    for k in range(3):
        for s, sent in enumerate(SENTENCES):
            out.append(f"# sent_id = s{k}-{s}")
            for i, (w, t) in enumerate(sent, 1):
                out.append(f"{i}\t{w}\t{w.lower()}\t{t}\t_\t_\t{max(0, i - 1)}\tdep\t_\t_")
            out.append("")
    return ("\n".join(out) + "\n").encode()


def tagjson_bytes():
    items = [{"tokens": [w for w, _ in s], "labels": [t for _, t in s]} for _ in range(3) for s in SENTENCES]
    return json.dumps(items).encode()


# ------------------------------------------------------------------------------------------------ mutations

def mutate(data, rng, text):
    b = bytearray(data)
    kind = rng.choice(["flip", "run", "truncate", "smash", "insert", "delete"] + (["utf8", "line"] if text else []))
    if not b:
        return bytes(b), kind
    if kind == "flip":
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == "run":
        i = rng.randrange(len(b))
        n = rng.randint(1, 16)
        fill = rng.choice([None, 0, 0xFF])
        for j in range(i, min(len(b), i + n)):
            b[j] = rng.randrange(256) if fill is None else fill
    elif kind == "truncate":
        b = b[:rng.randrange(len(b))]
    elif kind == "smash":
        i = rng.randrange(max(1, len(b) - 8))
        v = rng.choice([0xFFFFFFFF, 0x7FFFFFFF, 0x80000000, 1 << 63, (1 << 64) - 1, 0x7FFFFFFFFFFFFFFF])
        w = v.to_bytes(8, "little") if rng.random() < 0.5 else bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F])
        b[i:i + len(w)] = w
    elif kind == "insert":
        i = rng.randrange(len(b) + 1)
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif kind == "delete":
        i = rng.randrange(len(b))
        del b[i:i + rng.randint(1, 8)]
    elif kind == "utf8":
        i = rng.randrange(len(b) + 1)
        b[i:i] = rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x00"])
    elif kind == "line":
        lines = bytes(b).split(b"\n")
        i = rng.randrange(len(lines))
        op = rng.choice(["dup", "drop", "swap"])
        if op == "dup":
            lines.insert(i, lines[i])
        elif op == "drop":
            del lines[i]
        else:
            j = rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        b = bytearray(b"\n".join(lines))
    return bytes(b), kind


def onnx_hand_made():
    """Structurally bad ONNX models that parse as protobuf."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    def model(nodes, inits, inputs=None, outputs=None):
        g = helper.make_graph(nodes, "g", inputs or [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              outputs or [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 7
        return m.SerializeToString()

    w = numpy_helper.from_array(np.ones((4, 2), np.float32), "w")
    out = {}
    out["cycle"] = model([helper.make_node("MatMul", ["x", "y2"], ["y1"], name="a"),
                          helper.make_node("Relu", ["y1"], ["y2"], name="b"),
                          helper.make_node("Identity", ["y2"], ["y"], name="c")], [])
    out["self_loop"] = model([helper.make_node("Relu", ["y"], ["y"], name="loop")], [])
    out["duplicate_initializer"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [w, w])
    out["duplicate_output_name"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"),
                                          helper.make_node("Relu", ["x"], ["y"], name="r")], [w])
    out["undefined_input"] = model([helper.make_node("MatMul", ["x", "nope"], ["y"], name="mm")], [])
    out["undefined_output"] = model([helper.make_node("MatMul", ["x", "w"], ["z"], name="mm")], [w])
    neg = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[-4, 2])
    neg.raw_data = b"\0" * 32
    out["negative_dims"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [neg])
    huge = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1 << 62, 4])
    out["huge_dims"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [huge])
    short = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4, 2])
    short.raw_data = b"\0" * 7
    out["short_raw_data"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [short])
    strt = onnx.TensorProto(name="w", data_type=TensorProto.STRING, dims=[2])
    strt.string_data.extend([b"a", b"b"])
    out["string_tensor"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [strt])
    badtype = onnx.TensorProto(name="w", data_type=99, dims=[4, 2])
    out["unknown_data_type"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [badtype])
    out["bad_utf8_name"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [w]).replace(b"mm", b"\xff\xfe")
    out["reshape_bad_shape"] = model([helper.make_node("Reshape", ["x", "s"], ["y"], name="r")],
                                     [numpy_helper.from_array(np.array([3, -1, -1], np.int64), "s")])
    out["conv_bad_attr"] = model([helper.make_node("Conv", ["x", "w"], ["y"], name="c", kernel_shape=[0, -3], strides=[0])], [w])
    out["no_outputs"] = model([helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], [w], outputs=[])
    out["gather_out_of_range"] = model([helper.make_node("Gather", ["w", "i"], ["y"], name="g")],
                                       [w, numpy_helper.from_array(np.array([99], np.int64), "i")])
    return out


def hand_made(fmt, base):
    """Bad files written by hand for each format: name → bytes."""
    out = {"empty": b"", "one_byte": base[:1], "zeros": b"\0" * 64, "ff": b"\xff" * 64, "text": b"hello, world\n"}
    if fmt == "bin":
        out["wrong_magic"] = b"XLTOOL\0\0" + base[8:]
        for off in range(8, 128, 8):  # every header word set to 2^63 and to 2^64-1
            out[f"header_word_{off}_2p63"] = base[:off] + (1 << 63).to_bytes(8, "little") + base[off + 8:]
            out[f"header_word_{off}_max"] = base[:off] + b"\xff" * 8 + base[off + 8:]
        out["header_only"] = base[:128]
        out["doubled"] = base + base
    elif fmt == "png":
        out["wrong_magic"] = b"\x89PNX" + base[4:]
        out["zero_width"] = base[:16] + b"\0\0\0\0" + base[20:]
        out["bad_crc"] = base[:29] + b"\0\0\0\0" + base[33:]
        out["no_iend"] = base[:-12]
        out["bit_depth_3"] = base[:24] + b"\x03" + base[25:]
        out["colour_type_9"] = base[:25] + b"\x09" + base[26:]
        out["idat_length_huge"] = base[:33] + b"\x7f\xff\xff\xff" + base[37:]
    elif fmt == "jpeg":
        out["soi_only"] = b"\xff\xd8"
        out["soi_eoi"] = b"\xff\xd8\xff\xd9"
        out["wrong_magic"] = b"\xff\xd9" + base[2:]
        sof = base.find(b"\xff\xc0")
        if sof > 0:
            out["zero_height"] = base[:sof + 5] + b"\0\0" + base[sof + 7:]
            out["zero_width"] = base[:sof + 7] + b"\0\0" + base[sof + 9:]
            out["components_9"] = base[:sof + 9] + b"\x09" + base[sof + 10:]
        out["no_eoi"] = base[:-2]
    elif fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        out["header_only"] = f"text{sep}label\n".encode()
        out["no_label_column"] = base.replace(b"label", b"lable", 1)
        out["no_text_column"] = base.replace(b"text", b"txet", 1)
        out["unterminated_quote"] = base[:40] + b'"' + base[40:]
        out["ragged_row"] = base + f"a{sep}b{sep}c{sep}d\n".encode()
        out["bad_utf8"] = base[:30] + b"\xff\xfe" + base[30:]
        out["nul_bytes"] = base[:30] + b"\0\0" + base[30:]
        out["one_class"] = base.replace(b"food", b"sport")
        out["crlf_mixed"] = base.replace(b"\n", b"\r", 3)
        out["duplicate_header"] = f"text{sep}text{sep}label\n".encode() + base.split(b"\n", 1)[1]
    elif fmt == "jsonl":
        out["not_json"] = b"{text: 1}\n" + base
        out["array_line"] = b'["a", "b"]\n' + base
        out["number_label"] = base + b'{"text": "x y", "label": 3}\n'
        out["null_text"] = base + b'{"text": null, "label": "food"}\n'
        out["missing_label"] = base + b'{"text": "a b"}\n'
        out["deep"] = b"[" * 2000 + b"]" * 2000 + b"\n" + base
        out["bad_utf8"] = base[:30] + b"\xff\xfe" + base[30:]
        out["bad_escape"] = base + b'{"text": "a\\ud800 b", "label": "food"}\n'
        out["huge_number"] = base + b'{"text": "a b", "label": 1e999999}\n'
    elif fmt == "conllu":
        out["seven_columns"] = b"1\tThe\tthe\tDET\t_\t_\t0\n\n" + base
        out["bad_id"] = b"x\tThe\tthe\tDET\t_\t_\t0\tdep\t_\t_\n\n" + base
        out["id_gap"] = b"1\tThe\tthe\tDET\t_\t_\t0\tdep\t_\t_\n3\tcat\tcat\tNOUN\t_\t_\t1\tdep\t_\t_\n\n" + base
        out["bad_utf8"] = base[:40] + b"\xff\xfe" + base[40:]
        out["range_bad"] = b"1-x\tdon't\t_\t_\t_\t_\t_\t_\t_\t_\n\n" + base
        out["empty_tag"] = base.replace(b"\tDET\t", b"\t\t", 1)
        out["huge_id"] = b"99999999999999999999\tThe\tthe\tDET\t_\t_\t0\tdep\t_\t_\n\n" + base
    elif fmt == "tagjson":
        out["not_array"] = b'{"tokens": []}'
        out["length_mismatch"] = b'[{"tokens": ["a", "b"], "labels": ["X"]}]'
        out["number_token"] = b'[{"tokens": [1], "labels": ["X"]}]'
        out["deep"] = b"[" * 2000 + b"]" * 2000
        out["bad_utf8"] = base[:20] + b"\xff" + base[20:]
        out["missing_labels"] = b'[{"tokens": ["a"]}]'
    elif fmt == "mlmodel":
        out["wrong_wire_type"] = b"\x0d\x01\x02\x03\x04" + base[2:]
        out["length_past_end"] = base[:1] + b"\xff\xff\xff\xff\x0f" + base[6:]
    elif fmt == "onnx":
        out.update(onnx_hand_made())
    return out


# ------------------------------------------------------------------------------------------------ running

def run_one(item, env):
    """Runs one file: exit status, wall time, and the CPU time (user + system) of mltool and its children (wait4)."""
    argv, cwd = item["argv"], item["cwd"]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    timer = threading.Timer(5.0, p.kill)  # the hard limit; the verdict's limit is 1 s
    timer.start()
    out, err = b"", b""
    try:
        readers = [cf.ThreadPoolExecutor(1) for _ in range(2)]
        fo, fe = readers[0].submit(p.stdout.read), readers[1].submit(p.stderr.read)
        _, raw, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(raw)
        out, err = fo.result(), fe.result()
        for r in readers:
            r.shutdown()
    finally:
        timer.cancel()
    wall = time.monotonic() - t0
    status = p.returncode
    if status < 0:
        status = "hang" if wall >= 4.9 else f"signal {-status}"
    return dict(item, status=status, wall_s=round(wall, 3), cpu_s=round(ru.ru_utime + ru.ru_stime, 3),
                stdout=out.decode("utf8", "replace")[-2000:], stderr=err.decode("utf8", "replace").strip()[-800:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mltool")
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--mutants", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    mltool = os.path.abspath(a.mltool)
    rng = random.Random(a.seed)
    tmp = os.path.realpath(tempfile.mkdtemp(prefix="mltool-corpus-"))
    env = dict(os.environ, MLTOOL_CACHE=f"{tmp}/cache")
    try:
        # The valid bases.
        model_img = f"{tmp}/image_model.bin"
        subprocess.run([mltool, "import", os.path.join(FIX, "coreml", "small_cnn.mlmodel"), "-o", model_img],
                       check=True, capture_output=True)
        base_bin = f"{tmp}/base.bin"
        subprocess.run([mltool, "import", os.path.join(FIX, "onnx", "mlp_opset9.onnx"), "-o", base_bin],
                       check=True, capture_output=True)
        rows = texts(random.Random(a.seed))
        bases = {
            "bin": (open(base_bin, "rb").read(), ".bin"),
            "onnx": (open(os.path.join(FIX, "onnx", "mlp_opset9.onnx"), "rb").read(), ".onnx"),
            "mlmodel": (open(os.path.join(FIX, "coreml", "small_cnn.mlmodel"), "rb").read(), ".mlmodel"),
            "png": (png_bytes(24, 16, random.Random(a.seed)), ".png"),
            "jpeg": (jpeg_bytes(24, 16, random.Random(a.seed)), ".jpg"),
            "csv": (csv_bytes(rows), ".csv"),
            "tsv": (csv_bytes(rows, "\t"), ".tsv"),
            "jsonl": (jsonl_bytes(rows), ".jsonl"),
            "conllu": (conllu_bytes(), ".conllu"),
            "tagjson": (tagjson_bytes(), ".json"),
        }
        text_formats = {"csv", "tsv", "jsonl", "conllu", "tagjson"}

        def command(fmt, f, outdir):
            if fmt == "bin":
                return [mltool, "info", f]
            if fmt in ("onnx", "mlmodel"):
                return [mltool, "import", f, "-o", f"{outdir}/out.bin"]
            if fmt in ("png", "jpeg"):
                return [mltool, "predict", model_img, f, "--threads", "1"]
            if fmt in ("csv", "tsv", "jsonl"):
                return [mltool, "train", f, "--task", "text", "-o", f"{outdir}/out.bin", "--quiet", "--threads", "1"]
            return [mltool, "train", f, "--task", "tagger", "-o", f"{outdir}/out.bin", "--quiet", "--threads", "1"]

        items = []
        for fmt, (base, ext) in bases.items():
            files = [("original", "original", base)]
            files += [(f"hand:{k}", "hand", v) for k, v in hand_made(fmt, base).items()]
            frng = random.Random(f"{a.seed}-{fmt}")
            for i in range(a.mutants):
                data, kind = mutate(base, frng, fmt in text_formats)
                files.append((f"mutant{i:03d}:{kind}", "mutant", data))
            for k, (name, origin, data) in enumerate(files):
                d = f"{tmp}/{fmt}/{k:03d}"
                os.makedirs(d)
                f = f"{d}/case{ext}"
                with open(f, "wb") as fh:
                    fh.write(data)
                items.append({"format": fmt, "name": name, "origin": origin, "path": f, "cwd": d,
                              "argv": command(fmt, f, d), "bytes": len(data), "same_as_base": data == base})
        # Originals first (sequentially: their outputs are the reference), then the rest in a small pool.
        originals = {i["format"]: run_one(i, env) for i in items if i["origin"] == "original"}
        rest = [i for i in items if i["origin"] != "original"]
        with cf.ThreadPoolExecutor(a.jobs) as pool:
            results = list(pool.map(lambda i: run_one(i, env), rest))
        report = {"seed": a.seed, "mutants_per_format": a.mutants, "place": PLACE, "originals": originals,
                  "results": []}
        for r in results:
            fmt = r["format"]
            o = originals[fmt]
            name = os.path.basename(r["path"])
            verdict = "ok"
            tail = r["stderr"].split(name, 1)[-1]
            if r["status"] == "hang":
                verdict = "hang"
            elif isinstance(r["status"], str):
                verdict = r["status"]  # a signal
            elif r["cpu_s"] > 1.0:
                verdict = "slow"
            elif r["status"] == 65:
                if name not in r["stderr"]:
                    verdict = "no-file-name"
                elif re.search(PLACE[fmt] + "|" + WHOLE_FILE, tail):
                    verdict = "refused"
                elif fmt in DATA_FORMATS and re.search(DATASET, tail):
                    verdict = "refused-dataset"
                elif re.search(UNLOCALISED, tail):
                    verdict = "refused-unlocalised"
                else:
                    verdict = "no-place"
            elif r["status"] == 0:
                if fmt == "bin":
                    # A checksummed format: whatever loads must be the original.
                    same = r["stdout"].replace(r["path"], "X") == o["stdout"].replace(o["path"], "X")
                    verdict = "identical" if same else "loaded-different"
                else:
                    verdict = "identical" if r["same_as_base"] else "loaded"
            else:
                verdict = f"exit-{r['status']}"
            r["verdict"] = verdict
            del r["argv"], r["cwd"]
            r["path"] = os.path.relpath(r["path"], tmp)
            r["stdout"] = r["stdout"][-300:]
            report["results"].append(r)
        for o in originals.values():
            o["path"] = os.path.relpath(o["path"], tmp)
            del o["argv"], o["cwd"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(a.out, "w") as f:
        json.dump(report, f, indent=1)
    # A summary for people.
    counts = {}
    for r in report["results"]:
        counts.setdefault(r["format"], {}).setdefault(r["verdict"], 0)
        counts[r["format"]][r["verdict"]] += 1
    for fmt, c in counts.items():
        print(fmt, sum(c.values()), c)
    print("max wall", max(r["wall_s"] for r in report["results"]), "max cpu", max(r["cpu_s"] for r in report["results"]))


if __name__ == "__main__":
    main()
