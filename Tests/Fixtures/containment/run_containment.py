#!/usr/bin/env python3
"""Containment of paths (issue 19 item 4): every hostile model that names a file outside itself is imported under
`strace -f -e trace=%file,execve`, and the log must show no file touched outside the model's directory, the
declared output's directory and a short allow-list of what the loader and the runtime read, and no execve after
mltool's own start.

    run_containment.py MLTOOL OUT.json        (ContainmentTests runs it and checks OUT.json)

Each case is built afresh in a temporary tree:
    ROOT/model/    the case (the model file and whatever it ships with)
    ROOT/outside/  the bait: the file (or directory) the hostile model points at
    ROOT/out/      the declared output directory (-o ROOT/out/out.bin)
mltool runs with ROOT as its working directory and the model named relatively (model/NAME), so the parser must
resolve relative paths and openat(AT_FDCWD, ...) against the working directory.

Every path argument of every traced call (open, openat, stat, lstat, newfstatat, statx, access, readlink, ...)
is resolved lexically (against the working directory, or the directory fd strace -y decodes) and classified.
The bait's path must not appear anywhere in the log, not even as a readlink result.
Also checks the checker: `cat ROOT/outside/bait` under the same strace must be reported as an outside open, and in
every case the model file's own open must be seen.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.dirname(HERE)

# What the dynamic loader, the Swift runtime, Foundation and the HDF5 sandbox read on their own, whatever the input
# (every entry was seen in a run; docs/SECURITY.md lists them). Code and system facts, never user data.
ALLOW_EXACT = {
    "/etc/ld.so.cache", "/etc/ld.so.preload",  # the dynamic loader
    "/etc/gnutls/config",                     # libgnutls at load (Foundation links libcurl)
    "/proc/self/exe", "/proc/self/maps",      # the Swift runtime (its own image, for metadata and backtraces)
    "/proc/self/statm",                       # the HDF5 sandbox: the address space it inherits, for its limit
    "/sys/devices/system/cpu/possible",       # the CPU count (libdispatch, OpenBLAS)
}
ALLOW_PREFIX = ("/lib/", "/lib64/", "/usr/lib/", "/usr/lib64/")  # shared libraries (Debian's merged /usr)

PATH_CALLS = re.compile(r"^(\d+)\s+(?:<\.\.\. )?([a-z_0-9]+)(?:\(| resumed>)(.*)$")
QUOTED = re.compile(r'"((?:[^"\\]|\\.)*)"')
DIRFD = re.compile(r"^(AT_FDCWD|\d+<([^>]*)>)")


def unescape(s):
    return bytes(s, "utf8").decode("unicode_escape").encode("latin1").decode("utf8", "replace")


def parse(log, cwd, extra_allowed):
    """(touched: list of (call, absolute path)), execve count) from a strace -f -y -s log."""
    touched, execs = [], 0
    cwds = {}
    for line in log.splitlines():
        m = PATH_CALLS.match(line)
        if not m:
            continue
        pid, call, rest = m.groups()
        if "resumed>" in line and line.split()[1] == "<...":
            continue  # the arguments were on the <unfinished ...> line
        here = cwds.get(pid, cwd)
        if call == "getcwd":
            continue  # names the working directory; touches nothing
        if call in ("execve", "execveat"):
            execs += 1
        if call == "chdir":
            q = QUOTED.search(rest)
            if q and "= 0" in rest:
                cwds[pid] = os.path.normpath(os.path.join(here, unescape(q.group(1))))
        # The first argument of *at calls is a directory fd ("AT_FDCWD" or "3</decoded/path>").
        base = here
        d = DIRFD.match(rest)
        if d and d.group(2):
            base = d.group(2)
        paths = []
        if call in ("readlink", "readlinkat"):
            q = QUOTED.findall(rest)
            paths = q[:1]  # the second string is the result, checked by the bait search
        elif call in ("rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat"):
            paths = QUOTED.findall(rest)[:2]
        else:
            paths = QUOTED.findall(rest)[:1]
        if call == "execve":
            paths = paths[:1]
        for p in paths:
            p = unescape(p)
            if call in ("newfstatat", "statx") and p == "":
                continue  # fstat of an open fd (AT_EMPTY_PATH)
            full = os.path.normpath(p if p.startswith("/") else os.path.join(base, p))
            touched.append((call, full))
    return touched, execs


def inside(path, dirs):
    return any(path == d or path.startswith(d + "/") for d in dirs)


def allowed(path, extra):
    if path in ALLOW_EXACT or path.startswith(ALLOW_PREFIX):
        return True
    return any(path == e or path.startswith(e.rstrip("/") + "/") for e in extra)


def strace(argv, cwd, log):
    t0 = time.monotonic()
    r = subprocess.run(["strace", "-f", "-qq", "-y", "-s", "4096", "-e", "trace=%file,execve", "-o", log] + argv,
                       cwd=cwd, capture_output=True, text=True, timeout=120)
    return r, time.monotonic() - t0


# ---------------------------------------------------------------------------------------------------- the cases

def onnx_model(path, location):
    import numpy as np
    import onnx
    from onnx import TensorProto, helper
    t = onnx.TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[1, 6])
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", "16"), ("length", "24")):
        e = t.external_data.add()
        e.key, e.value = k, v
    node = helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    with open(path, "wb") as f:
        f.write(m.SerializeToString())
    return np


def weights_bytes():
    import numpy as np
    return b"\0" * 16 + np.arange(6, dtype=np.float32).tobytes()


def onnx_cases():
    """(name, builder(root) -> model path relative to ROOT, expect: 'ok' or 'refused')"""
    def make(location, setup=None):
        def build(root):
            os.makedirs(f"{root}/outside/dir", exist_ok=True)
            with open(f"{root}/outside/bait.bin", "wb") as f:
                f.write(weights_bytes())
            with open(f"{root}/outside/dir/bait.bin", "wb") as f:
                f.write(weights_bytes())
            loc = location.replace("BAIT", f"{root}/outside/bait.bin")
            onnx_model(f"{root}/model/m.onnx", loc)
            if setup:
                setup(root)
            return "model/m.onnx"
        return build

    def weights(root):
        with open(f"{root}/model/weights.bin", "wb") as f:
            f.write(weights_bytes())

    return [
        ("onnx external data inside (control)", make("weights.bin", weights), "ok"),
        ("onnx external data ../ traversal", make("../outside/bait.bin"), "refused"),
        ("onnx external data sub/../../ traversal", make("sub/../../outside/bait.bin"), "refused"),
        ("onnx external data absolute path", make("BAIT"), "refused"),
        ("onnx external data symlink out", make("link.bin", lambda r: os.symlink("../outside/bait.bin", f"{r}/model/link.bin")), "refused"),
        ("onnx external data symlinked directory", make("sub/bait.bin", lambda r: os.symlink("../outside/dir", f"{r}/model/sub")), "refused"),
        ("onnx external data hardlink to a file outside", make("weights.bin", lambda r: os.link(f"{r}/outside/bait.bin", f"{r}/model/weights.bin")), "refused"),
    ]


def keras_cases():
    import h5py
    import numpy as np
    src = os.path.join(FIX, "keras", "k3_mlp.h5")

    def variant(kind):
        def build(root):
            os.makedirs(f"{root}/outside", exist_ok=True)
            bait = f"{root}/outside/bait.h5"
            with h5py.File(bait, "w") as b:
                g = b.create_group("fc1/mlp/fc1")
                g["kernel"] = np.zeros((4, 8), np.float32)
                g["bias"] = np.zeros((8,), np.float32)
            with open(f"{root}/outside/bait.raw", "wb") as f:
                f.write(b"\0" * 4096)
            dst = f"{root}/model/m.h5"
            shutil.copy(src, dst)
            with h5py.File(dst, "r+") as d:
                w = d["model_weights"]
                if kind == "external link relative":
                    del w["fc1"]
                    w["fc1"] = h5py.ExternalLink("../outside/bait.h5", "/fc1")
                elif kind == "external link absolute":
                    del w["fc1"]
                    w["fc1"] = h5py.ExternalLink(bait, "/fc1")
                elif kind == "soft link":
                    del w["fc1"]
                    w["fc1"] = h5py.SoftLink("/model_weights/fc2")
                elif kind in ("external storage", "virtual dataset"):
                    g = w["fc1/mlp/fc1"]
                    shape = g["bias"].shape
                    del g["bias"]
                    if kind == "external storage":
                        g.create_dataset("bias", shape=shape, dtype=np.float32, external=[(f"{root}/outside/bait.raw", 0, 4 * shape[0])])
                    else:
                        layout = h5py.VirtualLayout(shape=shape, dtype=np.float32)
                        layout[:] = h5py.VirtualSource(bait, "fc1/mlp/fc1/bias", shape=shape)
                        g.create_virtual_dataset("bias", layout)
            return "model/m.h5"
        return build

    def fixture(name):
        def build(root):
            shutil.copy(os.path.join(FIX, "keras", name), f"{root}/model/{name}")
            return f"model/{name}"
        return build

    return [
        ("keras .h5 (control)", fixture("k3_mlp.h5"), "ok"),
        ("keras .h5 external link, relative", variant("external link relative"), "refused"),
        ("keras .h5 external link, absolute", variant("external link absolute"), "refused"),
        ("keras .h5 soft link", variant("soft link"), "refused"),
        ("keras .h5 external raw storage", variant("external storage"), "refused"),
        ("keras .h5 virtual dataset", variant("virtual dataset"), "refused"),
        ("keras .h5 external link fixture", fixture("k3_external_link.h5"), "refused"),
        ("keras 2 Lambda layer", fixture("k2_lambda.h5"), "refused"),
        ("keras 3 Lambda layer", fixture("k3_lambda.h5"), "refused"),
        ("keras custom object", fixture("custom_object.h5"), "refused"),
    ]


def coreml_cases():
    pkg = os.path.join(FIX, "coreml", "small_cnn.mlpackage")
    spec = "Data/com.apple.CoreML/model.mlmodel"
    weight = "Data/com.apple.CoreML/weights/weight.bin"

    def variant(kind):
        def build(root):
            os.makedirs(f"{root}/outside", exist_ok=True)
            shutil.copy(f"{pkg}/{spec}", f"{root}/outside/bait.mlmodel")
            shutil.copytree(f"{pkg}/Data/com.apple.CoreML/weights", f"{root}/outside/weights")
            dst = f"{root}/model/m.mlpackage"
            shutil.copytree(pkg, dst)
            manifest = f"{dst}/Manifest.json"
            with open(manifest) as f:
                m = json.load(f)
            root_id = m["rootModelIdentifier"]
            if kind in ("manifest ../", "manifest absolute"):
                m["itemInfoEntries"][root_id]["path"] = (
                    "../../outside/bait.mlmodel" if kind == "manifest ../" else f"{root}/outside/bait.mlmodel")
                with open(manifest, "w") as f:
                    json.dump(m, f)
            elif kind == "spec symlink":
                os.remove(f"{dst}/{spec}")
                os.symlink(f"{root}/outside/bait.mlmodel", f"{dst}/{spec}")
            elif kind == "spec hardlink":
                os.remove(f"{dst}/{spec}")
                os.link(f"{root}/outside/bait.mlmodel", f"{dst}/{spec}")
            elif kind == "weights symlink":
                os.remove(f"{dst}/{weight}")
                os.symlink("../../../../../outside/weights/weight.bin", f"{dst}/{weight}")
            elif kind == "weights hardlink":
                os.remove(f"{dst}/{weight}")
                os.link(f"{root}/outside/weights/weight.bin", f"{dst}/{weight}")
            elif kind == "weights directory symlink":
                shutil.rmtree(f"{dst}/Data/com.apple.CoreML/weights")
                os.symlink("../../../../outside/weights", f"{dst}/Data/com.apple.CoreML/weights")
            elif kind == "manifest symlink":
                os.remove(manifest)
                shutil.copy(f"{pkg}/Manifest.json", f"{root}/outside/Manifest.json")
                os.symlink(f"{root}/outside/Manifest.json", manifest)
            return "model/m.mlpackage"
        return build

    def fixture(name):
        def build(root):
            shutil.copy(os.path.join(FIX, "coreml", name), f"{root}/model/{name}")
            return f"model/{name}"
        return build

    return [
        ("core ml .mlmodel (control)", fixture("small_cnn.mlmodel"), "ok"),
        ("core ml .mlpackage (control)", variant("control"), "ok"),
        ("core ml manifest path ../", variant("manifest ../"), "refused"),
        ("core ml manifest path absolute", variant("manifest absolute"), "refused"),
        ("core ml manifest is a symlink out", variant("manifest symlink"), "refused"),
        ("core ml spec symlink out", variant("spec symlink"), "refused"),
        ("core ml spec hardlink to a file outside", variant("spec hardlink"), "refused"),
        ("core ml weight file symlink out", variant("weights symlink"), "refused"),
        ("core ml weight file hardlink to a file outside", variant("weights hardlink"), "refused"),
        ("core ml weights directory symlink out", variant("weights directory symlink"), "refused"),
    ]


def main():
    mltool = os.path.abspath(sys.argv[1])
    out_json = sys.argv[2]
    tool_dir = os.path.dirname(os.path.realpath(mltool))
    extra = []
    # The Swift runtime libraries: wherever the toolchain put them (ldd names them).
    ldd = subprocess.run(["ldd", mltool], capture_output=True, text=True).stdout
    for m in re.finditer(r"=> (\S*libswiftCore\.so\S*)", ldd):
        lib = os.path.dirname(m.group(1))  # <toolchain>/usr/lib/swift/linux
        extra.append(lib)
        # The runtime looks for its crash backtracer beside the libraries (<toolchain>/usr/libexec/swift/linux).
        extra.append(os.path.normpath(os.path.join(lib, "..", "..", "..", "libexec", "swift")))
    # The binary, and its directory: the loader searches $ORIGIN (the binary's RUNPATH) for libraries.
    extra.append(tool_dir)
    extra.append(os.path.dirname(mltool))  # .build/release is a symlink to the triple's directory
    probe = subprocess.run(["strace", "-f", "-qq", "-o", "/dev/null", "true"], capture_output=True)
    results = {"strace_works": probe.returncode == 0, "allow_exact": sorted(ALLOW_EXACT), "allow_prefix": list(ALLOW_PREFIX), "extra_allowed": extra,
               "cases": [], "self_check": {}}
    if not results["strace_works"]:
        with open(out_json, "w") as f:
            json.dump(results, f, indent=1)
        return
    tmp = tempfile.mkdtemp(prefix="mltool-contain-")
    tmp = os.path.realpath(tmp)
    try:
        # The checker's self-check: an outside open is reported, and so is the bait.
        root = f"{tmp}/self"
        os.makedirs(f"{root}/model")
        os.makedirs(f"{root}/outside")
        with open(f"{root}/outside/bait.bin", "w") as f:
            f.write("bait\n")
        log = f"{tmp}/self.log"
        r, _ = strace(["cat", "outside/bait.bin"], root, log)
        text = open(log, encoding="utf8", errors="replace").read()
        touched, execs = parse(text, root, extra)
        outside = [p for c, p in touched if not inside(p, [f"{root}/model", f"{root}/out"]) and not allowed(p, extra)]
        results["self_check"] = {"status": r.returncode, "outside": outside, "execve": execs,
                                 "bait_in_log": f"{root}/outside/bait.bin" in text,
                                 "relative_resolved": f"{root}/outside/bait.bin" in outside}
        n = 0
        allowed_seen = set()
        for group in (onnx_cases, keras_cases, coreml_cases):
            for name, build, expect in group():
                n += 1
                for command in ("import", "info"):
                    root = f"{tmp}/case{n}-{command}"
                    os.makedirs(f"{root}/model")
                    os.makedirs(f"{root}/out")
                    model = build(root)
                    argv = [mltool, command, model] + (["-o", "out/out.bin"] if command == "import" else [])
                    log = f"{tmp}/case{n}-{command}.log"
                    r, wall = strace(argv, root, log)
                    text = open(log, encoding="utf8", errors="replace").read()
                    touched, execs = parse(text, root, extra)
                    dirs = [f"{root}/model", f"{root}/out"]
                    outside = sorted({f"{c} {p}" for c, p in touched
                                      if not inside(p, dirs) and not allowed(p, extra)})
                    for c, p in touched:
                        if not inside(p, dirs) and allowed(p, extra):
                            allowed_seen.add(re.sub(r"^/proc/\d+/", "/proc/PID/", p))
                    model_abs = f"{root}/{model}"
                    results["cases"].append({
                        "name": name, "command": command, "expect": expect, "status": r.returncode,
                        "stderr": r.stderr.strip()[-600:], "model": model, "wall_s": round(wall, 3),
                        "calls": len(touched), "outside": outside, "execve": execs,
                        "bait_in_log": f"{root}/outside" in text,
                        "model_open_seen": any(p == model_abs or p.startswith(model_abs + "/") for c, p in touched
                                               if c in ("open", "openat", "openat2")),
                        "output_written": os.path.exists(f"{root}/out/out.bin"),
                    })
                    shutil.rmtree(root, ignore_errors=True)
        results["allowed_seen"] = sorted(allowed_seen)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(out_json, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
