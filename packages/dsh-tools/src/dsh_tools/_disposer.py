"""Disposer: undo a registration by calling it, or by leaving a ``with`` block."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType

__all__ = ["Disposer"]


class Disposer:
    """Undoes one registration. Call it, call ``dispose()``, or use it as a context manager.

    Disposing twice is harmless: only the first call has an effect.
    """

    __slots__ = ("_undo",)

    def __init__(self, undo: Callable[[], None]) -> None:
        self._undo: Callable[[], None] | None = undo

    @property
    def disposed(self) -> bool:
        """Whether the registration has been undone."""
        return self._undo is None

    def dispose(self) -> None:
        """Undo the registration (once)."""
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()

    def __call__(self) -> None:
        self.dispose()

    def __enter__(self) -> Disposer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.dispose()
