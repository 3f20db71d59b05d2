"""The whole contract against the test-only reference backend: every clause passes."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from dsh_persistence.testing import PersistenceContract, PersistenceFixture


class TestReferenceBackendWithEveryCapability(PersistenceContract):
    @pytest.fixture
    def persistence_fixture(self, reference_dir_fixture: PersistenceFixture) -> PersistenceFixture:
        return reference_dir_fixture


class TestBackendDeclaringNoCapability(PersistenceContract):
    """Each instance over its own empty storage, as a purely in-memory backend would be: the
    clauses needing a capability skip, every other one passes."""

    @pytest.fixture
    def persistence_fixture(self, tmp_path: Path, variants: dict[str, type]) -> PersistenceFixture:
        counter = itertools.count()
        backend = variants["DirPersistence"]
        return PersistenceFixture(factory=lambda: backend(tmp_path / str(next(counter))))
