#!/usr/bin/env python3
"""Issue 21 item 4: mltool's Slurm plumbing against a real single-node Slurm cluster (Tests/cluster/slurm.sh).

    run_cluster_test.py --report OUT.json [--mltool BIN --data DIR --extractor MODEL --per-class K]

Starts the cluster, then records (in OUT.json, checked by Tests/MLToolCLITests/SlurmClusterTests.swift):
  smoke     a generic `sbatch --array=0-3 --wait` whose tasks write SLURM_ARRAY_TASK_ID/COUNT/MIN to a shared folder,
            then `sbatch --array=2 --wait` of the same script (Slurm's numbers for a lone resubmitted index);
  fake      deploy/slurm/extract.sbatch with MLTOOL=Tests/cluster/fake-mltool.sh over a generated 40-file set:
            `submit 4`, shard 2 hangs half-way and is scancel'led, the train job is left pending, `resubmit 2 TRAIN`,
            the train job runs; its model against a one-process run of the same command;
  real      (only with --mltool) the same flow with the real mltool over the first K images per class of DATA,
            the sharded model against a one-process `mltool train` with the same flags, byte for byte.
Exit 0 when the report is written, 77 when Slurm cannot start here (the reason on stderr), 1 on a harness error.
Every wait is bounded. The cluster is stopped and its directory removed on every path out.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SLURM_SH = os.path.join(HERE, "slurm.sh")
FAKE_MLTOOL = os.path.join(HERE, "fake-mltool.sh")
EXTRACT_SBATCH = os.path.join(REPO, "deploy", "slurm", "extract.sbatch")
SHARDS = 4
HELD = 2  # the shard that is killed and resubmitted


class HarnessError(Exception):
    pass


def run(args, env=None, cwd=None, timeout=120, check=True):
    p = subprocess.run(args, env=env, cwd=cwd, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise HarnessError(f"{' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Cluster:
    def __init__(self, env):
        self.env = env

    def states(self, job):
        """{task: JobState} of a job or array, from slurmctld's memory (MinJobAge=300 keeps finished jobs)."""
        p = run(["scontrol", "-o", "show", "job", str(job)], env=self.env, check=False)
        out = {}
        for line in p.stdout.splitlines():
            jid = re.search(r"\bJobId=(\d+)", line)
            task = re.search(r"\bArrayTaskId=(\S+)", line)
            state = re.search(r"\bJobState=(\S+)", line)
            reason = re.search(r"\bReason=(\S+)", line)
            if jid and state:
                key = task.group(1) if task else jid.group(1)
                out[key] = state.group(1) + (f" ({reason.group(1)})" if reason and reason.group(1) != "None" else "")
        return out

    def active(self, job):
        p = run(["squeue", "-h", "-j", str(job), "-o", "%T"], env=self.env, check=False)
        return [s for s in p.stdout.split() if s]

    def wait_until(self, what, predicate, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            time.sleep(0.25)
        raise HarnessError(f"timed out after {timeout} s waiting for {what}")

    def wait_done(self, job, timeout):
        """Waits until no task of `job` is pending or running."""
        self.wait_until(f"job {job} to finish", lambda: not self.active(job), timeout)
        return self.states(job)

    def task_running(self, job, index, timeout):
        def running():
            p = run(["squeue", "-h", "-j", f"{job}_{index}", "-o", "%T"], env=self.env, check=False)
            return p.stdout.strip() == "RUNNING"
        self.wait_until(f"task {job}_{index} to run", running, timeout)


def smoke(cluster, work):
    """The generic array job: which variables each task sees, and what a lone resubmitted index sees."""
    out = os.path.join(work, "smoke")
    os.makedirs(out)
    script = os.path.join(work, "smoke.sh")
    with open(script, "w") as f:
        f.write("#!/bin/bash\n"
                'printf "%s %s %s %s\\n" "$SLURM_ARRAY_TASK_ID" "$SLURM_ARRAY_TASK_COUNT" "$SLURM_ARRAY_TASK_MIN" '
                '"$(hostname -s)" > "$SMOKE_OUT/task-$SLURM_ARRAY_TASK_ID.$SLURM_JOB_ID"\n')
    env = dict(cluster.env, SMOKE_OUT=out)
    started = time.monotonic()
    # (sbatch --wait polls slurmctld at growing intervals, 10 s for this array: poll faster here)
    p = run(["sbatch", "--parsable", "--array=0-3", "--output=/dev/null", script], env=env, cwd=work)
    states = cluster.wait_done(int(p.stdout.strip().split(";")[0]), 120)
    full_seconds = time.monotonic() - started
    seen_full = sorted(os.listdir(out))
    run(["sbatch", "--wait", "--array=2", "--output=/dev/null", script], env=env, cwd=work, timeout=120)
    tasks = []
    for name in sorted(os.listdir(out)):
        task_id, count, minimum, host = open(os.path.join(out, name)).read().split()
        tasks.append({"file": name, "resubmitted": name not in seen_full, "id": int(task_id), "count": int(count),
                      "min": int(minimum), "host": host})
    return {"tasks": tasks, "states": states, "array_seconds": round(full_seconds, 2)}


def features_line(log):
    m = re.search(r"features: (\d+) extracted", log)
    return int(m.group(1)) if m else None


def deploy_flow(cluster, work, name, mltool, data, flags, timeout):
    """deploy/slurm/extract.sbatch: submit SHARDS, kill shard HELD, resubmit it, train; then a one-process run."""
    base = os.path.join(work, name)
    cache, logs = os.path.join(base, "cache"), os.path.join(base, "logs")
    os.makedirs(cache)
    os.makedirs(logs)
    release = os.path.join(base, "release")
    # Both models are called model.bin: mltool records the output's name in the model.
    os.makedirs(os.path.join(base, "sharded"))
    os.makedirs(os.path.join(base, "one-process"))
    model = os.path.join(base, "sharded", "model.bin")
    env = dict(cluster.env, MLTOOL=mltool, DATA=data, MODEL=model, MLTOOL_CACHE=cache, MLTOOL_LOG_DIR=logs,
               MLTOOL_TRAIN_FLAGS=flags, HOLD_SHARD=str(HELD), HOLD_UNLESS=release,
               HOLD_SIGNAL=os.path.join(base, "holding"))
    result = {"mltool": mltool, "flags": flags}
    started = time.monotonic()
    p = run(["bash", EXTRACT_SBATCH, "submit", str(SHARDS)], env=env, cwd=base)
    array = int(re.search(r"extract: job (\d+)", p.stdout).group(1))
    train = int(re.search(r"train: job (\d+)", p.stdout).group(1))
    cluster.task_running(array, HELD, timeout)
    # The held shard signals that it is holding (half its work done) through a file; then it is killed.
    cluster.wait_until(f"shard {HELD} to hold", lambda: os.path.exists(os.path.join(base, "holding")), timeout)
    run(["scancel", f"{array}_{HELD}"], env=env)
    result["first_array"] = cluster.wait_done(array, timeout)
    result["killed_after_seconds"] = round(time.monotonic() - started, 2)
    # slurmctld marks the dependency as never satisfied in its next scheduling pass.
    try:
        cluster.wait_until(f"job {train} to see its dependency fail",
                           lambda: "DependencyNeverSatisfied" in str(cluster.states(train)), 30)
    except HarnessError:
        pass  # recorded below; the test says what it found
    result["train_after_kill"] = cluster.states(train)
    resubmitted = time.monotonic()
    with open(release, "w"):
        pass
    p = run(["bash", EXTRACT_SBATCH, "resubmit", str(HELD), str(train)], env=env, cwd=base)
    again = int(re.search(r"extract: job (\d+)", p.stdout).group(1))
    result["resubmitted"] = cluster.wait_done(again, timeout)
    result["resubmitted_shard_seconds"] = round(time.monotonic() - resubmitted, 2)
    trained = time.monotonic()
    if all(v == "COMPLETED" for v in result["resubmitted"].values()):
        result["train"] = cluster.wait_done(train, timeout)
    else:  # the train job would wait for ever: record the shard's log instead
        result["train"] = cluster.states(train)
        run(["scancel", str(train)], env=env, check=False)
        shard_log = os.path.join(logs, f"mltool-extract-{again}_{HELD}.log")
        result["train_log"] = open(shard_log).read()[-2000:] if os.path.exists(shard_log) else ""
    result["train_seconds"] = round(time.monotonic() - trained, 2)
    result["sharded_seconds"] = round(time.monotonic() - started, 2)
    train_log = os.path.join(logs, f"mltool-train-{train}.log")
    log = open(train_log).read() if os.path.exists(train_log) else ""
    result.setdefault("train_log", log[-2000:])
    result["train_extracted"] = features_line(log)
    result["sharded_model"] = sha256(model) if os.path.exists(model) else None
    # What each extraction task said about its features (and the held shard about holding), by log file.
    result["shard_logs"] = {}
    for name in sorted(os.listdir(logs)):
        if name.startswith("mltool-extract-"):
            lines = open(os.path.join(logs, name), errors="replace").read().splitlines()
            result["shard_logs"][name] = [line for line in lines if re.search(r"features:|holds|extracted", line)][-5:]
    result["resubmitted_log"] = result["shard_logs"].get(f"mltool-extract-{again}_{HELD}.log", [])
    manifests = os.path.join(cache, "fake-manifests")
    if os.path.isdir(manifests):
        result["manifests"] = {f: open(os.path.join(manifests, f)).read().splitlines() for f in sorted(os.listdir(manifests))}

    # The same training in one process, into its own cache, with the same flags.
    one_cache = os.path.join(base, "one-process-cache")
    os.makedirs(one_cache)
    reference = os.path.join(base, "one-process", "model.bin")
    started = time.monotonic()
    p = run([*mltool.split(), "train", data, *flags.split(), "-o", reference],
            env=dict(cluster.env, MLTOOL_CACHE=one_cache), cwd=base, timeout=timeout)
    result["one_process_seconds"] = round(time.monotonic() - started, 2)
    result["one_process_extracted"] = features_line(p.stdout + p.stderr)
    result["one_process_model"] = sha256(reference)
    return result


def fake_dataset(work):
    """40 small files in 4 label folders: enough for every shard of 4 to hold several."""
    data = os.path.join(work, "fake-data")
    for k in range(40):
        label = f"label{k % 4}"
        os.makedirs(os.path.join(data, label), exist_ok=True)
        with open(os.path.join(data, label, f"item{k:03d}.txt"), "w") as f:
            f.write(f"item {k}\n")
    return data


def subset(work, source, per_class):
    """The first `per_class` images (by name) of every class folder of `source`, as symbolic links."""
    data = os.path.join(work, "subset")
    source = os.path.abspath(source)
    for label in sorted(os.listdir(source)):
        folder = os.path.join(source, label)
        if not os.path.isdir(folder):
            continue
        os.makedirs(os.path.join(data, label))
        for name in sorted(os.listdir(folder))[:per_class]:
            os.symlink(os.path.join(folder, name), os.path.join(data, label, name))
    return data


def stop(signum, _frame):
    """SIGTERM/SIGINT: unwind through main's `finally`, which stops the cluster."""
    raise SystemExit(128 + signum)


def main():
    # A program a Swift test starts (Foundation's Process) inherits nearly every signal blocked, through exec: unblock
    # them, or the daemons slurm.sh starts ignore SIGTERM and `down` has to wait for its SIGKILL fallback.
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--mltool", help="the real mltool (runs the 'real' part)")
    ap.add_argument("--data", help="an image folder of class folders (the real part)")
    ap.add_argument("--extractor", help="the extractor model (the real part)")
    ap.add_argument("--per-class", type=int, default=40)
    ap.add_argument("--work", help="keep the work folder here instead of a removed temporary one")
    args = ap.parse_args()

    work = args.work or tempfile.mkdtemp(prefix="mltool-cluster-")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    report = {}
    up = subprocess.run(["bash", SLURM_SH, "up"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=180)
    if up.returncode == 77:
        sys.stderr.write(up.stderr)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
        return 77
    if up.returncode != 0:
        sys.stderr.write(up.stderr)
        raise HarnessError(f"slurm.sh up exited {up.returncode}")
    conf = up.stdout.strip().splitlines()[-1].split("=", 1)[1]
    cluster_dir = os.path.dirname(conf)
    env = dict(os.environ, SLURM_CONF=conf)
    env["PATH"] = env.get("PATH", "/usr/bin:/bin") + ":/usr/sbin"
    cluster = Cluster(env)
    started = time.monotonic()
    try:
        report["up"] = up.stderr.strip().splitlines()[-1]
        report["smoke"] = smoke(cluster, work)
        hold = os.path.join(HERE, "hold-shard.sh")
        report["fake"] = deploy_flow(cluster, work, "fake", FAKE_MLTOOL, fake_dataset(work), "--seed 1", 300)
        if args.mltool:
            if not (args.data and args.extractor):
                raise HarnessError("--mltool needs --data and --extractor")
            data = subset(work, args.data, args.per_class)
            flags = f"--extractor {args.extractor} --seed 1 --threads 2 --no-provenance"
            mltool = args.mltool
            report["real"] = deploy_flow(cluster, work, "real", f"{hold} {mltool}", data, flags, 600)
    except (HarnessError, subprocess.TimeoutExpired) as e:
        report["error"] = str(e)
        report["cluster_status"] = run(["bash", SLURM_SH, "status", cluster_dir], check=False).stdout
        logs = os.path.join(cluster_dir, "log")
        for name in ("slurmctld.log", "slurmd.log"):
            path = os.path.join(logs, name)
            if os.path.exists(path):
                report[name] = open(path).read()[-3000:]
    finally:
        report["seconds"] = round(time.monotonic() - started, 2)
        down = subprocess.run(["bash", SLURM_SH, "down", cluster_dir], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=120)
        report["down_status"] = down.returncode
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1)
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except HarnessError as e:
        print(f"run_cluster_test.py: {e}", file=sys.stderr)
        sys.exit(1)
