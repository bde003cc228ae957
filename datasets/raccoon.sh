#!/usr/bin/env bash
# Materialise the raccoon detection set (Dat Tran, MIT licence) as two Pascal VOC folders, by the author's split:
#     OUT/train/images/*.jpg  OUT/train/annotations/*.xml   (160 photos, 173 boxes: data/train_labels.csv)
#     OUT/test/images/*.jpg   OUT/test/annotations/*.xml    (40 photos, 44 boxes: data/test_labels.csv)
#     OUT/LICENSE, OUT/README   (the upstream licence and where the files came from)
# Usage: datasets/raccoon.sh [OUT]      OUT defaults to datasets/raccoon
# Source: $RACCOON_DIR, else ../shared/datasets/raccoon next to the repository (a copy of
# github.com/datitran/raccoon_dataset at commit 9393884; no network is used). The files are copied unchanged.
# Idempotent: a complete tree (OUT/.complete) is left alone; the tree is built in OUT.partial-PID and renamed.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
dataset_args raccoon 8 "$@"
dataset_start "a complete raccoon tree"
tmp="$partial"
src="$(shared_source raccoon "${RACCOON_DIR:-}" data/train_labels.csv)"
if [ -z "$src" ]; then
    echo "raccoon.sh: no copy of the raccoon set in ../shared/datasets next to the repository; set RACCOON_DIR to the folder holding data/, images/ and annotations/" >&2
    exit 66
fi
for f in data/train_labels.csv data/test_labels.csv LICENSE; do
    [ -r "$src/$f" ] || { echo "raccoon.sh: $src/$f not found" >&2; exit 66; }
done

for split in train test; do
    mkdir -p "$tmp/$split/images" "$tmp/$split/annotations"
    # The photos named in the split's CSV (column 1 after the header), each once.
    tail -n +2 "$src/data/${split}_labels.csv" | cut -d, -f1 | sort -u | while read -r photo; do
        stem="${photo%.*}"
        [ -r "$src/images/$photo" ] || { echo "raccoon.sh: $src/images/$photo not found" >&2; exit 66; }
        [ -r "$src/annotations/$stem.xml" ] || { echo "raccoon.sh: $src/annotations/$stem.xml not found" >&2; exit 66; }
        cp "$src/images/$photo" "$tmp/$split/images/"
        cp "$src/annotations/$stem.xml" "$tmp/$split/annotations/"
    done
done
cp "$src/LICENSE" "$tmp/LICENSE"
cat > "$tmp/README" <<TXT
Raccoon detection data set by Dat Tran (MIT licence, LICENSE), github.com/datitran/raccoon_dataset.
Copied unchanged from $src by datasets/raccoon.sh, split by the author's data/{train,test}_labels.csv.
TXT
n_train=$(ls "$tmp/train/images" | wc -l); n_test=$(ls "$tmp/test/images" | wc -l)
[ "$n_train" = 160 ] && [ "$n_test" = 40 ] || { echo "raccoon.sh: expected 160 + 40 photos, got $n_train + $n_test" >&2; exit 65; }
dataset_finish "raccoon pascal-voc"
echo "raccoon: $n_train training and $n_test test photos in $out"
