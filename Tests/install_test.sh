#!/usr/bin/env bash
# `make install` as a user would run it (make install-test, part of make test):
#  - into a scratch PREFIX: PREFIX/bin/mltool and PREFIX/share/mltool/ with every model of the Makefile's
#    BUNDLED_MODELS, the same bytes as models/; the installed language identifier names the language of a German sentence; that mltool,
#    run from a folder outside the source tree, trains a classifier with the installed extractor (the model records
#    which one it used), and without that file it fails with exit 66, saying where it looked;
#  - staged (DESTDIR, default PREFIX): the same files under DESTDIR/usr/local.
# Needs make models and datasets/fashion-mnist.sh --small (the Makefile target runs both first).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
make=${MAKE:-make}
fashion=datasets/fashion-mnist-small/train
extractor=efficientnet-lite0.bin
languages=language-id.bin
for needed in models/$extractor models/$languages $fashion/bag $fashion/trouser; do
    [ -e "$needed" ] || { echo "install-test: FAILED: $needed is missing (make models, datasets/fashion-mnist.sh --small)"; exit 1; }
done
fail() { echo "install-test: FAILED: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

$make --no-print-directory install PREFIX="$tmp/prefix"
$make --no-print-directory install DESTDIR="$tmp/stage" PREFIX=/usr/local
for prefix in "$tmp/prefix" "$tmp/stage/usr/local"; do
    [ -x "$prefix/bin/mltool" ] || fail "$prefix/bin/mltool was not installed"
    for f in $(sed -n 's/^BUNDLED_MODELS := //p' Makefile); do
        cmp -s "models/$f" "$prefix/share/mltool/$f" || fail "$prefix/share/mltool/$f differs from models/"
    done
done

# A two-class label-folder tree outside the source tree: the first 20 bags and trousers.
mkdir -p "$tmp/elsewhere/clothes/bag" "$tmp/elsewhere/clothes/trouser"
for label in bag trouser; do
    find "$fashion/$label" -name '*.png' | sort | sed -n '1,20p' | xargs cp -t "$tmp/elsewhere/clothes/$label"
done
cd "$tmp/elsewhere"
mltool="$tmp/prefix/bin/mltool"
said=$("$mltool" predict "$tmp/prefix/share/mltool/$languages" --text "Diese Bibliothek liest und schreibt Dateien im JSON-Format.") \
    || fail "mltool predict with the installed $languages: $said"
[ "$(sed -n 2p <<< "$said" | awk '{print $2}')" = de ] || fail "the installed $languages did not answer de first: $said"
env -u MLTOOL_EXTRACTOR MLTOOL_CACHE="$tmp/cache" "$mltool" train clothes --quiet > train.txt \
    || fail "mltool train from $tmp/elsewhere: $(cat train.txt)"
info=$("$mltool" info model.bin)
grep -q "labels        2: \"bag\", \"trouser\"" <<< "$info" || fail "model.bin: unexpected labels: $info"
grep -q "source        $tmp/prefix/share/mltool/$extractor " <<< "$info" \
    || fail "model.bin was not trained with the installed extractor: $info"

rm "$tmp/prefix/share/mltool/$extractor"
status=0
out=$(env -u MLTOOL_EXTRACTOR MLTOOL_CACHE="$tmp/cache" "$mltool" train clothes -o other.bin --quiet 2>&1) || status=$?
[ "$status" = 66 ] || fail "without the installed extractor mltool train exited $status, expected 66: $out"
grep -q "share/mltool/$extractor" <<< "$out" || fail "the error does not say where mltool looked: $out"
echo "install-test: PREFIX and DESTDIR installs in place; from another folder, $(head -n 1 train.txt) with PREFIX/share/mltool/$extractor; without it, exit 66"
