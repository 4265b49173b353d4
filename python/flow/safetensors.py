"""Reading and writing safetensors archives, Flow's weight files.

An archive is an 8-byte little-endian header length, a JSON header mapping
each tensor's name to its dtype, shape and byte range, and the bytes. Flow's
writer orders tensors by decreasing element size and then by size, and pads
the header with spaces, so that tensors whose byte size is a multiple of 64
start 64-byte aligned and the runtime can use the mapped file in place.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import struct
import tempfile
from typing import Dict, Mapping

import numpy as np

from ._flow import FlowError

__all__ = ["save", "load", "DTYPES"]

#: numpy dtype name -> safetensors dtype.
DTYPES = {
    "float32": "F32", "float16": "F16", "bfloat16": "BF16", "float64": "F64",
    "int64": "I64", "int32": "I32", "int16": "I16", "int8": "I8",
    "uint8": "U8", "uint16": "U16", "uint32": "U32", "uint64": "U64",
    "bool": "BOOL",
}
_NUMPY = {v: k for k, v in DTYPES.items()}
_ALIGN = 64


def _umask() -> int:
    """The process' umask, read without changing it where Linux tells it
    (os.umask can only be read by setting it, which races with threads)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _kind(mode: int) -> str:
    for test, kind in ((stat.S_ISDIR, "a directory"),
                       (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return "not a regular file"


def save(tensors: Mapping[str, np.ndarray], path: str,
         metadata: Mapping[str, str] | None = None) -> None:
    """Writes `tensors` (name -> numpy array) to `path` atomically.

    The archive is written to a new temporary file in the target's
    directory (created exclusively), flushed to disk and renamed over the
    target, so a reader sees the old archive or the new one, never a part.
    A symbolic link is followed: the file it names is replaced and the
    link stays. A target that exists and is not a regular file (a
    directory, a device, a FIFO) is refused; on any error the temporary
    is removed and FlowError names the path and the cause."""
    arrays = {}
    for name, array in tensors.items():
        array = np.asarray(array)
        if array.dtype.name not in DTYPES:
            raise FlowError(f"cannot save '{os.fspath(path)}': tensor "
                            f"'{name}' is {array.dtype}, which a safetensors "
                            f"archive cannot hold ({', '.join(DTYPES)})")
        # (np.ascontiguousarray would make a 0-d array 1-d.)
        arrays[name] = np.asarray(array, order="C")
    order = sorted(arrays, key=lambda n: (-arrays[n].dtype.itemsize,
                                          arrays[n].nbytes % _ALIGN != 0,
                                          n))
    header: Dict[str, object] = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    offset = 0
    for name in order:
        a = arrays[name]
        header[name] = {"dtype": DTYPES[a.dtype.name], "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((-(8 + len(text))) % _ALIGN)

    path = os.fspath(path)
    target = os.path.realpath(path)
    # The path as given, and the file it resolves to where that differs.
    shown = f"'{path}'" if target == os.path.abspath(path) else \
        f"'{path}' (-> '{target}')"
    try:
        info = os.stat(target)
    except FileNotFoundError:
        info = None
    except OSError as e:
        raise FlowError(f"cannot save {shown}: {e.strerror or e}") from e
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise FlowError(f"cannot save {shown}: it is {_kind(info.st_mode)}, "
                        "not a regular file (give the path of a file to "
                        "write)")
    mode = stat.S_IMODE(info.st_mode) if info is not None else \
        0o666 & ~_umask()
    directory = os.path.dirname(target)
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{os.path.basename(target)}.", suffix=".tmp",
            dir=directory)
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), mode)
            f.write(struct.pack("<Q", len(text)))
            f.write(text)
            for name in order:
                # As bytes (a memoryview of bf16 or an empty array cannot
                # be cast).
                f.write(arrays[name].reshape(-1).view(np.uint8).data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        tmp = None
        _fsync_directory(directory)
    except OSError as e:
        raise FlowError(f"cannot save {shown}: {e.strerror or e}") from e
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _fsync_directory(directory: str) -> None:
    """Makes the rename in `directory` durable (where the file system can
    sync a directory)."""
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as e:
        if e.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _header(path: str):
    """(header dictionary, the bytes after it) of the archive at `path`,
    checked whole: every tensor's entry is well formed and its bytes lie
    in the file."""
    path = os.fspath(path)

    def bad(what: str) -> FlowError:
        return FlowError(f"'{path}' is not a valid safetensors file: {what}")

    try:
        data = np.memmap(path, dtype=np.uint8, mode="r")
    except OSError as e:
        raise FlowError(f"cannot read '{path}': {e.strerror or e}") from e
    except ValueError:  # numpy cannot map an empty file
        raise bad("it is empty") from None
    if data.size < 8:
        raise bad(f"{data.size} bytes, too short for the header length")
    (size,) = struct.unpack("<Q", bytes(data[:8]))
    if size > data.size - 8:
        raise bad(f"the header length {size} exceeds the {data.size - 8} "
                  "bytes after it")

    def unique(pairs):
        keys = set()
        for key, _ in pairs:
            if key in keys:
                raise bad(f"the header names '{key}' twice")
            keys.add(key)
        return dict(pairs)

    try:
        header = json.loads(bytes(data[8:8 + size]).decode("utf-8"),
                            object_pairs_hook=unique)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise bad(f"the header is not JSON ({e})") from None
    if not isinstance(header, dict):
        raise bad(f"the header is a JSON {type(header).__name__}, not an "
                  "object")
    body = data[8 + size:]
    metadata = header.get("__metadata__", {})
    if not isinstance(metadata, dict) or not all(
            isinstance(v, str) for v in metadata.values()):
        raise bad("__metadata__ is not an object of strings")
    for name, entry in header.items():
        if name != "__metadata__":
            _check_entry(entry, len(body), lambda what, name=name: bad(
                f"tensor '{name}' {what}"))
    return header, body


def _is_int(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _check_entry(entry, body: int, bad) -> None:
    """Raises bad(...) unless `entry` is a well-formed tensor entry whose
    bytes lie in a body of `body` bytes."""
    if not isinstance(entry, dict):
        raise bad(f"is a JSON {type(entry).__name__}, not an object")
    missing = [k for k in ("dtype", "shape", "data_offsets") if k not in entry]
    if missing:
        raise bad(f"has no {', '.join(missing)}")
    dtype, shape, offsets = (entry["dtype"], entry["shape"],
                             entry["data_offsets"])
    if dtype not in _NUMPY:
        raise bad(f"has unsupported dtype {dtype!r} (supported: "
                  f"{', '.join(sorted(_NUMPY))})")
    if not isinstance(shape, list) or not all(
            _is_int(d) and d >= 0 for d in shape):
        raise bad(f"has shape {shape!r}; a shape is a list of non-negative "
                  "integers")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(
            _is_int(o) for o in offsets):
        raise bad(f"has data_offsets {offsets!r}; they are [begin, end], "
                  "two integers")
    begin, end = offsets
    if not 0 <= begin <= end <= body:
        raise bad(f"has data_offsets [{begin}, {end}], outside the "
                  f"{body} bytes of tensor data (0 <= begin <= end <= "
                  f"{body})")
    count = 1
    for d in shape:
        count *= d
    need = count * np.dtype(_numpy_dtype(dtype)).itemsize
    if end - begin != need:
        raise bad(f"has data_offsets [{begin}, {end}] ({end - begin} "
                  f"bytes), but {dtype}{shape} is {need} bytes")


def _numpy_dtype(dtype: str):
    """The numpy dtype of safetensors dtype `dtype`."""
    if dtype == "BF16":
        import ml_dtypes
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(_NUMPY[dtype])


def read_metadata(path: str) -> Dict[str, str]:
    """The archive's `__metadata__` (string to string; empty if none)."""
    return dict(_header(path)[0].get("__metadata__", {}))


def load(path: str) -> Dict[str, np.ndarray]:
    """Reads every tensor of the archive at `path` (memory-mapped,
    read-only). A malformed archive (truncated, a tensor's bytes outside
    the file or not its shape's, a name given twice) raises FlowError
    naming the file and the tensor."""
    header, body = _header(path)
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        out[name] = body[begin:end].view(
            _numpy_dtype(entry["dtype"])).reshape(entry["shape"])
    return out
