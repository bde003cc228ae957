#!/usr/bin/env bash
# Materialise the BCCD blood-cell detection set (Shenggan, MIT licence; RBC, WBC and Platelets boxes on 640×480
# smear photos) as two Pascal VOC folders, by the author's split (ImageSets/Main):
#     OUT/train/images/*.jpg  OUT/train/annotations/*.xml   (trainval.txt: 292 photos)
#     OUT/test/images/*.jpg   OUT/test/annotations/*.xml    (test.txt: 72 photos)
#     OUT/LICENSE, OUT/README   (the upstream licence and where the files came from)
# Usage: datasets/bccd.sh [OUT]      OUT defaults to datasets/bccd
# Source: $BCCD_DIR, else ../shared/datasets/bccd next to the repository (a copy of github.com/Shenggan/BCCD_Dataset;
# no network is used). The files are copied unchanged: the annotations' few bad boxes are mltool's to name.
# Idempotent: a complete tree (OUT/.complete) is left alone; the tree is built in OUT.partial-PID and renamed.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
dataset_args bccd 9 "$@"
dataset_start "a complete BCCD tree"
tmp="$partial"
src="$(shared_source bccd "${BCCD_DIR:-}" BCCD/ImageSets/Main/test.txt)"
if [ -z "$src" ]; then
    echo "bccd.sh: no copy of the BCCD set in ../shared/datasets next to the repository; set BCCD_DIR to the folder holding BCCD/ and LICENSE" >&2
    exit 66
fi
for f in BCCD/ImageSets/Main/trainval.txt BCCD/ImageSets/Main/test.txt LICENSE; do
    [ -r "$src/$f" ] || { echo "bccd.sh: $src/$f not found" >&2; exit 66; }
done

for pair in train:trainval test:test; do
    split="${pair%%:*}"; list="$src/BCCD/ImageSets/Main/${pair#*:}.txt"
    mkdir -p "$tmp/$split/images" "$tmp/$split/annotations"
    tr -d '\r' < "$list" | while read -r stem; do
        [ -n "$stem" ] || continue
        [ -r "$src/BCCD/JPEGImages/$stem.jpg" ] || { echo "bccd.sh: $src/BCCD/JPEGImages/$stem.jpg not found ($list)" >&2; exit 66; }
        [ -r "$src/BCCD/Annotations/$stem.xml" ] || { echo "bccd.sh: $src/BCCD/Annotations/$stem.xml not found ($list)" >&2; exit 66; }
        cp "$src/BCCD/JPEGImages/$stem.jpg" "$tmp/$split/images/"
        cp "$src/BCCD/Annotations/$stem.xml" "$tmp/$split/annotations/"
    done
done
cp "$src/LICENSE" "$tmp/LICENSE"
cat > "$tmp/README" <<TXT
BCCD blood-cell detection data set (MIT licence, LICENSE), github.com/Shenggan/BCCD_Dataset.
Copied unchanged from $src by datasets/bccd.sh, split by the author's BCCD/ImageSets/Main/{trainval,test}.txt.
TXT
n_train=$(ls "$tmp/train/images" | wc -l); n_test=$(ls "$tmp/test/images" | wc -l)
[ "$n_train" = 292 ] && [ "$n_test" = 72 ] || { echo "bccd.sh: expected 292 + 72 photos, got $n_train + $n_test" >&2; exit 65; }
dataset_finish "bccd pascal-voc"
echo "bccd: $n_train training and $n_test test photos in $out"
