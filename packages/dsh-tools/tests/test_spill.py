"""ResultSpill: an oversized text result is kept whole in a private file; the model gets the
head, the tail and the file's path, within the budget; anything else passes unchanged."""

from __future__ import annotations

import stat
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import BaseModel

from dsh_llm import ImageBlock, TextBlock
from dsh_tools import (
    MAX_INLINE_BYTES,
    ResultSpill,
    ToolCall,
    ToolDefinition,
    ToolExecution,
    ToolRegistry,
    ToolResult,
)


class Args(BaseModel):
    size: int
    error: bool = False
    image: bool = False


class Producer(ToolDefinition[Args]):
    description = "Produce text."
    parameters = Args

    def __init__(self, name: str = "produce") -> None:
        self.name = name

    async def execute(self, args: Args, execution: ToolExecution) -> ToolResult:
        text = "".join(f"{index:09d}\n" for index in range(args.size // 10))
        if args.error:
            return ToolResult(content=[TextBlock(text=text)], is_error=True)
        if args.image:
            return ToolResult.ok(
                [TextBlock(text=text), ImageBlock(data="QUJD", mime_type="image/png")]
            )
        return ToolResult.ok(text, meta={"kept": True})


def spilled(path: Path) -> tuple[str, int, int]:
    """A spill file's text, its mode and its folder's mode."""
    return (
        path.read_text(),
        stat.S_IMODE(path.stat().st_mode),
        stat.S_IMODE(path.parent.stat().st_mode),
    )


def files_under(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


def caller(session_id: str = "s1") -> Any:
    return SimpleNamespace(session=SimpleNamespace(header=SimpleNamespace(id=session_id)), cwd=None)


def registry(root: Path, *names: str, **options: Any) -> ToolRegistry:
    tools = ToolRegistry()
    for name in names or ("produce",):
        tools.register(Producer(name))
    ResultSpill(root, **options).install(tools)
    return tools


async def run(
    tools: ToolRegistry, name: str = "produce", who: Any = None, **args: Any
) -> ToolResult:
    import json

    return await tools.execute(ToolCall("call/1", name, json.dumps(args)), who or caller())


async def test_a_result_over_the_budget_is_spilled_whole(tmp_path: Path) -> None:
    tools = registry(tmp_path / "spill")
    result = await run(tools, size=200_000)
    whole = "".join(f"{index:09d}\n" for index in range(20_000))
    assert not result.is_error
    assert len(result.text.encode()) <= MAX_INLINE_BYTES
    path = Path(result.meta["spill"]["path"])  # type: ignore[index]
    assert spilled(path) == (whole, 0o600, 0o700)
    assert result.meta == {"kept": True, "spill": {"path": str(path), "bytes": 200_000}}
    assert result.text.startswith(whole[:1000])
    assert result.text.endswith(whole[-1000:])
    assert f"the whole result is in {path}" in result.text
    omitted = (
        200_000
        - len(result.text.encode())
        + len(result.text.split("\n\n[result truncated")[1].split("]\n\n")[0].encode())
        + len("\n\n[result truncated]\n\n")
    )
    assert f"[result truncated: {omitted} of 200000 bytes omitted here" in result.text
    assert "call_1" in path.name  # the call id made safe as a file name


async def test_an_error_result_is_spilled_and_stays_an_error(tmp_path: Path) -> None:
    result = await run(registry(tmp_path), size=60_000, error=True)
    assert result.is_error
    assert "spill" in result.meta  # type: ignore[operator]


@pytest.mark.parametrize(
    ("kind", "args"),
    [("within the budget", {"size": 40_000}), ("with an image", {"size": 60_000, "image": True})],
)
async def test_results_within_the_budget_or_with_images_pass(
    tmp_path: Path, kind: str, args: Any
) -> None:
    result = await run(registry(tmp_path), **args)
    assert "spill" not in (result.meta or {}), kind
    assert files_under(tmp_path) == []


async def test_read_and_session_less_calls_are_left_alone(tmp_path: Path) -> None:
    tools = registry(tmp_path, "read", "produce")
    assert "spill" not in ((await run(tools, "read", size=60_000)).meta or {})
    no_session = SimpleNamespace(session=SimpleNamespace(header=SimpleNamespace(id=None)), cwd=None)
    assert "spill" not in ((await run(tools, who=no_session, size=60_000)).meta or {})


async def test_a_spill_that_cannot_be_written_keeps_the_result(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    result = await run(registry(blocked), size=60_000)
    assert not result.is_error
    assert len(result.text) == 60_000
    assert result.meta == {"kept": True}


async def test_sessions_get_separate_folders(tmp_path: Path) -> None:
    tools = registry(tmp_path)
    one = await run(tools, who=caller("a"), size=60_000)
    two = await run(tools, who=caller("b"), size=60_000)
    assert Path(one.meta["spill"]["path"]).parent != Path(two.meta["spill"]["path"]).parent  # type: ignore[index]


def test_a_budget_too_small_for_the_notice_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_inline_bytes"):
        ResultSpill(tmp_path, max_inline_bytes=100)


def _only_file(root: Path, pattern: str) -> Path:
    (path,) = root.glob(pattern)
    return path


async def test_bound_text_keeps_a_long_text_whole_in_the_sessions_folder(tmp_path: Path) -> None:
    spill = ResultSpill(tmp_path)
    text = "HEAD" + "é" * 100_000 + "TAIL"
    bounded = await spill.bound_text(text, session_id="s-1", label="hook/Stop", what="hook text")
    assert len(bounded.encode()) <= MAX_INLINE_BYTES
    assert bounded.startswith("HEAD")
    assert bounded.endswith("TAIL")
    assert "[hook text truncated: " in bounded
    path = _only_file(tmp_path, "session-*/*hook_Stop.txt")
    assert f"the whole hook text is in {path} " in bounded
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.read_text(encoding="utf-8") == text
    assert await spill.bound_text("short", session_id="s-1", label="x") == "short"


async def test_bound_text_bounds_even_when_the_file_cannot_be_written(tmp_path: Path) -> None:
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    bounded = await ResultSpill(blocked).bound_text("y" * 200_000, session_id=None, label="x")
    assert len(bounded.encode()) <= MAX_INLINE_BYTES
    assert "the whole text was not kept (no file: it could not be saved" in bounded
