"""Device: one device of a backend ("host", "cuda", "hip") and its programs."""

from __future__ import annotations

import ctypes
import os
from typing import Union

from ._closeable import Closeable
from ._errors import LoomError, Status
from ._library import library
from .program import Program


def device_count(kind: str = "cuda") -> int:
    """How many devices of `kind` there are ("host": 1). Raises LoomError
    (BACKEND_UNAVAILABLE) where the kind's driver cannot be loaded."""
    lib = library()
    n = ctypes.c_int(0)
    lib.call("loomrt_device_count", kind.encode(), ctypes.byref(n))
    return n.value


class Device(Closeable):
    """loomrt_device: Device("host"), Device("cuda", 1).

    A device outlives its programs: close() fails (BUSY) while one is open.
    Usable as a context manager; close() is also called when it is collected.
    """

    def __init__(self, kind: str = "host", ordinal: int = 0):
        self._lib = library()
        self._handle = None
        self.kind, self.ordinal = str(kind), int(ordinal)
        h = ctypes.c_void_p()
        self._lib.call("loomrt_device_create", self.kind.encode(), self.ordinal, ctypes.byref(h))
        self._handle = h

    @property
    def closed(self) -> bool:
        return self._handle is None

    def describe(self) -> str:
        """One line: "host device 0", "cuda device 0 (NVIDIA H200, ...)"."""
        if self._handle is None:
            return f"{self.kind} device {self.ordinal} (closed)"
        return (self._lib.lib.loomrt_device_describe(self._handle) or b"").decode()

    def load(self, path: Union[str, "os.PathLike[str]"]) -> Program:
        """Loads a program built by `loomc --emit=artifact` for this device."""
        return Program._load(self, os.fspath(path))

    def close(self) -> None:
        """Frees the device; closing twice does nothing."""
        if self._handle is not None:
            self._lib.call("loomrt_device_destroy", self._handle)
            self._handle = None

    def _raw(self) -> ctypes.c_void_p:
        if self._handle is None:
            raise LoomError(Status.INVALID_ARGUMENT, f"{self.kind} device {self.ordinal} is closed",
                            "Device")
        return self._handle

    def __repr__(self) -> str:
        return f"<loom.Device {self.describe()}>"
