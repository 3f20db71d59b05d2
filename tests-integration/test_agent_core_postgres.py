"""backend = "postgres" as composed (issue 17): the DSN from the variable the config names
(never in the dump), sessions stored and listed through the harness, a missing variable one
error naming it. Needs the PostgreSQL server at 127.0.0.1:5432 (fails loudly without it)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from dsh_agent_core import Config, DshError, compose, load_config
from dsh_llm.testing import ScriptedModel, text_response

DSN = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def schema() -> Iterator[str]:
    name = f"dsh_core_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(DSN, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def configured(home: Path, schema: str, env: dict[str, str]) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    text = f'[persistence]\nbackend = "postgres"\npostgres_schema = "{schema}"\n'
    (home / "config.toml").write_text(text)
    return load_config(env={"DSH_HOME": str(home), **env})


async def test_sessions_go_to_postgres_and_the_dsn_is_never_shown(
    tmp_path: Path, schema: str
) -> None:
    secret_dsn = DSN + "?application_name=dsh-core-test"
    config = configured(tmp_path / "home", schema, {"DSH_POSTGRES_DSN": secret_dsn})
    dumped = config.dump()["persistence"]
    assert dumped["dsn"] == "***"
    assert dumped["dsn_env"] == "DSH_POSTGRES_DSN"
    assert secret_dsn not in str(config.dump())
    model = ScriptedModel([text_response("stored")])
    async with compose(config, models={"scripted": model}) as harness:
        agent = await harness.create("hello", model="scripted:m", cwd=tmp_path)
        await agent.wait_idle()
        session_id = agent.id
    async with compose(config) as harness:
        (snapshot,) = [s for s in await harness.sessions() if s.header.id == session_id]
        assert snapshot.event_count is not None
        assert snapshot.event_count > 0
    with psycopg.connect(DSN) as connection:
        (count,) = connection.execute(
            f'SELECT count(*) FROM "{schema}".events WHERE session_id = %s', (session_id,)
        ).fetchone()  # type: ignore[misc]
    assert count > 0


def test_a_missing_dsn_variable_is_one_error_naming_it(tmp_path: Path, schema: str) -> None:
    config = configured(tmp_path / "home", schema, {})
    assert config.dump()["persistence"]["dsn"] == "(not set)"
    with pytest.raises(DshError, match="DSH_POSTGRES_DSN"):
        compose(config)
