"""A model's context window, as the compaction policy will ask for it (issue 21 §1)."""

from __future__ import annotations

import pytest

from dsh_llm import Model, ModelInfo, context_window_of
from dsh_llm.testing import ScriptedModel


def test_a_scripted_model_reports_the_window_it_was_given() -> None:
    model = ScriptedModel([], context_window=8_192)
    assert isinstance(model, Model)
    assert isinstance(model, ModelInfo)
    assert context_window_of(model, "any-name") == 8_192
    assert context_window_of(ScriptedModel([]), "any-name") is None


def test_a_model_without_the_method_does_not_say() -> None:
    class Plain:
        def stream(self, request: object) -> object:
            raise NotImplementedError

    assert not isinstance(Plain(), ModelInfo)
    assert context_window_of(Plain(), "m") is None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "128000"])
def test_a_window_that_is_not_a_positive_whole_number_is_refused_naming_the_model(
    bad: object,
) -> None:
    class Liar:
        def context_window(self, model: str) -> object:
            return bad

    with pytest.raises(ValueError, match=r"model 'big-model': context_window\(\) gave"):
        context_window_of(Liar(), "big-model")
