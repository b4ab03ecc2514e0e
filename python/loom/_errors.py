"""LoomError and the runtime's status codes (loomrt_status in loomrt.h)."""

from __future__ import annotations

import enum
from typing import Optional, Union


class Status(enum.IntEnum):
    """loomrt_status. The values are fixed by the C ABI and only grow."""

    SUCCESS = 0
    INVALID_ARGUMENT = 1
    UNKNOWN_DEVICE = 2
    BACKEND_UNAVAILABLE = 3
    LOAD_FAILED = 4
    ABI_MISMATCH = 5
    INVALID_PROGRAM = 6
    NOT_FOUND = 7
    BINDING = 8
    NOT_BOUND = 9
    OUT_OF_MEMORY = 10
    RESOURCES = 11
    TIMEOUT = 12
    TASK_FAILED = 13
    PROGRAM_FAILED = 14
    BUSY = 15
    NOT_READY = 16
    DEVICE = 17
    UNSUPPORTED = 18
    INTERNAL = 99

    @property
    def c_name(self) -> str:
        """The name loomrt_status_name() gives: "LOOMRT_ERROR_BINDING"."""
        return "LOOMRT_SUCCESS" if self is Status.SUCCESS else "LOOMRT_ERROR_" + self.name


class LoomError(RuntimeError):
    """A failed runtime call, or a binding refused before the runtime saw it.

    status:      a Status (an int where the runtime returned a code this
                 package does not know)
    status_name: "LOOMRT_ERROR_BINDING" etc., as loomrt_status_name() says
    message:     loomrt_last_error() for runtime failures, else this
                 package's own explanation
    call:        what failed: "loomrt_program_bind_by_name", "Program.bind"
    """

    def __init__(self, status: Union[Status, int], message: str, call: str = "",
                 status_name: Optional[str] = None):
        try:
            status = Status(status)
        except ValueError:
            pass
        if status_name is None:
            status_name = status.c_name if isinstance(status, Status) else f"status {int(status)}"
        self.status = status
        self.status_name = status_name
        self.message = message
        self.call = call
        where = f"{call}: " if call else ""
        super().__init__(f"{where}{status_name}: {message or '(no message)'}")
