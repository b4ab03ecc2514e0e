"""Buffer: what a program declares for one of its graph arguments."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from ._abi import DTYPES, ROLES, BufferDesc
# Roles whose memory a launch may write: their arrays must be writable.
WRITTEN_ROLES = ("output", "cache")


@dataclass(frozen=True)
class Buffer:
    """One buffer of a program.

    dims: the declared dims, -1 where a dim is sized at run time (at most
    `bound`); bound is 0 for a fully static buffer.
    """

    index: int
    name: str
    role: str
    dtype: str
    dims: Tuple[int, ...]
    bound: int

    @classmethod
    def from_desc(cls, index: int, d: BufferDesc) -> "Buffer":
        role = ROLES[d.role] if 0 <= d.role < len(ROLES) else f"role{d.role}"
        dtype = DTYPES[d.elem] if 0 <= d.elem < len(DTYPES) else f"elem{d.elem}"
        dims = tuple(-1 if d.dims[k] < 0 else int(d.dims[k]) for k in range(d.rank))
        return cls(index, d.name.decode(), role, dtype, dims, int(d.bound))

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def dynamic(self) -> bool:
        return any(x < 0 for x in self.dims)

    @property
    def max_dims(self) -> Tuple[int, ...]:
        """The dims at their largest: dynamic ones at their bound."""
        return tuple(self.bound if x < 0 else x for x in self.dims)

    def shape_text(self) -> str:
        """"f32[?<=4, 4, 64]", as the runtime's messages write it."""
        dims = ", ".join(f"?<={self.bound}" if x < 0 else str(x) for x in self.dims)
        return f"{self.dtype}[{dims}]"

    def __str__(self) -> str:
        return f"{self.role} {self.name}: {self.shape_text()}"
