#!/usr/bin/env bash
# A single-node Slurm cluster on this machine, for tests: munged + slurmctld + slurmd from Debian's `munge` and
# `slurm-wlm` (the Makefile's APT_PACKAGES; this script installs nothing), with a munge key and a slurm.conf made
# for this machine and every key, state, spool, log, pid and socket file under one directory.
#
#   slurm.sh up [DIR]    start the cluster in DIR (default: a new mktemp -d), wait until the node is idle (60 s at
#                        most), print `SLURM_CONF=DIR/slurm.conf` last on stdout. Export that to use sbatch & co.
#   slurm.sh status DIR  sinfo and squeue of the cluster in DIR
#   slurm.sh down DIR    stop the daemons started in DIR (by their recorded process ids) and remove DIR
#
# Exit status: 0 done; 77 Slurm cannot run here (a program missing, a daemon that does not start or cannot bind,
# a node that never becomes idle) with the reason on stderr, which tests turn into a loud skip (a failure under
# MLTOOL_REQUIRE_ORACLES=1); 64 usage.
#
# What works in a container without systemd or cgroups, as root or as a plain user: daemons in the foreground
# (-D) started in their own session with their output in DIR/log; SlurmUser/SlurmdUser = the current user;
# proctrack/linuxproc, task/none, jobacct_gather/none, no accounting (nothing touches /sys/fs/cgroup); munged on
# its own socket (AuthInfo=socket=...) so that a system munged, if any, is left alone; free TCP ports picked at
# start so that two clusters (two checkouts' tests) can run side by side.
set -euo pipefail

SKIP=77
SELF=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
say() { echo "slurm.sh: $*" >&2; }
cannot() { say "Slurm cannot run here: $*"; exit "$SKIP"; }

# A failed start: stop what started, remove the directory when this script made it, say why.
CREATED=
failed() {
    local dir=$1; shift
    down_daemons "$dir"
    [ -z "$CREATED" ] || rm -rf "$dir"
    cannot "$@"
}

# The last 15 lines of a daemon's log, indented, for a failure message.
log_tail() { [ -f "$1" ] && tail -n 15 "$1" | sed 's/^/    /' >&2 || true; }

# A TCP port nobody listens on (the kernel's choice), or the default when python3 is missing.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
        || echo "$1"
}

# Waits up to $2 seconds for the command $1 (a string, eval'ed) to succeed.
wait_for() {
    local cond=$1 limit=$2 t=0
    while ! eval "$cond" >/dev/null 2>&1; do
        [ "$t" -ge "$((limit * 5))" ] && return 1
        sleep 0.2; t=$((t + 1))
    done
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

up() {
    local dir=${1:-}
    for p in munged mungekey slurmctld slurmd sinfo sbatch scontrol; do
        command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] \
            || cannot "'$p' is not installed (apt-get install slurm-wlm munge; make setup does it)"
    done
    export PATH="$PATH:/usr/sbin"
    if [ -z "$dir" ]; then
        dir=$(mktemp -d "${TMPDIR:-/tmp}/mltool-slurm.XXXXXX")
        # munge's socket path must fit 108 bytes: a long TMPDIR falls back to /tmp.
        if [ "${#dir}" -gt 80 ]; then rmdir "$dir"; dir=$(mktemp -d /tmp/mltool-slurm.XXXXXX); fi
        CREATED=1
    fi
    mkdir -p "$dir"
    dir=$(cd "$dir" && pwd)
    # A unix socket path must fit 108 bytes.
    if [ "${#dir}" -gt 80 ]; then
        [ -z "$CREATED" ] || rm -rf "$dir"
        cannot "the cluster directory's path is too long for munge's socket: $dir (set TMPDIR to a shorter folder)"
    fi
    # munged wants its socket's directories executable by all and its key readable by its user only.
    mkdir -p "$dir/munge" "$dir/key" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"
    chmod 755 "$dir" "$dir/munge"
    chmod 700 "$dir/key" "$dir/state" "$dir/spool" "$dir/log" "$dir/run"

    local user node cpus mem ctld_port slurmd_port
    user=$(id -un)
    node=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
    ctld_port=$(free_port 6817)
    slurmd_port=$(free_port 6818)
    [ "$slurmd_port" != "$ctld_port" ] || slurmd_port=$((ctld_port + 1))

    # munge: a fresh key (mungekey writes 1024 random bytes, mode 0600) and its own socket.
    mungekey --create --keyfile="$dir/key/munge.key" 2>"$dir/log/mungekey.log" \
        || { log_tail "$dir/log/mungekey.log"; failed "$dir" "mungekey could not create a key"; }
    munged --foreground --key-file="$dir/key/munge.key" --socket="$dir/munge/munge.socket" \
        --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/key/munged.seed" \
        </dev/null >>"$dir/log/munged.out" 2>&1 &
    echo $! >"$dir/run/munged.pid.launch"
    wait_for "munge --socket='$dir/munge/munge.socket' -n </dev/null | unmunge --socket='$dir/munge/munge.socket'" 15 \
        || { log_tail "$dir/log/munged.out"; log_tail "$dir/log/munged.log"; failed "$dir" "munged did not start (log above)"; }

    cat >"$dir/slurm.conf" <<EOF
# Generated by Tests/cluster/slurm.sh for $node on $(date -u +%Y-%m-%dT%H:%M:%SZ); removed by 'slurm.sh down'.
ClusterName=mltooltest
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$user
SlurmdUser=$user
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups, no accounting: nothing here needs systemd, /sys/fs/cgroup or a database.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
# Listen on 127.0.0.1 only (the addresses above), not on every interface.
CommunicationParameters=NoInAddrAny
SlurmdParameters=config_overrides
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=300
KillWait=5
Waittime=0
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
    export SLURM_CONF="$dir/slurm.conf"

    setsid slurmctld -D -f "$SLURM_CONF" </dev/null >>"$dir/log/slurmctld.out" 2>&1 &
    echo $! >"$dir/run/slurmctld.pid.launch"
    wait_for "scontrol ping | grep -q 'is UP'" 30 \
        || { log_tail "$dir/log/slurmctld.out"; log_tail "$dir/log/slurmctld.log"; failed "$dir" "slurmctld did not answer within 30 s (log above)"; }

    setsid slurmd -D -f "$SLURM_CONF" -N "$node" </dev/null >>"$dir/log/slurmd.out" 2>&1 &
    echo $! >"$dir/run/slurmd.pid.launch"
    if ! wait_for "sinfo -h -N -n '$node' -o '%T' | grep -qx idle" 60; then
        local state
        state=$(sinfo -h -N -n "$node" -o '%T %E' 2>&1 || true)
        log_tail "$dir/log/slurmd.out"; log_tail "$dir/log/slurmd.log"; log_tail "$dir/log/slurmctld.log"
        failed "$dir" "node $node is not idle 60 s after slurmd started (sinfo: ${state:-nothing}; logs above)"
    fi
    # A watchdog stops everything after MLTOOL_SLURM_MAX_SECONDS (default 1800) if `down` never comes (a test
    # killed half-way), so that no daemon outlives its test by much.
    setsid bash -c 'sleep "$1"; exec bash "$2" down "$3"' watchdog "${MLTOOL_SLURM_MAX_SECONDS:-1800}" "$SELF" "$dir" \
        </dev/null >/dev/null 2>&1 &
    echo $! >"$dir/run/watchdog.pid.launch"
    say "up: node $node ($cpus CPUs, $mem MB), slurmctld :$ctld_port, slurmd :$slurmd_port, in $dir"
    echo "SLURM_CONF=$SLURM_CONF"
}

# Stops the daemons launched in $1: SIGTERM to all, then SIGKILL to any still there after 10 s. Only the process ids this
# script recorded are signalled (slurmd's job steps are its children's sessions: scancel first when jobs run).
down_daemons() {
    local dir=$1 name pidfile pid
    if [ -f "$dir/slurm.conf" ] && alive "$dir/run/slurmctld.pid.launch"; then
        SLURM_CONF="$dir/slurm.conf" scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
    fi
    local pids=()
    for name in watchdog slurmd slurmctld munged; do
        # (the watchdog itself calls `down`: it does not signal itself)
        [ "$name" != watchdog ] || [ "$(cat "$dir/run/watchdog.pid.launch" 2>/dev/null)" != "$$" ] || continue
        pidfile="$dir/run/$name.pid.launch"
        alive "$pidfile" || continue
        pid=$(cat "$pidfile")
        # The watchdog's group (bash + sleep) needs no clean-up: SIGKILL, which works even when the test's parent
        # started us with signals blocked (a Swift test does: the mask is inherited through exec).
        if [ "$name" = watchdog ]; then kill -KILL -- "-$pid" 2>/dev/null || true; continue; fi
        kill -TERM "$pid" 2>/dev/null || true
        pids+=("$pid")
    done
    for pid in "${pids[@]}"; do
        wait_for "! kill -0 $pid" 10 || kill -KILL "$pid" 2>/dev/null || true
    done
}

down() {
    local dir=${1:?usage: slurm.sh down DIR}
    [ -f "$dir/slurm.conf" ] || [ -d "$dir/run" ] || { say "down: $dir is not a cluster directory"; exit 64; }
    down_daemons "$dir"
    rm -rf "$dir"
}

status() {
    local dir=${1:?usage: slurm.sh status DIR}
    export SLURM_CONF="$dir/slurm.conf"
    local name
    for name in munged slurmctld slurmd; do
        if alive "$dir/run/$name.pid.launch"; then echo "$name: running (pid $(cat "$dir/run/$name.pid.launch"))"
        else echo "$name: not running"; fi
    done
    sinfo -N -o '%N %T %c %m %E' || true
    squeue -o '%i %j %T %r' || true
}

case "${1:-}" in
    up) up "${2:-}" ;;
    down) down "${2:-}" ;;
    status) status "${2:-}" ;;
    *) echo "usage: slurm.sh up [DIR] | status DIR | down DIR" >&2; exit 64 ;;
esac
