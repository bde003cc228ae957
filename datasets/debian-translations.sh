#!/usr/bin/env bash
# Build a language-identification data set from Debian's translated package descriptions: text → language.
#     OUT/train.csv  OUT/test.csv     columns: package,text,label,kind   (RFC 4180, UTF-8, LF)
# Usage: datasets/debian-translations.sh [OUT]          (OUT default datasets/debian-translations)
# - The indexes are fetched once with `apt-get update` into OUT/apt-lists (-o Dir::State::Lists=…,
#   -o Acquire::Languages=en,<the languages below>) and every later run builds from that copy, so the data set
#   stays fixed. Delete OUT/apt-lists to refresh it.
# - Each translated description (the Translation-<code> indexes, joined to Translation-en on Description-md5)
#   gives texts of three kinds: "synopsis" (its first line), "description" (the whole text, " ." lines as blank
#   lines) and two "fragment"s, runs of whole words cut from the description (5 to 40 characters, start and length
#   drawn from a generator seeded by sha256(language + package); texts with no spaces, as Chinese and Japanese
#   write, are cut at any character) — the short inputs a recognizer meets, so training and the by-length report
#   have them. English comes from Translation-en. label = the language code as BCP 47 writes it (NaturalLanguage's
#   NLLanguage raw values): pt_BR is labelled pt, de_DE de, zh_CN zh-Hans, zh_TW zh-Hant.
# - Dropped: texts left in English (a synopsis equal to the English one, a description with half or more of its
#   lines found in the English text, a fragment with half or more of its words in it); texts that occur under more than one language; repeats within a language
#   (the first package by name keeps it); languages with fewer than 50 packages left.
# - Split by package: a package whose sha256("test:" + name) falls in the lowest 20% goes to test.csv with all its
#   languages, so no package's text is on both sides. Per language at most 2000 training and 400 test packages,
#   the ones with the smallest sha256(name) (deterministic, not alphabetical). Sorted by label, package, kind.
# Needs apt (apt-get, /usr/lib/apt/apt-helper) and python3. Idempotent: a complete OUT is left alone.
set -euo pipefail

out=""
for arg in "$@"; do
    case "$arg" in
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "debian-translations.sh: unknown option $arg" >&2; exit 64 ;;
        *) [ -z "$out" ] || { echo "debian-translations.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
    esac
done
here="$(cd "$(dirname "$0")" && pwd)"
out="${out:-$here/debian-translations}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -f "$out/.gitignore" ] || printf '*\n' > "$out/.gitignore"
if [ -f "$out/.complete" ] && [ -f "$out/train.csv" ] && [ -f "$out/test.csv" ]; then
    echo "debian-translations: $out is complete ($(cat "$out/.complete"))"
    exit 0
fi

# Every language Debian bookworm has a Translation index for (apt fetches the ones that exist).
languages="en,ca,cs,da,de,de_DE,el,eo,es,eu,fi,fr,gl,hr,hu,id,it,ja,km,ko,nb,nl,pl,pt,pt_BR,ro,ru,sk,sr,sv,tr,uk,vi,zh_CN,zh_TW"
lists="$out/apt-lists"
apt_opts=(-o "Dir::State::Lists=$lists" -o Dir::State::status=/dev/null
          -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
if ! ls "$lists"/*_i18n_Translation-en* >/dev/null 2>&1; then
    mkdir -p "$lists/partial"
    echo "debian-translations: apt-get update into $lists (once)"
    sudo_cmd=$([ "$(id -u)" = 0 ] || echo sudo)
    if ! $sudo_cmd apt-get update -qq "${apt_opts[@]}" -o Acquire::Languages="$languages" >&2; then
        echo "debian-translations: apt-get update failed" >&2
        rm -rf "$lists"
        exit 69
    fi
fi

work="$(mktemp -d "$out/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT
for t in "$lists"/*_i18n_Translation-*; do
    [ -f "$t" ] || continue
    code=$(basename "$t" | sed 's/.*_i18n_Translation-//; s/\.[a-z0-9]*$//; s/%5f/_/')
    { /usr/lib/apt/apt-helper cat-file "$t"; echo; } >> "$work/translation-$code"
done

PYTHONPATH="$here" python3 - "$work" "$out" <<'PY'
import csv, glob, hashlib, os, random, sys
from collections import defaultdict
from deb822 import long_text, stanzas

work, out = sys.argv[1], sys.argv[2]
LABEL = {"pt_BR": "pt", "de_DE": "de", "zh_CN": "zh-Hans", "zh_TW": "zh-Hant"}


# (code → md5 → (package, text)); English by md5.
by_code = {}
for path in sorted(glob.glob(os.path.join(work, "translation-*"))):
    code = os.path.basename(path)[len("translation-"):]
    entries = {}
    for s in stanzas(path):
        md5, pkg = s.get("Description-md5"), s.get("Package")
        text = s.get("Description-" + code)
        if md5 and pkg and text and md5 not in entries:
            t = long_text(text)
            if t: entries[md5] = (pkg, t)
    by_code[code] = entries
english = by_code.get("en", {})

def fragments(label, pkg, text, count=2):
    """`count` runs of whole words (any characters for unspaced scripts), 5-40 characters, seeded."""
    rng = random.Random(hashlib.sha256(f"{label}:{pkg}".encode()).hexdigest())
    flat = " ".join(text.split())
    out = []
    for _ in range(count):
        want = rng.randint(5, 40)
        if " " in flat:
            words = flat.split(" ")
            start = rng.randrange(len(words))
            piece = words[start]
            for w in words[start + 1:]:
                if len(piece) >= want: break
                piece += " " + w
        else:
            start = rng.randrange(max(len(flat) - want, 0) + 1)
            piece = flat[start:start + want]
        if len(piece) > 2 * want: piece = piece[:want]
        if len(piece) >= 5: out.append(piece)
    return out

samples = defaultdict(dict)   # label → {(kind, text): package}
for code, entries in sorted(by_code.items()):
    label = LABEL.get(code, code)
    for md5, (pkg, text) in sorted(entries.items(), key=lambda e: e[1][0]):
        synopsis = text.split("\n")[0].strip()
        if code != "en":
            en = english.get(md5, (None, ""))[1]
            en_lines = {l.strip() for l in en.split("\n") if l.strip()}
            lines = [l.strip() for l in text.split("\n") if l.strip()]
            en_synopsis = en.split("\n")[0].strip().lower()
            keep_synopsis = synopsis.lower() != en_synopsis
            keep_text = sum(l in en_lines for l in lines) * 2 < len(lines)
        else:
            keep_synopsis = keep_text = True
        english_words = {w.lower() for w in en.split()} if code != "en" else set()
        pieces = [("fragment", f, True) for f in fragments(label, pkg, text) if keep_text
                  and sum(w.lower() in english_words for w in f.split()) * 2 < len(f.split())]
        for kind, t, keep in [("synopsis", synopsis, keep_synopsis), ("description", text, keep_text)] + pieces:
            if keep and t and (kind, t) not in samples[label]:
                samples[label][(kind, t)] = pkg

# Texts under more than one language are ambiguous: drop them everywhere.
seen = defaultdict(set)
for label, items in samples.items():
    for (_, t) in items: seen[t].add(label)
sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
train, test, report = [], [], []
for label in sorted(samples):
    by_pkg = defaultdict(list)
    for (kind, t), pkg in samples[label].items():
        if len(seen[t]) == 1: by_pkg[pkg].append((kind, t))
    if len(by_pkg) < 50:
        report.append(f"{label}\tdropped ({len(by_pkg)} packages)")
        continue
    order = sorted(by_pkg, key=sha)
    is_test = lambda p: int(sha("test:" + p)[:8], 16) < 0.2 * 16**8
    tr = [p for p in order if not is_test(p)][:2000]
    te = [p for p in order if is_test(p)][:400]
    for rows, pkgs in ((train, tr), (test, te)):
        for p in pkgs:
            for kind, t in by_pkg[p]: rows.append((p, t, label, kind))
    report.append(f"{label}\t{len(tr)} train + {len(te)} test packages")

def write(path, rows):
    rows.sort(key=lambda r: (r[2], r[0], r[3]))
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["package", "text", "label", "kind"])
        w.writerows(rows)

write(os.path.join(out, "train.csv"), train)
write(os.path.join(out, "test.csv"), test)
labels = sorted({r[2] for r in train})
with open(os.path.join(out, "SOURCE"), "w") as f:
    f.write(f"Debian bookworm translated descriptions: {len(labels)} languages, {len(train)} train + {len(test)} test texts\n")
    f.write("\n".join(report) + "\n")
print(f"debian-translations: {len(labels)} languages ({', '.join(labels)}): {len(train)} train + {len(test)} test texts",
      file=sys.stderr)
PY
echo "$(head -n1 "$out/SOURCE")" > "$out/.complete"
echo "debian-translations: wrote $out/{train,test}.csv"
