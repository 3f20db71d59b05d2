"""What a server says about itself: the models it serves and their context windows, asked once.

The answers are the servers' own shapes (vLLM, llama.cpp, Ollama, a gateway), served by the
loopback test server on the routes each uses.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dsh_model_openai import OpenAICompatibleModel, ServerQueryError

BOUND = 20.0  # generous: these tests wait on answers, never on a tight clock

VLLM_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "Qwen/Qwen2.5-Coder-7B-Instruct",
            "object": "model",
            "created": 1733300000,
            "owned_by": "vllm",
            "root": "Qwen/Qwen2.5-Coder-7B-Instruct",
            "parent": None,
            "max_model_len": 32768,
            "permission": [],
        }
    ],
}
LLAMA_CPP_MODELS = {
    "object": "list",
    "data": [
        {
            "id": "SmolLM2-135M-Instruct-Q8_0.gguf",
            "object": "model",
            "created": 1733300000,
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 49152, "n_ctx_train": 8192, "n_embd": 576},
        }
    ],
}
LLAMA_CPP_PROPS = {
    "default_generation_settings": {"n_ctx": 1024, "params": {"n_predict": -1}},
    "total_slots": 1,
    "model_path": "/models/SmolLM2-135M-Instruct-Q8_0.gguf",
    "chat_template": "{% for message in messages %}…{% endfor %}",
}
OLLAMA_MODELS = {
    "object": "list",
    "data": [
        {"id": "llama3.1:8b", "object": "model", "created": 1733300000, "owned_by": "library"},
        {"id": "qwen2.5-coder:7b", "object": "model", "created": 1733300000, "owned_by": "x"},
    ],
}


def ollama_show(parameters: str) -> dict[str, Any]:
    return {
        "modelfile": "FROM llama3.1:8b",
        "parameters": parameters,
        "template": "{{ .Prompt }}",
        "details": {"family": "llama", "parameter_size": "8.0B"},
        "model_info": {"general.architecture": "llama", "llama.context_length": 131072},
    }


async def discover(provider: Any, wire: Any, model: str, **options: Any) -> int | None:
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, model, **options) as served:
        window = await asyncio.wait_for(served.discover_context_window(), BOUND)
        assert served.context_window(model) == window
        return window


async def test_vllm_says_max_model_len_in_its_model_list(provider: Any, wire: Any) -> None:
    provider.route("GET", "/v1/models", 200, VLLM_MODELS)
    assert await discover(provider, wire, "Qwen/Qwen2.5-Coder-7B-Instruct") == 32768
    assert provider.asked("GET", "/props") == 0  # the first answer was enough
    request = provider.requests[0]
    assert request.headers["authorization"] == f"Bearer {wire.API_KEY}"


async def test_llama_cpp_says_the_window_it_runs_with_in_props(provider: Any, wire: Any) -> None:
    provider.route("GET", "/v1/models", 200, LLAMA_CPP_MODELS)
    provider.route("GET", "/props", 200, LLAMA_CPP_PROPS)
    # The server's -c (1024), not the model's training window (8192).
    assert await discover(provider, wire, "anything") == 1024


async def test_llama_cpp_without_props_falls_back_to_the_training_window(
    provider: Any, wire: Any
) -> None:
    provider.route("GET", "/v1/models", 200, LLAMA_CPP_MODELS)
    assert await discover(provider, wire, "SmolLM2-135M-Instruct-Q8_0.gguf") == 8192


@pytest.mark.parametrize(
    ("parameters", "window"),
    [
        (
            'num_ctx                        16384\nstop                           "<|eot_id|>"',
            16384,
        ),
        ('stop                           "<|eot_id|>"', 4096),  # Ollama's default, not 131072
    ],
    ids=["num_ctx", "default"],
)
async def test_ollama_says_num_ctx_in_api_show(
    provider: Any, wire: Any, parameters: str, window: int
) -> None:
    provider.route("GET", "/v1/models", 200, OLLAMA_MODELS)
    provider.route("POST", "/api/show", 200, ollama_show(parameters))
    assert await discover(provider, wire, "llama3.1:8b") == window
    show = next(r for r in provider.requests if r.path == "/api/show")
    assert show.json == {"model": "llama3.1:8b"}


async def test_a_gateway_entry_with_context_length(provider: Any, wire: Any) -> None:
    answer = {"data": [{"id": "a/b", "context_length": 200000}, {"id": "c/d"}]}
    provider.route("GET", "/v1/models", 200, answer)
    assert await discover(provider, wire, "a/b") == 200000


async def test_a_server_that_says_nothing_is_asked_once(provider: Any, wire: Any) -> None:
    provider.route("GET", "/v1/models", 200, {"object": "list", "data": [{"id": "m"}]})
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m") as model:
        assert await asyncio.wait_for(model.discover_context_window(), BOUND) is None
        assert await asyncio.wait_for(model.discover_context_window("m"), BOUND) is None
        assert model.context_window("m") is None
    assert provider.asked("GET", "/v1/models") == 1
    assert provider.asked("GET", "/props") == 1
    assert provider.asked("POST", "/api/show") == 1


async def test_the_configured_window_wins_without_asking(provider: Any, wire: Any) -> None:
    provider.route("GET", "/v1/models", 200, VLLM_MODELS)
    window = await discover(provider, wire, "Qwen/Qwen2.5-Coder-7B-Instruct", context_window=9000)
    assert window == 9000
    assert provider.requests == []


@pytest.mark.parametrize(
    "answer",
    [
        b"<html>not json</html>",
        {"data": [{"id": "m", "max_model_len": -5}]},
        {"data": [{"id": "m", "max_model_len": True}]},
        {"data": [{"id": "m", "max_model_len": "32768"}]},
        {"data": "nope"},
        [1, 2, 3],
        b"{" + b" " * (2 * 1024 * 1024) + b"}",  # more than a discovery answer may be
    ],
    ids=["html", "negative", "bool", "string", "data-not-list", "list", "huge"],
)
async def test_odd_answers_are_not_believed(provider: Any, wire: Any, answer: Any) -> None:
    provider.route("GET", "/v1/models", 200, answer)
    assert await discover(provider, wire, "m") is None


async def test_an_unreachable_server_says_nothing_and_served_models_says_why(wire: Any) -> None:
    async with OpenAICompatibleModel("http://127.0.0.1:9/v1", None, "m") as model:
        assert await asyncio.wait_for(model.discover_context_window(), BOUND) is None
        with pytest.raises(ServerQueryError, match=r"http://127\.0\.0\.1:9/v1/models"):
            await asyncio.wait_for(model.served_models(), BOUND)


async def test_served_models_lists_the_ids_in_order(provider: Any, wire: Any) -> None:
    provider.route("GET", "/v1/models", 200, OLLAMA_MODELS)
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m") as model:
        assert await asyncio.wait_for(model.served_models(), BOUND) == [
            "llama3.1:8b",
            "qwen2.5-coder:7b",
        ]


@pytest.mark.parametrize(
    ("status", "answer", "says"),
    [
        (401, {"error": {"message": "bad key"}}, "HTTP 401"),
        (200, {"object": "error"}, "not a model list"),
    ],
)
async def test_served_models_refused_or_odd_is_a_typed_error(
    provider: Any, wire: Any, status: int, answer: Any, says: str
) -> None:
    provider.route("GET", "/v1/models", status, answer)
    async with OpenAICompatibleModel(provider.url, wire.API_KEY, "m") as model:
        with pytest.raises(ServerQueryError, match=says) as raised:
            await asyncio.wait_for(model.served_models(), BOUND)
    assert wire.API_KEY not in str(raised.value)
    # a refusal carries its status (a caller names the key's source on 401/403)
    assert raised.value.status == (status if status != 200 else None)
