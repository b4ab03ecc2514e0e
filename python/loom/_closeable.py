"""Closeable: `with` support and a close() when collected, for the handles."""


class Closeable:
    """Subclasses define close(); a failed close() at collection (handles
    still in use, interpreter shutdown) is left to the runtime."""

    def close(self) -> None:  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
