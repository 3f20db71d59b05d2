"""A DSH ``Model`` over streaming OpenAI-compatible Chat Completions (DeepSeek, OpenAI, vLLM,
Ollama, ...).

- `OpenAICompatibleModel`: ``stream(request)`` sends a ``dsh_llm.ModelRequest`` to
  ``<base_url>/chat/completions`` with ``stream: true`` and yields well-formed
  ``dsh_llm.StreamChunk``s; every failure is the stream's last chunk, ``finish{error}``.
- `ReasoningReplay`: which earlier assistant messages send their reasoning back.
- `FAILURE_CODES`: every ``LlmFailure.code`` the adapter delivers, with its meaning.
- `ServerQueryError`: a server could not say what it serves (``served_models()``).
"""

from dsh_model_openai._body import ReasoningReplay
from dsh_model_openai._discover import ServerQueryError
from dsh_model_openai._failures import FAILURE_CODES
from dsh_model_openai._model import OpenAICompatibleModel

__all__ = ["FAILURE_CODES", "OpenAICompatibleModel", "ReasoningReplay", "ServerQueryError"]
