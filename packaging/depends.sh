#!/usr/bin/env bash
# The Debian `Depends:` of a binary, derived from what it loads: each library it names (NEEDED), as `ldd` resolves
# it, and each library it dlopens (named by soname after the binary: libhdf5_serial.so.103, which the Keras reader's
# sandbox opens at run time), mapped to its package with `dpkg -S`, with the installed version's upstream part
# (`dpkg-query -W`) as its floor: the releases this binary was built against. Stops (exit 1) when a library is not
# found or belongs to no Debian package, e.g. one under the Swift toolchain: the binary must not load the
# toolchain's runtime (make build links it with --static-swift-stdlib).
# Usage: packaging/depends.sh BINARY [SONAME...]   prints one line: "pkg (>= version), ..."
set -euo pipefail
binary=$1; shift
fail() { echo "depends: $*" >&2; exit 1; }
[ -x "$binary" ] || fail "$binary: not an executable"

# The libraries the binary names itself (NEEDED), where the loader finds them (ldd); theirs are their packages' business.
needed=" $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ') "
libs=$(ldd "$binary" | awk -v needed="$needed" '
    index(needed, " " $1 " ") == 0 { next }
    /not found/ { print "NOTFOUND:" $1; next }
    $2 == "=>" && $3 ~ /^\// { print $3 }')
for soname in "$@"; do
    # The readers here consume all their input: one that stops early (awk's exit, head) can leave its writer with
    # SIGPIPE, which pipefail makes this script's failure (ldconfig -p prints ~62 KB here, about a pipe's buffer).
    path=$(/sbin/ldconfig -p | awk -v s="$soname" '$1 == s && /x86-64/ && found == "" { found = $NF } END { print found }')
    [ -n "$path" ] || fail "$soname (opened at run time) is not installed"
    libs+=$'\n'"$path"
done

declare -A floor
while read -r lib; do
    [ -n "$lib" ] || continue
    [[ $lib == NOTFOUND:* ]] && fail "${lib#NOTFOUND:}: not found by the loader"
    # dpkg records the path as the package installed it: /lib and /usr/lib are one folder on Debian 12 (merged
    # /usr), so try the path as given, its /usr twin, and the real path.
    pkg=
    for p in "$lib" "/usr${lib#/usr}" "${lib#/usr}" "$(readlink -f "$lib")" "/usr$(readlink -f "$lib" | sed 's#^/usr##')" "$(readlink -f "$lib" | sed 's#^/usr##')"; do
        pkg=$(dpkg -S "$p" 2>/dev/null | sed -n '1s/:.*//p') && [ -n "$pkg" ] && break
    done
    [ -n "$pkg" ] || fail "$lib: in no Debian package (a toolchain library? link the Swift runtime statically)"
    # The upstream part of the installed version (epoch kept, Debian revision dropped): the release built against,
    # not this machine's security update of it.
    floor[$pkg]=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
done <<< "$libs"

for pkg in $(printf '%s\n' "${!floor[@]}" | sort); do
    printf '%s (>= %s)\n' "$pkg" "${floor[$pkg]}"
done | paste -sd, - | sed 's/,/, /g'
