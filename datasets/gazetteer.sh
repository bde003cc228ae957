#!/usr/bin/env bash
# Build the English name lists the named-entity tagger reads (mltool train … --gazetteer FILE) from pinned Debian
# packages (datasets/gazetteer.manifest: version, size and sha256 of each .deb):
#     OUT/gazetteer.tsv    lines CLASS<TAB>name (UTF-8, LF, sorted, unique)
# Usage: datasets/gazetteer.sh [OUT]     (OUT default datasets/gazetteer)
# - LOC: tzdata (public domain): the country names of iso3166.tab ("&" read as "and") and the city of every
#   zone1970.tab zone (America/New_York → New York). iso-codes' ISO 3166-1/2/3 names (countries, subdivisions, former
#   countries) gave more (UNER English EWT test F1 0.6371 against 0.6111) but its data are LGPL-2.1+, and the model
#   built from them ships in the .deb: they stay out.
# - PROPER: wamerican (SCOWL, permissive licence): the dictionary's capitalized words (no possessive 's) whose
#   lower-case form is not also a dictionary word — people's given names, places, brands.
# - Cleaning: text in parentheses and after a comma dropped ("Korea, Republic of" → Korea), whitespace collapsed,
#   names longer than 6 words dropped.
# Fetching and checking the .debs is datasets/debfetch.sh's: a size or sha256 other than the manifest's stops the
# script (exit 65); a pinned version gone from the mirror is replaced by apt's, with a warning (exit 69 when none).
# Idempotent: a complete OUT is left alone unless the manifest or this script changed (OUT/.complete holds their hash).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=datasets/debfetch.sh
source "$here/debfetch.sh"
out="${1:-$here/gazetteer}"
manifest="$here/gazetteer.manifest"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -f "$out/.gitignore" ] || printf '*\n' > "$out/.gitignore"
stamp="$(cat "$manifest" "$0" "$here/debfetch.sh" | sha256sum | cut -c1-16)"
if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$stamp" ] && [ -f "$out/gazetteer.tsv" ]; then
    touch "$out/gazetteer.tsv"; echo "gazetteer: $out is complete ($stamp)"; exit 0
fi
grep -v '^#' "$manifest" | while read -r name version size sha path; do
    file="$(debfetch gazetteer "$out" "$name" "$version" "$size" "$sha" "$path")"
    rm -rf "$out/root-$name"; mkdir -p "$out/root-$name"
    dpkg-deb -x "$file" "$out/root-$name"
done
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def clean(s):
    s = re.sub(r"\(.*?\)|\[.*?\]", " ", s).split(",")[0]
    return " ".join(s.split())
names = set()
for line in open(out + "/root-tzdata/usr/share/zoneinfo/iso3166.tab", encoding="utf-8"):
    if line.startswith("#"): continue
    names.add(("LOC", clean(line.rstrip("\n").split("\t")[1].replace("&", "and"))))
for line in open(out + "/root-tzdata/usr/share/zoneinfo/zone1970.tab", encoding="utf-8"):
    if line.startswith("#"): continue
    zone = line.rstrip("\n").split("\t")[2]
    names.add(("LOC", clean(zone.split("/")[-1].replace("_", " "))))
words = [w.strip() for w in open(out + "/root-wamerican/usr/share/dict/american-english", encoding="utf-8")]
lower = {w for w in words if w and not w[0].isupper()}
for w in words:
    if w and w[0].isupper() and "'" not in w and w.lower() not in lower: names.add(("PROPER", w))
rows = sorted(f"{c}\t{n}" for c, n in names if n and len(n.split()) <= 6)
open(out + "/gazetteer.tsv", "w", encoding="utf-8").write("\n".join(rows) + "\n")
print(f"gazetteer: {len(rows)} names in {out}/gazetteer.tsv")
PY
echo "$stamp" > "$out/.complete"
