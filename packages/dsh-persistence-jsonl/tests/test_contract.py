"""The seam's contract suite (dsh_persistence.testing) over the none, zstd, zstd+pack variants."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import zstandard

from dsh_persistence.testing import PersistenceContract, PersistenceFixture

CHILD_FACTORY = f"{Path(__file__).parent / 'child_factory.py'}:make"


class TestJsonlPersistenceContract(PersistenceContract):
    """Every clause, once per selected variant (the ``variant`` fixture of conftest.py)."""

    @pytest.fixture
    def persistence_fixture(self, tmp_path: Path, variant: Any) -> PersistenceFixture:
        root = tmp_path / "sessions"

        async def corrupt_tail(session_id: str) -> None:
            store = variant.make(root)
            snapshot = await store.stat(session_id)
            assert snapshot is not None, f"corrupt_tail: no session {session_id!r}"
            path = store.log_path(snapshot.header)
            if variant.compression == "none":
                torn = b'{"type":"turn/start","seq":99,"ti'
            else:
                whole = zstandard.ZstdCompressor(write_checksum=True).compress(
                    b'{"type":"turn/start","seq":99,"time":1,"data":{"turn":9}}\n'
                )
                torn = whole[: len(whole) // 2]
            with path.open("ab") as f:
                f.write(torn)
            await store.aclose()

        capabilities = {"reopen", "cross_process", "corrupt_tail"}
        if variant.compression == "none":
            capabilities.add("plain_path")
        return PersistenceFixture(
            factory=lambda: variant.make(root),
            capabilities=frozenset(capabilities),
            corrupt_tail=corrupt_tail,
            child_factory=CHILD_FACTORY,
            child_args={"root": str(root), **variant.child_args},
        )
