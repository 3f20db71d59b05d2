"""The contract suite every ``SessionPersistence`` backend runs.

pytest users subclass ``PersistenceContract`` (it needs the ``testing`` extra, which brings
pytest) and provide one fixture, ``persistence_fixture``, returning a ``PersistenceFixture``.
Everyone else calls ``validate(make_fixture)`` for a JSON-serializable ``ContractReport``.
Importing this module does not import pytest; only ``PersistenceContract`` does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dsh_persistence.testing._catalog import CLAUSES
from dsh_persistence.testing._expect import ContractViolation
from dsh_persistence.testing._fixture import (
    CAPABILITIES,
    CORRUPT_TAIL,
    CROSS_PROCESS,
    DAMAGE_EVENT,
    PLAIN_PATH,
    REOPEN,
    REPLACE_RECORD,
    PersistenceFixture,
)
from dsh_persistence.testing._report import ClauseResult, ContractReport, validate
from dsh_persistence.testing._runner import Clause

if TYPE_CHECKING:
    from dsh_persistence.testing._pytest import PersistenceContract

__all__ = [
    "CAPABILITIES",
    "CLAUSES",
    "CORRUPT_TAIL",
    "CROSS_PROCESS",
    "DAMAGE_EVENT",
    "PLAIN_PATH",
    "REOPEN",
    "REPLACE_RECORD",
    "Clause",
    "ClauseResult",
    "ContractReport",
    "ContractViolation",
    "PersistenceContract",
    "PersistenceFixture",
    "validate",
]


def __getattr__(name: str) -> Any:
    # PersistenceContract needs pytest; import it only when asked for.
    if name == "PersistenceContract":
        from dsh_persistence.testing._pytest import PersistenceContract

        return PersistenceContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
