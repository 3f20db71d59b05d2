"""Clauses: the child environment order and the managed ``DSH_*`` namespace."""

from __future__ import annotations

import os

from dsh_shell._errors import ReservedEnvKeyError
from dsh_shell._request import ShellExecRequest
from dsh_shell.testing._context import ClauseContext, ambient_environment, env_lines, expect
from dsh_shell.testing._fixture import LOCAL_PROCESSES
from dsh_shell.testing._registry import ClauseGroup

group = ClauseGroup()
clause = group.clause


async def _child_env(ctx: ClauseContext, **fields: object) -> dict[str, str]:
    result = await ctx.run("env", **fields)
    expect(result.exit_code == 0, f"`env` failed: {result}")
    return env_lines(result.stdout.text)


@clause(LOCAL_PROCESSES)
async def env_inherited_dsh_keys_are_absent(ctx: ClauseContext) -> None:
    """A stale DSH_* value in the parent (any case) never reaches the child."""
    with ambient_environment({"DSH_STALE_PARENT": "stale", "dsh_stale_lower": "stale"}):
        child = await _child_env(ctx)
    leaked = sorted(name for name in child if name.upper().startswith("DSH_"))
    expect(not leaked, f"inherited managed names reached the child: {leaked}")


_CREDENTIAL_NAMES = [
    "CONTRACT_API_KEY",
    "CONTRACT_PASSWORD",
    "CONTRACT_SECRET",
    "CONTRACT_TOKEN",
    "CONTRACT_PASSWD",
    "PGPASSWORD",
    "MYSQL_PWD",
    "CONTRACT_PAT",
    "CONTRACT_AUTH",
    "CONTRACT_CREDENTIALS",
    "COOKIE",
    "DATABASE_URL",
]
_PROXIES_WITH_CREDENTIALS = {
    "http_proxy": "http://user:password@proxy.invalid:3128",
    "HTTPS_PROXY": "user:password@proxy.invalid:3128",
}
_PROXIES_WITHOUT_CREDENTIALS = {
    "all_proxy": "http://proxy.invalid:3128",
    "NO_PROXY": "localhost,.invalid",
}


@clause(LOCAL_PROCESSES)
async def env_credential_shaped_names_are_scrubbed(ctx: ClauseContext) -> None:
    """Credential-shaped parent names and proxies with user:password@ are not inherited.

    Names (any case) containing KEY, PASSWORD, PASSWD, SECRET, TOKEN, CREDENTIAL or COOKIE,
    starting with PGPASS, ending in _PAT or _AUTH, MYSQL_PWD and DATABASE_URL; a proxy
    variable without credentials and ordinary names are inherited.
    """
    ambient = {
        **dict.fromkeys(_CREDENTIAL_NAMES, "leak"),
        **_PROXIES_WITH_CREDENTIALS,
        **_PROXIES_WITHOUT_CREDENTIALS,
        "CONTRACT_PLAIN": "kept",
    }
    with ambient_environment(ambient):
        child = await _child_env(ctx)
    leaked = sorted(
        name for name in [*_CREDENTIAL_NAMES, *_PROXIES_WITH_CREDENTIALS] if name in child
    )
    expect(not leaked, f"credential-shaped names reached the child: {leaked}")
    kept = {name: child.get(name) for name in _PROXIES_WITHOUT_CREDENTIALS}
    expect(kept == _PROXIES_WITHOUT_CREDENTIALS, f"proxies without credentials were lost: {kept}")
    expect(child.get("CONTRACT_PLAIN") == "kept", "an ordinary parent variable was not inherited")
    expect(child.get("PATH") == os.environ.get("PATH"), "PATH was not inherited")


@clause(LOCAL_PROCESSES)
async def env_exported_functions_and_shell_options_are_scrubbed(ctx: ClauseContext) -> None:
    """Exported bash functions (BASH_FUNC_*), SHELLOPTS and BASHOPTS are not inherited.

    An inherited ``BASH_FUNC_echo%%`` would redefine ``echo`` in every command; an inherited
    ``SHELLOPTS=xtrace`` would trace every command to stderr.
    """
    ambient = {
        "BASH_FUNC_echo%%": "() { printf hacked; }",
        "SHELLOPTS": "xtrace",
        "BASHOPTS": "extglob",
    }
    with ambient_environment(ambient):
        result = await ctx.run("echo ran; env")
    expect(
        result.stdout.text.startswith("ran\n"),
        f"echo is not the builtin: {result.stdout.text[:80]!r}",
    )
    expect(
        result.stderr.text == "", f"the shell ran with inherited options: {result.stderr.text!r}"
    )
    child = env_lines(result.stdout.text)
    leaked = sorted(name for name in child if name in ambient or name.startswith("BASH_FUNC_"))
    expect(not leaked, f"exported functions or shell options reached the child: {leaked}")


@clause(LOCAL_PROCESSES)
async def env_bash_env_and_env_are_scrubbed(ctx: ClauseContext) -> None:
    """BASH_ENV and ENV are not inherited, so the shell sources no startup file."""
    startup = ctx.scratch / "startup.sh"
    startup.write_text("echo SOURCED-STARTUP-FILE\n")
    with ambient_environment({"BASH_ENV": str(startup), "ENV": str(startup)}):
        result = await ctx.run("echo ran; env")
    expect("SOURCED-STARTUP-FILE" not in result.stdout.text, "a startup file was sourced")
    child = env_lines(result.stdout.text)
    expect("BASH_ENV" not in child and "ENV" not in child, "BASH_ENV/ENV reached the child")


@clause()
async def env_terminal_defaults_are_set(ctx: ClauseContext) -> None:
    """TERM=dumb, PAGER=cat, GIT_PAGER=cat and NO_COLOR=1 are set for every command."""
    child = await _child_env(ctx)
    wanted = {"TERM": "dumb", "PAGER": "cat", "GIT_PAGER": "cat", "NO_COLOR": "1"}
    got = {name: child.get(name) for name in wanted}
    expect(got == wanted, f"terminal defaults differ: {got}")


@clause()
async def env_explicit_env_overrides_defaults_and_scrub(ctx: ClauseContext) -> None:
    """An explicit env entry wins over the terminal defaults and the credential scrub."""
    child = await _child_env(ctx, env={"TERM": "xterm", "CONTRACT_TOKEN": "explicit"})
    expect(child.get("TERM") == "xterm", f"env TERM did not win: {child.get('TERM')!r}")
    expect(child.get("CONTRACT_TOKEN") == "explicit", "an explicit credential-shaped env was lost")


@clause()
async def env_dsh_env_reaches_the_command(ctx: ClauseContext) -> None:
    """Every dsh_env entry is visible to the command."""
    overlay = {"DSH_SHELL": "1", "DSH_SESSION_ID": "contract-session"}
    child = await _child_env(ctx, dsh_env=overlay)
    got = {name: child.get(name) for name in overlay}
    expect(got == overlay, f"dsh_env values differ in the child: {got}")


@clause(LOCAL_PROCESSES)
async def env_dsh_env_beats_inherited_values(ctx: ClauseContext) -> None:
    """The current dsh_env value wins over a stale parent value of the same name."""
    with ambient_environment({"DSH_SESSION_ID": "stale-parent"}):
        child = await _child_env(ctx, dsh_env={"DSH_SESSION_ID": "current"})
    expect(child.get("DSH_SESSION_ID") == "current", f"got {child.get('DSH_SESSION_ID')!r}")


@clause()
async def env_cannot_displace_dsh_env(ctx: ClauseContext) -> None:
    """resolve() refuses an env key in the DSH_* namespace (any case), naming the key."""
    for key in ("DSH_SESSION_ID", "dsh_session_id", "Dsh_Home"):
        request = ShellExecRequest(
            "true", workdir=ctx.scratch, env={key: "forged"}, dsh_env={"DSH_SESSION_ID": "real"}
        )
        try:
            ctx.executor.resolve(request)
        except ReservedEnvKeyError as error:
            expect(error.key == key, f"the error names {error.key!r}, not {key!r}")
            continue
        raise AssertionError(f"resolve() accepted env key {key!r} in the managed namespace")


@clause()
async def env_host_environment_is_not_modified(ctx: ClauseContext) -> None:
    """Running a command with env and dsh_env leaves this process's os.environ unchanged."""
    before = dict(os.environ)
    await ctx.run("true", env={"CONTRACT_X": "1"}, dsh_env={"DSH_SHELL": "1"})
    expect(dict(os.environ) == before, "os.environ changed")
