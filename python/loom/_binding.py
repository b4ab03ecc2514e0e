"""The checks bind() makes before the runtime sees an array.

The runtime checks rank, dims and bounds too, but it sees only a pointer: it
cannot tell a float64 array from a float32 one, a strided view from a dense
one, or host memory from a GPU's. These checks can, and say what to pass.
"""

from __future__ import annotations

from typing import Tuple

from ._arrays import EXPECTED, ArrayInfo, c_strides
from ._buffers import WRITTEN_ROLES, Buffer
from ._errors import LoomError, Status

# Device kinds whose memory a torch device type is.
_TORCH_DEVICE_OF_KIND = {"host": "host", "cuda": "cuda", "hip": "cuda"}


def _fail(program: str, buffer: Buffer, why: str) -> LoomError:
    return LoomError(Status.BINDING,
                     f"program '{program}': cannot bind buffer '{buffer.name}' "
                     f"({buffer.shape_text()}): {why}", "Program.bind")


def _shape(shape: Tuple[int, ...]) -> str:
    return "(" + ", ".join(str(x) for x in shape) + ("," if len(shape) == 1 else "") + ")"


def check_array(program: str, buffer: Buffer, a: ArrayInfo, device: Tuple[str, int]) -> None:
    """Raises LoomError(BINDING) unless `a` fits `buffer` on `device`."""
    kind, ordinal = device
    if a.device != (_TORCH_DEVICE_OF_KIND.get(kind, kind), ordinal if kind != "host" else 0):
        where = "host memory" if a.device[0] == "host" else f"{a.device[0]}:{a.device[1]}"
        if a.kind == "numpy" and kind != "host":
            hint = f"numpy arrays are host memory: bind a torch tensor on cuda:{ordinal}"
        elif kind == "host":
            hint = "bind a CPU tensor or a numpy array"
        else:
            hint = f"bind a tensor on cuda:{ordinal}"
        raise _fail(program, buffer, f"the array is in {where}; the program runs on "
                    f"{kind} device {ordinal}: {hint}")
    if a.dtype != buffer.dtype:
        raise _fail(program, buffer, f"the array is {a.type_name}; "
                    f"a {buffer.dtype} buffer takes {EXPECTED.get(buffer.dtype, buffer.dtype)}")
    if len(a.shape) != buffer.rank:
        raise _fail(program, buffer, f"the array has rank {len(a.shape)} (shape "
                    f"{_shape(a.shape)}); the buffer has rank {buffer.rank}")
    for k, (got, want) in enumerate(zip(a.shape, buffer.dims)):
        if want >= 0 and got != want:
            raise _fail(program, buffer, f"dim {k} is {got} (shape {_shape(a.shape)}); "
                        f"declared {want}")
        if want < 0 and got > buffer.bound:
            raise _fail(program, buffer, f"dim {k} is {got} (shape {_shape(a.shape)}), "
                        f"above its bound {buffer.bound}")
    if not a.c_contiguous:
        raise _fail(program, buffer, f"the array is not C-contiguous (strides {a.strides} "
                    f"elements for shape {_shape(a.shape)}); the program needs a dense "
                    f"row-major array, strides {c_strides(a.shape)}: pass "
                    + ("numpy.ascontiguousarray(x)" if a.kind == "numpy" else "x.contiguous()")
                    + (", and copy the results back" if buffer.role in WRITTEN_ROLES else ""))
    if not a.aligned:
        raise _fail(program, buffer, f"the array's address {a.ptr:#x} is not aligned to "
                    "its element size")
    if not a.writable and buffer.role in WRITTEN_ROLES:
        raise _fail(program, buffer, f"the array is read-only and a launch writes this "
                    f"{buffer.role} buffer")
