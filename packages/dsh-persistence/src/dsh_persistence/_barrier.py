"""The service-wide flush barrier every backend's ``SessionPersistence.flush`` runs."""

from __future__ import annotations

from collections.abc import Iterable

from dsh_persistence._errors import SessionHandleClosedError
from dsh_persistence._protocols import SessionHandle


async def flush_handles(handles: Iterable[SessionHandle]) -> None:
    """Flush every handle in ``handles``, one after the other, past any failure.

    A handle that is closing counts as flushed (its ``flush`` raises
    ``SessionHandleClosedError``, and ``close`` drains). Every other failure is collected and
    raised at the end as one ``ExceptionGroup``, so a failing session never hides whether the
    healthy ones became durable. Pass a snapshot of the active write handles (a ``list``), not
    a live view that changes while the barrier awaits.
    """
    errors: list[Exception] = []
    for handle in handles:
        try:
            await handle.flush()
        except SessionHandleClosedError:
            continue
        except Exception as error:
            errors.append(error)
    if errors:
        raise ExceptionGroup(f"flush failed for {len(errors)} session(s)", errors)
