"""``dsh config --dump``: a TOML config file that loads back to the same configuration, with
what dsh worked out as comments; secrets never in it."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from dsh_agent_core import Config, load_config
from dsh_agent_core.cli import cli
from dsh_agent_core.cli._config_toml import config_toml

PROVIDERS = """\
model = "local:qwen"
max_tokens = 4096
[providers.deepseek]
context_window = 65536
[providers.scripted]
replies = ["A scripted answer."]
[providers.local]
base_url = "http://127.0.0.1:9/v1"
api_key_env = "LOCAL_KEY"
timeout = 30
tool_choice = { type = "function", function = { name = "bash" } }
headers = { Authorization = { env = "LLM_AUTH" } }
context_windows = { "llama3.1:8b" = 8192, "a b" = 5, "" = 7, "é" = 9 }
[providers.local.extra_body]
"options.num_ctx" = 4096
nested = { "k:v" = [1, 2], list = [{ a = 1 }] }
mixed = [1, { "a.b" = 1 }]
[providers."my.server:8080"]
kind = "scripted"
replies = ["one", "two"]
[models."local:qwen"]
prices = { input = 1.5, output = 2 }
"""

MCP = """\
[mcp.servers."git.hub:tools"]
command = "true"
args = ["--stdio"]
env = { "WEIRD.VAR" = { env = "HOME" } }
[mcp.servers.remote]
url = "http://127.0.0.1:1/mcp"
headers = { Authorization = { env = "MCP_TOKEN" } }
"""

POSTGRES = """\
[persistence]
backend = "postgres"
dsn_env = "PG_DSN"
postgres_schema = "agents"
"""

SQLITE = """\
[persistence]
backend = "sqlite"
path = "~/db/sessions.sqlite3"
sqlite_compression = false
"""

PROFILES_AND_PRESETS = """\
system_file = "prompt.md"
append_system = "Be brief."
[persistence]
compression = "zstd"
[presets.reviewer]
system = "Review."
tools = ["read", "grep"]
model = "deepseek"
[presets."two words"]
model = "openai:gpt-6-sol"
[todo]
enabled = true
allow_parallel_in_progress = false
[sandbox]
mode = "read-only"
writable_roots = ["~/scratch"]
deny_read = ["~/.ssh"]
[compaction]
threshold_ratio = 0.7
summarization_provider = "deepseek"
summarization_model = "deepseek-v4-flash"
[hooks]
dialect = "claude-code"
env = { HOOK_LEVEL = "debug" }
[[hooks.PreToolUse]]
matcher = "Bash|Write"
hooks = [{ type = "command", command = "echo 'hi'", timeout = 5 }]
[profiles.plain.persistence]
compression = "none"
root = "logs"
[profiles.plain.sandbox]
approval = "never"
[profiles.plain.todo]
enabled = false
"""

CONFIGS = {
    "default": ("", None),
    "providers": (PROVIDERS, None),
    "mcp": (MCP, None),
    "postgres": (POSTGRES, None),
    "sqlite": (SQLITE, None),
    "profiles-and-presets": (PROFILES_AND_PRESETS, None),
    "a-profile-chosen": (PROFILES_AND_PRESETS, "plain"),
}


def _loaded(tmp_path: Path, text: str, profile: str | None) -> tuple[Config, dict[str, str]]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "prompt.md").write_text("From a file.\n")
    (home / "config.toml").write_text(text)
    env = {"DSH_HOME": str(home), "LOCAL_KEY": "sk-secret"}
    return load_config(profile, env=env), env


def _reloaded(tmp_path: Path, text: str, env: dict[str, str]) -> Config:
    """``text`` loaded as a config file from another folder, in the same environment."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / "dump.toml").write_text(text)
    return load_config(path=elsewhere / "dump.toml", env=env)


@pytest.fixture(autouse=True)
def _user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``~`` is a folder of the test's own."""
    monkeypatch.setenv("HOME", str(tmp_path / "user"))


def _where_from(config: Config, like: Config) -> Config:
    """``config`` with ``like``'s ``source`` and ``profile``: where it was read from."""
    return config.model_copy(update={"source": like.source, "profile": like.profile})


@pytest.mark.parametrize(("text", "profile"), CONFIGS.values(), ids=CONFIGS)
def test_the_dump_loads_back_to_the_same_configuration(
    tmp_path: Path, text: str, profile: str | None
) -> None:
    config, env = _loaded(tmp_path, text, profile)
    dumped = config_toml(config.as_written(), config.dump())
    reloaded = _reloaded(tmp_path, dumped, env)
    assert _where_from(reloaded, config) == config
    assert reloaded.persistence_location() == config.persistence_location()
    for name in config.provider_names():  # a built-in provider keeps what it does not set
        assert reloaded.provider(name) == config.provider(name), name
    for preset in (None, *config.presets):
        assert reloaded.system_prompt(preset) == config.system_prompt(preset)
    again = config_toml(reloaded.as_written(), reloaded.dump())
    assert _but_where_from(again) == _but_where_from(dumped)  # and dumps the same


def _but_where_from(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith(("# source ", "# profile "))]


@pytest.mark.parametrize(("text", "profile"), CONFIGS.values(), ids=CONFIGS)
def test_dsh_config_dump_prints_that_text(tmp_path: Path, text: str, profile: str | None) -> None:
    config, env = _loaded(tmp_path, text, profile)
    args = ["--profile", profile] if profile else []
    done = CliRunner().invoke(cli, [*args, "config", "--dump"], env=env)
    assert done.exit_code == 0, done.output
    reloaded = _reloaded(tmp_path, done.output, env)
    assert _where_from(reloaded, config) == config


@pytest.mark.parametrize(("text", "profile"), CONFIGS.values(), ids=CONFIGS)
def test_the_toml_holds_exactly_the_written_part(
    tmp_path: Path, text: str, profile: str | None
) -> None:
    config, _ = _loaded(tmp_path, text, profile)
    written = config.as_written()
    read = tomllib.loads(config_toml(written, config.dump()))
    assert read == json.loads(json.dumps(written), object_hook=_without_none)


def _without_none(table: dict[str, object]) -> dict[str, object]:
    return {key: value for key, value in table.items() if value is not None}


def test_secrets_are_never_written_and_a_literal_header_is_not_read_back(tmp_path: Path) -> None:
    text = (
        '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\n'
        'headers = { X-Literal = "abc123", X-Env = { env = "TOK" } }\n'
        '[mcp.servers.remote]\nurl = "http://127.0.0.1:1/mcp"\n'
        'headers = { X-Team = "literal-secret", Authorization = { env = "MCP_TOKEN" } }\n'
    )
    config, env = _loaded(tmp_path, text, None)
    env |= {"TOK": "from-the-env", "MCP_TOKEN": "Bearer very-secret"}
    dumped = config_toml(config.as_written(), config.dump())
    for secret in ("abc123", "from-the-env", "literal-secret", "very-secret", "sk-secret"):
        assert secret not in dumped
    assert '# X-Literal = "***"' in dumped  # shown as a comment: there is one, not what
    reloaded = _reloaded(tmp_path, dumped, env)
    local = reloaded.provider("local")
    assert local is not None
    assert dict(local.headers) == {"X-Env": config.providers["local"].headers["X-Env"]}
    assert reloaded.mcp.servers["remote"]["headers"] == {"Authorization": {"env": "MCP_TOKEN"}}
    # everything else is the same
    unmasked = config.model_copy(update={"providers": reloaded.providers, "mcp": reloaded.mcp})
    assert _where_from(reloaded, config) == unmasked


def test_each_provider_shows_the_keys_of_its_kind(tmp_path: Path) -> None:
    config, _ = _loaded(tmp_path, PROVIDERS, None)
    providers = config.dump()["providers"]
    assert "replies" not in providers["deepseek"]
    assert "replies" not in providers["local"]
    assert providers["scripted"]["replies"] == ["A scripted answer."]
    assert "base_url" not in providers["scripted"]
    assert "api_key" not in providers["my.server:8080"]
    assert providers["local"]["api_key"] == "***"  # LOCAL_KEY is set, never shown


def test_the_dump_shows_the_resolved_location_and_writes_the_configured_one(
    tmp_path: Path,
) -> None:
    config, _ = _loaded(tmp_path, SQLITE, None)
    assert config.dump()["persistence"]["path"] == str(tmp_path / "user/db/sessions.sqlite3")
    assert config.as_written()["persistence"]["path"] == "~/db/sessions.sqlite3"
    default, _ = _loaded(tmp_path, "", None)
    dumped = config_toml(default.as_written(), default.dump())
    assert f'# root = "{tmp_path / "home" / "sessions-plain"}"' in dumped.splitlines()


def test_an_unset_todo_enabled_stays_unset_through_the_dump(tmp_path: Path) -> None:
    """Unset, ``[todo] enabled`` means "where plans are shown": the dump says so in a comment
    and writes nothing a reload would read as a choice."""
    config, env = _loaded(tmp_path, "", None)
    dumped = config_toml(config.as_written(), config.dump())
    assert "# enabled is not set" in dumped.split("[todo]")[1].split("[")[0]
    reloaded = _reloaded(tmp_path, dumped, env)
    assert reloaded.todo.enabled is None
    assert reloaded.todo.offered(shows_plans=True)
    assert not reloaded.todo.offered(shows_plans=False)
