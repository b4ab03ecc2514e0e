"""Finding and loading libloomrt.so, and the prototypes of its C API.

The wheel installs the library as loom/lib/libloomrt.so, next to this file's
package; LOOMRT_LIB (a path; empty counts as unset) loads another one, e.g.
build/runtime/libloomrt.so from a source build. Loaded once, at import.
"""

from __future__ import annotations

import ctypes
import os

from ._errors import LoomError, Status

LOOM_MAX_RANK = 8  # kernels/common/ProgramAbi.h
SUPPORTED_MAJOR = 0  # loomrt.h: LOOMRT_VERSION_MAJOR this package was written against


class BufferDesc(ctypes.Structure):
    """LoomBufferDesc (kernels/common/ProgramAbi.h)."""

    _fields_ = [
        ("name", ctypes.c_char_p),
        ("role", ctypes.c_int32),
        ("elem", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("dims", ctypes.c_int64 * LOOM_MAX_RANK),
        ("bound", ctypes.c_int64),
    ]


class ProgramDescHead(ctypes.Structure):
    """The leading fields of LoomProgramDesc (kernels/common/ProgramAbi.h):
    only read through a pointer the runtime hands out, never allocated."""

    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("target", ctypes.c_char_p),
        ("mode", ctypes.c_int32),
        ("num_workers", ctypes.c_int32),
        ("num_tasks", ctypes.c_int32),
        ("num_events", ctypes.c_int32),
        ("num_buffers", ctypes.c_int32),
    ]


_P = ctypes.c_void_p  # every handle is opaque
_S = ctypes.c_int  # loomrt_status, an int-sized enum
_I32, _I64, _U32, _U64 = ctypes.c_int32, ctypes.c_int64, ctypes.c_uint32, ctypes.c_uint64
_STR = ctypes.c_char_p


def _ptr(t):
    return ctypes.POINTER(t)


# name: (result, argument types), as declared in runtime/include/loom/loomrt.h.
PROTOTYPES = {
    "loomrt_version": (_STR, []),
    "loomrt_status_name": (_STR, [_S]),
    "loomrt_last_error": (_STR, []),
    "loomrt_elem_bytes": (ctypes.c_size_t, [_I32]),
    "loomrt_device_count": (_S, [_STR, _ptr(ctypes.c_int)]),
    "loomrt_device_create": (_S, [_STR, ctypes.c_int, _ptr(_P)]),
    "loomrt_device_destroy": (_S, [_P]),
    "loomrt_device_describe": (_STR, [_P]),
    "loomrt_program_load": (_S, [_P, _STR, _U32, _ptr(_P)]),
    "loomrt_program_destroy": (_S, [_P]),
    "loomrt_program_desc": (_S, [_P, _ptr(_ptr(ProgramDescHead))]),
    "loomrt_program_num_buffers": (_S, [_P, _ptr(_I32)]),
    "loomrt_program_buffer": (_S, [_P, _I32, _ptr(_ptr(BufferDesc))]),
    "loomrt_program_bind": (_S, [_P, _I32, _P, _ptr(_I64), _I32]),
    "loomrt_launch": (_S, [_P]),
    "loomrt_synchronize": (_S, [_P]),
    "loomrt_program_last_launch_ns": (_S, [_P, _ptr(_U64)]),
    "loomrt_program_epoch": (_S, [_P, _ptr(_U64)]),
}


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
