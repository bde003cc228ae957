#!/usr/bin/env python3
"""Feeds seeded mutants of the Keras fixtures to `mltool import` and counts how each ended (issue 14's probe).

    run_mutants.py MLTOOL [--count-per-family 5000] [--seed 14] [--jobs 2] [--reader-timeout 10] [--work DIR]

Makes the mutants with make_mutants.py (Keras 2 and Keras 3, `--count-per-family` each), imports each one with a
watchdog of reader-timeout + 30 s, and prints one line per outcome class plus every contained reader failure:
  imported       exit 0 and a model written
  refused        exit 65 with a message naming the file (a clean refusal by mltool's own checks)
  contained      exit 65 "the HDF5 library failed on this file: ..." (a crash, hang or limit inside the sandbox)
  BAD            anything else: another exit status, a signal that killed mltool, a hang of mltool itself
Exits 1 when any run is BAD.
"""
import argparse
import collections
import concurrent.futures
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def run_one(mltool, path, out, reader_timeout):
    env = dict(os.environ, MLTOOL_HDF5_TIMEOUT=str(reader_timeout))
    name = os.path.basename(path)
    try:
        r = subprocess.run([mltool, "import", path, "-o", out], capture_output=True, text=True, env=env,
                           timeout=reader_timeout + 30)
    except subprocess.TimeoutExpired:
        return name, "BAD", "mltool hung"
    wrote = os.path.exists(out) and os.path.getsize(out) > 0
    if os.path.exists(out):
        os.remove(out)
    first = r.stderr.split("\n", 1)[0]
    if r.returncode < 0:
        return name, "BAD", "mltool killed by signal %d" % -r.returncode
    if r.returncode == 0:
        return name, ("imported" if wrote else "BAD"), "" if wrote else "exit 0 without a model"
    if r.returncode == 65 and first.startswith("mltool: error: ") and name in first and not wrote:
        return name, ("contained" if "the HDF5 library failed on this file" in first else "refused"), first
    return name, "BAD", "exit %d: %s" % (r.returncode, first)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mltool")
    ap.add_argument("--count-per-family", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--reader-timeout", type=int, default=10)
    ap.add_argument("--work")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="mltool-mutants-")
    files = []
    for family in ["k2", "k3"]:
        d = os.path.join(work, family)
        subprocess.run([sys.executable, os.path.join(HERE, "make_mutants.py"), "--out", d, "--family", family,
                        "--count", str(args.count_per_family), "--seed", str(args.seed)], check=True)
        files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".h5"))
    counts = collections.Counter()
    by_family = collections.defaultdict(collections.Counter)
    notes = []
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = [pool.submit(run_one, args.mltool, f, f + ".bin", args.reader_timeout) for f in files]
        for fut in futures:
            name, kind, detail = fut.result()
            counts[kind] += 1
            by_family[name[:2]][kind] += 1
            if kind in ("contained", "BAD"):
                notes.append("%s %s: %s" % (kind, name, detail))
    for line in notes:
        print(line)
    for family in sorted(by_family):
        c = by_family[family]
        print("%s: %d mutants: %d imported, %d refused, %d contained, %d BAD" % (
            family, sum(c.values()), c["imported"], c["refused"], c["contained"], c["BAD"]))
    print("total: %d mutants: %d imported, %d refused, %d contained, %d BAD (work dir %s)" % (
        sum(counts.values()), counts["imported"], counts["refused"], counts["contained"], counts["BAD"], work))
    return 1 if counts["BAD"] else 0


if __name__ == "__main__":
    sys.exit(main())
