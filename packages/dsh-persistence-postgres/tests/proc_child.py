"""A child process for the crash and race tests: ``python proc_child.py MODE JSON-ARGS``.

- ``append``: create (or open) the session, then append one 6-event turn and ``flush`` again and
  again, printing ``FLUSHED <event count>`` after each flush, until killed (or ``turns`` done);
- ``race`` (``grace``: its ``lock_grace_s``): ``rounds`` times: open the session for writing,
  retrying while another process owns it (printing ``REFUSED``), then print ``HELD``, append
  ``batches`` batches of 2 events tagged with this process's name and the round, close, print
  ``RELEASED``; finally ``DONE``.
  Any other error prints ``ERROR <class> <message>`` and exits 1.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from dsh_persistence import SessionAlreadyOwnedError, SessionPersistenceNotFoundError
from dsh_persistence_postgres import PostgresPersistence
from dsh_session import SessionEvent, SessionHeader, make_event


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def message(seq: int, text: str) -> SessionEvent:
    return make_event(
        "user/message",
        seq,
        9000 + seq,
        {"content": [{"type": "text", "text": text}], "source": {"kind": "user"}},
        surface_op="append",
    )


async def append_mode(store: PostgresPersistence, args: dict[str, Any]) -> None:
    session_id = args["session_id"]
    try:
        handle = await store.open(session_id, "write")
    except SessionPersistenceNotFoundError:
        handle = await store.create(SessionHeader(id=session_id, created_at=1))
    seq = len(await handle.read())
    payload = "p" * args.get("payload", 100)
    for _ in range(args.get("turns", 100_000)):
        await handle.append([message(seq + i, f"turn at {seq} #{i} {payload}") for i in range(6)])
        seq += 6
        await handle.flush()
        say(f"FLUSHED {seq}")
    await handle.close()


async def race_mode(store: PostgresPersistence, args: dict[str, Any]) -> None:
    session_id, name = args["session_id"], args["name"]
    rng = random.Random(name)
    for round_ in range(args["rounds"]):
        while True:
            try:
                handle = await store.open(session_id, "write")
                break
            except SessionAlreadyOwnedError:
                say("REFUSED")
                await asyncio.sleep(rng.random() * 0.01)
        say("HELD")
        seq = len(await handle.read())
        for batch in range(args["batches"]):
            tag = f"{name} round {round_} batch {batch}"
            await handle.append([message(seq, tag), message(seq + 1, tag)])
            seq += 2
            await asyncio.sleep(0)
        await handle.close()
        say("RELEASED")
        await asyncio.sleep(rng.random() * 0.005)
    say("DONE")


async def main() -> int:
    mode, raw = sys.argv[1], sys.argv[2]
    args = json.loads(raw)
    grace = {"lock_grace_s": args["grace"]} if "grace" in args else {}
    store = PostgresPersistence(args["dsn"], schema=args["schema"], **grace)
    try:
        await (append_mode if mode == "append" else race_mode)(store, args)
    except Exception as error:
        say(f"ERROR {type(error).__name__} {error}")
        return 1
    finally:
        await store.aclose()
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
