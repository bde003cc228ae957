# shellcheck shell=bash
# Sourced by the data scripts that read pinned Debian .debs (gazetteer.sh, fortunes.sh): one place that fetches and
# checks them.
#
#     file="$(debfetch TAG OUT NAME VERSION SIZE SHA256 PATH)"     (a manifest line, PATH within the archive)
#
# prints the path of the .deb in OUT: the one already there when its sha256 is the manifest's, else fetched from
# $DEBIAN_MIRROR (default deb.debian.org/debian) and checked — a size or sha256 other than the manifest's stops the
# script (exit 65). A pinned version gone from the mirror (Debian drops a stable update's older version at the next
# point release) is replaced, with a warning naming both versions and the manifest line to re-pin with, by the version
# apt offers today (`apt-get download`: verified against Debian's signed index), so `make test` still builds; when apt
# has none either: exit 69. TAG names the script in messages.
debfetch() {
    local tag="$1" out="$2" name="$3" version="$4" size="$5" sha="$6" path="$7"
    local mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}" file
    file="$out/$(basename "$path")"
    if [ -f "$file" ] && [ "$(sha256sum < "$file" | cut -d' ' -f1)" = "$sha" ]; then echo "$file"; return 0; fi
    if ! curl -fsSL --retry 3 -o "$file.part" "$mirror/$path"; then
        rm -f "$file.part"
        debfetch_today "$tag" "$out" "$name" "$version" "$mirror/$path"
        return
    fi
    local got_size got_sha
    got_size=$(stat -c %s "$file.part"); got_sha=$(sha256sum < "$file.part" | cut -d' ' -f1)
    if [ "$got_size" != "$size" ] || [ "$got_sha" != "$sha" ]; then
        echo "$tag: $path differs from the manifest: $got_size bytes sha256 $got_sha, expected $size bytes sha256 $sha" >&2
        rm -f "$file.part"
        exit 65
    fi
    mv "$file.part" "$file"
    echo "$file"
}

# debfetch_today TAG OUT NAME VERSION URL: the version of NAME apt offers today, fetched into OUT/apt-NAME.
debfetch_today() {
    local tag="$1" dir="$2/apt-$3" name="$3" show
    rm -rf "$dir"; mkdir -p "$dir"
    if ! show="$(apt-cache show --no-all-versions "$name" 2>/dev/null)" || [ -z "$show" ] \
        || ! (cd "$dir" && apt-get download -qq "$name" >/dev/null 2>&1); then
        echo "$tag: cannot fetch $5 ($name $4), and apt offers no $name to replace it" >&2
        exit 69
    fi
    field() { printf '%s\n' "$show" | sed -n "s/^$1: //p" | head -n1; }
    echo "$tag: WARNING: $name $4 is gone from the mirror; built from $name $(field Version) as apt offers it today." >&2
    echo "$tag: re-pin the manifest with: $name $(field Version) $(field Size) $(field SHA256) $(field Filename)" \
        "(a pool/updates/ path is debian-security's: set DEBIAN_MIRROR or pin a version from the main archive)" >&2
    ls "$dir"/*.deb
}
