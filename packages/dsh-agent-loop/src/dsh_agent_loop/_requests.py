"""Building one model request, and logging its non-history half as ``request/header``.

A request is a pure function of the log: ``messagePrefix + derive_messages()`` and the folded
``request/header``. The builder logs the header before the request leaves (on an instance's first
request always, with reason ``initial`` or ``resume``; later only when it changed, with reason
``change``) and ``request/context`` whenever the route changes.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from dsh_agent import Extensions, RequestConfig, StepContext
from dsh_llm import Message, ModelRequest, Sampling, ToolSchema
from dsh_session import EpochHeader, Session

__all__ = ["RequestBuilder", "model_request"]


def model_request(
    config: RequestConfig,
    *,
    system: str | None,
    messages: Sequence[Message],
    tools: Sequence[ToolSchema],
) -> ModelRequest:
    """The ``ModelRequest`` a config, system prompt, messages and tools describe.

    ``messages`` are already-validated messages (from the log, or the composed prefix), so they
    are set after validation: validating the whole history on every request would make each step
    cost more than the one before.
    """
    request = ModelRequest(
        provider=config.provider,
        model=config.model,
        system=system,
        tools=list(tools),
        sampling=Sampling(
            temperature=config.temperature,
            top_p=config.top_p,
            stop=None if config.stop is None else list(config.stop),
            reasoning_effort=config.reasoning_effort,
        ),
        max_tokens=config.max_tokens,
    )
    return request.model_copy(update={"messages": list(messages)})


class RequestBuilder:
    """Builds the requests of one loop instance over one session.

    ``seed`` is the config of the instance's first request (the agent's options); later requests
    start from the folded header's config. ``request`` listeners may replace it each time.
    """

    def __init__(
        self,
        session: Session,
        *,
        seed: RequestConfig,
        system: str | None,
        extensions: Extensions,
    ) -> None:
        self._session = session
        self._seed = seed
        self._system = system or None
        self._extensions = extensions
        self._first = True

    async def build(
        self,
        context: StepContext,
        *,
        prefix: Sequence[Message],
        tools: Sequence[ToolSchema],
    ) -> tuple[ModelRequest, RequestConfig]:
        """Run the ``request`` listeners, log what changed, and return the request."""
        session = self._session
        folded = session.request_header
        config = self._seed
        if not self._first and folded is not None:
            config = RequestConfig.from_wire(folded.config)
        for listener in self._extensions.request:
            replaced: Any = listener(context, config)
            if inspect.isawaitable(replaced):
                replaced = await replaced
            if replaced is not None:
                if not isinstance(replaced, RequestConfig):
                    raise TypeError(
                        f"a request listener returned {type(replaced).__name__}, not "
                        "RequestConfig or None"
                    )
                config = replaced
        header = EpochHeader(
            config=config.to_wire(),
            system=self._system,
            tools=[tool.to_wire() for tool in tools] or None,
            message_prefix=[message.to_wire() for message in prefix] or None,
        ).canonical()
        if self._first:
            reason = "initial" if folded is None else "resume"
            session.append("request/header", {"header": header.to_wire(), "reason": reason})
        elif folded is None or header != folded:
            session.append("request/header", {"header": header.to_wire(), "reason": "change"})
        self._first = False
        route = session.request_context
        if (
            route is None
            or route.get("provider") != config.provider
            or route.get("model") != config.model
        ):
            session.append("request/context", {"provider": config.provider, "model": config.model})
        request = model_request(
            config,
            system=self._system,
            messages=[*prefix, *session.derive_messages()],
            tools=tools,
        )
        return request, config
