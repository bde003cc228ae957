#!/usr/bin/env bash
# Build the language-identification data set from pinned Debian bookworm files: text → language.
#     OUT/train.csv OUT/validation.csv OUT/test.csv OUT/cross.csv    columns: source,text,label,kind (RFC 4180, UTF-8)
# Usage: datasets/language-id.sh [OUT]        (OUT default datasets/language-id)
#        datasets/language-id.sh --pin        (rewrite datasets/language-id.manifest from today's mirror: maintainers)
# - Every input is a file named in datasets/language-id.manifest with its size and sha256: the translated package
#   descriptions (main/i18n/Translation-*.bz2 or .xz, fetched by hash from the Release file's by-hash store), the
#   binary package index (main/binary-amd64/Packages.xz: binary package → source package) and 36 binary .debs, each
#   at an exact version (pool path), whose gettext catalogues (.mo) and .desktop files are read. A file whose size
#   or sha256 differs stops the script (exit 65). Nothing else is read from the network, so the data set is the same
#   on every machine and every day the files remain. When a pinned file is gone from the mirror (Debian replaces
#   indexes and drops older stable updates at each point release), the script warns, pins today's files from apt's
#   lists (`--pin` into OUT/manifest.today: apt verified them against Debian's signed Release) and builds from those,
#   so `make test` still runs; re-pin the committed manifest then. When that fails too: exit 69.
# - The rules (sources, cleaning, labels, split, caps) are datasets/language_id.py's docstring.
# - Downloads are kept in OUT/files (about 80 MB) so a rebuild reads no network; a complete OUT is left alone
#   unless the manifest or the builder changed (OUT/.complete records their sha256).
# Needs apt's /usr/lib/apt/apt-helper, dpkg-deb and python3.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
manifest="${LANGUAGE_ID_MANIFEST:-$here/language-id.manifest}"
out=""
pin=0
for arg in "$@"; do
    case "$arg" in
        -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        --pin) pin=1 ;;
        -*) echo "language-id.sh: unknown option $arg" >&2; exit 64 ;;
        *) [ -z "$out" ] || { echo "language-id.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
    esac
done
if [ "$pin" = 1 ]; then
    exec python3 "$here/language_id.py" pin "$manifest"
fi
out="${out:-$here/language-id}"
mkdir -p "$out/files"
out="$(cd "$out" && pwd)"
[ -f "$out/.gitignore" ] || printf '*\n' > "$out/.gitignore"
stamp="$(cat "$manifest" "$here/language_id.py" "$here/deb822.py" | sha256sum | cut -c1-16)"
if [ -f "$out/.complete" ] && [ "$(head -c16 "$out/.complete")" = "$stamp" ]; then
    echo "language-id: $out is complete ($(cut -c18- "$out/.complete"))"
    exit 0
fi

# Fetch every pinned file that is not already here with the right sha256.
while read -r kind name version size sha url _; do
    case "$kind" in ''|'#'*) continue ;; esac
    file="$out/files/$(basename "$url")"
    if [ -f "$file" ] && [ "$(sha256sum < "$file" | cut -d' ' -f1)" = "$sha" ]; then continue; fi
    rm -f "$file"
    if ! /usr/lib/apt/apt-helper download-file "$url" "$file.part" >/dev/null 2>"$out/files/.err"; then
        echo "language-id: $kind $name $version is no longer on the mirror ($url): $(tail -n1 "$out/files/.err")" >&2
        rm -f "$file.part"
        if [ -n "${LANGUAGE_ID_MANIFEST:-}" ] || ! python3 "$here/language_id.py" pin "$out/manifest.today" >&2; then
            echo "language-id: the pinned data set cannot be rebuilt; re-pin with datasets/language-id.sh --pin" >&2
            exit 69
        fi
        echo "language-id: WARNING: building from today's Debian files instead ($out/manifest.today); the" \
            "accuracies measured on the pinned set may move a little: re-pin with datasets/language-id.sh --pin" >&2
        LANGUAGE_ID_MANIFEST="$out/manifest.today" exec bash "$here/$(basename "$0")" "$out"
    fi
    got_size=$(stat -c %s "$file.part"); got_sha=$(sha256sum < "$file.part" | cut -d' ' -f1)
    if [ "$got_size" != "$size" ] || [ "$got_sha" != "$sha" ]; then
        echo "language-id: $url differs from the manifest: $got_size bytes sha256 $got_sha, expected $size bytes sha256 $sha" >&2
        rm -f "$file.part"
        exit 65
    fi
    mv "$file.part" "$file"
done < "$manifest"
rm -f "$out/files/.err"

PYTHONPATH="$here" python3 "$here/language_id.py" build "$manifest" "$out/files" "$out"
echo "$stamp $(head -n1 "$out/SOURCE")" > "$out/.complete"
echo "language-id: wrote $out/{train,validation,test,cross}.csv"
