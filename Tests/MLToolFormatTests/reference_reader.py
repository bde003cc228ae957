#!/usr/bin/env python3
"""An independent reader of mltool model files, written from docs/FORMAT.md alone (pure Python, no dependencies).

Usage: reference_reader.py FILE
Prints one JSON object: {"metadata": ..., "tensors": [{"name", "dtype", "shape", "values"}]} where "values" are
float32 bit patterns (dequantized) for f32/f16/int8/palette tensors and plain integers for u8/i32/i64.
Exits 1 with "invalid: <reason>" on the first broken rule. Used by FormatSpecTests to check the spec against the
Swift writer.
"""
import base64
import json
import struct
import sys

M = (1 << 64) - 1
P1, P2, P3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P4, P5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M


def rnd(acc, x):
    return (rotl((acc + x * P2) & M, 31) * P1) & M


def xxh64(b, seed=0):
    n, i = len(b), 0
    if n >= 32:
        v = [(seed + P1 + P2) & M, (seed + P2) & M, seed, (seed - P1) & M]
        while i + 32 <= n:
            for k in range(4):
                v[k] = rnd(v[k], struct.unpack_from("<Q", b, i + 8 * k)[0])
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & M
        for x in v:
            h = (((h ^ rnd(0, x)) * P1) + P4) & M
    else:
        h = (seed + P5) & M
    h = (h + n) & M
    while i + 8 <= n:
        h = (rotl(h ^ rnd(0, struct.unpack_from("<Q", b, i)[0]), 27) * P1 + P4) & M
        i += 8
    if i + 4 <= n:
        h = (rotl(h ^ ((struct.unpack_from("<I", b, i)[0] * P1) & M), 23) * P2 + P3) & M
        i += 4
    while i < n:
        h = (rotl(h ^ ((b[i] * P5) & M), 11) * P1) & M
        i += 1
    h ^= h >> 33; h = (h * P2) & M
    h ^= h >> 29; h = (h * P3) & M
    return h ^ (h >> 32)


def align64(x):
    return (x + 63) & ~63


BITS = {"f32": 32, "f16": 16, "int8": 8, "palette1": 1, "palette2": 2, "palette4": 4, "palette6": 6,
        "palette8": 8, "u8": 8, "i32": 32, "i64": 64}


def fail(why):
    print("invalid: " + why)
    sys.exit(1)


def f32(x):
    """x rounded to binary32, as JSON float fields are read (section 4); overflow gives ±infinity."""
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:
        return float("inf") if x > 0 else float("-inf")


def f32bits(x):
    return struct.unpack("<I", struct.pack("<f", f32(x)))[0]


def floats(text):
    """scales / lut: base64 of little-endian binary32 values."""
    raw = base64.b64decode(text, validate=True)
    if len(raw) % 4: fail("float array length")
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))


def scales(q):
    """scales: binary32, or bfloat16 (the top 16 bits of a binary32) when scalesType is "bf16"."""
    kind = q.get("scalesType")
    if kind is None: return floats(q["scales"])
    if kind != "bf16": fail("scalesType")
    raw = base64.b64decode(q["scales"], validate=True)
    if len(raw) % 2: fail("bfloat16 array length")
    return [struct.unpack("<f", struct.pack("<I", h << 16))[0] for h in struct.unpack("<%dH" % (len(raw) // 2), raw)]


def read(path):
    b = open(path, "rb").read()
    F = len(b)
    if b[:8] != bytes([0x89, 0x4D, 0x4C, 0x54, 0x0D, 0x0A, 0x1A, 0x0A]): fail("magic")
    if F < 208: fail("truncated")
    version, flags = struct.unpack_from("<II", b, 8)
    if version != 1: fail("version")
    if xxh64(b[:120]) != struct.unpack_from("<Q", b, 120)[0]: fail("header checksum")
    if flags != 0 or any(b[88:120]): fail("flags/reserved")
    (flen, moff, mlen, doff, dlen, toff, count, mhash, dhash) = struct.unpack_from("<9Q", b, 16)
    if flen != F: fail("file_length")
    if b[F - 16:F - 8] != b"MLTEND\r\n": fail("end magic")
    if xxh64(b[:F - 8]) != struct.unpack_from("<Q", b, F - 8)[0]: fail("file checksum")
    if not (2 <= mlen <= 256 << 20) or count > 1_000_000: fail("caps")
    if moff != 128 or doff != align64(moff + mlen) or dlen % 64 or toff != doff + dlen or toff != F - 16:
        fail("placement")
    if any(b[moff + mlen:doff]): fail("padding")
    if xxh64(b[moff:moff + mlen]) != mhash or xxh64(b[doff:doff + dlen]) != dhash: fail("section checksum")
    doc = json.loads(b[moff:moff + mlen].decode("utf-8"))
    table = doc["tensors"]
    if len(table) != count: fail("tensor_count")
    out, names, expected = [], set(), 0
    data = b[doff:doff + dlen]
    for e in table:
        name, dtype, shape, q = e["name"], e["dtype"], e["shape"], e.get("quant")
        if not 1 <= len(name.encode()) <= 1024 or name in names: fail("name " + name)
        names.add(name)
        if dtype not in BITS or len(shape) > 8 or any(d < 0 for d in shape): fail("dtype/shape " + name)
        n = 1
        for d in shape: n *= d
        k = BITS[dtype]
        if e["length"] != (n * k + 7) // 8 or e["offset"] != expected: fail("length/offset " + name)
        raw = data[e["offset"]:e["offset"] + e["length"]]
        if len(raw) != e["length"]: fail("out of data " + name)
        unused = 8 * e["length"] - n * k
        if unused and raw[-1] >> (8 - unused): fail("unused high bits " + name)
        end = e["offset"] + e["length"]
        if any(data[end:min(align64(end), dlen)]): fail("tensor padding")
        expected = align64(end)
        axis = q.get("axis") if q else None
        channels = shape[axis] if axis is not None else 1
        inner = 1
        if axis is not None:
            for d in shape[axis + 1:]: inner *= d
        if dtype == "f32":
            values = list(struct.unpack("<%dI" % n, raw))
        elif dtype == "f16":
            values = [f32bits(v) for v in struct.unpack("<%de" % n, raw)]
        elif dtype == "int8":
            s = scales(q)
            z = q.get("zeroPoints") or [0] * len(s)
            if len(s) != channels: fail("scales " + name)
            qs = struct.unpack("<%db" % n, raw)
            values = [f32bits(s[(i // inner) % channels] * (v - z[(i // inner) % channels])) for i, v in enumerate(qs)]
        elif dtype.startswith("palette"):
            group = q.get("groupSize") or 1 if axis is not None else max(channels, 1)
            groups = max(1, -(-channels // group))
            lut = floats(q["lut"])
            if len(lut) != groups << k: fail("lut " + name)
            ps = scales(q) if "scales" in q else None
            if ps is not None and len(ps) != channels: fail("scales " + name)
            bits = int.from_bytes(raw, "little")
            values = []
            for i in range(n):
                g = ((i // inner) % channels) // group if axis is not None else 0
                v = lut[(g << k) + ((bits >> (i * k)) & ((1 << k) - 1))]
                values.append(f32bits(f32(ps[(i // inner) % channels] * v) if ps is not None else v))
        elif dtype == "u8":
            values = list(raw)
        else:
            values = list(struct.unpack("<%d%s" % (n, "i" if dtype == "i32" else "q"), raw))
        out.append({"name": name, "dtype": dtype, "shape": shape, "values": values})
    if dlen != expected: fail("data_length")
    return {"metadata": doc["metadata"], "tensors": out}


if __name__ == "__main__":
    print(json.dumps(read(sys.argv[1])))
