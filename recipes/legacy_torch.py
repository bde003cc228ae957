"""Read a legacy (pre-1.6, non-zip) PyTorch `.pth` file with numpy only: no torch import, no code from the file runs.

The legacy format is a run of pickles followed by raw storage bytes:
  1. magic number (the int 0x1950a86a20f9469cfc6c)   2. protocol version (1001)   3. a sys-info dict
  4. the object itself (here a state dict); tensors refer to storages through pickle persistent ids
     ('storage', <StorageType>, key, location, numel, view_metadata)
  5. the list of storage keys, then per key in that order: int64 element count + the raw little-endian bytes.

Only a fixed allow-list of globals may appear (OrderedDict, the torch storage types, `_rebuild_tensor(_v2)`); any
other global in the pickle raises, so a hostile file cannot run code.
"""
import collections
import io
import pickle
import struct

import numpy as np

MAGIC = 0x1950A86A20F9469CFC6C
STORAGE_DTYPES = {
    "FloatStorage": np.float32, "DoubleStorage": np.float64, "HalfStorage": np.float16,
    "LongStorage": np.int64, "IntStorage": np.int32, "ShortStorage": np.int16,
    "CharStorage": np.int8, "ByteStorage": np.uint8, "BoolStorage": np.bool_,
}


class _StorageType:
    def __init__(self, name):
        self.name = name
        self.dtype = STORAGE_DTYPES[name]


class _Storage:
    def __init__(self, key, dtype, numel):
        self.key, self.dtype, self.numel = key, dtype, numel
        self.array = None  # filled after the storage bytes are read


class _TensorRef:
    """A tensor still waiting for its storage bytes: storage, offset, size, stride."""

    def __init__(self, storage, offset, size, stride):
        self.storage, self.offset, self.size, self.stride = storage, offset, tuple(size), tuple(stride)

    def materialize(self):
        base = self.storage.array
        item = base.itemsize
        view = np.lib.stride_tricks.as_strided(base[self.offset:], shape=self.size,
                                               strides=tuple(s * item for s in self.stride))
        return np.array(view)


def _rebuild_tensor(storage, storage_offset, size, stride, *_ignored):
    return _TensorRef(storage, storage_offset, size, stride)


class _Unpickler(pickle.Unpickler):
    def __init__(self, f, storages):
        super().__init__(f)
        self.storages = storages

    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name in ("_rebuild_tensor", "_rebuild_tensor_v2"):
            return _rebuild_tensor
        if module == "torch" and name in STORAGE_DTYPES:
            return _StorageType(name)
        raise pickle.UnpicklingError(f"refused global {module}.{name} (only state dicts of tensors are read)")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and pid and pid[0] == "storage"):
            raise pickle.UnpicklingError(f"unexpected persistent id {pid!r}")
        _, storage_type, key, _location, numel = pid[:5]
        if pid[5:] and pid[5] is not None:
            raise pickle.UnpicklingError("storage views are not supported")
        if key not in self.storages:
            self.storages[key] = _Storage(key, storage_type.dtype, numel)
        return self.storages[key]


def load(path):
    """The file's state dict as an OrderedDict of name → numpy array (non-tensor values are kept as they are)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"PK":
        raise ValueError(f"{path}: a zip-format (torch ≥ 1.6) checkpoint, not the legacy format")
    f = io.BytesIO(data)
    storages = {}
    if _Unpickler(f, storages).load() != MAGIC:
        raise ValueError(f"{path}: bad magic number (not a legacy torch file)")
    version = _Unpickler(f, storages).load()
    if version != 1001:
        raise ValueError(f"{path}: unsupported protocol version {version}")
    _Unpickler(f, storages).load()  # sys info: endianness and type sizes
    obj = _Unpickler(f, storages).load()
    keys = _Unpickler(f, storages).load()
    for key in keys:
        s = storages[key]
        (numel,) = struct.unpack("<q", f.read(8))
        nbytes = numel * np.dtype(s.dtype).itemsize
        raw = f.read(nbytes)
        if numel != s.numel or len(raw) != nbytes:
            raise ValueError(f"{path}: storage {key}: {numel} elements, {len(raw)} bytes (truncated?)")
        s.array = np.frombuffer(raw, dtype=np.dtype(s.dtype).newbyteorder("<"))

    def convert(v):
        return v.materialize() if isinstance(v, _TensorRef) else v

    if isinstance(obj, dict):
        return collections.OrderedDict((k, convert(v)) for k, v in obj.items())
    return convert(obj)


if __name__ == "__main__":
    import sys
    sd = load(sys.argv[1])
    for k, v in sd.items():
        print(k, getattr(v, "shape", v), getattr(v, "dtype", ""))
