"""Nothing a hook executes is writable by confined commands (issue 32, 1.3), whatever shape its
command has and whichever session of a delegation chain it runs for: through the composed
harness, a scripted model, real bash, real bwrap and real hooks."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from dsh_agent_core import Config, compose, load_config
from dsh_bash_sandbox import clear_probe_cache
from dsh_llm import ModelRequest, StreamChunk
from dsh_llm.testing import ScriptedModel, text_response, tool_call_response


def configured(home: Path, text: str) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


def post_tool_use(*commands: str, dialect: str = "claude-code") -> str:
    entries = ", ".join(f"{{ command = {json.dumps(command)} }}" for command in commands)
    return f'[hooks]\ndialect = "{dialect}"\n\n[[hooks.PostToolUse]]\nhooks = [ {entries} ]\n'


class Router:
    """A scripted model that answers each session by its prompt (a text block it was sent)."""

    def __init__(self, scripts: dict[str, Sequence[list[StreamChunk]]]) -> None:
        self.scripts = {prompt: deque(steps) for prompt, steps in scripts.items()}

    def __call__(self, request: ModelRequest) -> list[StreamChunk]:
        for message in request.messages:
            for block in getattr(message, "content", None) or []:
                steps = self.scripts.get(getattr(block, "text", None) or "")
                if steps is not None:
                    return steps.popleft() if steps else text_response("done")
        raise AssertionError("a request no script answers")

    def model(self) -> ScriptedModel:
        return ScriptedModel([self] * 64)


def bash(call_id: str, command: str) -> list[StreamChunk]:
    arguments = {"command": command, "description": "Run it"}
    return tool_call_response((call_id, "bash", json.dumps(arguments)))


def create(call_id: str, prompt: str, cwd: str) -> list[StreamChunk]:
    arguments = {"prompt": prompt, "cwd": cwd}
    return tool_call_response((call_id, "session_create", json.dumps(arguments)))


def plant(paths: Sequence[str], marker: Path) -> str:
    """A command that writes each of ``paths`` as an executable script touching ``marker``."""
    steps = [
        f"mkdir -p $(dirname {path}); printf '#!/bin/sh\\ntouch {marker}\\n' > {path}; "
        f"chmod +x {path}"
        for path in paths
    ]
    return "; ".join(steps) + "; true"


@pytest.fixture(autouse=True)
def _fresh_probes() -> Iterator[None]:
    clear_probe_cache()
    yield
    clear_probe_cache()


@pytest.mark.parametrize(
    ("dialect", "folder", "guard_command"),
    [
        ("claude-code", ".claude", '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh'),
        ("codex", ".codex", ".codex/hooks/guard.sh"),
    ],
)
async def test_a_parent_cannot_plant_what_its_delegated_sessions_hooks_run(
    tmp_path: Path, dialect: str, folder: str, guard_command: str
) -> None:
    """A child in ws/sub and its own child in ws/sub/deeper run their hooks as the root does
    (in ws, with the payload's cwd ws and, in Claude Code, CLAUDE_PROJECT_DIR=ws), so the
    scripts a session plants under a descendant's cwd (sub/.claude/hooks/guard.sh,
    sub/scripts/check.sh, ...) never run: the hooks run the root's files, which every
    session's sandbox keeps read-only."""
    work = tmp_path / "work"
    (work / folder / "hooks").mkdir(parents=True)
    (work / "sub" / "deeper").mkdir(parents=True)
    (work / "scripts").mkdir()
    seen = tmp_path / "seen"
    guard = work / folder / "hooks" / "guard.sh"
    guard.write_text(
        f'#!/bin/bash\necho "$PWD $(jq -r .cwd) ${{CLAUDE_PROJECT_DIR-$PWD}}" >> {seen}\n'
    )
    guard.chmod(0o755)
    (work / "scripts" / "check.sh").write_text("exit 0\n")
    pwned = tmp_path / "PWNED"
    text = post_tool_use(guard_command, "bash scripts/check.sh", dialect=dialect)
    targets = (f"{folder}/hooks/guard.sh", "scripts/check.sh")
    model = Router(
        {
            "root task": [
                bash("r1", plant([f"sub/{t}" for t in targets], pwned)),
                create("r2", "child task", "sub"),
            ],
            "child task": [
                bash("c1", plant([f"deeper/{t}" for t in targets], pwned)),
                create("c2", "grandchild task", "deeper"),
            ],
            "grandchild task": [bash("g1", "true")],
        }
    ).model()
    async with compose(configured(tmp_path / "home", text), models={"scripted": model}) as h:
        root = await h.create("root task", model="scripted:m", cwd=work)
        await root.wait_idle()
        waited: set[str] = set()
        while pending := [a for a in h.live() if a.id not in waited]:
            for agent in pending:
                await agent.wait_idle()
                waited.add(agent.id)
        cwds = sorted(a.cwd or "" for a in h.live())
    real = str(work.resolve())
    assert cwds == sorted([real, f"{real}/sub", f"{real}/sub/deeper"])  # all three ran
    ran = seen.read_text().splitlines()
    assert len(ran) == 5  # r1, r2, c1, c2, g1: each PostToolUse ran the root's guard
    assert set(ran) == {f"{real} {real} {real}"}
    assert not pwned.exists()


SCRIPT_FORMS = [
    "bash -e scripts/check.sh",
    "sh -eu scripts/check.sh",
    "bash --norc scripts/check.sh",
    "bash -o errexit scripts/check.sh",
    "timeout 5 ./scripts/check.sh",
    ". ./scripts/check.sh",
    "source scripts/check.sh",
    "python3.11 scripts/check.sh",
    "bash -c './scripts/check.sh'",
    'sh -c "bash $CLAUDE_PROJECT_DIR/scripts/check.sh"',
    "${CLAUDE_PROJECT_DIR:-.}/scripts/check.sh",
    "if ./scripts/check.sh; then :; fi",
    "env -i ./scripts/check.sh",
    "env -u X ./scripts/check.sh",
    "nice -n 5 ./scripts/check.sh",
    "time -p ./scripts/check.sh",
    "stdbuf -oL ./scripts/check.sh",
    "flock /tmp ./scripts/check.sh",
    "command -p ./scripts/check.sh",
    "exec -a x ./scripts/check.sh",
    "(./scripts/check.sh)",
    "{ ./scripts/check.sh; }",
    "! ./scripts/check.sh",
    "echo $(./scripts/check.sh)",
    "true;./scripts/check.sh",
    "./scripts/check.sh 2>&1|cat",
    "cd scripts && ./check.sh",
    "cd scripts && bash check.sh",
    "xargs ./scripts/check.sh </dev/null",
]


@pytest.mark.parametrize("hook", SCRIPT_FORMS)
async def test_the_model_cannot_rewrite_a_script_a_hook_runs_in_any_form(
    tmp_path: Path, hook: str
) -> None:
    """The model overwrites the script the hook command runs, from bash: the write is refused,
    and the hooks after the call run the user's script, never the model's code."""
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    check = work / "scripts" / "check.sh"
    check.write_text("#!/bin/sh\nexit 0\n")
    check.chmod(0o755)
    pwned = tmp_path / "PWNED"
    attack = f"printf '#!/bin/sh\\ntouch {pwned}\\n' > scripts/check.sh; echo rc=$?"
    model = Router({"go": [bash("b1", attack), bash("b2", "true")]}).model()
    config = configured(tmp_path / "home", post_tool_use(hook))
    async with compose(config, models={"scripted": model}) as h:
        agent = await h.create("go", model="scripted:m", cwd=work)
        await agent.wait_idle()
        results = [
            json.dumps(e.to_wire()["data"]) for e in agent.session.events if e.type == "tool/result"
        ]
    assert "rc=1" in results[0] or "rc=2" in results[0], results[0]  # the write was refused
    assert check.read_text() == "#!/bin/sh\nexit 0\n"
    assert not pwned.exists()


@pytest.mark.parametrize(
    ("hook", "name"),
    [
        ("jq -f scripts/filter.jq", "filter.jq"),
        ("awk -f scripts/a.awk /dev/null", "a.awk"),
        ("python3 scripts/a.py < scripts/input.json", "input.json"),
        ("uv run scripts/a.py", "a.py"),
        ("node --require ./scripts/pre.js scripts/a.js", "pre.js"),
        ("make -C scripts lint", "Makefile"),
        ("npm run hook --prefix scripts", "package.json"),
    ],
)
async def test_every_file_a_hook_command_names_is_read_only(
    tmp_path: Path, hook: str, name: str
) -> None:
    """Programs' script and data operands (``jq -f``, ``awk -f``, a redirected input, ``uv
    run``'s script, an option's value) and the file a build tool reads in the folder it is
    given stay as the user wrote them."""
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    target = work / "scripts" / name
    target.write_text("user\n")
    attack = f"echo model > scripts/{name}; echo rc=$?"
    model = Router({"go": [bash("b1", attack)]}).model()
    config = configured(tmp_path / "home", post_tool_use(hook))
    async with compose(config, models={"scripted": model}) as h:
        agent = await h.create("go", model="scripted:m", cwd=work)
        await agent.wait_idle()
    assert target.read_text() == "user\n"
