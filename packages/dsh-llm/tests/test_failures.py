"""The failure vocabulary: one home for every ``LlmFailure.code``."""

from __future__ import annotations

import json

from dsh_llm import FAILURE_CODES, RETRYABLE_FAILURE_CODES, FailureCode, LlmFailure


def test_every_code_is_its_own_name_and_says_what_it_means() -> None:
    assert set(FAILURE_CODES) == set(FailureCode)
    for code in FailureCode:
        assert code.value == code.name
        assert FAILURE_CODES[code].strip(), code


def test_only_transient_codes_are_retryable() -> None:
    assert {
        FailureCode.EMPTY_RESPONSE,
        FailureCode.RATE_LIMIT,
        FailureCode.SERVER,
        FailureCode.TIMEOUT,
        FailureCode.TRANSPORT,
    } == RETRYABLE_FAILURE_CODES
    assert FailureCode.AUTH not in RETRYABLE_FAILURE_CODES
    assert FailureCode.CONTEXT_WINDOW_EXCEEDED not in RETRYABLE_FAILURE_CODES


def test_a_failure_made_with_a_code_is_written_and_read_as_the_plain_string() -> None:
    failure = LlmFailure(message="slow down", code=FailureCode.RATE_LIMIT, status=429)
    wire = failure.model_dump(mode="json", by_alias=True, exclude_none=True)
    assert json.dumps(wire) == '{"message": "slow down", "code": "RATE_LIMIT", "status": 429}'
    back = LlmFailure.model_validate(wire)
    assert back.code == FailureCode.RATE_LIMIT
    assert back == failure


def test_a_code_outside_the_vocabulary_is_still_read() -> None:
    """A log from another tool, or a provider's unknown finish reason, keeps its own code."""
    failure = LlmFailure.model_validate({"message": "odd", "code": "FOO_BAR"})
    assert failure.code == "FOO_BAR"
    assert failure.code not in set(FailureCode)


def test_a_code_given_as_a_member_is_kept_as_a_plain_string() -> None:
    """Logs must hold JSON values: the session codec refuses an enum instance."""
    failure = LlmFailure(message="x", code=FailureCode.SERVER)
    assert type(failure.code) is str
    assert type(failure.model_dump()["code"]) is str
