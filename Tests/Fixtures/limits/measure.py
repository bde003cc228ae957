#!/usr/bin/env python3
"""Runs a command and writes what it cost: `measure.py REPORT COMMAND [ARG...]`.

REPORT gets one JSON object: {"status": exit status (128 + N when killed by signal N), "cpu": user + system seconds,
"wall": seconds, "maxrss_kb": peak resident set size in KiB}, all from the child's own `wait4` rusage. The child
inherits stdin, stdout and stderr.

Why a trampoline: on Linux a process's ru_maxrss keeps the peak RSS of the memory image it replaced at exec, and a
child that `posix_spawn` starts shares its parent's image until exec. A child started straight from the Swift test
process would report at least that process's own peak (hundreds of MB in a full `swift test` run). This script's
image is about 10 MB, so what it measures is the command's own peak, with a floor of about 10 MB.
"""
import json
import os
import sys
import time


def main():
    report, argv = sys.argv[1], sys.argv[2:]
    start = time.monotonic()
    pid = os.posix_spawn(argv[0], argv, os.environ)
    _, status, usage = os.wait4(pid, 0)
    wall = time.monotonic() - start
    code = os.waitstatus_to_exitcode(status)
    with open(report, "w") as f:
        json.dump({"status": code if code >= 0 else 128 - code, "cpu": usage.ru_utime + usage.ru_stime,
                   "wall": wall, "maxrss_kb": usage.ru_maxrss}, f)


if __name__ == "__main__":
    main()
