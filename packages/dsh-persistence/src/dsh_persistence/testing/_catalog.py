"""The ordered list of every clause of the contract."""

from __future__ import annotations

from types import ModuleType

from dsh_persistence.testing import (
    _clauses_batches,
    _clauses_damage,
    _clauses_data,
    _clauses_handles,
    _clauses_lifecycle,
    _clauses_model,
    _clauses_processes,
    _clauses_snapshots,
)
from dsh_persistence.testing._runner import Clause


def _collect(*modules: ModuleType) -> tuple[Clause, ...]:
    found = [v for m in modules for v in vars(m).values() if isinstance(v, Clause)]
    ids = [c.id for c in found]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise RuntimeError(f"duplicate clause ids: {duplicates}")
    return tuple(found)


CLAUSES: tuple[Clause, ...] = _collect(
    _clauses_handles,
    _clauses_lifecycle,
    _clauses_data,
    _clauses_model,
    _clauses_batches,
    _clauses_snapshots,
    _clauses_damage,
    _clauses_processes,
)
"""Every clause, in the order the suite runs them."""
