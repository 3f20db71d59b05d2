"""What a model may say about itself: its context window, for the compaction policy."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["ModelInfo", "context_window_of"]


@runtime_checkable
class ModelInfo(Protocol):
    """A `Model` that knows the context window (in tokens) of the model names it serves.

    Optional: a model without ``context_window`` simply does not say (``context_window_of``
    gives ``None``), and the compaction policy then leaves its sessions alone.
    """

    def context_window(self, model: str) -> int | None:
        """The context window of model name ``model`` in tokens, or ``None`` when unknown."""
        ...


def context_window_of(model: object, name: str) -> int | None:
    """The context window ``model`` reports for the model name ``name``, or ``None`` when it
    does not implement `ModelInfo` or does not know. A reported value that is not a positive
    whole number raises ``ValueError`` naming the model, never passing as a window."""
    ask = getattr(model, "context_window", None)
    if not callable(ask):
        return None
    window = ask(name)
    if window is None:
        return None
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise ValueError(
            f"model {name!r}: context_window() gave {window!r}, not a positive whole number "
            "of tokens or None"
        )
    return window
