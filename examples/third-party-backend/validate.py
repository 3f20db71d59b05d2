"""Certify the in-memory backend without pytest: ``python validate.py [--json]``.

``validate(make_fixture)`` runs every contract clause (``make_fixture`` is called once per
clause and must return a fixture over fresh, empty storage) and returns a report. This script
prints one line per clause, or the JSON report with ``--json``, and exits 1 if any clause
failed. Skipped clauses are the ones needing a capability the backend does not declare.
"""

from __future__ import annotations

import sys

from example_dsh_persistence_memory import MemoryPersistence, MemoryStore

from dsh_persistence.testing import REOPEN, PersistenceFixture, validate


def make_fixture() -> PersistenceFixture:
    store = MemoryStore()
    return PersistenceFixture(
        factory=lambda: MemoryPersistence(store), capabilities=frozenset({REOPEN})
    )


def main(argv: list[str]) -> int:
    report = validate(make_fixture)
    if "--json" in argv:
        print(report.to_json())
    else:
        for result in report.results:
            suffix = f"  ({result.message})" if result.message else ""
            print(f"{result.status:4}  {result.id}{suffix}")
        counts = report.to_dict()["counts"]
        print(", ".join(f"{count} {status}" for status, count in counts.items()))
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
