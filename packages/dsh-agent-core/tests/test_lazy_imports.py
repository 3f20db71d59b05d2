"""What ``dsh`` imports before it does anything (issue 34: start fast through lazy imports).

The installed ``dsh`` runs with ``PYTHONPROFILEIMPORTTIME`` set, which makes the interpreter
write one ``import time:`` line on standard error per module it imports; the tests read the
module names from there. ``--help`` loads neither the harness nor the models, pydantic or the
terminal UI, and nothing loads PostgreSQL's driver (psycopg) or the MCP SDK unless the
configuration uses them. No timing is asserted here: ``bench/bench_startup.py`` measures speed.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import pytest

import dsh_agent_core

if TYPE_CHECKING:  # conftest's classes, for the annotations only
    from conftest import Dsh, LoopbackModel

HEAVY = ("dsh_agent_core._harness", "dsh_agent_core._config", "pydantic", "httpx", "prompt_toolkit")
"""What `dsh --help` (or a command's) has no use for."""

CONFIGURED_ONLY = ("psycopg", "mcp", "acp", "dsh_acp")
"""PostgreSQL's driver, the MCP SDK and the ACP agent: imported only when the configuration (or
``dsh acp``) uses them."""


def _imported(dsh: Dsh, *args: str) -> tuple[int, set[str], str]:
    """Run ``dsh ARGS``: its exit status, the modules it imported, the rest of its stderr."""
    dsh.extra_env["PYTHONPROFILEIMPORTTIME"] = "1"
    done = dsh(*args)
    modules: set[str] = set()
    rest = []
    for line in done.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:"):
            name = line.rpartition("|")[2].strip()
            if name != "package":  # the header line
                modules.add(name)
        else:
            rest.append(line)
    return done.returncode, modules, "\n".join(rest)


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    """Which of ``names`` (packages: their submodules count) are among ``modules``."""
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.parametrize(
    "args",
    [["--help"], ["run", "--help"], ["sessions", "--help"], ["acp", "--help"]],
    ids=" ".join,
)
def test_help_imports_no_harness_models_or_configured_backends(dsh: Dsh, args: list[str]) -> None:
    code, modules, stderr = _imported(dsh, *args)
    assert code == 0, stderr
    assert "click" in modules  # the import lines were read
    assert _loaded(modules, HEAVY + CONFIGURED_ONLY) == []


def test_a_turn_without_postgres_or_mcp_imports_neither(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    dsh.configure(model_server)
    model_server.scripts = [model_server.text_answer("Hi.")]
    code, modules, stderr = _imported(dsh, "run", "hello")
    assert code == 0, stderr
    assert "dsh_agent_core._harness" in modules  # the turn ran through the harness
    assert _loaded(modules, CONFIGURED_ONLY) == []


def test_a_postgres_backend_does_import_psycopg(dsh: Dsh, model_server: LoopbackModel) -> None:
    # the check above would pass vacuously if these lines named nothing: here they must name it
    dsh.configure(model_server, '[persistence]\nbackend = "postgres"\n')
    dsh.extra_env["DSH_POSTGRES_DSN"] = "postgresql://nobody@127.0.0.1:9/nothing"
    _code, modules, _stderr = _imported(dsh, "sessions", "list")
    assert "psycopg" in modules


def test_a_configured_mcp_server_does_import_the_mcp_sdk(
    dsh: Dsh, model_server: LoopbackModel
) -> None:
    server = f"[mcp.servers.nothing]\ncommand = {json.dumps(sys.executable)}\nargs = ['-c', '']\n"
    dsh.configure(model_server, server)
    model_server.scripts = [model_server.text_answer("Hi.")]
    _code, modules, _stderr = _imported(dsh, "run", "hello")
    assert "mcp" in modules


def test_every_public_name_is_still_there() -> None:
    """The package imports each name on first use; every name of ``__all__`` resolves and
    ``dir()`` lists it."""
    for name in dsh_agent_core.__all__:
        assert getattr(dsh_agent_core, name) is not None, name
    assert set(dsh_agent_core.__all__) <= set(dir(dsh_agent_core))
    with pytest.raises(AttributeError):
        dsh_agent_core.no_such_name  # type: ignore[attr-defined]  # noqa: B018
