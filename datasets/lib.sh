# What the datasets/*.sh scripts share; each sources it after `set -euo pipefail`:
#     source "$(dirname "$0")/lib.sh"
#     dataset_args NAME HELP_LINES "$@"     # sets here, out (default datasets/NAME) and name; -h prints the header
#     dataset_start "a complete NAME tree"  # leaves a complete OUT alone (exit 0), refuses an incomplete one (exit 73)
#     ... build the tree in "$partial" (OUT.partial-PID, removed if the script stops early) ...
#     dataset_finish "what .complete records"
# A script that never refuses an old OUT (tabular.sh rebuilds one made for other sets) calls dataset_partial instead
# of dataset_start.

# Reads the arguments: one optional OUT; -h/--help prints the script's header comment (lines 2…HELP_LINES + 1).
dataset_args() {
    name="$1"
    local help_lines="$2" arg
    shift 2
    out=""
    for arg in "$@"; do
        case "$arg" in
            -h|--help) sed -n "2,$((help_lines + 1))p" "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
            -*) echo "$name.sh: unknown option $arg" >&2; exit 64 ;;
            *) [ -z "$out" ] || { echo "$name.sh: more than one OUT given" >&2; exit 64; }; out="$arg" ;;
        esac
    done
    here="$(cd "$(dirname "$0")" && pwd)"
    out="${out:-$here/$name}"
}

# Exits 0 when OUT is complete (saying what its .complete records), 73 when OUT exists but is not (naming `what` it
# should be); then makes the partial tree.
dataset_start() {
    if [ -f "$out/.complete" ]; then
        echo "$name: $out is already complete ($(cat "$out/.complete"))"
        exit 0
    fi
    if [ -e "$out" ]; then
        echo "$name.sh: $out exists but is not $1; remove it first" >&2
        exit 73
    fi
    dataset_partial
}

# The tree is built in OUT.partial-PID, removed if the script stops before dataset_finish.
dataset_partial() {
    partial="$out.partial-$$"
    rm -rf "$partial"
    mkdir -p "$partial"
    trap 'rm -rf "$partial"' EXIT
}

# Marks the partial tree complete (its .complete holding $1) and renames it OUT (replacing an old OUT).
dataset_finish() {
    echo "$1" > "$partial/.complete"
    rm -rf "$out"
    mv "$partial" "$out"
    trap - EXIT
}

# Where the source files are: $2 when set (an environment override, taken as given: the script checks its files),
# else the first of ../shared/datasets/$1 next to the repository that holds `marker`; empty when none does.
shared_source() {
    local sub="$1" override="$2" marker="$3" candidate
    if [ -n "$override" ]; then echo "$override"; return; fi
    for candidate in "$here/../../shared/datasets/$sub" "$here/../shared/datasets/$sub"; do
        if [ -e "$candidate/$marker" ]; then echo "$candidate"; return; fi
    done
}
