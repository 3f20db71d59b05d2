"""Building one model request, and logging its non-history half as ``request/header``.

A request is a pure function of the log: ``messagePrefix + derive_messages()`` and the folded
``request/header``. The builder logs the header before the request leaves (on an instance's first
request always, with reason ``initial`` or ``resume``; later only when it changed, with reason
``change``) and ``request/context`` ``{provider, model, contextWindow?}`` whenever the route or
the window the routed model reports changes.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ValidationError

from dsh_agent import Extensions, RequestConfig, StepContext
from dsh_agent_loop._errors import LoggedConfigError
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


def logged_config(session: Session) -> RequestConfig | None:
    """The config of the log's last ``request/header`` (``None``: there is none); raises
    :class:`LoggedConfigError` naming the session when it cannot be used."""
    header = session.request_header
    if header is None:
        return None
    try:
        return RequestConfig.from_wire(header.config)
    except ValidationError as error:
        problem = error.errors(include_url=False, include_input=False)[0]
        where = ".".join(str(part) for part in problem["loc"])
        raise LoggedConfigError(session.id, None, f"{where}: {problem['msg']}") from None


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
        window_of: Callable[[RequestConfig], int | None] | None = None,
    ) -> None:
        self._session = session
        self._window_of = window_of
        self._seed = seed
        self._system = system or None
        self._extensions = extensions
        self._first = True
        self._last_key: tuple[Any, ...] | None = None
        self._last_folded: EpochHeader | None = None

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
            config = logged_config(session) or config
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
        # the same config, system, tool schemas and (frozen) prefix as the request before, and
        # no other header logged since: nothing to build or compare (a large prefix would cost
        # a full canonical dump per step otherwise)
        key = (config, tuple(id(tool) for tool in tools), id(prefix))
        unchanged = not self._first and key == self._last_key and folded is self._last_folded
        if not unchanged:
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
            self._last_key = key
            self._last_folded = session.request_header
        self._first = False
        window = self._window_of(config) if self._window_of is not None else None
        route = session.request_context
        if (
            route is None
            or route.get("provider") != config.provider
            or route.get("model") != config.model
            or route.get("contextWindow") != window
        ):
            logged: dict[str, Any] = {"provider": config.provider, "model": config.model}
            if window is not None:
                logged["contextWindow"] = window
            session.append("request/context", logged)
        request = model_request(
            config,
            system=self._system,
            messages=[*prefix, *session.derive_messages()],
            tools=tools,
        )
        return request, config
