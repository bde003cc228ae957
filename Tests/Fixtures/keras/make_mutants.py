#!/usr/bin/env python3
"""Seeded mutants of the Keras fixtures, as an attacker would make them, for the HDF5 sandbox tests (issue 14).

Each mutant starts from one of the small valid Keras 2 or Keras 3 `.h5` fixtures beside this script and applies one
to three mutations: random bit flips, a run of bytes overwritten, a truncation, or a "smashed length field" (a 2-,
4- or 8-byte little-endian integer at an aligned offset overwritten with a boundary value such as 0, 2^31-1, 2^32-1
or 2^63-1 — HDF5's sizes, addresses and counts are such fields). The same seed always gives the same files.

    make_mutants.py --out DIR [--count N] [--seed S] [--family k2|k3|both]

writes DIR/k2-00000.h5 ... (half Keras 2, half Keras 3 with --family both) and DIR/manifest.tsv (name, source,
mutations). Only the standard library is used.
"""
import argparse
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCES = {
    "k2": ["k2_mlp.h5", "k2_mobilenet.h5", "k2_residual_cnn.h5", "k2_nested.h5"],
    "k3": ["k3_mlp.h5", "k3_mobilenet.h5", "k3_residual_cnn.h5", "k3_nested.h5"],
}
BOUNDARIES = [0, 1, 0x7F, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF, 0x80000000, 2**40, 2**63 - 1, 2**64 - 1]


def flip_bits(data, rng):
    n = rng.randint(1, 8)
    for _ in range(n):
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    return "flip%d" % n


def byte_run(data, rng):
    start = rng.randrange(len(data))
    length = min(rng.randint(1, 64), len(data) - start)
    kind = rng.choice(["zero", "ones", "random"])
    for i in range(start, start + length):
        data[i] = 0 if kind == "zero" else 0xFF if kind == "ones" else rng.randrange(256)
    return "run%s@%d+%d" % (kind, start, length)


def truncate(data, rng):
    keep = rng.randrange(len(data))
    del data[keep:]
    return "truncate@%d" % keep


def smash_length(data, rng):
    width = rng.choice([2, 4, 8])
    if len(data) < width:
        return flip_bits(data, rng)
    offset = rng.randrange(0, len(data) - width + 1)
    offset -= offset % width
    value = rng.choice(BOUNDARIES) & ((1 << (8 * width)) - 1)
    data[offset:offset + width] = struct.pack("<" + {2: "H", 4: "I", 8: "Q"}[width], value)
    return "smash%d@%d=%#x" % (width, offset, value)


MUTATIONS = [flip_bits, byte_run, truncate, smash_length]


def mutate(original, rng):
    data = bytearray(original)
    done = []
    for _ in range(rng.choice([1, 1, 2, 3])):
        if not data:
            break
        done.append(rng.choice(MUTATIONS)(data, rng))
    return bytes(data), done


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--family", choices=["k2", "k3", "both"], default="both")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    families = ["k2", "k3"] if args.family == "both" else [args.family]
    originals = {name: open(os.path.join(HERE, name), "rb").read() for f in families for name in SOURCES[f]}
    rng = random.Random(args.seed)
    with open(os.path.join(args.out, "manifest.tsv"), "w") as manifest:
        for i in range(args.count):
            family = families[i % len(families)]
            source = SOURCES[family][(i // len(families)) % len(SOURCES[family])]
            data, done = mutate(originals[source], rng)
            name = "%s-%05d.h5" % (family, i)
            with open(os.path.join(args.out, name), "wb") as f:
                f.write(data)
            manifest.write("%s\t%s\t%s\n" % (name, source, " ".join(done)))
    print("wrote %d mutants to %s" % (args.count, args.out))


if __name__ == "__main__":
    main()
