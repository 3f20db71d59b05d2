"""``gc_paused``: the cyclic garbage collector paused around a bulk load or decode."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["gc_paused"]


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk load (restored as it was, even on error).

    Decoding many events makes many container objects at once, and each allocation burst
    would otherwise trigger collection passes over all of them (measured in the backends'
    benchmarks: a cold read costs up to a third more with the GC running).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
