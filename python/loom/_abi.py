"""The C ABI of libloomrt as ctypes sees it: the descriptor structs, the
enum spellings and the prototypes of runtime/include/loom/loomrt.h.

Plain declarations with no imports beyond ctypes and no side effects, so the
benchmark matrix (bench/matrix/loomrt.py) loads this file by its path
without importing the package (which loads the library at import).
"""

import ctypes

LOOM_MAX_RANK = 8  # kernels/common/ProgramAbi.h
# The order of LoomRole and LoomElem (kernels/common/ProgramAbi.h).
ROLES = ("input", "weight", "cache", "output", "meta")
DTYPES = ("bf16", "f16", "f32", "i32", "i64")


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
    "loomrt_program_bind_by_name": (_S, [_P, _STR, _P, _ptr(_I64), _I32]),
    "loomrt_program_workspace_bytes": (_S, [_P, _ptr(_I64)]),
    "loomrt_program_set_watchdog_ms": (_S, [_P, _U32]),
    "loomrt_program_set_queued_launch": (_S, [_P, _I32]),
    "loomrt_launch": (_S, [_P]),
    "loomrt_synchronize": (_S, [_P]),
    "loomrt_launch_on_stream": (_S, [_P, _P]),
    "loomrt_program_check": (_S, [_P]),
    "loomrt_program_last_launch_ns": (_S, [_P, _ptr(_U64)]),
    "loomrt_program_epoch": (_S, [_P, _ptr(_U64)]),
}
