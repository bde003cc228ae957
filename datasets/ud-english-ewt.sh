#!/usr/bin/env bash
# Materialise Universal Dependencies English EWT (CC BY-SA 4.0) for word tagging, from the copy in ../shared/datasets:
#     OUT/en_ewt-ud-{train,dev,test}.conllu   the treebank (12,544 / 2,001 / 2,077 sentences), copied unchanged
#     OUT/entities-{train,dev,test}.{bio,bioes}  two-column CoNLL derived from it (see below)
#     OUT/LICENSE.txt, OUT/README                 the licence and the attribution
# Usage: datasets/ud-english-ewt.sh [OUT]          (OUT default datasets/ud-english-ewt)
# Source: $UD_EWT_DIR, else ../shared/datasets/ud-english-ewt next to the repository (no network is used).
# Entities: the treebank has no named-entity layer, so the .bio/.bioes files mark spans from its gold tags: a maximal
#   run of PROPN words is a NAME, a maximal run of NUM words a NUM; every other word is O. Same sentences and words
#   as the .conllu files. They exercise BIO/BIOES reading, entity tagging and entity-level scoring on real text.
# Idempotent: a complete OUT (OUT/.complete) is left alone; it is built in OUT.partial-PID and renamed into place.
set -euo pipefail

source "$(dirname "$0")/lib.sh"
dataset_args ud-english-ewt 11 "$@"
src="${UD_EWT_DIR:-$here/../../shared/datasets/ud-english-ewt}"
dataset_start "complete"
for f in en_ewt-ud-train.conllu en_ewt-ud-dev.conllu en_ewt-ud-test.conllu LICENSE.txt; do
    if [ ! -f "$src/$f" ]; then
        echo "ud-english-ewt.sh: $src/$f not found (set UD_EWT_DIR to the folder holding the UD English EWT files)" >&2
        exit 66
    fi
done

cp "$src"/en_ewt-ud-{train,dev,test}.conllu "$src/LICENSE.txt" "$partial/"
printf '*\n' > "$partial/.gitignore"
cat > "$partial/README" <<'TEXT'
Universal Dependencies English Web Treebank (UD_English-EWT), licensed CC BY-SA 4.0 (LICENSE.txt):
https://github.com/UniversalDependencies/UD_English-EWT. Copied unchanged from ../shared/datasets/ud-english-ewt
(the train file assembled from the treebank's per-document sources in the order of its official file list).
entities-*.bio / .bioes are derived by datasets/ud-english-ewt.sh (runs of PROPN → NAME, runs of NUM → NUM).
TEXT

python3 - "$partial" <<'PY'
import os, sys
d = sys.argv[1]
expected = {"train": (12544, 204577), "dev": (2001, None), "test": (2077, None)}
total = []
for split, (want_sentences, want_words) in expected.items():
    sentences, words = [], []
    with open(os.path.join(d, f"en_ewt-ud-{split}.conllu"), encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                if words: sentences.append(words); words = []
                continue
            if line.startswith("#"): continue
            cols = line.split("\t")
            if len(cols) != 10: sys.exit(f"ud-english-ewt: {split}: a line with {len(cols)} fields")
            if not cols[0].isdigit(): continue
            words.append((cols[1], cols[3]))
    if words: sentences.append(words)
    n = sum(map(len, sentences))
    if len(sentences) != want_sentences or (want_words and n != want_words):
        sys.exit(f"ud-english-ewt: {split}: {len(sentences)} sentences, {n} words; expected {want_sentences}"
                 + (f", {want_words}" if want_words else ""))
    total.append(f"{split} {len(sentences)}/{n}")
    for scheme in ("bio", "bioes"):
        with open(os.path.join(d, f"entities-{split}.{scheme}"), "w", encoding="utf-8") as out:
            for s in sentences:
                kinds = [{"PROPN": "NAME", "NUM": "NUM"}.get(tag) for _, tag in s]
                for i, (form, _) in enumerate(s):
                    k = kinds[i]
                    if k is None: tag = "O"
                    else:
                        first = i == 0 or kinds[i - 1] != k
                        last = i == len(s) - 1 or kinds[i + 1] != k
                        if scheme == "bio": tag = ("B-" if first else "I-") + k
                        else: tag = ("S-" if first and last else "B-" if first else "E-" if last else "I-") + k
                    out.write(f"{form}\t{tag}\n")
                out.write("\n")
print("ud-english-ewt: sentences/words " + ", ".join(total), file=sys.stderr)
PY
dataset_finish "UD English EWT (train 12544, dev 2001, test 2077 sentences) + entities"
echo "ud-english-ewt: wrote $out"
