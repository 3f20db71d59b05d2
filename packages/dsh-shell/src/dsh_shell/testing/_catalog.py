"""Every clause of the executor contract, in a stable order."""

from __future__ import annotations

from types import MappingProxyType

from dsh_shell.testing import (
    _clauses_background,
    _clauses_child,
    _clauses_env,
    _clauses_output,
    _clauses_run,
    _clauses_sandbox,
)
from dsh_shell.testing._registry import Clause

CLAUSES: MappingProxyType[str, Clause] = MappingProxyType(
    {
        c.id: c
        for module in (
            _clauses_env,
            _clauses_run,
            _clauses_child,
            _clauses_output,
            _clauses_background,
            _clauses_sandbox,
        )
        for c in module.group.clauses
    }
)
"""Clause id → clause; each id is also a pytest test name (``test_<id>``)."""
