"""What bind() needs to know of an array: address, dtype, shape, layout, device.

numpy arrays (host memory) and torch tensors (when torch is imported: the
check is on sys.modules, so torch is never imported here). Nothing is copied:
the program reads and writes the caller's memory.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

# numpy has no bf16: ml_dtypes' "bfloat16" is taken, and so is uint16 holding
# bf16 bits (the only 16-bit integer type, and no buffer is of one).
_NUMPY_DTYPES = {
    "bfloat16": "bf16", "uint16": "bf16",
    "float16": "f16", "float32": "f32", "int32": "i32", "int64": "i64",
}
_TORCH_DTYPES = {
    "torch.bfloat16": "bf16", "torch.float16": "f16", "torch.float32": "f32",
    "torch.int32": "i32", "torch.int64": "i64",
}
# What to pass for each buffer dtype, for messages.
EXPECTED = {
    "bf16": "numpy uint16 (bf16 bits) or ml_dtypes.bfloat16, or torch.bfloat16",
    "f16": "numpy.float16 or torch.float16",
    "f32": "numpy.float32 or torch.float32",
    "i32": "numpy.int32 or torch.int32",
    "i64": "numpy.int64 or torch.int64",
}


@dataclass(frozen=True)
class ArrayInfo:
    kind: str  # "numpy" or "torch"
    ptr: int
    dtype: Optional[str]  # the buffer dtype it is, None if none
    type_name: str  # "numpy float64", "torch.float32": for messages
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]  # in elements
    c_contiguous: bool
    device: Tuple[str, int]  # ("host", 0), ("cuda", 1)
    writable: bool
    aligned: bool
    owner: Any  # kept alive by the program while bound


def c_strides(shape: Tuple[int, ...]) -> Tuple[int, ...]:
    """Row-major strides in elements: what a C-contiguous array of `shape` has."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _numpy(a: np.ndarray) -> ArrayInfo:
    dtype = _NUMPY_DTYPES.get(a.dtype.name) if a.dtype.isnative else None
    item = a.dtype.itemsize
    return ArrayInfo(
        kind="numpy", ptr=int(a.ctypes.data), dtype=dtype,
        type_name=f"numpy {a.dtype.name}" + ("" if a.dtype.isnative else " (non-native byte order)"),
        shape=tuple(int(x) for x in a.shape),
        strides=tuple(int(s) // item if s % item == 0 else s / item for s in a.strides),
        c_contiguous=bool(a.flags.c_contiguous), device=("host", 0),
        writable=bool(a.flags.writeable), aligned=bool(a.flags.aligned), owner=a)


def _torch(t: Any) -> ArrayInfo:
    dev = t.device
    if dev.type == "cpu":
        device = ("host", 0)
    else:  # ROCm builds of torch call HIP devices "cuda" too
        device = (dev.type, 0 if dev.index is None else int(dev.index))
    shape = tuple(int(x) for x in t.shape)
    ptr = int(t.data_ptr())
    return ArrayInfo(
        kind="torch", ptr=ptr, dtype=_TORCH_DTYPES.get(str(t.dtype)), type_name=str(t.dtype),
        shape=shape, strides=tuple(int(s) for s in t.stride()),
        c_contiguous=bool(t.is_contiguous()), device=device,
        writable=True, aligned=ptr % max(int(t.element_size()), 1) == 0, owner=t)


def describe(obj: Any) -> Optional[ArrayInfo]:
    """ArrayInfo of a numpy array or a torch tensor; None for anything else."""
    if isinstance(obj, np.ndarray):
        return _numpy(obj)
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(obj, torch.Tensor):
        return _torch(obj)
    return None
