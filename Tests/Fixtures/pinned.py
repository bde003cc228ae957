"""What the fixture scripts that fetch pinned files share: the sha256 they check each file against."""
import hashlib


def sha256(path):
    """The file's SHA-256, hex, read a MiB at a time."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
