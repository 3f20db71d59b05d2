"""What compaction is configured with: thresholds, retention, the summary call, pruning, and
per-model overrides. Every key is optional; unknown keys are refused; the result is frozen."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["PRUNE_MARKER", "CompactionConfig", "CompactionPolicy", "ModelPolicy", "PruneConfig"]

_FROZEN = ConfigDict(frozen=True, extra="forbid", strict=True)

PRUNE_MARKER = "\n\n[... tool result middle pruned ...]\n\n"
"""What replaces the middle of a pruned tool result (39 code points)."""


class PruneConfig(BaseModel):
    """Tool-result pruning: a result whose text exceeds ``threshold_chars`` code points keeps its
    first ``head_chars`` and last ``tail_chars``, with :data:`PRUNE_MARKER` between; tried
    before a summary whenever the context is above the threshold. ``enabled = False`` turns it
    off."""

    model_config = _FROZEN

    enabled: bool = True
    threshold_chars: int = Field(default=8192, ge=0)
    head_chars: int = Field(default=4096, ge=0)
    tail_chars: int = Field(default=1024, ge=0)

    @model_validator(mode="after")
    def _fits(self) -> PruneConfig:
        if self.head_chars + len(PRUNE_MARKER) + self.tail_chars > self.threshold_chars:
            raise ValueError(
                f"head_chars + {len(PRUNE_MARKER)} (the marker) + tail_chars must be <= "
                f"threshold_chars ({self.head_chars} + {len(PRUNE_MARKER)} + {self.tail_chars} > "
                f"{self.threshold_chars})"
            )
        return self


class _PolicyFields(BaseModel):
    model_config = _FROZEN

    threshold_ratio: float | None = Field(default=None, gt=0, le=1)
    retain_ratio: float | None = Field(default=None, gt=0, le=1)
    retain_tokens: int | None = Field(default=None, ge=0)
    max_tokens: int | None = Field(default=None, gt=0)
    compaction_retries: int | None = Field(default=None, ge=0)
    max_overflow_retries: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _ints_as_floats(cls, value: Any) -> Any:
        if isinstance(value, dict):
            value = dict(value)
            for key in ("threshold_ratio", "retain_ratio"):
                item = value.get(key)
                if isinstance(item, int) and not isinstance(item, bool):
                    value[key] = float(item)
        return value

    @model_validator(mode="after")
    def _one_retention(self) -> _PolicyFields:
        if self.retain_ratio is not None and self.retain_tokens is not None:
            raise ValueError("give retain_ratio or retain_tokens, not both")
        return self


class ModelPolicy(_PolicyFields):
    """An override for one exact ``provider`` + ``model`` pair: any policy key; a retention key
    replaces the inherited retention."""

    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)


class CompactionPolicy(BaseModel):
    """The policy in force for one routed model (the defaults merged with its override)."""

    model_config = _FROZEN

    threshold_ratio: float
    retain_ratio: float | None
    retain_tokens: int | None
    max_tokens: int
    compaction_retries: int
    max_overflow_retries: int

    def threshold(self, window: int) -> int:
        """The token count at which a session of a ``window``-token model is compacted."""
        return int(window * self.threshold_ratio)

    def retained(self, window: int) -> int:
        """The budget of the recent tail a pressure compaction keeps."""
        if self.retain_tokens is not None:
            return self.retain_tokens
        assert self.retain_ratio is not None
        return int(window * self.retain_ratio)


class CompactionConfig(_PolicyFields):
    """Compaction settings (defaults: compact at 80% of the routed model's window keeping a
    recent tail of 16%, summary answers up to 8192 tokens, one extra pass while still above,
    one overflow retry per step; pruning on).

    ``summarization_provider`` / ``summarization_model`` route the summary call elsewhere (both
    or neither; default: the session's own route). ``auto = False`` mounts neither automatic
    trigger (manual compaction still works). ``models`` holds per-model overrides (no two for
    the same pair). A ratio retention must stay below its threshold ratio, after each override
    too.
    """

    summarization_provider: str = ""
    summarization_model: str = ""
    auto: bool = True
    prune: PruneConfig = Field(default_factory=PruneConfig)
    models: tuple[ModelPolicy, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _models_as_tuple(cls, value: Any) -> Any:
        if isinstance(value, dict) and isinstance(value.get("models"), list):
            value = {**value, "models": tuple(value["models"])}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> CompactionConfig:
        if bool(self.summarization_provider) != bool(self.summarization_model):
            raise ValueError("give summarization_provider and summarization_model together")
        seen: set[tuple[str, str]] = set()
        self._check_ratios(self.policy(None, None), "the defaults")
        for override in self.models:
            pair = (override.provider, override.model)
            if pair in seen:
                raise ValueError(f"two model policies for {override.provider}:{override.model}")
            seen.add(pair)
            self._check_ratios(self.policy(*pair), f"{override.provider}:{override.model}")
        return self

    @staticmethod
    def _check_ratios(policy: CompactionPolicy, where: str) -> None:
        if policy.retain_ratio is not None and policy.retain_ratio >= policy.threshold_ratio:
            raise ValueError(
                f"{where}: retain_ratio {policy.retain_ratio} must be below threshold_ratio "
                f"{policy.threshold_ratio}"
            )

    def policy(self, provider: str | None, model: str | None) -> CompactionPolicy:
        """The policy for the route ``provider``/``model``: the defaults, then its override."""
        fields: dict[str, Any] = {
            "threshold_ratio": 0.8 if self.threshold_ratio is None else self.threshold_ratio,
            "retain_ratio": self.retain_ratio,
            "retain_tokens": self.retain_tokens,
            "max_tokens": 8192 if self.max_tokens is None else self.max_tokens,
            "compaction_retries": 1 if self.compaction_retries is None else self.compaction_retries,
            "max_overflow_retries": (
                1 if self.max_overflow_retries is None else self.max_overflow_retries
            ),
        }
        for override in self.models:
            if (override.provider, override.model) != (provider, model):
                continue
            given = override.model_dump(exclude_none=True, exclude={"provider", "model"})
            if "retain_ratio" in given or "retain_tokens" in given:
                fields["retain_ratio"] = fields["retain_tokens"] = None
            fields.update(given)
        if fields["retain_ratio"] is None and fields["retain_tokens"] is None:
            fields["retain_ratio"] = 0.16
        return CompactionPolicy(**fields)
