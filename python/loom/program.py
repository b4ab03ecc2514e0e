"""Program: a loaded Loom program, its buffers, bindings and launches."""

from __future__ import annotations

import ctypes
import os
from typing import Any, Dict, List, Tuple

from . import _arrays
from ._binding import check_array
from ._buffers import Buffer
from ._closeable import Closeable
from ._errors import LoomError, Status
from ._library import BufferDesc, ProgramDescHead


class Program(Closeable):
    """loomrt_program. Made by Device.load(path).

    bind() keeps a reference to each bound array (and launch() to those of
    the launch in flight), so the memory stays valid while launches read it.
    Driven by one thread at a time. Usable as a context manager; close() is
    also called when it is collected.
    """

    def __init__(self, *_args, **_kwargs):
        raise TypeError("use Device.load(path) to make a Program")

    @classmethod
    def _load(cls, device, path: str) -> "Program":
        self = object.__new__(cls)
        self._handle = None
        self.device, self.path = device, path
        self.name = os.path.basename(path)  # until the program says its own
        self._lib = device._lib
        self._bound: Dict[str, Any] = {}
        self._in_flight: Dict[str, Any] = {}  # what the launch in flight reads
        # What the launches queued on streams since the last check() read.
        self._on_streams: List[Dict[str, Any]] = []
        h = ctypes.c_void_p()
        self._lib.call("loomrt_program_load", device._raw(), path.encode(), 0, ctypes.byref(h))
        self._handle = h
        desc = ctypes.POINTER(ProgramDescHead)()
        self._lib.call("loomrt_program_desc", h, ctypes.byref(desc))
        self.name = desc.contents.name.decode()  # the graph's symbol: "py_mla"
        self.target = desc.contents.target.decode()  # the chip: "host", "h200"
        self.num_workers = int(desc.contents.num_workers)
        self.num_tasks = int(desc.contents.num_tasks)
        self.buffers = self._read_buffers()
        self._by_name = {b.name: b for b in self.buffers}
        return self

    # --- Buffers ----------------------------------------------------------

    def _read_buffers(self) -> Tuple[Buffer, ...]:
        n = ctypes.c_int32(0)
        self._lib.call("loomrt_program_num_buffers", self._handle, ctypes.byref(n))
        out = []
        for i in range(n.value):
            d = ctypes.POINTER(BufferDesc)()
            self._lib.call("loomrt_program_buffer", self._handle, i, ctypes.byref(d))
            out.append(Buffer.from_desc(i, d.contents))
        return tuple(out)

    def buffer(self, name: str, _call: str = "Program.buffer") -> Buffer:
        """The buffer called `name`; LoomError(NOT_FOUND) naming the others."""
        b = self._by_name.get(name)
        if b is None:
            raise LoomError(Status.NOT_FOUND, f"program '{self.name}' has no buffer '{name}'; "
                            "it has " + ", ".join(x.name for x in self.buffers), _call)
        return b

    def bind(self, name: str, array: Any) -> None:
        """Binds `array` (numpy on "host"; a torch tensor on its device) to
        buffer `name` for the following launches: dtype, rank, dims, bound,
        layout (C-contiguous) and device are checked first."""
        buffer = self.buffer(name, "Program.bind")
        info = _arrays.describe(array)
        if info is None:
            raise LoomError(Status.INVALID_ARGUMENT,
                            f"buffer '{name}': expected a numpy.ndarray or a torch.Tensor, got "
                            f"{type(array).__module__}.{type(array).__qualname__}", "Program.bind")
        check_array(self.name, buffer, info, (self.device.kind, self.device.ordinal))
        dims = (ctypes.c_int64 * max(len(info.shape), 1))(*info.shape)
        self._lib.call("loomrt_program_bind", self._raw(), buffer.index, ctypes.c_void_p(info.ptr),
                   dims, len(info.shape))
        self._bound[name] = info.owner

    @property
    def bound(self) -> Tuple[str, ...]:
        """Names of the buffers bound so far."""
        return tuple(b.name for b in self.buffers if b.name in self._bound)

    # --- Launches ---------------------------------------------------------

    def launch(self) -> None:
        """Starts one launch and returns; synchronize() waits for it."""
        self._lib.call("loomrt_launch", self._raw())
        # A rebind during the launch must not free what it reads.
        self._in_flight = dict(self._bound)

    def synchronize(self) -> None:
        """Waits for the launch in flight; raises its error (TIMEOUT, TASK_FAILED, ...)."""
        try:
            self._lib.call("loomrt_synchronize", self._raw())
        finally:
            self._in_flight = {}

    def run(self) -> None:
        """launch() + synchronize()."""
        self.launch()
        self.synchronize()

    def launch_on_stream(self, stream: Any = None) -> None:
        """Queues one launch on a CUDA stream and returns (CUDA graph capture
        included; the runtime's loomrt_launch_on_stream). `stream`: a
        torch.cuda.Stream (or anything with a `cuda_stream` handle), a raw
        cudaStream_t as an int, or None for torch's current stream on the
        program's device (the legacy default stream without torch). The
        arrays bound now stay referenced until check() reports the launches
        done; the program itself must outlive them (and any graph holding
        them). Raises UNSUPPORTED on the host and HIP backends."""
        handle = _stream_handle(stream, self.device)
        self._lib.call("loomrt_launch_on_stream", self._raw(), ctypes.c_void_p(handle))
        self._on_streams.append(dict(self._bound))

    def check(self) -> None:
        """After the caller synchronized the stream (or a graph's replays):
        raises the first failure of the launches queued on streams since the
        last check (TASK_FAILED, TIMEOUT: the program can launch again
        after), NOT_READY while they still run; releases what they read
        once they are done."""
        try:
            self._lib.call("loomrt_program_check", self._raw())
        except LoomError as e:
            if e.status != Status.NOT_READY:
                self._on_streams = []
            raise
        self._on_streams = []

    def last_launch_ns(self) -> int:
        """Wall time of the last completed launch in ns."""
        ns = ctypes.c_uint64(0)
        self._lib.call("loomrt_program_last_launch_ns", self._raw(), ctypes.byref(ns))
        return int(ns.value)

    def epoch(self) -> int:
        """Launches started so far."""
        e = ctypes.c_uint64(0)
        self._lib.call("loomrt_program_epoch", self._raw(), ctypes.byref(e))
        return int(e.value)

    # --- Lifetime ---------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self._handle is None

    def close(self) -> None:
        """Waits for a launch in flight, then frees the program; closing twice does nothing."""
        if self._handle is not None:
            h, self._handle = self._handle, None
            try:
                self._lib.call("loomrt_program_destroy", h)  # waits for a launch in flight
            finally:
                self._bound.clear()
                self._in_flight = {}
                self._on_streams = []

    def _raw(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise LoomError(Status.INVALID_ARGUMENT, f"program '{self.name}' is closed", "Program")
        return self._handle


    def __repr__(self) -> str:
        state = "closed" if self._handle is None else f"{len(self.buffers)} buffers"
        return f"<loom.Program {self.name} on {self.device.kind}:{self.device.ordinal}, {state}>"


def _stream_handle(stream: Any, device) -> int:
    """The cudaStream_t `stream` names (see Program.launch_on_stream)."""
    if stream is None:
        try:
            import torch  # noqa: F401  (only to follow its current stream)
        except ImportError:
            return 0
        if device.kind != "cuda" or not torch.cuda.is_available():
            return 0
        return int(torch.cuda.current_stream(device.ordinal).cuda_stream)
    if hasattr(stream, "cuda_stream"):
        return int(stream.cuda_stream)
    if isinstance(stream, ctypes.c_void_p):
        return int(stream.value or 0)
    if isinstance(stream, int) and not isinstance(stream, bool):
        return stream
    raise LoomError(Status.INVALID_ARGUMENT,
                    f"stream must be a torch.cuda.Stream, a cudaStream_t as an int, "
                    f"or None (torch's current stream); got {type(stream).__name__}",
                    "Program.launch_on_stream")
