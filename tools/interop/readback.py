"""dsh-py reads back what the TypeScript harness appended (``nox -s interop``, last step).

Usage: ``python tools/interop/readback.py MANIFEST RESULTS``. For every log the harness
resumed (``RESULTS`` from ``check_logs.ts``), dsh-py reopens it for writing (the way ``dsh``
resumes: every stored event must be one it can continue), derives the messages and checks
the last two are the turn the harness appended, with the harness's message ids. Prints the
figures "N of M load / derive / resume / read back" and exits 1 when any step failed.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import Session


async def _read_back(entry: dict[str, Any], appended: dict[str, Any]) -> str | None:
    persistence = JsonlPersistence(Path(entry["root"]), compression=entry["compression"])
    try:
        async with await persistence.open(entry["id"], "write") as handle:
            events = list(await handle.read(0))
            session = Session(
                handle.header, events, inherited_event_count=handle.inherited_event_count
            )
    finally:
        await persistence.aclose()
    messages = [m.to_wire() for m in session.derive_messages()]
    tail = [(m.get("role", "user"), m.get("id")) for m in messages[-2:]]
    expected = [("user", appended["user"]), ("assistant", appended["assistant"])]
    if tail != expected:
        return f"the derived tail is {tail}, not {expected}"
    if events[-1].type != "turn/end" or events[-1].to_wire()["data"]["turn"] != appended["turn"]:
        return "the log does not end with the appended turn's turn/end"
    return None


def main(manifest_path: Path, results_path: Path) -> int:
    manifest = json.loads(manifest_path.read_text())
    results = json.loads(results_path.read_text())
    by_key = {(e.get("name"), e.get("id")): e for e in manifest}
    total = len(manifest)
    counts = {"load": 0, "derive": 0, "resume": 0, "read back": 0}
    for result in results:
        for step in ("load", "derive", "resume"):
            counts[step] += bool(result[step])
        appended = result.get("appended")
        if not result["resume"] or appended is None:
            continue
        entry = by_key[(result["name"], result["id"])]
        try:
            problem = asyncio.run(_read_back(entry, appended))
        except Exception as error:
            problem = f"{type(error).__name__}: {error}"
        if problem is None:
            counts["read back"] += 1
        else:
            print(f"{result['name']} {result['id']}: read back FAILED: {problem}")
    figures = " / ".join(f"{counts[step]} of {total} {step}" for step in counts)
    print(f"interop: {figures}")
    return 0 if all(count == total for count in counts.values()) else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
