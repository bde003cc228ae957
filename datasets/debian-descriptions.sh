#!/usr/bin/env bash
# Build a text-classification data set from Debian's package index: each package's description → its Section.
#     OUT/data.csv  OUT/train.csv  OUT/test.csv     columns: package,text,label   (RFC 4180, UTF-8, LF)
# Usage: datasets/debian-descriptions.sh [--short] [OUT]
#     (OUT default datasets/debian-descriptions, with --short datasets/debian-synopses)
# - --short: text = the one-line synopsis only (the short description, a few words). The packages, labels and
#   split are those of the long set, so the two test sets hold the same packages. Without OUT/apt-lists, the
#   index is copied from datasets/debian-descriptions/apt-lists when that exists (the two stay in step).
# - The index is fetched once with `apt-get update` into OUT/apt-lists (-o Dir::State::Lists=…,
#   -o Acquire::Languages=en) and every later run builds from that copy, so the data set stays fixed.
#   Delete OUT/apt-lists to refresh it.
# - text = the long description from apt's Translation-en index (joined on Description-md5): the synopsis line,
#   then the body (" ." lines become blank lines). If Translation-en cannot be obtained, the synopsis alone is
#   used and the script says so loudly (and records it in OUT/SOURCE). With --short, text = that synopsis line
#   (the Packages index's Description, else the long description's first line), whitespace collapsed.
# - label = Section without a contrib/, non-free/ or non-free-firmware/ prefix; the 20 most frequent sections
#   (ties by name); at most 1500 packages per section, the ones with the smallest sha256(name) (deterministic,
#   not alphabetical); a stratified 80/20 split: per section, round(20%) packages with the smallest
#   sha256("test:" + name) go to test.csv. data.csv = train.csv ∪ test.csv, each sorted by package name.
# Needs apt (apt-get, apt-cache, /usr/lib/apt/apt-helper) and python3. Idempotent: a complete OUT is left alone.
set -euo pipefail

out=""
short=0
for arg in "$@"; do
    case "$arg" in
        --short) short=1 ;;
        -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "debian-descriptions.sh: unknown option $arg" >&2; exit 64 ;;
        *) [ -z "$out" ] || { echo "debian-descriptions.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
    esac
done
here="$(cd "$(dirname "$0")" && pwd)"
out="${out:-$here/$([ "$short" = 1 ] && echo debian-synopses || echo debian-descriptions)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
# Generated data stays out of git.
[ -f "$out/.gitignore" ] || printf '*\n' > "$out/.gitignore"
if [ -f "$out/.complete" ] && [ -f "$out/train.csv" ] && [ -f "$out/test.csv" ]; then
    echo "debian-descriptions: $out is complete ($(cat "$out/.complete"))"
    exit 0
fi

lists="$out/apt-lists"
apt_opts=(-o "Dir::State::Lists=$lists" -o Dir::State::status=/dev/null
          -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=)
if [ "$short" = 1 ] && ! ls "$lists"/*_Packages* >/dev/null 2>&1 && ls "$here/debian-descriptions/apt-lists"/*_Packages* >/dev/null 2>&1 \
        && [ "$here/debian-descriptions/apt-lists" != "$lists" ]; then
    echo "debian-descriptions: copying the index from $here/debian-descriptions/apt-lists"
    cp -R "$here/debian-descriptions/apt-lists" "$lists"
fi
if ! ls "$lists"/*_Packages* >/dev/null 2>&1; then
    mkdir -p "$lists/partial"
    echo "debian-descriptions: apt-get update into $lists (once)"
    sudo_cmd=$([ "$(id -u)" = 0 ] || echo sudo)
    if ! $sudo_cmd apt-get update -qq "${apt_opts[@]}" -o Acquire::Languages=en >&2; then
        echo "debian-descriptions: apt-get update failed" >&2
        rm -rf "$lists"
        exit 69
    fi
fi

work="$(mktemp -d "$out/.build-XXXXXX")"
trap 'rm -rf "$work"' EXIT
apt-cache "${apt_opts[@]}" dumpavail > "$work/dumpavail"
translations=( "$lists"/*_i18n_Translation-en* )
if [ -e "${translations[0]}" ]; then
    for t in "${translations[@]}"; do /usr/lib/apt/apt-helper cat-file "$t"; echo; done > "$work/translation"
else
    : > "$work/translation"
fi

PYTHONPATH="$here" python3 - "$work" "$out" "$short" <<'PY'
import csv, hashlib, os, sys
from deb822 import long_text, stanzas
from collections import Counter, defaultdict

work, out, short = sys.argv[1], sys.argv[2], sys.argv[3] == "1"


long = {}
for s in stanzas(os.path.join(work, "translation")):
    md5, text = s.get("Description-md5"), s.get("Description-en")
    if md5 and text: long.setdefault(md5, long_text(text))

packages = {}
synopsis_only = 0
for s in stanzas(os.path.join(work, "dumpavail")):
    name, section = s.get("Package"), s.get("Section")
    if not name or not section or name in packages: continue
    for prefix in ("contrib/", "non-free/", "non-free-firmware/"):
        if section.startswith(prefix): section = section[len(prefix):]
    text = long.get(s.get("Description-md5", ""))
    if text is None:
        synopsis_only += 1
        text = long_text(s.get("Description", ""))
    if text:
        if short:
            # The Packages index carries the synopsis alone (the body lives in Translation-en); the long text's
            # first line is the same synopsis. The package set is the long set's either way.
            text = " ".join(s.get("Description", "").split("\n")[0].split()) or " ".join(text.split("\n")[0].split())
        packages[name] = (text, section)

if not long and not short:
    bar = "!" * 78
    print(f"{bar}\ndebian-descriptions: WARNING: no Translation-en index: using the one-line synopsis only.\n"
          f"The data set is NOT the long-description data set; accuracies are not comparable.\n{bar}", file=sys.stderr)

sha = lambda s: hashlib.sha256(s.encode()).hexdigest()
counts = Counter(section for _, section in packages.values())
top = sorted(counts, key=lambda s: (-counts[s], s))[:20]
by_section = defaultdict(list)
for name in sorted(packages, key=sha):
    text, section = packages[name]
    if section in top and len(by_section[section]) < 1500: by_section[section].append(name)

train, test = [], []
for section in top:
    names = sorted(by_section[section], key=lambda n: sha("test:" + n))
    k = round(len(names) * 0.2)
    test += names[:k]; train += names[k:]

def write(path, names):
    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["package", "text", "label"])
        for n in sorted(names): w.writerow([n, packages[n][0], packages[n][1]])

write(os.path.join(out, "data.csv"), train + test)
write(os.path.join(out, "train.csv"), train)
write(os.path.join(out, "test.csv"), test)
source = ("synopses (the one-line short description)" if short else
          "long descriptions (Translation-en)" if long else "SYNOPSIS ONLY (no Translation-en)")
with open(os.path.join(out, "SOURCE"), "w") as f:
    f.write(f"{source}\n{len(packages)} packages with a section; {synopsis_only} without a translation used the synopsis\n")
    for s in top: f.write(f"{s}\t{len(by_section[s])}\n")
print(f"debian-descriptions: {len(train)} train + {len(test)} test packages in {len(top)} sections; text: {source}"
      f" ({synopsis_only} packages fell back to the synopsis)", file=sys.stderr)
PY
echo "$(head -n1 "$out/SOURCE"), $(($(wc -l < "$out/train.csv") - 1)) + $(($(wc -l < "$out/test.csv") - 1))" > "$out/.complete"
echo "debian-descriptions: wrote $out/{data,train,test}.csv"
