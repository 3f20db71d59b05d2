"""JSONL backend benchmarks: each measurement is a ratio to a raw baseline timed in the same run.

Workloads (issue 3 §5): turns of 10 realistic records (~12 KB of JSON per turn), built as typed
events beforehand; the raw side gets the same records as prebuilt dicts and encodes them with
``json.dumps`` inside its timed loop, as ours must encode inside ``append``.

1. durable append: ``append(10 events)`` + ``flush()`` per turn, 200 turns, vs raw ``os.write`` +
   ``os.fsync`` per turn. Bar: throughput ratio >= 0.85. (For information, also against a raw
   side encoding with ``pydantic_core.to_json``, the encoder ours uses.)
2. cold read of a 50,000-event session into typed events through a fresh instance vs raw
   ``pydantic_core.from_json`` per line. Bar: >= 0.7 (GC on both sides).
   (For information, also against a raw side that reads in 256 KiB blocks as ours does.)
3. ``list()`` of 2,000 sessions through a fresh instance vs raw ``os.scandir`` + ``stat`` +
   header-line read. Bar: time ratio <= 1.5. (A warm instance's ``list()`` is printed too, for
   information: it re-reads every header and stat but memoizes the header decode.)
4. zstd, one frame per turn, vs plain, on harness-shaped turns (issue 12 §1: each turn as the
   TypeScript harness writes it, ~245 records: request header, user message, the answer streamed
   as one ``assistant/chunk`` per word, the ``assistant/message`` repeating it, tool call and
   result, step/turn markers; the same synthetic text as the dense turns; one ``append`` +
   ``flush`` per turn): file size <= 0.25, append throughput >= 0.8. The same with
   ``pack_chunks=True`` on both sides, and the dense 10-record turns, are information rows.

Cold read runs with the cyclic GC on in both sides, as users run (issue 12 §4); the GC-off
figures are information rows.

Appends interleave the two sides turn by turn (alternating which goes first) so both see the
same disk conditions; the other measurements alternate whole runs. Each runs ROUNDS times and
the medians are compared. Prints a table; exits 1 when a
bar is missed. Usage: ``python bench/bench_jsonl.py`` (or ``python -m nox -s bench -- jsonl``).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pydantic_core

from dsh_persistence_jsonl import JsonlPersistence
from dsh_session import (
    SessionEvent,
    SessionHeader,
    decode_header_line,
    decode_row,
    encode_event,
    encode_header_line,
    make_event,
)

ROUNDS = int(os.environ.get("DSH_BENCH_ROUNDS", "5"))
TURNS = 200
COLD_EVENTS = 50_000
LIST_SESSIONS = 2_000

_VOCABULARY = (
    "the session log stores every event the agent emits so a resumed run rebuilds its request "
    "from disk alone model tool result call bash command output error file path line read write "
    "append flush durable crash torn tail frame header turn step user assistant message content "
    "text reasoning chunk provider usage tokens cache input context window system prompt policy "
    "directory project repository commit branch test passes fails build wheel package install "
    "python function class module import return value list dict string integer float boolean"
)
_WORDS = _VOCABULARY.split()


def _synthetic_prose(rng: random.Random, chars: int) -> str:
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(_WORDS)
        if rng.random() < 0.08:
            word = f"{word}_{rng.randrange(10_000)}"
        out.append(word)
        size += len(word) + 1
    return " ".join(out)


def _synthetic_code(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"{rng.choice(_WORDS)}_{i} = {rng.choice(_WORDS)}({rng.randrange(1000)}, "
        f"'{rng.choice(_WORDS)}')  # {rng.choice(_WORDS)}"
        for i in range(lines)
    )


class _RealText:
    """Prose and code from the running Python's standard library (docstrings and source files):
    real English and real code, for the information row that asks whether the zstd size bar is
    a matter of the synthetic text. Loaded on first use."""

    MODULES = (
        "argparse", "asyncio.base_events", "collections", "dataclasses", "email.message",
        "http.client", "json.decoder", "logging", "pathlib", "shutil", "subprocess", "tarfile",
        "typing", "unittest.case", "zipfile",
    )  # fmt: skip

    def __init__(self) -> None:
        self._docs: list[str] = []
        self._sources: list[list[str]] = []

    def _load(self) -> None:
        import importlib
        import inspect

        for name in self.MODULES:
            module = importlib.import_module(name)
            self._sources.append(inspect.getsource(module).splitlines())
            for value in vars(module).values():
                if inspect.isfunction(value) or inspect.isclass(value):
                    doc = inspect.getdoc(value)
                    if doc and len(doc) > 200:
                        self._docs.append(doc)

    def prose(self, rng: random.Random, chars: int) -> str:
        if not self._docs:
            self._load()
        out: list[str] = []
        size = 0
        while size < chars:
            doc = rng.choice(self._docs)
            out.append(doc)
            size += len(doc) + 2
        return "\n\n".join(out)[:chars]

    def code(self, rng: random.Random, lines: int) -> str:
        if not self._sources:
            self._load()
        source = rng.choice(self._sources)
        start = rng.randrange(max(1, len(source) - lines))
        return "\n".join(source[start : start + lines])


REAL_TEXT = _RealText()


def turn_events(
    turn: int, seq: int, rng: random.Random, *, real_text: bool = False
) -> list[SessionEvent]:
    """Ten realistic records of one turn (~12 KB of JSON); the texts are synthetic (words drawn
    from a fixed vocabulary) unless ``real_text`` asks for standard-library prose and code."""
    _prose = REAL_TEXT.prose if real_text else _synthetic_prose
    _code = REAL_TEXT.code if real_text else _synthetic_code
    t = 1_784_974_100_000 + seq * 37
    source = {"kind": "user", "rpcId": f"rpc-{turn}"}
    call_id = f"call_{turn:04d}_{rng.randrange(10**8):08d}"
    tools = [
        {
            "name": "bash",
            "description": _prose(rng, 300),
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        }
    ]
    records: list[tuple[str, Any, str | None]] = [
        ("turn/start", {"turn": turn, "trigger": {"kind": "message", "source": source}}, None),
        (
            "user/message",
            {"content": [{"type": "text", "text": _prose(rng, 2000)}], "source": source},
            "append",
        ),
        ("step/start", {"turn": turn, "step": 1}, None),
        (
            "request/header",
            {
                "header": {
                    "config": {"model": "deepseek-chat", "temperature": 0.7, "maxTokens": 8192},
                    "system": _prose(rng, 2200),
                    "tools": tools,
                    "messagePrefix": [],
                },
                "reason": "initial" if turn == 1 else "change",
            },
            None,
        ),
        (
            "assistant/chunk",
            {
                "turn": turn,
                "step": 1,
                "chunk": {"type": "text-delta", "index": 0, "text": _prose(rng, 60)},
            },
            None,
        ),
        (
            "assistant/message",
            {
                "turn": turn,
                "step": 1,
                "content": [
                    {"type": "text", "text": _prose(rng, 1500)},
                    {
                        "type": "tool-call",
                        "id": call_id,
                        "name": "bash",
                        "arguments": json.dumps({"command": "pytest -q tests"}),
                    },
                ],
                "provenance": {"provider": "deepseek", "model": "deepseek-chat"},
                "usage": {"inputTokens": 5123 + turn, "outputTokens": 377, "cacheRead": 4096},
            },
            "append",
        ),
        (
            "tool/call",
            {
                "turn": turn,
                "step": 1,
                "callId": call_id,
                "name": "bash",
                "arguments": json.dumps({"command": "pytest -q tests"}),
            },
            None,
        ),
        (
            "tool/result",
            {
                "turn": turn,
                "step": 1,
                "callId": call_id,
                "content": [{"type": "text", "text": _code(rng, 80)}],
                "isError": False,
            },
            "append",
        ),
        ("step/end", {"turn": turn, "step": 1}, None),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, None),
    ]
    return [
        make_event(kind, seq + i, t + i, data, surface_op=op)
        for i, (kind, data, op) in enumerate(records)
    ]


def _token_pieces(text: str) -> list[str]:
    """``text`` cut as a model streams it: one word per delta, each after the first carrying
    its leading space (the shape of the v0 logs' deltas: ``"The"``, ``" user"``, ``" wants"``)."""
    words = text.split(" ")
    return [words[0], *(" " + word for word in words[1:])]


def harness_turn_events(turn: int, seq: int, rng: random.Random) -> list[SessionEvent]:
    """One turn as the TypeScript harness writes it (the shapes of the upstream v0 logs), with
    the texts of ``turn_events`` (same generator, same sizes): ``turn/start``, ``step/start``,
    the ``user/message``, a ``request/header``, the streamed answer as ``assistant/chunk`` lines
    (a text block of one word per ``text-delta``, a tool-call block of ``tool-call-delta``
    pieces, both ``block-end``s carrying the whole block, ``usage``, ``finish``), the
    ``assistant/message`` repeating the blocks, ``tool/call``, ``tool/result``, ``step/end``,
    ``turn/end``: about 270 records, ~40 KB of JSON."""
    t = 1_784_974_100_000 + seq * 37
    source = {"kind": "user", "rpcId": f"rpc-{turn}"}
    call_id = f"call_{turn:04d}_{rng.randrange(10**8):08d}"
    user_text = _synthetic_prose(rng, 2000)
    tools = [
        {
            "name": "bash",
            "description": _synthetic_prose(rng, 300),
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        }
    ]
    system = _synthetic_prose(rng, 2200)
    answer = _synthetic_prose(rng, 1500)
    arguments = json.dumps({"command": "pytest -q tests"})
    step = {"turn": turn, "step": 1}
    records: list[tuple[str, Any, str | None]] = [
        ("turn/start", {"turn": turn}, None),
        ("step/start", step, None),
        (
            "user/message",
            {"content": [{"type": "text", "text": user_text}], "source": source},
            "append",
        ),
        (
            "request/header",
            {
                "header": {
                    "config": {"model": "deepseek-chat", "temperature": 0.7, "maxTokens": 8192},
                    "system": system,
                    "tools": tools,
                    "messagePrefix": [],
                },
                "reason": "initial" if turn == 1 else "change",
            },
            None,
        ),
    ]
    chunks: list[dict[str, Any]] = [{"type": "block-start", "index": 0, "blockType": "text"}]
    chunks += [{"type": "text-delta", "index": 0, "text": p} for p in _token_pieces(answer)]
    chunks.append({"type": "block-start", "index": 1, "blockType": "tool-call"})
    chunks += [
        {
            "type": "tool-call-delta",
            "index": 1,
            "id": call_id,
            "name": "bash",
            "argumentsDelta": arguments[i : i + 4],
        }
        for i in range(0, len(arguments), 4)
    ]
    tool_block = {"type": "tool-call", "id": call_id, "name": "bash", "arguments": arguments}
    chunks += [
        {"type": "block-end", "index": 0, "block": {"type": "text", "text": answer}},
        {"type": "block-end", "index": 1, "block": tool_block},
        {
            "type": "usage",
            "usage": {"inputTokens": 5123 + turn, "outputTokens": 377, "cacheReadTokens": 4096},
        },
        {"type": "finish", "reason": {"kind": "tool-calls"}},
    ]
    records += [("assistant/chunk", {**step, "chunk": chunk}, None) for chunk in chunks]
    records += [
        (
            "assistant/message",
            {
                **step,
                "content": [{"type": "text", "text": answer}, tool_block],
                "provenance": {"provider": "deepseek", "model": "deepseek-chat"},
                "usage": {"inputTokens": 5123 + turn, "outputTokens": 377, "cacheRead": 4096},
            },
            "append",
        ),
        ("tool/call", {**step, "callId": call_id, "name": "bash", "arguments": arguments}, None),
        (
            "tool/result",
            {
                **step,
                "callId": call_id,
                "content": [{"type": "text", "text": _synthetic_code(rng, 80)}],
                "isError": False,
            },
            "append",
        ),
        ("step/end", step, None),
        ("turn/end", {"turn": turn, "reason": {"kind": "completed"}}, None),
    ]
    return [
        make_event(kind, seq + i, t + i, data, surface_op=op)
        for i, (kind, data, op) in enumerate(records)
    ]


def build_harness_turns(count: int, seed: int = 7) -> list[list[SessionEvent]]:
    """``count`` harness-shaped turns (``harness_turn_events``), seqs running on."""
    rng = random.Random(seed)
    turns: list[list[SessionEvent]] = []
    seq = 0
    for turn in range(count):
        turns.append(harness_turn_events(turn + 1, seq, rng))
        seq += len(turns[-1])
    return turns


def build_turns(count: int, seed: int = 7, *, real_text: bool = False) -> list[list[SessionEvent]]:
    rng = random.Random(seed)
    return [turn_events(turn + 1, turn * 10, rng, real_text=real_text) for turn in range(count)]


def header(session_id: str) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=1_784_974_100_000, cwd="/home/user/project")


# -- measurements ---------------------------------------------------------------------------


class RawAppender:
    """The baseline: ``json.dumps`` of prebuilt dicts, ``os.write`` and ``os.fsync`` per turn.
    With ``rust=True`` it encodes with ``pydantic_core.to_json`` (as ours does), for an
    information row."""

    def __init__(self, directory: Path, *, rust: bool = False) -> None:
        path = directory / f"raw-{time.perf_counter_ns()}.jsonl"
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        os.write(self.fd, b'{"type":"session"}\n')
        os.fsync(self.fd)
        self.dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
        self.rust = rust

    async def turn(self, records: list[dict[str, Any]]) -> None:
        if self.rust:
            to_json = pydantic_core.to_json
            os.write(self.fd, b"".join([to_json(r) + b"\n" for r in records]))
        else:
            dumps = self.dumps
            os.write(self.fd, "".join(dumps(r) + "\n" for r in records).encode())
        os.fsync(self.fd)

    async def close(self) -> int:
        size = os.fstat(self.fd).st_size
        os.close(self.fd)
        return size


class OurAppender:
    """Ours: ``append(10 events)`` + ``flush()`` per turn on a materialized session."""

    def __init__(self, directory: Path, compression: str, *, pack_chunks: bool = False) -> None:
        root = directory / f"ours-{compression}-{pack_chunks}-{time.perf_counter_ns()}"
        self.store = JsonlPersistence(
            root,
            compression=compression,  # type: ignore[arg-type]
            pack_chunks=pack_chunks,
        )
        self.handle: Any = None

    async def open(self) -> None:
        self.handle = await self.store.create(header("bench-append"))
        await self.handle.flush()

    async def turn(self, events: list[SessionEvent]) -> None:
        await self.handle.append(events)
        await self.handle.flush()

    async def close(self) -> int:
        await self.handle.close()
        size = self.store.log_path(header("bench-append")).stat().st_size
        await self.store.aclose()
        return size


async def interleaved(
    a: Callable[[Any], Awaitable[None]],
    a_input: list[Any],
    b: Callable[[Any], Awaitable[None]],
    b_input: list[Any],
) -> tuple[float, float]:
    """Run turn i of side a and of side b back to back (order alternating), so both sides see
    the same disk conditions; return each side's total time."""
    total_a = total_b = 0.0
    clock = time.perf_counter
    for i in range(len(a_input)):
        if i % 2:
            start = clock()
            await b(b_input[i])
            mid = clock()
            await a(a_input[i])
            total_b += mid - start
            total_a += clock() - mid
        else:
            start = clock()
            await a(a_input[i])
            mid = clock()
            await b(b_input[i])
            total_a += mid - start
            total_b += clock() - mid
    return total_a, total_b


def raw_cold_read(path: Path) -> float:
    start = time.perf_counter()
    with path.open("rb") as f:
        data = f.read()
    lines = data.split(b"\n")[1:-1]
    values = [pydantic_core.from_json(line) for line in lines]
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS
    return elapsed


def raw_cold_read_blocks(path: Path) -> float:
    """The raw side reading as our backend does, 256 KiB at a time (information only)."""
    start = time.perf_counter()
    values = []
    carry = b""
    with path.open("rb", buffering=0) as f:
        while block := f.read(256 * 1024):
            lines = block.split(b"\n")
            if carry:  # the line the previous block ended inside
                lines[0] = carry + lines[0]
            carry = lines.pop()
            values.extend(pydantic_core.from_json(line) for line in lines)
    elapsed = time.perf_counter() - start
    assert len(values) == COLD_EVENTS + 1  # the header line too
    return elapsed


async def our_cold_read(make_store: Callable[[], Any]) -> float:
    """Open the cold session for read through a fresh ``make_store()`` and read every event."""
    start = time.perf_counter()
    store = make_store()
    async with await store.open("bench-cold", "read") as reader:
        events = await reader.read()
    elapsed = time.perf_counter() - start
    assert len(events) == COLD_EVENTS
    await store.aclose()
    return elapsed


def raw_list(root: Path) -> float:
    start = time.perf_counter()
    found = []
    with os.scandir(root) as projects:
        for project in projects:
            with os.scandir(project.path) as sessions:
                for session in sessions:
                    path = os.path.join(session.path, "session.jsonl")
                    st = os.stat(path)
                    with open(path, "rb") as f:
                        found.append((f.readline(), st.st_size))
    elapsed = time.perf_counter() - start
    assert len(found) == LIST_SESSIONS
    return elapsed


async def our_list(root: Path, store: JsonlPersistence | None = None) -> float:
    start = time.perf_counter()
    snapshots = await (store or JsonlPersistence(root)).list()
    elapsed = time.perf_counter() - start
    assert len(snapshots) == LIST_SESSIONS
    return elapsed


# -- setup --------------------------------------------------------------------------------


async def make_cold_session(root: Path) -> Path:
    store = JsonlPersistence(root)
    turns = build_turns(COLD_EVENTS // 10, seed=11)
    async with await store.create(header("bench-cold")) as handle:
        for events in turns:
            await handle.append(events)
    await store.aclose()
    return store.log_path(header("bench-cold"))


def make_list_root(root: Path) -> None:
    rng = random.Random(3)
    for i in range(LIST_SESSIONS):
        h = SessionHeader(
            id=f"session-{i:05d}", created_at=1_784_974_100_000 + i, cwd=f"/home/u/p{i % 40}"
        )
        store_path = JsonlPersistence(root).log_path(h)
        store_path.parent.mkdir(parents=True, exist_ok=True)
        lines = [encode_header_line(h)] + [
            encode_event(e) for e in turn_events(1, 0, rng)[: rng.randrange(1, 10)]
        ]
        store_path.write_bytes(b"".join(line + b"\n" for line in lines))


FIXTURES = (
    Path(__file__).resolve().parent.parent
    / "packages/dsh-persistence-jsonl/tests/fixtures/upstream-v0"
)


async def fixture_sizes(base: Path) -> tuple[int, int, int]:
    """Plain and zstd sizes of the TypeScript harness's v0 logs, written one append per turn."""
    sizes = {"none": 0, "zstd": 0}
    turns_total = 0
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines = path.read_bytes().split(b"\n")[:-1]
        head, cut = decode_header_line(lines[0])
        events = [e for line in lines[1:] for e in decode_row(line)]
        turns: list[list[SessionEvent]] = [[]]
        for event in events:
            turns[-1].append(event)
            if event.type == "turn/end":
                turns.append([])
        turns = [t for t in turns if t]
        turns_total += len(turns)
        for compression in sizes:
            store = JsonlPersistence(base / f"fx-{compression}", compression=compression)  # type: ignore[arg-type]
            async with await store.create(head, inherited_event_count=cut) as handle:
                for turn in turns:
                    await handle.append(turn)
                await handle.flush()
            sizes[compression] += store.log_path(head).stat().st_size
            await store.aclose()
    return sizes["none"], sizes["zstd"], turns_total


# -- driver -------------------------------------------------------------------------------


async def median_pair(
    raw: Callable[[], float], ours: Callable[[], Awaitable[float]]
) -> tuple[float, float]:
    raw_times: list[float] = []
    our_times: list[float] = []
    for _ in range(ROUNDS):
        raw_times.append(raw())
        our_times.append(await ours())
    return statistics.median(raw_times), statistics.median(our_times)


async def main() -> int:
    rows: list[tuple[str, str, str, str, bool]] = []
    with tempfile.TemporaryDirectory(
        prefix="dsh-bench-jsonl-", dir=os.environ.get("TMPDIR")
    ) as tmp:
        base = Path(tmp)
        turns = build_turns(TURNS)
        dicts = [[json.loads(encode_event(e)) for e in events] for events in turns]
        per_turn = sum(len(encode_event(e)) + 1 for e in turns[0])

        # 1. durable append, and 4. zstd vs plain: per-turn interleaving, median over rounds
        raw_t: list[float] = []
        ours_t: list[float] = []
        rust_t: list[float] = []
        ours2_t: list[float] = []
        plain_t: list[float] = []
        zstd_t: list[float] = []
        plain_sizes: list[int] = []
        zstd_sizes: list[int] = []
        for _ in range(ROUNDS):
            for rust, raw_times, our_times in ((False, raw_t, ours_t), (True, rust_t, ours2_t)):
                raw = RawAppender(base, rust=rust)
                ours = OurAppender(base, "none")
                await ours.open()
                a, b = await interleaved(raw.turn, dicts, ours.turn, turns)
                raw_times.append(a)
                our_times.append(b)
                await raw.close()
                await ours.close()
            plain = OurAppender(base, "none")
            packed = OurAppender(base, "zstd")
            await plain.open()
            await packed.open()
            a, b = await interleaved(plain.turn, turns, packed.turn, turns)
            plain_t.append(a)
            zstd_t.append(b)
            plain_sizes.append(await plain.close())
            zstd_sizes.append(await packed.close())
        raw_m, ours_m = statistics.median(raw_t), statistics.median(ours_t)
        ratio = raw_m / ours_m
        rows.append(
            (
                f"durable append, {TURNS} turns x 10 events (~{per_turn // 1024} KB/turn)",
                f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{ratio:.2f}x (bar >= 0.85)",
                ratio >= 0.85,
            )
        )
        raw_m, ours_m = statistics.median(rust_t), statistics.median(ours2_t)
        rows.append(
            (
                "durable append, raw encoding with pydantic_core.to_json as ours does (info)",
                f"raw {raw_m * 1e3 / TURNS:.3f} ms/turn",
                f"ours {ours_m * 1e3 / TURNS:.3f} ms/turn",
                f"{raw_m / ours_m:.2f}x (no bar)",
                True,
            )
        )
        # 4. zstd vs plain on harness-shaped turns (the bars), then the dense turns (info)
        harness = build_harness_turns(TURNS)
        per_harness = sum(len(encode_event(e)) + 1 for e in harness[0])
        for pack in (False, True):
            h_plain_t: list[float] = []
            h_zstd_t: list[float] = []
            h_plain_sizes: list[int] = []
            h_zstd_sizes: list[int] = []
            for _ in range(ROUNDS):
                plain = OurAppender(base, "none", pack_chunks=pack)
                packed = OurAppender(base, "zstd", pack_chunks=pack)
                await plain.open()
                await packed.open()
                a, b = await interleaved(plain.turn, harness, packed.turn, harness)
                h_plain_t.append(a)
                h_zstd_t.append(b)
                h_plain_sizes.append(await plain.close())
                h_zstd_sizes.append(await packed.close())
            plain_m, zstd_m = statistics.median(h_plain_t), statistics.median(h_zstd_t)
            z_ratio = plain_m / zstd_m
            size_ratio = statistics.median(h_zstd_sizes) / statistics.median(h_plain_sizes)
            label = f"pack_chunks={pack}"
            rows.append(
                (
                    f"zstd append vs plain, harness turns (~{len(harness[0])} records, "
                    f"~{per_harness // 1024} KB/turn), {label}" + (" (info)" if pack else ""),
                    f"plain {plain_m * 1e3 / TURNS:.3f} ms/turn",
                    f"zstd {zstd_m * 1e3 / TURNS:.3f} ms/turn",
                    f"{z_ratio:.2f}x" + (" (bar >= 0.8)" if not pack else " (no bar)"),
                    pack or z_ratio >= 0.8,
                )
            )
            if not pack:
                unpacked_plain = statistics.median(h_plain_sizes)
            rows.append(
                (
                    f"zstd file size vs plain, harness turns, {label}"
                    + (" (info)" if pack else ""),
                    f"plain {statistics.median(h_plain_sizes) / 1e6:.2f} MB",
                    f"zstd {statistics.median(h_zstd_sizes) / 1e6:.2f} MB",
                    f"{size_ratio:.3f} (bar <= 0.25)"
                    if not pack
                    else f"{size_ratio:.3f}, "
                    f"{statistics.median(h_zstd_sizes) / unpacked_plain:.3f} of unpacked plain"
                    " (no bar)",
                    pack or size_ratio <= 0.25,
                )
            )

        plain_m, zstd_m = statistics.median(plain_t), statistics.median(zstd_t)
        size_ratio = statistics.median(zstd_sizes) / statistics.median(plain_sizes)
        rows.append(
            (
                "zstd append vs plain, dense 10-record turns (info)",
                f"plain {plain_m * 1e3 / TURNS:.3f} ms/turn",
                f"zstd {zstd_m * 1e3 / TURNS:.3f} ms/turn",
                f"{plain_m / zstd_m:.2f}x (no bar)",
                True,
            )
        )
        rows.append(
            (
                "zstd file size vs plain, dense 10-record turns (info)",
                f"plain {statistics.median(plain_sizes) / 1e6:.2f} MB",
                f"zstd {statistics.median(zstd_sizes) / 1e6:.2f} MB",
                f"{size_ratio:.3f} (no bar)",
                True,
            )
        )

        real_turns = build_turns(TURNS, real_text=True)
        real_sizes = []
        for compression in ("none", "zstd"):
            writer = OurAppender(base, compression)
            await writer.open()
            for events in real_turns:
                await writer.turn(events)
            real_sizes.append(await writer.close())
        rows.append(
            (
                "zstd size vs plain, same turns with stdlib prose and code (info)",
                f"plain {real_sizes[0] / 1e6:.2f} MB",
                f"zstd {real_sizes[1] / 1e6:.2f} MB",
                f"{real_sizes[1] / real_sizes[0]:.3f} (no bar)",
                True,
            )
        )

        plain_fx, zstd_fx, fx_turns = await fixture_sizes(base)
        rows.append(
            (
                f"zstd size vs plain, upstream v0 logs ({fx_turns} turns; info)",
                f"plain {plain_fx / 1e3:.1f} KB",
                f"zstd {zstd_fx / 1e3:.1f} KB",
                f"{zstd_fx / plain_fx:.3f} (no bar)",
                True,
            )
        )

        # 2. cold read, the collector on both sides (as users run: the bar), then off (info)
        cold_path = await make_cold_session(base / "cold")
        gc.collect()
        raw_t, ours_t = await median_pair(
            lambda: raw_cold_read(cold_path),
            lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
        )
        ratio = raw_t / ours_t
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events (GC on both sides)",
                f"raw from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{ratio:.2f}x (bar >= 0.7)",
                ratio >= 0.7,
            )
        )
        gc.collect()
        gc.disable()
        try:
            raw_t, ours_t = await median_pair(
                lambda: raw_cold_read(cold_path),
                lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
            )
            blocks_t, ours_t2 = await median_pair(
                lambda: raw_cold_read_blocks(cold_path),
                lambda: our_cold_read(lambda: JsonlPersistence(base / "cold")),
            )
        finally:
            gc.enable()
        rows.append(
            (
                f"cold read, {COLD_EVENTS} events, GC off both sides (info)",
                f"raw from_json {raw_t * 1e3:.1f} ms",
                f"ours typed {ours_t * 1e3:.1f} ms",
                f"{raw_t / ours_t:.2f}x (no bar)",
                True,
            )
        )
        rows.append(
            (
                "cold read, raw also reading 256 KiB blocks, GC off (info)",
                f"raw from_json {blocks_t * 1e3:.1f} ms",
                f"ours typed {ours_t2 * 1e3:.1f} ms",
                f"{blocks_t / ours_t2:.2f}x (no bar)",
                True,
            )
        )

        # 3. list: a fresh instance (the bar), and a warm one (header decode memoized; info)
        make_list_root(base / "list")
        raw_t2, ours_t2 = await median_pair(
            lambda: raw_list(base / "list"), lambda: our_list(base / "list")
        )
        ratio = ours_t2 / raw_t2
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, fresh instance",
                f"raw {raw_t2 * 1e3:.1f} ms",
                f"ours {ours_t2 * 1e3:.1f} ms",
                f"{ratio:.2f}x time (bar <= 1.5)",
                ratio <= 1.5,
            )
        )
        warm = JsonlPersistence(base / "list")
        await warm.list()
        raw_t2, ours_t2 = await median_pair(
            lambda: raw_list(base / "list"), lambda: our_list(base / "list", warm)
        )
        rows.append(
            (
                f"list() of {LIST_SESSIONS} sessions, warm instance (info)",
                f"raw {raw_t2 * 1e3:.1f} ms",
                f"ours {ours_t2 * 1e3:.1f} ms",
                f"{ours_t2 / raw_t2:.2f}x time (no bar)",
                True,
            )
        )

    return report("bench_jsonl", rows)


def report(name: str, rows: list[tuple[str, str, str, str, bool]]) -> int:
    """Print the table of ``(measurement, baseline, ours, ratio, bar met)`` rows; 1 when a bar
    is missed, else 0 (the script's exit status)."""
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    print(f"{name} (python {sys.version.split()[0]}, median of {ROUNDS} rounds)")
    for row in rows:
        cells = [row[i].ljust(widths[i]) for i in range(4)]
        print("  ".join(cells), "ok" if row[4] else "MISSED")
    missed = [r[0] for r in rows if not r[4]]
    if missed:
        print("missed bars: " + "; ".join(missed))
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(asyncio.run(main()))
