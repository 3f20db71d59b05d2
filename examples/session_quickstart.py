"""dsh-session in one page: build a session log, repair an interrupted turn, derive the messages.

Run from the repository root: python examples/session_quickstart.py (after installing
./packages/dsh-llm and ./packages/dsh-session)."""

from itertools import count

from dsh_session import (
    Session,
    SessionHeader,
    encode_event,
    encode_header_line,
    interrupted_turn_closers,
)

clock = count(1_785_000_000_000)  # deterministic epoch-ms times for the demo
session = Session(SessionHeader(id="session-demo", created_at=next(clock), cwd="/home/user/proj"))


def add(kind: str, data: dict[str, object], sources: list[int] | None = None) -> int:
    return session.append(kind, data, source_event_seqs=sources, time=next(clock)).seq  # type: ignore[arg-type]


model = {"provider": "deepseek-official", "model": "deepseek-v4-flash"}
ls = {"type": "tool-call", "id": "call_1", "name": "bash", "arguments": '{"command": "ls"}'}
text = [{"type": "text", "text": "List the files."}]

# Turn 1: the user asks, the model calls a tool, the tool answers.
add("turn/start", {"turn": 1, "trigger": {"kind": "message"}})
add("user/message", {"content": text, "source": {"kind": "user"}})
add("step/start", {"turn": 1, "step": 1})
add("assistant/message", {"turn": 1, "step": 1, "content": [ls], "provenance": model})
call = add(
    "tool/call",
    {"turn": 1, "step": 1, "callId": "call_1", "name": "bash", "arguments": ls["arguments"]},
)
output = [{"type": "text", "text": "README.md\nsrc\n"}]
result = {"turn": 1, "step": 1, "callId": "call_1", "content": output, "isError": False}
add("tool/result", result, sources=[call])
add("step/end", {"turn": 1, "step": 1})
add("turn/end", {"turn": 1, "reason": {"kind": "completed"}})

# Turn 2 is cut off by a crash right after the model asked for a tool; resume balances it.
add("turn/start", {"turn": 2})
add("step/start", {"turn": 2, "step": 1})
cat = {**ls, "id": "call_2", "arguments": '{"command": "cat README.md"}'}
add("assistant/message", {"turn": 2, "step": 1, "content": [cat], "provenance": model})
for closer in interrupted_turn_closers(session.events):  # TOOL_NOT_STARTED, step/end, turn/end
    session.append_event(closer)

print("--- session.jsonl")
print(encode_header_line(session.header).decode())
for event in session.events:
    print(encode_event(event).decode())
print("--- derive_messages()")
for message in session.derive_messages():
    print(f"{type(message).__name__:>17}: {message.to_wire_json()[:100]}")
