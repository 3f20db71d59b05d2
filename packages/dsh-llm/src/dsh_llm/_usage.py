"""Token usage and the normalized failure of a model call."""

from __future__ import annotations

from pydantic import Field, field_validator

from dsh_llm._wire import WireModel

__all__ = ["LlmFailure", "Usage"]


class Usage(WireModel):
    """Tokens one model call used: ``{"inputTokens", "outputTokens", ...}``.

    The cache and reasoning counts are written only when the provider reported them.
    """

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_read_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)


class LlmFailure(WireModel):
    """A model call that failed, normalized across providers.

    ``code`` is a stable machine-readable string, one of `FailureCode` when a dsh-py adapter
    or the loop wrote it (``dsh_llm.FAILURE_CODES`` says what each means); ``status`` the
    HTTP status when there was one; ``retry_after_ms`` the provider's retry hint.
    """

    message: str
    code: str
    status: int | None = None
    retry_after_ms: int | None = Field(default=None, ge=0)

    @field_validator("code")
    @classmethod
    def _plain_code(cls, code: str) -> str:
        """A `FailureCode` member is kept as its plain string: logs hold JSON, not enums."""
        return str(code)
