"""Finding and loading libloomrt.so (its C API's prototypes: _abi.py).

The wheel installs the library as loom/lib/libloomrt.so, next to this file's
package; LOOMRT_LIB (a path; empty counts as unset) loads another one, e.g.
build/runtime/libloomrt.so from a source build. Loaded once, at import.
"""

from __future__ import annotations

import ctypes
import os

from ._abi import LOOM_MAX_RANK, PROTOTYPES, BufferDesc, ProgramDescHead
from ._errors import LoomError, Status

SUPPORTED_MAJOR = 0  # loomrt.h: LOOMRT_VERSION_MAJOR this package was written against


def package_library_path() -> str:
    """Where the wheel puts the library: <package>/lib/libloomrt.so."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib", "libloomrt.so")


def library_path() -> str:
    """LOOMRT_LIB if set and non-empty, else the package's own copy."""
    return os.environ.get("LOOMRT_LIB") or package_library_path()


def _load(path: str) -> ctypes.CDLL:
    if not os.path.exists(path):
        how = ("LOOMRT_LIB names it" if os.environ.get("LOOMRT_LIB")
               else "the package was installed without it; reinstall with `pip install .` "
                    "from the Loom repository, or set LOOMRT_LIB to a built libloomrt.so")
        raise ImportError(f"loom: libloomrt.so not found at {path} ({how})")
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"loom: cannot load {path}: {e}") from e
    for name, (res, args) in PROTOTYPES.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise ImportError(f"loom: {path} lacks {name}: not a libloomrt, or an older one") from None
        fn.restype, fn.argtypes = res, args
    version = lib.loomrt_version().decode()
    if version.split(".")[0] != str(SUPPORTED_MAJOR):
        raise ImportError(f"loom: {path} is loomrt {version}; this package reads "
                          f"loomrt {SUPPORTED_MAJOR}.x")
    return lib


class Library:
    """The loaded libloomrt and the one way its calls fail: check()."""

    def __init__(self, path: str):
        self.path = path
        self.lib = _load(path)

    def check(self, call: str, status: int) -> None:
        """Raises LoomError(status, loomrt_last_error()) unless status is 0."""
        if status == 0:
            return
        name = self.lib.loomrt_status_name(status)
        message = self.lib.loomrt_last_error()
        raise LoomError(status, (message or b"").decode(errors="replace"), call,
                        status_name=(name or b"").decode() or None)

    def call(self, name: str, *args) -> None:
        """Calls the C API function `name` and check()s its status."""
        self.check(name, getattr(self.lib, name)(*args))

    def version(self) -> str:
        return self.lib.loomrt_version().decode()


_library = None


def library() -> Library:
    global _library
    if _library is None:
        _library = Library(library_path())
    return _library


__all__ = ["BufferDesc", "ProgramDescHead", "Library", "library", "library_path", "package_library_path",
           "LOOM_MAX_RANK", "LoomError", "Status"]
