"""Reading and writing safetensors archives, Flow's weight files.

An archive is an 8-byte little-endian header length, a JSON header mapping
each tensor's name to its dtype, shape and byte range, and the bytes. Flow's
writer orders tensors by decreasing element size and then by size, and pads
the header with spaces, so that tensors whose byte size is a multiple of 64
start 64-byte aligned and the runtime can use the mapped file in place.
"""

from __future__ import annotations

import json
import os
import struct
from typing import Dict, Mapping

import numpy as np

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


def save(tensors: Mapping[str, np.ndarray], path: str,
         metadata: Mapping[str, str] | None = None) -> None:
    """Writes `tensors` (name -> numpy array) to `path` atomically."""
    arrays = {}
    for name, array in tensors.items():
        array = np.asarray(array)
        if array.dtype.name not in DTYPES:
            raise TypeError(f"tensor '{name}': dtype {array.dtype} cannot be "
                            "stored in a safetensors archive")
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
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name in order:
            f.write(memoryview(arrays[name]).cast("B"))
    os.replace(tmp, path)


def _header(path: str):
    """(header dictionary, the bytes after it) of the archive at `path`."""
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if data.size < 8:
        raise ValueError(f"{path}: not a safetensors file (too short)")
    (size,) = struct.unpack("<Q", bytes(data[:8]))
    if size > data.size - 8:
        raise ValueError(f"{path}: header length {size} exceeds the file")
    return json.loads(bytes(data[8:8 + size])), data[8 + size:]


def read_metadata(path: str) -> Dict[str, str]:
    """The archive's `__metadata__` (string to string; empty if none)."""
    return dict(_header(path)[0].get("__metadata__", {}))


def load(path: str) -> Dict[str, np.ndarray]:
    """Reads every tensor of the archive at `path` (memory-mapped, read-only)."""
    header, body = _header(path)
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = _NUMPY.get(entry["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor '{name}' has unsupported dtype "
                             f"{entry['dtype']}")
        if dtype == "bfloat16":
            import ml_dtypes
            npdtype = np.dtype(ml_dtypes.bfloat16)
        else:
            npdtype = np.dtype(dtype)
        out[name] = body[begin:end].view(npdtype).reshape(entry["shape"])
    return out
