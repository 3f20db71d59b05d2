"""Server-sent events framing: network pieces in, each event's ``data`` payload out."""

from __future__ import annotations

__all__ = ["DONE", "SseDecoder"]

DONE = b"[DONE]"
"""The payload OpenAI-compatible servers send after the last chunk."""


class SseDecoder:
    """Splits an ``text/event-stream`` body into event payloads, as the SSE rules say.

    Pieces may split anywhere (inside a line, inside a UTF-8 sequence: the payload stays bytes
    until ``json.loads``). Lines end with ``\\n`` or ``\\r\\n``; an event ends at a blank line;
    its ``data:`` lines (one leading space dropped) are joined with ``\\n``; comments (``:``,
    the keep-alives DeepSeek sends while it thinks) and other fields are skipped.
    """

    __slots__ = ("_data", "_partial")

    def __init__(self) -> None:
        self._partial = b""
        self._data: list[bytes] = []

    def feed(self, piece: bytes) -> list[bytes]:
        """The payloads of the events that ``piece`` completes, in order."""
        if self._partial:
            piece = self._partial + piece
        elif (
            piece[:6] == b"data: "
            and piece[-2:] == b"\n\n"
            and not self._data
            and piece.count(b"\n") == 2
            and b"\r" not in piece
        ):
            return [piece[6:-2]]  # the common case: one piece holds exactly one event
        lines = piece.split(b"\n")
        self._partial = lines.pop()
        events: list[bytes] = []
        data = self._data
        for line in lines:
            if line[-1:] == b"\r":
                line = line[:-1]
            if not line:
                if data:
                    events.append(data[0] if len(data) == 1 else b"\n".join(data))
                    data.clear()
            elif line[:5] == b"data:":
                data.append(line[6:] if line[5:6] == b" " else line[5:])
        return events

    def close(self) -> list[bytes]:
        """At the end of the body: the last event, when the server did not end it with a blank
        line (lenient; the SSE rules would drop it)."""
        events = self.feed(b"\n\n") if self._partial or self._data else []
        self._partial = b""
        return events
