"""Loom's runtime from Python: load a program that `loomc --emit=artifact`
built, bind numpy arrays (host) or torch tensors (their device) to its
buffers, run it.

    import loom
    with loom.Device("host") as dev, dev.load("out/py_mla.host.so") as prog:
        for b in prog.buffers:
            print(b)                     # input q_nope: f32[?<=4, 4, 64]
        prog.bind("q_nope", q)           # checked: dtype, dims, bound, layout, device
        ...
        prog.run()                       # launch + synchronize

A wrapper of libloomrt's C API (runtime/include/loom/loomrt.h) through
ctypes; the library is loaded once, at import: the package's own
loom/lib/libloomrt.so, or the one LOOMRT_LIB names. Every failure raises
LoomError with the runtime's status and message.
"""

from ._buffers import Buffer
from ._errors import LoomError, Status
from ._library import library as _library
from ._library import library_path
from .device import Device, device_count
from .program import Program

__version__ = "0.1.0"

_library()  # load now: a missing or mismatched library fails the import


def runtime_version() -> str:
    """loomrt_version() of the loaded library: "MAJOR.MINOR"."""
    return _library().version()


def runtime_path() -> str:
    """The libloomrt.so this package loaded."""
    return _library().path


__all__ = ["Buffer", "Device", "LoomError", "Program", "Status", "device_count",
           "library_path", "runtime_path", "runtime_version"]
