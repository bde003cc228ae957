#!/usr/bin/env bash
# Real tables for the tabular task (issue 53), from Debian's R packages, as CSV with fixed seeded splits:
#     OUT/<name>/train.csv  validation.csv  test.csv   (70 / 10 / 20 % of the rows)
#     OUT/<name>/README     (source package and version, target column, row counts)
# Sets (name: R data set, package; target):
#     letter:   LetterRecognition, r-cran-mlbench (20,000 × 16, 26 classes; target lettr)
#     pima:     PimaIndiansDiabetes2, r-cran-mlbench (768 × 8, missing values as empty fields; target diabetes)
#     dna:      DNA, r-cran-mlbench (3,186 × 180 binary indicators, 3 classes; target Class)
#     diamonds: diamonds, r-cran-ggplot2 (53,940 × 9, ordered categoricals cut/color/clarity; target price)
#     spam:     spam, r-cran-kernlab (4,601 × 57; target type)
#     fashion:  Fashion-MNIST, dataset-fashion-mnist (70,000 × 784 pixels 0–255 as columns pixel1…pixel784, 10
#               classes; target label): the package's own split, test = its 10,000 test images, and its 60,000
#               training images split 90 / 10 % into train / validation by the hash below (~155 MB of CSV, ~10 s)
# Usage: datasets/tabular.sh [OUT]      OUT defaults to datasets/tabular
# The packages install their data as R lazy-load databases (data/Rdata.rdb), which only R reads: Rscript (from
# r-base-core, which they depend on) writes each table as CSV (factors as their level names, NA as an empty field),
# then the split is made here: a row goes to a split by the SHA-256 of "<name>:<seed>:<row number>" (seed 53), so
# every machine, R and Python version gives the same files. Fashion-MNIST is read from its IDX files
# ($FASHION_MNIST_DIR or /usr/share/datasets/fashion-mnist). Idempotent: a complete tree (OUT/.complete naming these
# sets) is left alone; a tree made before a set was added here is made again.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
dataset_args tabular 19 "$@"
sets="letter pima dna diamonds spam fashion"
if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$sets" ]; then
    echo "tabular: $out is already complete"
    exit 0
fi
fashion="${FASHION_MNIST_DIR:-/usr/share/datasets/fashion-mnist}"
for f in train-images-idx3-ubyte.gz train-labels-idx1-ubyte.gz t10k-images-idx3-ubyte.gz t10k-labels-idx1-ubyte.gz; do
    [ -r "$fashion/$f" ] || { echo "tabular.sh: $fashion/$f not found (apt-get install dataset-fashion-mnist)" >&2; exit 66; }
done
command -v Rscript >/dev/null || { echo "tabular.sh: Rscript not found: apt-get install r-cran-mlbench r-cran-ggplot2 r-cran-kernlab (make setup)" >&2; exit 69; }
dataset_partial
mkdir -p "$partial/raw"

Rscript --vanilla - "$partial/raw" <<'EOF'
dir <- commandArgs(trailingOnly = TRUE)[1]
save <- function(name, set, package) {
    e <- new.env()
    data(list = set, package = package, envir = e)
    write.csv(as.data.frame(get(set, envir = e)), file.path(dir, paste0(name, ".csv")), row.names = FALSE, na = "")
    cat(name, as.character(packageVersion(package)), "\n", file = file.path(dir, paste0(name, ".version")))
}
save("letter", "LetterRecognition", "mlbench")
save("pima", "PimaIndiansDiabetes2", "mlbench")
save("dna", "DNA", "mlbench")
save("diamonds", "diamonds", "ggplot2")
save("spam", "spam", "kernlab")
EOF

python3 - "$partial" <<'EOF'
import csv, hashlib, os, sys
root = sys.argv[1]
sets = {"letter": ("LetterRecognition", "r-cran-mlbench", "lettr"), "pima": ("PimaIndiansDiabetes2", "r-cran-mlbench", "diabetes"),
        "dna": ("DNA", "r-cran-mlbench", "Class"), "diamonds": ("diamonds", "r-cran-ggplot2", "price"),
        "spam": ("spam", "r-cran-kernlab", "type")}
for name, (rname, package, target) in sets.items():
    with open(os.path.join(root, "raw", name + ".csv"), newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    assert target in header, (name, target, header)
    version = open(os.path.join(root, "raw", name + ".version")).read().split()[1]
    # Each row's place in [0, 1) from a hash of its number: 70 % train, 10 % validation, 20 % test.
    parts = {"train": [], "validation": [], "test": []}
    for i, row in enumerate(body):
        u = int.from_bytes(hashlib.sha256(f"{name}:53:{i}".encode()).digest()[:8], "big") / 2**64
        parts["train" if u < 0.7 else "validation" if u < 0.8 else "test"].append(row)
    os.makedirs(os.path.join(root, name))
    for part, prows in parts.items():
        with open(os.path.join(root, name, part + ".csv"), "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(header)
            w.writerows(prows)
    with open(os.path.join(root, name, "README"), "w") as f:
        f.write(f"{rname} from Debian's {package} (R package version {version}); target column '{target}'.\n")
        f.write(f"{len(body)} rows x {len(header) - 1} features: train {len(parts['train'])}, "
                f"validation {len(parts['validation'])}, test {len(parts['test'])} (datasets/tabular.sh, seed 53).\n")
    print(f"tabular: {name}: {len(body)} rows, {len(header) - 1} features, target {target}: "
          f"{len(parts['train'])}/{len(parts['validation'])}/{len(parts['test'])}")
EOF

python3 - "$fashion" "$partial/fashion" <<'EOF'
import gzip, hashlib, os, struct, sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
LABELS = ["t-shirt_top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle_boot"]

def read_idx(path, magic, dims):
    with gzip.open(path, "rb") as f:
        data = f.read()
    head = struct.unpack(">" + "I" * (1 + len(dims)), data[:4 + 4 * len(dims)]) if len(data) >= 4 + 4 * len(dims) else None
    if head != (magic, *dims) or len(data) != 4 + 4 * len(dims) + int(np.prod(dims)):
        sys.exit(f"tabular.sh: {path}: header {head} and {len(data)} bytes, expected magic {magic:#x} and shape {dims}")
    return np.frombuffer(data[4 + 4 * len(dims):], np.uint8).reshape(dims)

os.makedirs(dst)
words = [str(v) for v in range(256)]
header = "label," + ",".join(f"pixel{i}" for i in range(1, 785)) + "\n"
counts = {"train": 0, "validation": 0, "test": 0}
files = {p: open(os.path.join(dst, p + ".csv"), "w") for p in counts}
for f in files.values():
    f.write(header)
for prefix, n in (("train", 60000), ("t10k", 10000)):
    images = read_idx(os.path.join(src, f"{prefix}-images-idx3-ubyte.gz"), 0x803, (n, 28, 28)).reshape(n, 784)
    labels = read_idx(os.path.join(src, f"{prefix}-labels-idx1-ubyte.gz"), 0x801, (n,))
    if labels.max() > 9:
        sys.exit(f"tabular.sh: {prefix}: label {labels.max()} out of range 0…9")
    for i in range(n):
        if prefix == "t10k":
            part = "test"
        else:
            u = int.from_bytes(hashlib.sha256(f"fashion:53:{i}".encode()).digest()[:8], "big") / 2**64
            part = "train" if u < 0.9 else "validation"
        files[part].write(LABELS[labels[i]] + "," + ",".join([words[v] for v in images[i].tolist()]) + "\n")
        counts[part] += 1
for f in files.values():
    f.close()
with open(os.path.join(dst, "README"), "w") as f:
    f.write("Fashion-MNIST from Debian's dataset-fashion-mnist (IDX files); target column 'label'.\n")
    f.write(f"70000 rows x 784 features: train {counts['train']}, validation {counts['validation']} (of the package's 60000 "
            f"training images), test {counts['test']} (its test images) (datasets/tabular.sh, seed 53).\n")
print(f"tabular: fashion: 70000 rows, 784 features, target label: {counts['train']}/{counts['validation']}/{counts['test']}")
EOF
rm -rf "$partial/raw"
dataset_finish "$sets"
echo "tabular: wrote $out"
