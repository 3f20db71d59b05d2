"""The configuration: defaults without a file, TOML, profiles, environment overrides, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from dsh_agent_core import (
    Config,
    ConfigError,
    HomeConflictError,
    JsonlLocation,
    PersistenceLocation,
    PostgresLocation,
    SqliteLocation,
    UnknownPresetError,
    compose,
    load_config,
    parse_route,
)
from dsh_agent_core._models import provider_models
from dsh_llm import context_window_of


def test_no_file_means_plain_jsonl_under_the_home(tmp_path: Path) -> None:
    config = load_config(env={"DSH_HOME": str(tmp_path)})
    assert config.source is None
    dumped = config.dump()
    assert dumped["dsh_home"] == str(tmp_path)
    assert dumped["persistence"] == {
        "backend": "jsonl",
        "root": str(tmp_path / "sessions-plain"),
        "compression": "none",
        "pack_chunks": False,
        "path": None,
        "sqlite_compression": True,
        "dsn_env": "DSH_POSTGRES_DSN",
        "postgres_schema": "dsh",
    }
    assert config.model == "deepseek:deepseek-v4-flash"  # deepseek-chat was retired


def test_zstd_and_sqlite_are_one_block_away(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[persistence]\ncompression = "zstd"\n')
    zstd = load_config(env={"DSH_HOME": str(tmp_path)}).dump()["persistence"]
    assert zstd["root"] == str(tmp_path / "sessions")
    (tmp_path / "config.toml").write_text('[persistence]\nbackend = "sqlite"\n')
    sqlite = load_config(env={"DSH_HOME": str(tmp_path)}).dump()["persistence"]
    assert sqlite["path"] == str(tmp_path / "sessions.sqlite3")


def test_profiles_overlay_the_top_level_and_env_overrides_come_after(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        'model = "deepseek:deepseek-chat"\nsystem = "top"\n'
        '[persistence]\ncompression = "none"\n'
        '[profiles.small]\nmodel = "openai:gpt-small"\n[profiles.small.persistence]\n'
        'compression = "zstd"\n'
    )
    env = {"DSH_HOME": str(tmp_path)}
    small = load_config("small", env=env)
    assert small.model == "openai:gpt-small"
    assert small.system == "top"
    assert small.persistence.compression == "zstd"
    assert small.profile == "small"
    from_env = load_config(env={**env, "DSH_PROFILE": "small", "DSH_MODEL": "scripted:x"})
    assert from_env.profile == "small"
    assert from_env.model == "scripted:x"
    overridden = load_config(env=env, overrides={"model": "scripted:y"})
    assert overridden.model == "scripted:y"


def test_an_unknown_profile_names_the_file_and_the_known_ones(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("[profiles.a]\n[profiles.b]\n")
    with pytest.raises(ConfigError, match=r"config\.toml: profiles\.c: no such profile.*a, b"):
        load_config("c", env={"DSH_HOME": str(tmp_path)})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("modle = 'x'\n", "modle"),
        ("model = 'no-colon'\n", "model"),
        ("[persistence]\ncompression = 'lz4'\n", "persistence.compression"),
        ("[providers.x]\napi_key_env = 'not a name'\n", "providers.x.api_key_env"),
        ("[presets.p]\nmodel = 'bad'\n", "presets"),
        ("max_tokens = 0\n", "max_tokens"),
    ],
)
def test_bad_values_name_the_file_and_the_key(tmp_path: Path, text: str, key: str) -> None:
    (tmp_path / "config.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(env={"DSH_HOME": str(tmp_path)})
    assert str(tmp_path / "config.toml") in str(caught.value)
    assert key in str(caught.value)


def test_a_file_that_is_not_toml_is_refused_with_its_path(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text("this is = = not toml")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_config(env={"DSH_HOME": str(tmp_path)})


def test_dsh_config_points_at_another_file(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.toml"
    other.write_text('model = "scripted:z"\n')
    config = load_config(env={"DSH_HOME": str(tmp_path / "home"), "DSH_CONFIG": str(other)})
    assert config.model == "scripted:z"
    assert config.source == str(other)


def test_the_dump_never_holds_a_key(tmp_path: Path) -> None:
    env = {"DSH_HOME": str(tmp_path), "DEEPSEEK_API_KEY": "sk-very-secret"}
    dumped = load_config(env=env).dump()
    assert "sk-very-secret" not in repr(dumped)
    assert dumped["providers"]["deepseek"]["api_key"] == "***"  # set in the env it was loaded in
    assert dumped["providers"]["openai"]["api_key"] == "(not set)"


def test_routes_are_provider_colon_model() -> None:
    assert parse_route("deepseek:deepseek-chat") == ("deepseek", "deepseek-chat")
    assert parse_route("local:org/model:tag") == ("local", "org/model:tag")
    with pytest.raises(ConfigError, match="provider:model"):
        parse_route("deepseek")


async def test_two_homes_that_disagree_fail_composition_naming_both(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        f'dsh_home = "{tmp_path}"\n[skills.local]\ndsh_home = "{tmp_path / "other"}"\n'
    )
    config = load_config(env={"DSH_HOME": str(tmp_path)})
    with pytest.raises(HomeConflictError) as caught:
        compose(config)
    assert str(tmp_path) in str(caught.value)
    assert str(tmp_path / "other") in str(caught.value)


async def test_the_same_home_twice_is_fine(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        f'dsh_home = "{tmp_path}"\n[skills.local]\ndsh_home = "{tmp_path}/./"\n'
    )
    async with compose(load_config(env={"DSH_HOME": str(tmp_path)})) as harness:
        assert harness.home == tmp_path
        assert harness.shell_env.dsh_home == tmp_path


async def test_an_unknown_preset_is_a_config_error(tmp_path: Path) -> None:
    async with compose(load_config(env={"DSH_HOME": str(tmp_path)})) as harness:
        with pytest.raises(UnknownPresetError, match=r"presets\.nope"):
            harness.loop("nope")


def test_the_readme_config_example_loads(tmp_path: Path) -> None:
    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml dsh-config\n", 1)[1].split("```", 1)[0]
    (tmp_path / "config.toml").write_text(example)
    config = load_config("offline", env={"DSH_HOME": str(tmp_path)})
    assert config.model == "local:qwen2.5-coder"
    assert config.presets["reviewer"].tools == ("bash", "session_status")
    assert config.provider("local") is not None


def test_a_configured_builtin_provider_keeps_what_it_does_not_set(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[providers.deepseek]\nbase_url = "http://127.0.0.1:9/v1"\n'
    )
    provider = load_config(env={"DSH_HOME": str(tmp_path)}).provider("deepseek")
    assert provider is not None
    assert provider.base_url == "http://127.0.0.1:9/v1"
    assert provider.api_key_env == "DEEPSEEK_API_KEY"


def test_a_providers_models_report_their_configured_context_windows(tmp_path: Path) -> None:
    """Issue 21 §1: per model, over the provider's, else unknown; bad values name the key."""
    (tmp_path / "config.toml").write_text(
        '[providers.local]\nbase_url = "http://127.0.0.1:9/v1"\ncontext_window = 32768\n'
        'context_windows = { "big" = 131072 }\n'
    )
    config = load_config(env={"DSH_HOME": str(tmp_path)})
    models = provider_models(config, env={})
    assert context_window_of(models["local"], "small") == 32768
    assert context_window_of(models["local"], "big") == 131072
    assert context_window_of(models["scripted"], "demo") is None
    (tmp_path / "config.toml").write_text('[providers.local]\ncontext_windows = { "m" = 0 }\n')
    with pytest.raises(ConfigError, match="context_windows"):
        load_config(env={"DSH_HOME": str(tmp_path)})


# -- the persistence location ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", JsonlLocation(root=Path("HOME/sessions-plain"), compression="none")),
        ('compression = "zstd"', JsonlLocation(root=Path("HOME/sessions"), compression="zstd")),
        ('root = "~/logs"', JsonlLocation(root=Path("USER/logs"), compression="none")),
        ('root = "logs"', JsonlLocation(root=Path("CWD/logs"), compression="none")),
        ('backend = "sqlite"', SqliteLocation(path=Path("HOME/sessions.sqlite3"))),
        (
            'backend = "sqlite"\npath = "db/s.sqlite3"',
            SqliteLocation(path=Path("CWD/db/s.sqlite3")),
        ),
        (
            'backend = "postgres"\ndsn_env = "PG"\npostgres_schema = "agents"',
            PostgresLocation(dsn_env="PG", schema="agents"),
        ),
    ],
    ids=["default", "zstd", "user-root", "relative-root", "sqlite", "sqlite-path", "postgres"],
)
def test_the_persistence_location_is_resolved_from_the_settings_and_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: PersistenceLocation
) -> None:
    home, user, cwd = tmp_path / "home", tmp_path / "user", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(user))
    config = configured_text(home, f"[persistence]\n{text}\n")
    places = {"HOME": home, "USER": user, "CWD": cwd}
    if isinstance(expected, JsonlLocation):
        first, _, rest = str(expected.root).partition("/")
        expected = JsonlLocation(root=places[first] / rest, compression=expected.compression)
    elif isinstance(expected, SqliteLocation):
        first, _, rest = str(expected.path).partition("/")
        expected = SqliteLocation(path=places[first] / rest)
    assert config.persistence_location() == expected
    assert config.persistence.location(config.home()) == expected


def configured_text(home: Path, text: str) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home)})


async def test_the_harness_stores_sessions_at_the_configured_location(tmp_path: Path) -> None:
    config = configured_text(tmp_path / "home", f'[persistence]\nroot = "{tmp_path / "logs"}"\n')
    location = config.persistence_location()
    assert isinstance(location, JsonlLocation)
    async with compose(config) as harness:
        agent = await harness.create(model="scripted:m", cwd=tmp_path)
        row = await harness.status_of(agent.id)
    assert row.session_path is not None
    assert Path(row.session_path).is_relative_to(location.root)
