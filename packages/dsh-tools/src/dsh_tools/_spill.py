"""`ResultSpill`: an oversized text result is kept whole in a file; the model gets its head, its
tail and where the rest is.

A post-execute hook for any `ToolRegistry`: a result made only of text blocks whose UTF-8 size
is over ``max_inline_bytes`` (50,000 by default, the TypeScript harness's figure) is written
whole to a private file under ``root`` (a ``0700`` directory per session, the file ``0600``,
created exclusively), and replaced by the first and last parts of the text, which together
stay within the budget, and a line naming the file. Its ``is_error`` and ``error`` are kept;
``meta`` gains ``spill`` (path and size). Results with images, results of the tools named in
``skip`` (``read`` pages itself: spilling it would only send the model to read the spill) and
calls with no session are left alone. Spilling is best effort: a file that cannot be written is
logged and the result is passed on unchanged, never turned into an error.

`ResultSpill.bound_text` applies the same rule to a text that enters the model's context by
another way than a tool result (a hook's reason or context): over the budget, the text is
saved the same way and replaced by its head, its tail and the file's path. It always bounds:
when the file cannot be written, the notice says so and the middle is dropped.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import os
import re
import secrets
from collections.abc import Collection
from pathlib import Path

from dsh_llm import TextBlock
from dsh_tools._disposer import Disposer
from dsh_tools._execution import ToolExecution
from dsh_tools._registry import ToolRegistry
from dsh_tools._result import ToolResult

__all__ = ["MAX_INLINE_BYTES", "ResultSpill"]

_log = logging.getLogger("dsh_tools")

MAX_INLINE_BYTES = 50_000
"""The UTF-8 size above which a text result is spilled."""

_NOTICE_RESERVE = 400
"""Bytes of the budget kept for the notice line between the head and the tail."""

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def _cut_head(data: bytes, size: int) -> str:
    return data[:size].decode("utf-8", errors="ignore")


def _cut_tail(data: bytes, size: int) -> str:
    return data[len(data) - size :].decode("utf-8", errors="ignore") if size else ""


class ResultSpill:
    """The hook described in the module docs; ``install(registry)`` adds it."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        max_inline_bytes: int = MAX_INLINE_BYTES,
        skip: Collection[str] = ("read",),
    ) -> None:
        if isinstance(max_inline_bytes, bool) or not isinstance(max_inline_bytes, int):
            raise ValueError(f"max_inline_bytes must be a whole number, not {max_inline_bytes!r}")
        if max_inline_bytes < 2 * _NOTICE_RESERVE:
            raise ValueError(
                f"max_inline_bytes must be at least {2 * _NOTICE_RESERVE}, not {max_inline_bytes}"
            )
        self.root = Path(root).absolute()
        self.max_inline_bytes = max_inline_bytes
        self.skip = frozenset(skip)

    def install(self, registry: ToolRegistry) -> Disposer:
        """Add the hook to ``registry``'s post-execute hooks."""
        return registry.add_post_execute_hook(self)

    async def __call__(self, execution: ToolExecution, result: ToolResult) -> ToolResult | None:
        """The result to give the model instead, or ``None`` to keep ``result``."""
        if execution.tool_name in self.skip or execution.session_id is None:
            return None
        if not result.content or not all(isinstance(b, TextBlock) for b in result.content):
            return None
        data = result.text.encode("utf-8", errors="surrogatepass")
        if len(data) <= self.max_inline_bytes:
            return None
        label = f"{execution.tool_name}-{execution.call_id}"
        try:
            path = await asyncio.to_thread(self._save, execution.session_id, label, data)
        except OSError as error:
            _log.warning(
                "session %s: the %d-byte result of %s (call %s) could not be spilled: %s",
                execution.session_id,
                len(data),
                execution.tool_name,
                execution.call_id,
                error,
            )
            return None
        meta = result.meta if isinstance(result.meta, dict) else {}
        if result.meta is not None and not isinstance(result.meta, dict):
            meta = {"meta": result.meta}
        return result.model_copy(
            update={
                "content": [TextBlock(text=self._shortened(data, "result", path))],
                "meta": {**meta, "spill": {"path": str(path), "bytes": len(data)}},
            }
        )

    async def bound_text(
        self, text: str, *, session_id: str | None, label: str, what: str = "text"
    ) -> str:
        """``text`` itself when its UTF-8 size is within ``max_inline_bytes``; else its head
        and tail within the budget and a notice naming the ``0600`` file that keeps it whole
        (in the folder of ``session_id``, the file named after ``label``; ``what`` names the
        text in the notice). A file that cannot be written is logged and named as lost in the
        notice: the text returned is bounded either way."""
        data = text.encode("utf-8", errors="surrogatepass")
        if len(data) <= self.max_inline_bytes:
            return text
        try:
            path: Path | str = await asyncio.to_thread(self._save, session_id, label, data)
        except OSError as error:
            _log.warning(
                "session %s: the %d-byte %s (%s) could not be spilled: %s",
                session_id,
                len(data),
                what,
                label,
                error,
            )
            path = f"no file: it could not be saved ({error})"
        return self._shortened(data, what, path)

    def _shortened(self, data: bytes, what: str, path: Path | str) -> str:
        budget = self.max_inline_bytes - _NOTICE_RESERVE
        head, tail = _cut_head(data, (budget + 1) // 2), _cut_tail(data, budget // 2)
        omitted = (
            len(data)
            - len(head.encode("utf-8", "surrogatepass"))
            - len(tail.encode("utf-8", "surrogatepass"))
        )
        where = (
            f"the whole {what} is in {path} (read or grep it there)"
            if isinstance(path, Path)
            else f"the whole {what} was not kept ({path})"[: _NOTICE_RESERVE // 2]
        )
        notice = f"\n\n[{what} truncated: {omitted} of {len(data)} bytes omitted here; {where}]\n\n"
        return head + notice + tail

    def _save(self, session_id: str | None, label: str, data: bytes) -> Path:
        session = hashlib.sha256((session_id or "").encode()).hexdigest()[:32]
        folder = self.root / f"session-{session}"
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        name = _UNSAFE.sub("_", label)[:80]
        path = folder / f"{secrets.token_hex(4)}-{name}.txt"
        fd = os.open(
            path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
        )
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        return path
