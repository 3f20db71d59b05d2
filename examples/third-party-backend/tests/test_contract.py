"""The in-memory backend against the seam's published contract suite.

One fixture is all the suite needs. The backend declares ``reopen`` (instances sharing one
``MemoryStore`` see each other's sessions and exclude each other's writers) and
``replace_record`` (the fixture can put a malformed record in the store); the clauses that need
``cross_process``, ``corrupt_tail``, ``damage_event`` or ``plain_path`` skip, each saying which
capability the backend lacks.
"""

from __future__ import annotations

import pytest
from example_dsh_persistence_memory import MemoryPersistence, MemoryStore

from dsh_persistence.testing import (
    REOPEN,
    REPLACE_RECORD,
    PersistenceContract,
    PersistenceFixture,
)


class TestMemoryBackend(PersistenceContract):
    @pytest.fixture
    def persistence_fixture(self) -> PersistenceFixture:
        store = MemoryStore()  # fresh, empty storage for every clause

        def replace_record(session_id: str, seq: int, record: bytes) -> None:
            store.logs[session_id].lines[seq] = record  # "damaged storage", out of band

        return PersistenceFixture(
            factory=lambda: MemoryPersistence(store),  # a new instance over the same store
            capabilities=frozenset({REOPEN, REPLACE_RECORD}),
            replace_record=replace_record,
        )
