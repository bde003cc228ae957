#!/usr/bin/env bash
# The .deb on a Debian 12 system without Swift (make test-deb): a minimal bookworm root from the apt mirror
# (debootstrap --variant=minbase, kept as a tarball in .build/debian12-minbase.tar and unpacked fresh each run),
# where apt-get installs the package and resolves its Depends from the mirror. Then, inside the root (chroot), as a
# user would: no /opt/swift and no library the loader cannot find; mltool --version; the language identifier from
# /usr/share/mltool; a Fashion-MNIST round trip (train with the installed extractor, eval, predict); mltool serve
# answering /healthz and one predict (curl); `man mltool` listing every command; the bash completion completing a
# command and an option. Needs root (chroot, mount), debootstrap, network to the mirror, and
# datasets/fashion-mnist.sh --small. With TARBALL (make dist's), the same root (its libraries now installed) runs
# the tarball's binary unpacked in /tmp: ldd, --version, and a train that finds the extractor in its share/mltool.
# Usage: packaging/test-deb.sh DEB [TARBALL]
set -euo pipefail
root_dir=$(cd "$(dirname "$0")/.." && pwd)
deb=$(readlink -f "${1:?usage: packaging/test-deb.sh DEB [TARBALL]}")
tarball=${2:+$(readlink -f "$2")}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
cache=$root_dir/.build/debian12-minbase.tar
fashion=$root_dir/datasets/fashion-mnist-small
fail() { echo "test-deb: FAILED: $*" >&2; exit 1; }
trap 'echo "test-deb: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR
[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount)"
command -v debootstrap >/dev/null || fail "debootstrap is not installed (make setup)"
[ -d "$fashion/train/bag" ] || fail "$fashion is missing (bash datasets/fashion-mnist.sh --small)"
start=$(date +%s)

if [ ! -f "$cache" ]; then
    boot=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$boot" "$mirror" > "$boot.log" 2>&1 || { tail "$boot.log"; fail "debootstrap"; }
    tar -C "$boot" --numeric-owner -cf "$cache.tmp" . && mv "$cache.tmp" "$cache"
    rm -rf "$boot" "$boot.log"
fi
chroot_dir=$(mktemp -d)
cleanup() {
    [ -n "${server:-}" ] && kill "$server" 2>/dev/null
    umount "$chroot_dir/proc" 2>/dev/null || true
    rm -rf "$chroot_dir"
}
trap cleanup EXIT
tar -C "$chroot_dir" --numeric-owner -xf "$cache"
chmod 755 "$chroot_dir"   # as / is (the tarball's "." is mktemp's 700): apt's _apt user must reach /var/lib/apt
mount -t proc proc "$chroot_dir/proc"
cp /etc/resolv.conf "$chroot_dir/etc/resolv.conf"
cp "$deb" "$chroot_dir/tmp/mltool.deb"
in_root() { chroot "$chroot_dir" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 "$@"; }
booted=$(date +%s)

in_root apt-get update -qq > /dev/null
in_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/mltool.deb curl man-db \
    > "$chroot_dir/tmp/apt.log" 2>&1 || { tail -20 "$chroot_dir/tmp/apt.log"; fail "apt-get install ./mltool.deb"; }
installed=$(date +%s)

[ ! -e "$chroot_dir/opt/swift" ] || fail "the root has /opt/swift"
in_root sh -c 'command -v swift' >/dev/null && fail "the root has a swift"
libs=$(in_root ldd /usr/bin/mltool)
grep -q "not found" <<< "$libs" && fail "a library is missing: $libs"
grep -q "swift" <<< "$libs" && fail "mltool loads a Swift library: $libs"
version=$(in_root mltool --version) || fail "mltool --version"
said=$(in_root mltool predict /usr/share/mltool/language-id.bin --text "Diese Bibliothek liest und schreibt Dateien im JSON-Format.") \
    || fail "predict with /usr/share/mltool/language-id.bin: $said"
[ "$(sed -n 2p <<< "$said" | awk '{print $2}')" = de ] || fail "the language identifier did not answer de first: $said"

# A two-class Fashion-MNIST round trip from /usr/share/mltool's extractor: 20 bags and 20 trousers to train on,
# 10 of each to test.
for split in train test; do
    n=$([ $split = train ] && echo 20 || echo 10)
    for label in bag trouser; do
        mkdir -p "$chroot_dir/tmp/clothes/$split/$label"
        find "$fashion/$split/$label" -name '*.png' | sort | sed -n "1,${n}p" | xargs cp -t "$chroot_dir/tmp/clothes/$split/$label"
    done
done
trained=$(in_root sh -c 'cd /tmp && mltool train clothes/train -o clothes.bin --quiet') || fail "mltool train: $trained"
in_root mltool info /tmp/clothes.bin | grep -q "source        /usr/share/mltool/efficientnet-lite0.bin " \
    || fail "the model was not trained with /usr/share/mltool/efficientnet-lite0.bin: $(in_root mltool info /tmp/clothes.bin)"
report=$(in_root mltool eval /tmp/clothes.bin /tmp/clothes/test) || fail "mltool eval: $report"
accuracy=$(grep -o -m1 'accuracy *[0-9.]*' <<< "$report" | tr -s ' ' || true)
predicted=$(in_root mltool predict /tmp/clothes.bin /tmp/clothes/test/trouser) || fail "mltool predict: $predicted"
# predict prints each file, then its labels best first ("   0.9985  trouser"): the line after a file's is its top-1.
trousers=$(awk '/^[^ ]/ { file = 1; next } file { print $2; file = 0 }' <<< "$predicted" | grep -c '^trouser$' || true)
[ "$trousers" -ge 9 ] || fail "fewer than 9 of 10 trousers predicted trouser: $predicted"

# serve: an ephemeral port, /healthz, one photo predicted, SIGTERM.
# chroot execs env, env execs mltool: $! is the server's own pid.
chroot "$chroot_dir" env -i PATH=/usr/bin:/bin LANG=C.UTF-8 mltool serve clothes=/tmp/clothes.bin --port 0 > "$chroot_dir/tmp/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q "serving" "$chroot_dir/tmp/serve.log" && break; sleep 0.1; done
port=$(grep -o 'http://127.0.0.1:[0-9]*' "$chroot_dir/tmp/serve.log" | sed 's/.*://') || fail "mltool serve did not start: $(cat "$chroot_dir/tmp/serve.log")"
health=$(in_root curl -sf "http://127.0.0.1:$port/healthz") || fail "GET /healthz"
photo=$(cd "$chroot_dir" && find tmp/clothes/test/bag -name '*.png' | sort | sed -n 1p)
answer=$(in_root curl -sf --data-binary "@/$photo" -H 'Content-Type: image/png' "http://127.0.0.1:$port/v1/models/clothes/predict") \
    || fail "POST /v1/models/clothes/predict"
grep -q '"bag"' <<< "$answer" || fail "the served model did not answer bag for a bag: $answer"
kill -TERM "$server"; wait "$server" || fail "mltool serve did not exit 0 on SIGTERM: $(cat "$chroot_dir/tmp/serve.log")"
server=

# The man page and the bash completion, as installed.
page=$(in_root env MANWIDTH=120 man mltool 2>/dev/null) || fail "man mltool"
for c in $(in_root mltool --help | sed -n '/^COMMANDS:/,/^$/p' | awk 'NF > 1 {print $1}'); do
    grep -q "^MLTOOL ${c^^}" <<< "$page" || fail "man mltool has no section for $c"
done
completed=$(in_root bash -c 'source /usr/share/bash-completion/completions/mltool
    COMP_WORDS=(mltool tr); COMP_CWORD=1; _mltool; echo "${COMPREPLY[*]}"
    COMP_WORDS=(mltool serve --to); COMP_CWORD=2; _mltool; echo "${COMPREPLY[*]}"')
[ "$completed" = $'train\n--token' ] || fail "bash completion: expected train and --token, got: $completed"
untarred=
if [ -n "$tarball" ]; then
    tar -C "$chroot_dir/tmp" -xzf "$tarball"
    bin=$(cd "$chroot_dir" && echo tmp/mltool-*/bin/mltool)
    [ -x "$chroot_dir/$bin" ] || fail "$tarball has no mltool-*/bin/mltool"
    libs=$(in_root ldd "/$bin")
    grep -q "not found\|swift" <<< "$libs" && fail "the tarball's mltool: $libs"
    in_root "/$bin" --version > /dev/null || fail "the tarball's mltool --version"
    in_root sh -c "cd /tmp && /$bin train clothes/train -o tarball.bin --quiet" > /dev/null || fail "the tarball's mltool train"
    in_root "/$bin" info /tmp/tarball.bin | grep -q "source        /${bin%/bin/mltool}/share/mltool/efficientnet-lite0.bin " \
        || fail "the tarball's mltool did not find its extractor in share/mltool: $(in_root "/$bin" info /tmp/tarball.bin)"
    untarred="; the tarball's binary: ldd, --version, train with its share/mltool extractor"
fi
done_at=$(date +%s)
echo "test-deb: $version in a Debian 12 root without Swift: root $((booted - start)) s, apt-get install $((installed - booted)) s," \
    "checks $((done_at - installed)) s; language-id de; train/eval/predict ($accuracy; trousers $trousers/10);" \
    "serve: healthz $health, predict bag; man page lists every command; bash completion$untarred"
