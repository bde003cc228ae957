#!/usr/bin/env bash
# Materialise Fashion-MNIST from Debian's dataset-fashion-mnist package as label-named PNG folders:
#     OUT/train/<label>/NNNNN.png   OUT/test/<label>/NNNNN.png     (NNNNN = the image's index in its IDX file)
# Usage: datasets/fashion-mnist.sh [--small] [OUT]
#   --small  the first 200 training and the first 100 test images of each class, in file order (2000 + 1000)
#   OUT      default datasets/fashion-mnist (datasets/fashion-mnist-small with --small)
# Source: $FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
# Idempotent: a complete tree (marked by OUT/.complete) is left alone; the tree is built in OUT.partial-PID and
# renamed into place, so an interrupted run leaves nothing half-made. Needs python3 with numpy and Pillow.
set -euo pipefail

small=0
out=""
for arg in "$@"; do
    case "$arg" in
        --small) small=1 ;;
        -h|--help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "fashion-mnist.sh: unknown option $arg" >&2; exit 64 ;;
        *) [ -z "$out" ] || { echo "fashion-mnist.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
    esac
done
here="$(cd "$(dirname "$0")" && pwd)"
if [ -z "$out" ]; then
    if [ "$small" = 1 ]; then out="$here/fashion-mnist-small"; else out="$here/fashion-mnist"; fi
fi
src="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
kind=$([ "$small" = 1 ] && echo small || echo full)

if [ -f "$out/.complete" ]; then
    if [ "$(head -n1 "$out/.complete")" = "fashion-mnist $kind" ]; then
        echo "fashion-mnist ($kind): $out is already complete"
        exit 0
    fi
    echo "fashion-mnist.sh: $out holds a different variant ($(head -n1 "$out/.complete")); choose another OUT" >&2
    exit 73
fi
if [ -e "$out" ]; then
    echo "fashion-mnist.sh: $out exists but is not a complete Fashion-MNIST tree; remove it first" >&2
    exit 73
fi
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -r "$src/$f" ] || { echo "fashion-mnist.sh: $src/$f not found (apt-get install dataset-fashion-mnist)" >&2; exit 66; }
done

tmp="$out.partial-$$"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp"
python3 - "$src" "$tmp" "$small" <<'PY'
import gzip, os, struct, sys
import numpy as np
from PIL import Image

src, dst, small = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
LABELS = ["t-shirt_top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle_boot"]

def read_idx(path, magic, ndim):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4 + 4 * ndim:
        sys.exit(f"{path}: truncated IDX header")
    m, = struct.unpack(">I", data[:4])
    if m != magic:
        sys.exit(f"{path}: IDX magic 0x{m:08x}, expected 0x{magic:08x}")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    n = int(np.prod(dims))
    body = data[4 + 4 * ndim:]
    if len(body) != n:
        sys.exit(f"{path}: {len(body)} data bytes, header says {n}")
    return np.frombuffer(body, np.uint8).reshape(dims)

for split, prefix, per_class, expected in [("train", "train", 200, 60000), ("test", "t10k", 100, 10000)]:
    images = read_idx(os.path.join(src, f"{prefix}-images-idx3-ubyte.gz"), 0x00000803, 3)
    labels = read_idx(os.path.join(src, f"{prefix}-labels-idx1-ubyte.gz"), 0x00000801, 1)
    if images.shape != (expected, 28, 28) or labels.shape != (expected,):
        sys.exit(f"{prefix}: images {images.shape}, labels {labels.shape}; expected ({expected}, 28, 28)")
    if labels.max() > 9:
        sys.exit(f"{prefix}: label {labels.max()} out of range 0…9")
    for name in LABELS:
        os.makedirs(os.path.join(dst, split, name), exist_ok=True)
    taken = [0] * 10
    for i, (img, lab) in enumerate(zip(images, labels)):
        if small and taken[lab] >= per_class:
            continue
        taken[lab] += 1
        Image.fromarray(img, "L").save(os.path.join(dst, split, LABELS[lab], f"{i:05d}.png"))
    print(f"fashion-mnist {split}: {sum(taken)} images, {min(taken)}–{max(taken)} per class")
PY
printf 'fashion-mnist %s\nsource %s\n' "$kind" "$src" > "$tmp/.complete"
mkdir -p "$(dirname "$out")"
mv "$tmp" "$out"
trap - EXIT
echo "fashion-mnist ($kind): wrote $out"
