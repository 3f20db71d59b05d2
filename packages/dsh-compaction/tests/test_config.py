"""Compaction configuration (reference §1.3): defaults, overrides per model, validation."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from dsh_compaction import CompactionConfig, ModelPolicy, PruneConfig


def test_the_defaults_on_a_million_token_window() -> None:
    policy = CompactionConfig().policy("deepseek", "deepseek-chat")
    assert (policy.threshold(1_000_000), policy.retained(1_000_000)) == (800_000, 160_000)
    assert (policy.max_tokens, policy.compaction_retries, policy.max_overflow_retries) == (
        8192,
        1,
        1,
    )
    config = CompactionConfig()
    assert config.auto is True
    assert (config.prune.threshold_chars, config.prune.head_chars, config.prune.tail_chars) == (
        8192,
        4096,
        1024,
    )


def test_threshold_and_retention_override_independently() -> None:
    assert CompactionConfig(threshold_ratio=0.5).policy(None, None).retained(1000) == 160
    assert CompactionConfig(retain_ratio=0.1).policy(None, None).threshold(1000) == 800
    absolute = CompactionConfig(retain_tokens=123).policy(None, None)
    assert (absolute.retained(10**6), absolute.retain_ratio) == (123, None)


def test_a_model_policy_applies_to_its_exact_pair_only() -> None:
    config = CompactionConfig.model_validate(
        {
            "models": [
                {"provider": "p", "model": "small", "threshold_ratio": 0.6, "retain_tokens": 50},
                {"provider": "p", "model": "big", "max_overflow_retries": 0},
            ]
        }
    )
    small = config.policy("p", "small")
    assert (small.threshold(1000), small.retained(1000), small.retain_ratio) == (600, 50, None)
    assert config.policy("p", "big").max_overflow_retries == 0
    assert config.policy("p", "big").retained(1000) == 160  # inherits the default retention
    assert config.policy("q", "small").threshold(1000) == 800  # another provider


def test_the_summarization_route_is_a_pair() -> None:
    with pytest.raises(ValidationError, match="together"):
        CompactionConfig(summarization_provider="p")
    assert CompactionConfig(summarization_provider="p", summarization_model="m").auto


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"threshold_ratio": 0}, "greater than 0"),
        ({"threshold_ratio": 1.5}, "less than or equal to 1"),
        ({"retain_ratio": 0.9}, "retain_ratio 0.9 must be below threshold_ratio 0.8"),
        ({"retain_ratio": 0.1, "retain_tokens": 5}, "not both"),
        ({"retain_tokens": -1}, "greater than or equal to 0"),
        ({"max_tokens": 0}, "greater than 0"),
        ({"compaction_retries": -1}, "greater than or equal to 0"),
        ({"threshold": 0.5}, "Extra inputs are not permitted"),
        ({"auto": "yes"}, "valid boolean"),
    ],
)
def test_bad_values_are_refused(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        CompactionConfig.model_validate(fields)


def test_ratio_conflicts_are_checked_after_each_override() -> None:
    with pytest.raises(ValidationError, match=r"p:m: retain_ratio 0\.16 must be below"):
        CompactionConfig.model_validate(
            {"models": [{"provider": "p", "model": "m", "threshold_ratio": 0.1}]}
        )
    with pytest.raises(ValidationError, match="two model policies for p:m"):
        CompactionConfig(models=(ModelPolicy(provider="p", model="m"),) * 2)
    with pytest.raises(ValidationError, match="Extra inputs"):
        CompactionConfig.model_validate({"models": [{"provider": "p", "model": "m", "x": 1}]})


def test_prune_bounds_must_fit_the_marker() -> None:
    assert PruneConfig(threshold_chars=100, head_chars=30, tail_chars=31).head_chars == 30
    with pytest.raises(ValidationError, match="must be <= threshold_chars"):
        PruneConfig(threshold_chars=100, head_chars=31, tail_chars=31)


def test_the_config_is_frozen() -> None:
    config = CompactionConfig()
    with pytest.raises(ValidationError):
        config.auto = False  # type: ignore[misc]
