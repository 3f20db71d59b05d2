"""Hook texts as composed (issue 32, 3.1): the hooks' real local executor bounds what a hook
prints, and a long hook text reaches the model as a bash result of that size does — head and
tail within 50,000 bytes, the whole in a 0600 file under ``<DSH_HOME>/spill``."""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

from dsh_agent_core import compose, load_config
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response
from dsh_tools import MAX_INLINE_BYTES
from shapes import flat


def _hooked(home: Path, hook: Path) -> Any:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        '[sandbox]\nmode = "danger-full-access"\n\n[hooks]\ndialect = "claude-code"\n\n'
        f'[[hooks.PreToolUse]]\nmatcher = "Bash"\nhooks = [{{ command = "{hook}" }}]\n'
    )
    return load_config(env={"DSH_HOME": str(home)})


def _script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/bash\ncat >/dev/null\n" + body)
    path.chmod(0o755)
    return path


def _check_spill_file(text: str, root: Path, whole: str) -> None:
    found = re.search(r"the whole hook text is in (\S+) \(read", text)
    assert found is not None
    spill = Path(found.group(1))
    assert spill.is_relative_to(root)
    assert stat.S_IMODE(spill.stat().st_mode) == 0o600
    assert spill.read_text() == whole


async def _one_bash_call(tmp_path: Path, hook: Path) -> tuple[dict[str, Any], list[Any]]:
    command = {"command": "touch ran", "description": "Touch"}
    model = ScriptedModel([tool_call_response(("c1", "bash", command)), text_response("ok")])
    config = _hooked(tmp_path / "home", hook)
    async with compose(config, models={"scripted": model}) as harness:
        agent = await harness.create("go", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        events = [e.to_wire() for e in agent.session.events]
    (result,) = [flat("tool/result", e["data"]) for e in events if e["type"] == "tool/result"]
    return result, events


async def test_a_300000_byte_deny_reason_reaches_the_model_bounded_with_its_spill_file(
    tmp_path: Path,
) -> None:
    hook = _script(
        tmp_path / "guard.sh",
        "printf 'HEAD%sTAIL' \"$(head -c 300000 /dev/zero | tr '\\0' x)\" >&2\nexit 2\n",
    )
    result, events = await _one_bash_call(tmp_path, hook)
    assert result["isError"]
    assert not (tmp_path / "ran").exists()
    text = "".join(block["text"] for block in result["content"])
    assert len(text.encode()) <= MAX_INLINE_BYTES + 100
    assert "HEAD" in text[:20]
    assert text.endswith("TAIL")
    _check_spill_file(text, tmp_path / "home" / "spill", "HEAD" + "x" * 300_000 + "TAIL")
    for event in events:  # the log holds no unbounded hook text anywhere
        assert len(json.dumps(event)) < MAX_INLINE_BYTES + 2_000


async def test_a_hook_answer_over_the_output_cap_is_a_non_blocking_error(tmp_path: Path) -> None:
    # 2 MiB of JSON deny: more than the hook executor keeps in memory, so it is not read
    hook = _script(
        tmp_path / "deny.sh",
        'printf \'{"decision": "block", "reason": "%s"}\' '
        "\"$(head -c 2097152 /dev/zero | tr '\\0' x)\"\n",
    )
    result, events = await _one_bash_call(tmp_path, hook)
    assert not result["isError"]
    assert (tmp_path / "ran").exists()
    (outcome,) = [e["data"] for e in events if e["type"] == "hook/result"]
    assert outcome["decision"] == "error"
    assert "stdout is over 1048576 bytes" in outcome["stderrSummary"]


async def test_a_stderr_over_the_output_cap_keeps_its_tail_and_says_where_the_whole_is(
    tmp_path: Path,
) -> None:
    hook = _script(
        tmp_path / "guard.sh",
        "printf 'HEAD%sTAIL' \"$(head -c 2097152 /dev/zero | tr '\\0' x)\" >&2\nexit 2\n",
    )
    result, _ = await _one_bash_call(tmp_path, hook)
    assert result["isError"]
    text = "".join(block["text"] for block in result["content"])
    assert len(text.encode()) <= MAX_INLINE_BYTES + 100
    assert "the hook's stderr was over the cap: its start was dropped" in text
    assert text.endswith("TAIL")
