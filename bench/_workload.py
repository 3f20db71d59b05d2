"""The workloads every persistence benchmark writes, built once and shared so the backends are
measured on the same events: dense turns of 10 realistic records (~12 KB of JSON per turn) and
harness-shaped turns (~245 records: each answer streamed one ``assistant/chunk`` per word, as
the TypeScript harness writes it), over synthetic prose and code, or real text; and the header
of a benchmark session.
"""

from __future__ import annotations

import json
import random
from typing import Any

from dsh_session import SessionEvent, SessionHeader, make_event

__all__ = [
    "COLD_EVENTS",
    "REAL_TEXT",
    "build_harness_turns",
    "build_turns",
    "harness_turn_events",
    "header",
    "turn_events",
]

COLD_EVENTS = 50_000
"""The events of the cold-read session (``bench-cold``) every backend benchmark reads."""

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
