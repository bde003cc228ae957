#!/usr/bin/env bash
# Lay out the Free Spoken Digit Dataset (Jakobovski et al., CC BY-SA 4.0; 3,000 recordings, 6 speakers, 8 kHz
# 16-bit WAV) as label folders for `mltool train`, by the official split and leaving one speaker out:
#     OUT/official/train/<digit>/*.wav   OUT/official/test/<digit>/*.wav   (test: recording index 0–4, as the
#                                                                            README's split; 300 and 2,700)
#     OUT/speakers/<speaker>/train/<digit>/*.wav  OUT/speakers/<speaker>/test/<digit>/*.wav
#                                        (test: every recording of <speaker>; train: the five other speakers)
#     OUT/README.md   (the upstream README with its licence) and OUT/SOURCE (where the files came from)
# Usage: datasets/fsdd.sh [OUT]      OUT defaults to datasets/fsdd
# Source: $FSDD_DIR, else ../shared/datasets/fsdd next to the repository (recordings/{digit}_{speaker}_{index}.wav;
# no network is used). Files are hard links to the source when the file system allows, else copies; unchanged.
# Idempotent: a complete tree (OUT/.complete) is left alone; the tree is built in OUT.partial-PID and renamed.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
dataset_args fsdd 11 "$@"
dataset_start "a complete FSDD tree"
tmp="$partial"
src="$(shared_source fsdd "${FSDD_DIR:-}" recordings)"
if [ -z "$src" ] || [ ! -d "$src/recordings" ]; then
    echo "fsdd.sh: no copy of FSDD in ../shared/datasets next to the repository; set FSDD_DIR to the folder holding recordings/" >&2
    exit 66
fi
count=$(find "$src/recordings" -maxdepth 1 -name '*_*_*.wav' | wc -l)
[ "$count" = 3000 ] || { echo "fsdd.sh: $src/recordings holds $count recordings named digit_speaker_index.wav, expected 3000" >&2; exit 65; }

speakers=$(find "$src/recordings" -maxdepth 1 -name '*_*_*.wav' -printf '%f\n' | cut -d_ -f2 | sort -u)
# One ln (or cp) per target folder: the file names grouped by where they go.
declare -A groups
for f in "$src"/recordings/*_*_*.wav; do
    name="$(basename "$f" .wav)"
    digit="${name%%_*}"; rest="${name#*_}"; speaker="${rest%_*}"; index="${rest##*_}"
    if [ "$index" -le 4 ]; then split=test; else split=train; fi
    groups["official/$split/$digit"]+="$f"$'\n'
    for s in $speakers; do
        if [ "$s" = "$speaker" ]; then side=test; else side=train; fi
        groups["speakers/$s/$side/$digit"]+="$f"$'\n'
    done
done
for dir in "${!groups[@]}"; do
    mkdir -p "$tmp/$dir"
    mapfile -t files < <(printf '%s' "${groups[$dir]}")
    ln "${files[@]}" "$tmp/$dir/" 2>/dev/null || cp "${files[@]}" "$tmp/$dir/"
done
cp "$src/README.md" "$tmp/README.md"
printf 'Free Spoken Digit Dataset, from %s (%s recordings); CC BY-SA 4.0 (README.md)\n' "$src" "$count" > "$tmp/SOURCE"
dataset_finish "official: $(find "$tmp/official/train" -name '*.wav' | wc -l) train, $(find "$tmp/official/test" -name '*.wav' | wc -l) test; speakers: $(echo $speakers)"
echo "fsdd: $(cat "$out/.complete")"
