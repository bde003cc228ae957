#!/usr/bin/env bash
# Build a short-text classification set from Debian's fortune cookies: each quotation → the fortune file it is in.
#     OUT/train.csv  OUT/test.csv     columns: text,label   (RFC 4180, UTF-8, LF)
# Usage: datasets/fortunes.sh [OUT]     (OUT default datasets/fortunes)
# - Source: the pinned .debs of datasets/fortunes.manifest (fortunes and fortunes-min 1:1.99.1-7.3, bookworm: version,
#   size and sha256 of each), unpacked with dpkg-deb; /usr/share/games/fortunes/* without the .dat/.u8 index files
#   and the links (the offensive collections are a separate package, fortunes-off, and are not used).
# - Licence: BSD (4.4BSD fortune, "This program falls under the BSD copyright" in the packages' debian/copyright;
#   the quotations are from many authors). The data are fetched for measurement and never committed or shipped.
# - Quotations: a file's text split on lines holding "%" alone, whitespace collapsed, empty ones dropped; label = the
#   file's name; files with at least 40 quotations (39 collections, 15,163 quotations). This is what
#   bench/short_texts.py reads from an installed `fortunes`.
# - Split, seeded: a quotation goes to test.csv when int(sha256("test:" + quotation)[:8], 16) % 5 == 0 (20%), else to
#   train.csv (bench/short_texts.py's split: the same quotation is on one side only), each in file-then-text order.
# Fetching and checking the .debs is datasets/debfetch.sh's: a size or sha256 other than the manifest's stops the
# script (exit 65); a pinned version gone from the mirror is replaced by apt's, with a warning (exit 69 when none).
# Idempotent: a complete OUT is left alone unless the manifest or this script changed (OUT/.complete holds their hash).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=datasets/debfetch.sh
source "$here/debfetch.sh"
out="${1:-$here/fortunes}"
manifest="$here/fortunes.manifest"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
[ -f "$out/.gitignore" ] || printf '*\n' > "$out/.gitignore"
stamp="$(cat "$manifest" "$0" "$here/debfetch.sh" | sha256sum | cut -c1-16)"
if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$stamp" ] && [ -f "$out/train.csv" ] && [ -f "$out/test.csv" ]; then
    echo "fortunes: $out is complete ($stamp)"; exit 0
fi
rm -rf "$out/root"; mkdir -p "$out/root"
grep -v '^#' "$manifest" | while read -r name version size sha path; do
    file="$(debfetch fortunes "$out" "$name" "$version" "$size" "$sha" "$path")"
    dpkg-deb -x "$file" "$out/root"
done
python3 - "$out" <<'PY'
import csv, hashlib, os, sys
out = sys.argv[1]
folder = os.path.join(out, "root/usr/share/games/fortunes")
rows = []
for name in sorted(os.listdir(folder)):
    path = os.path.join(folder, name)
    if "." in name or os.path.islink(path) or not os.path.isfile(path):
        continue
    with open(path, encoding="utf-8", errors="replace") as f:
        quotes = [" ".join(q.split()) for q in f.read().split("\n%\n")]
    quotes = [q for q in quotes if q and q != "%"]
    if len(quotes) >= 40:
        rows += [(q, name) for q in quotes]
def test(q): return int(hashlib.sha256(("test:" + q).encode("utf-8")).hexdigest()[:8], 16) % 5 == 0
for split, keep in (("train", False), ("test", True)):
    with open(os.path.join(out, split + ".csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["text", "label"])
        w.writerows(r for r in rows if test(r[0]) == keep)
labels = sorted({r[1] for r in rows})
print(f"fortunes: {sum(not test(r[0]) for r in rows)} train + {sum(test(r[0]) for r in rows)} test quotations in {len(labels)} files, {out}/{{train,test}}.csv")
PY
echo "$stamp" > "$out/.complete"
