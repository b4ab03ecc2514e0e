"""ctypes binding of the Loom runtime's C API (runtime/include/loom/loomrt.h).

Only what the matrix needs: devices, program load, buffer descriptors,
bind by name (any pointer the backend knows: a torch tensor's data_ptr() on
"cuda", a numpy array's address on "host"), launch, synchronize, the last
launch's device time. Every failing call raises LoomrtError naming the call,
the status and loomrt_last_error(). No torch, no numpy needed here.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
from typing import Dict, List, Optional, Sequence

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _load_abi():
    """python/loom/_abi.py by its path: the C API's structs and prototypes,
    declared once for the package and the matrix, without importing the
    package (which loads its own library at import)."""
    spec = importlib.util.spec_from_file_location(
        "loom_abi", os.path.join(_ROOT, "python", "loom", "_abi.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_abi = _load_abi()
ROLES, ELEMS = _abi.ROLES, _abi.DTYPES


class LoomrtError(RuntimeError):
    def __init__(self, call: str, status: int, status_name: str, message: str):
        super().__init__(f"{call} failed: {status_name} ({status}): {message or '(no message)'}")
        self.call, self.status, self.status_name, self.message = call, status, status_name, message


class BufferInfo:
    """One graph argument of a program: name, role, elem, dims (-1: dynamic), bound."""

    def __init__(self, d: _abi.BufferDesc):
        self.name = d.name.decode()
        self.role = ROLES[d.role] if 0 <= d.role < len(ROLES) else str(d.role)
        self.elem = ELEMS[d.elem] if 0 <= d.elem < len(ELEMS) else str(d.elem)
        self.dims = [int(d.dims[i]) for i in range(d.rank)]
        self.bound = int(d.bound)

    def __repr__(self):
        dims = ", ".join("?" if x < 0 else str(x) for x in self.dims)
        return f"{self.role} {self.name}: {self.elem}[{dims}]" + (f" (<= {self.bound})" if self.bound else "")


def default_library() -> str:
    """LOOMRT_LIB, else .bench/lib/libloomrt.so, else build/runtime/libloomrt.so."""
    if os.environ.get("LOOMRT_LIB"):
        return os.environ["LOOMRT_LIB"]
    for cand in (os.path.join(_ROOT, ".bench", "lib", "libloomrt.so"),
                 os.path.join(_ROOT, "build", "runtime", "libloomrt.so")):
        if os.path.exists(cand):
            return cand
    raise FileNotFoundError("libloomrt.so not found: set LOOMRT_LIB, or run scripts/bench-prepare "
                            "(.bench/lib/) or build the loomrt target (build/runtime/)")


class Runtime:
    """The loaded library. One per process is enough."""

    def __init__(self, path: Optional[str] = None):
        self.path = path or default_library()
        try:
            self.lib = ctypes.CDLL(self.path)
        except OSError as e:
            raise LoomrtError("dlopen", -1, "LOAD", f"{self.path}: {e}") from e
        L = self.lib
        for name, (res, args) in _abi.PROTOTYPES.items():
            try:
                fn = getattr(L, name)
            except AttributeError as e:
                raise LoomrtError("dlsym", -1, "MISSING_SYMBOL", f"{name} not in {self.path}") from e
            fn.restype, fn.argtypes = res, args

    def version(self) -> str:
        return self.lib.loomrt_version().decode()

    def check(self, call: str, status: int) -> None:
        if status != 0:
            name = (self.lib.loomrt_status_name(status) or b"?").decode()
            msg = (self.lib.loomrt_last_error() or b"").decode()
            raise LoomrtError(call, status, name, msg)

    def device_count(self, kind: str) -> int:
        n = ctypes.c_int(0)
        self.check(f"loomrt_device_count({kind!r})", self.lib.loomrt_device_count(kind.encode(), ctypes.byref(n)))
        return n.value

    def device(self, kind: str, ordinal: int = 0) -> "Device":
        h = ctypes.c_void_p()
        self.check(f"loomrt_device_create({kind!r}, {ordinal})",
                   self.lib.loomrt_device_create(kind.encode(), ordinal, ctypes.byref(h)))
        return Device(self, h, kind)


class Device:
    def __init__(self, rt: Runtime, handle: ctypes.c_void_p, kind: str):
        self.rt, self.handle, self.kind = rt, handle, kind

    def describe(self) -> str:
        return (self.rt.lib.loomrt_device_describe(self.handle) or b"").decode()

    def load(self, path: str, watchdog_ms: Optional[int] = None) -> "Program":
        h = ctypes.c_void_p()
        self.rt.check(f"loomrt_program_load({path!r})",
                      self.rt.lib.loomrt_program_load(self.handle, path.encode(), 0, ctypes.byref(h)))
        p = Program(self, h, path)
        if watchdog_ms:
            self.rt.check(f"loomrt_program_set_watchdog_ms({path!r}, {watchdog_ms})",
                          self.rt.lib.loomrt_program_set_watchdog_ms(h, watchdog_ms))
        return p

    def close(self) -> None:
        if self.handle:
            self.rt.check(f"loomrt_device_destroy({self.kind!r})", self.rt.lib.loomrt_device_destroy(self.handle))
            self.handle = None


class Program:
    def __init__(self, device: Device, handle: ctypes.c_void_p, path: str):
        self.device, self.handle, self.path = device, handle, path
        self.rt = device.rt
        self.name = os.path.basename(path)
        self.buffers: Dict[str, BufferInfo] = {}
        n = ctypes.c_int32(0)
        self.rt.check(f"loomrt_program_num_buffers({self.name})",
                      self.rt.lib.loomrt_program_num_buffers(handle, ctypes.byref(n)))
        for i in range(n.value):
            d = ctypes.POINTER(_abi.BufferDesc)()
            self.rt.check(f"loomrt_program_buffer({self.name}, {i})",
                          self.rt.lib.loomrt_program_buffer(handle, i, ctypes.byref(d)))
            info = BufferInfo(d.contents)
            self.buffers[info.name] = info

    def workspace_bytes(self) -> int:
        b = ctypes.c_int64(0)
        self.rt.check(f"loomrt_program_workspace_bytes({self.name})",
                      self.rt.lib.loomrt_program_workspace_bytes(self.handle, ctypes.byref(b)))
        return b.value

    def bind(self, name: str, ptr: int, dims: Optional[Sequence[int]] = None) -> None:
        """Binds device memory at `ptr`; `dims` None binds a static buffer at its declared dims."""
        if name not in self.buffers:
            raise LoomrtError(f"bind({name!r})", 7, "LOOMRT_ERROR_NOT_FOUND",
                              f"program {self.name} has no buffer {name!r}; it has "
                              + ", ".join(self.buffers))
        if dims is None:
            arr, rank = None, 0
        else:
            dims = [int(x) for x in dims]
            arr, rank = (ctypes.c_int64 * max(len(dims), 1))(*dims), len(dims)
        self.rt.check(f"loomrt_program_bind_by_name({self.name}, {name!r}, dims={dims})",
                      self.rt.lib.loomrt_program_bind_by_name(self.handle, name.encode(),
                                                              ctypes.c_void_p(ptr), arr, rank))

    def set_queued_launch(self, queued: bool) -> None:
        """Queue each launch behind a gate opened once all of it is queued:
        last_launch_ns() then leaves the host's submission out (loomrt.h)."""
        self.rt.check(f"loomrt_program_set_queued_launch({self.name}, {int(queued)})",
                      self.rt.lib.loomrt_program_set_queued_launch(self.handle, int(queued)))

    def launch(self) -> None:
        self.rt.check(f"loomrt_launch({self.name})", self.rt.lib.loomrt_launch(self.handle))

    def synchronize(self) -> None:
        self.rt.check(f"loomrt_synchronize({self.name})", self.rt.lib.loomrt_synchronize(self.handle))

    def run(self) -> int:
        """Launch + synchronize; returns the launch's device time in ns."""
        self.launch()
        self.synchronize()
        return self.last_launch_ns()

    def last_launch_ns(self) -> int:
        ns = ctypes.c_uint64(0)
        self.rt.check(f"loomrt_program_last_launch_ns({self.name})",
                      self.rt.lib.loomrt_program_last_launch_ns(self.handle, ctypes.byref(ns)))
        return int(ns.value)

    def epoch(self) -> int:
        e = ctypes.c_uint64(0)
        self.rt.check(f"loomrt_program_epoch({self.name})",
                      self.rt.lib.loomrt_program_epoch(self.handle, ctypes.byref(e)))
        return int(e.value)

    def close(self) -> None:
        if self.handle:
            self.rt.check(f"loomrt_program_destroy({self.name})", self.rt.lib.loomrt_program_destroy(self.handle))
            self.handle = None

    def unbound_check(self, bound: List[str]) -> None:
        missing = [n for n in self.buffers if n not in bound]
        if missing:
            raise LoomrtError(f"bind({self.name})", 9, "LOOMRT_ERROR_NOT_BOUND",
                              "the matrix did not bind " + ", ".join(missing))
