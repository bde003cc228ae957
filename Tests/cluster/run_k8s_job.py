#!/usr/bin/env python3
"""Runs the containers of deploy/kubernetes/*.yaml here, as the Job controller would start them, without Kubernetes.

    run_k8s_job.py --mltool CMD --volume data=DIR --volume cache=DIR [--cwd DIR] --report OUT.json \
        extract-job.yaml train-job.yaml

Each file's Jobs run in order. An Indexed Job runs its container once per index 0..completions-1, at most
`parallelism` at a time, with JOB_COMPLETION_INDEX set as the controller sets it; a plain Job runs once. The
container's command is taken as written except that `mltool` becomes CMD and every path under a volumeMount's
mountPath is moved to the local folder given for that volume (--volume NAME=DIR); the container's env is set (with
$(VAR) references expanded as Kubernetes does). OUT.json records, per Job, the checks a test asserts (kind,
completionMode, completions = parallelism = MLTOOL_SHARD_COUNT, ReadWriteMany cache claim, restartPolicy) and
every run's command, status and output. Exit 0 when the report is written; 1 when a file cannot be used at all.
"""
import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time

try:
    import yaml
except ImportError:  # PyYAML is in the Makefile's PIP_PACKAGES (make setup)
    print("run_k8s_job.py: No module named 'yaml' (pip install pyyaml; make setup does it)", file=sys.stderr)
    sys.exit(3)


def expand(value, env):
    """Kubernetes' $(VAR) expansion in command, args and env values; $$(VAR) stays literal."""
    return re.sub(r"\$\$\(|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$(" if m.group(0) == "$$(" else env.get(m.group(1), m.group(0)), value)


def relocate(value, mounts):
    """A path under a mountPath, moved to that volume's local folder."""
    for mount_path, local in sorted(mounts.items(), key=lambda kv: -len(kv[0])):
        if value == mount_path or value.startswith(mount_path.rstrip("/") + "/"):
            return local + value[len(mount_path):]
    return value


def run_job(doc, claims, volumes, mltool, cwd, timeout):
    spec = doc.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    containers = pod.get("containers", [])
    result = {"name": doc.get("metadata", {}).get("name"), "completionMode": spec.get("completionMode", "NonIndexed"),
              "completions": spec.get("completions", 1), "parallelism": spec.get("parallelism", 1),
              "backoffLimitPerIndex": spec.get("backoffLimitPerIndex"), "restartPolicy": pod.get("restartPolicy"),
              "containers": len(containers), "runs": []}
    if len(containers) != 1:
        return result
    c = containers[0]
    # volume name -> claim, and the claims' access modes
    pod_volumes = {v["name"]: v.get("persistentVolumeClaim", {}).get("claimName") for v in pod.get("volumes", [])}
    mounts = {}
    result["mounts"] = {}
    for m in c.get("volumeMounts", []):
        claim = pod_volumes.get(m["name"])
        result["mounts"][m["mountPath"]] = {"volume": m["name"], "claim": claim, "readOnly": m.get("readOnly", False),
                                            "accessModes": claims.get(claim, {}).get("accessModes")}
        if m["name"] not in volumes:
            raise SystemExit(f"run_k8s_job.py: no --volume {m['name']}=DIR for mountPath {m['mountPath']}")
        mounts[m["mountPath"]] = volumes[m["name"]]
    container_env = {e["name"]: str(e.get("value", "")) for e in c.get("env", [])}
    result["env"] = container_env
    indexed = result["completionMode"] == "Indexed"
    indexes = list(range(result["completions"])) if indexed else [None]
    width = max(1, result["parallelism"])
    pending, running = list(indexes), []

    def start(index):
        env = dict(os.environ)
        for k in ("SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_TASK_COUNT", "SLURM_ARRAY_TASK_MIN", "RANK", "WORLD_SIZE"):
            env.pop(k, None)  # a pod sees none of these
        if index is not None:
            env["JOB_COMPLETION_INDEX"] = str(index)
        for k, v in container_env.items():
            env[k] = relocate(expand(v, env), mounts)
        argv = [relocate(expand(a, env), mounts) for a in c.get("command", []) + c.get("args", [])]
        if argv and argv[0] == "mltool":
            argv = shlex.split(mltool) + argv[1:]
        p = subprocess.Popen(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return {"index": index, "argv": argv, "process": p, "started": time.monotonic()}

    while pending or running:
        while pending and len(running) < width:
            running.append(start(pending.pop(0)))
        r = running.pop(0)
        out, _ = r["process"].communicate(timeout=timeout)
        result["runs"].append({"index": r["index"], "argv": r["argv"], "status": r["process"].returncode,
                               "seconds": round(time.monotonic() - r["started"], 2), "output": out[-2000:]})
    return result


def main():
    signal.pthread_sigmask(signal.SIG_SETMASK, [])  # a Swift test starts us with signals blocked
    ap = argparse.ArgumentParser()
    ap.add_argument("--mltool", required=True)
    ap.add_argument("--volume", action="append", default=[], help="NAME=DIR")
    ap.add_argument("--cwd")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--report", required=True)
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    volumes = dict(v.split("=", 1) for v in args.volume)
    report = {"files": []}
    claims = {}  # PersistentVolumeClaims of every file so far: the train Job uses the extraction file's claim
    for path in args.files:
        with open(path) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        mine = {d["metadata"]["name"]: d.get("spec", {}) for d in docs if d.get("kind") == "PersistentVolumeClaim"}
        claims.update(mine)
        entry = {"file": os.path.basename(path), "kinds": [d.get("kind") for d in docs],
                 "claims": {k: v.get("accessModes") for k, v in mine.items()}, "jobs": []}
        for d in docs:
            if d.get("kind") == "Job":
                entry["jobs"].append(run_job(d, claims, volumes, args.mltool, args.cwd, args.timeout))
        report["files"].append(entry)
    with open(args.report, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
