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

out=""
for arg in "$@"; do
    case "$arg" in
        -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bccd.sh: unknown option $arg" >&2; exit 64 ;;
        *) [ -z "$out" ] || { echo "bccd.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
    esac
done
here="$(cd "$(dirname "$0")" && pwd)"
out="${out:-$here/bccd}"
if [ -f "$out/.complete" ]; then
    echo "bccd: $out is already complete"
    exit 0
fi
if [ -e "$out" ]; then
    echo "bccd.sh: $out exists but is not a complete BCCD tree; remove it first" >&2
    exit 73
fi

tmp="$out.partial-$$"
trap 'rm -rf "$tmp"' EXIT
src="${BCCD_DIR:-}"
if [ -z "$src" ]; then
    for candidate in "$here/../../shared/datasets/bccd" "$here/../shared/datasets/bccd"; do
        if [ -f "$candidate/BCCD/ImageSets/Main/test.txt" ]; then src="$candidate"; break; fi
    done
fi
if [ -z "$src" ]; then
    echo "bccd.sh: no copy of the BCCD set in ../shared/datasets next to the repository; set BCCD_DIR to the folder holding BCCD/ and LICENSE" >&2
    exit 66
fi
for f in BCCD/ImageSets/Main/trainval.txt BCCD/ImageSets/Main/test.txt LICENSE; do
    [ -r "$src/$f" ] || { echo "bccd.sh: $src/$f not found" >&2; exit 66; }
done

mkdir -p "$tmp"
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
echo "bccd pascal-voc" > "$tmp/.complete"
mv "$tmp" "$out"
echo "bccd: $n_train training and $n_test test photos in $out"
