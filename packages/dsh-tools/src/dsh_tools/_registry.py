"""ToolRegistry: the tools an agent offers, and the pipeline every call goes through."""

from __future__ import annotations

import asyncio
import inspect
import re
from typing import Any

from pydantic import BaseModel

from dsh_llm import ToolCallBlock, ToolSchema
from dsh_tools._arguments import parse_arguments, validate_arguments
from dsh_tools._definition import ToolDefinition
from dsh_tools._disposer import Disposer
from dsh_tools._errors import (
    DuplicateToolError,
    InvalidToolDefinitionError,
    ToolAbortedError,
    ToolDeniedError,
    ToolHookError,
    UnknownToolError,
)
from dsh_tools._execution import (
    ToolCall,
    ToolCaller,
    ToolExecution,
    ToolOutputListener,
    freeze_json,
)
from dsh_tools._hooks import Allow, Approver, Ask, Deny, PostExecuteHook, PreExecuteHook
from dsh_tools._result import ToolResult

__all__ = ["ToolRegistry"]

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _aborted(*, before_dispatch: bool) -> ToolResult:
    return ToolResult.from_exception(ToolAbortedError(before_dispatch=before_dispatch))


def _cancelling() -> int:
    task = asyncio.current_task()
    return task.cancelling() if task is not None else 0


class _Registered:
    __slots__ = ("definition", "schema")

    def __init__(self, definition: ToolDefinition[Any], schema: ToolSchema) -> None:
        self.definition = definition
        self.schema = schema


class ToolRegistry:
    """The tools on offer, and ``execute``: the pipeline every call goes through.

    ``execute`` never raises for a failed call; it returns an error result the model can read,
    so the log stays provider-valid (every call gets a result). See ``execute`` for the steps.
    """

    def __init__(self) -> None:
        self._tools: dict[str, _Registered] = {}
        self._pre_hooks: list[PreExecuteHook] = []
        self._post_hooks: list[PostExecuteHook] = []

    # -- tools ------------------------------------------------------------------------------

    def register(self, tool: ToolDefinition[Any]) -> Disposer:
        """Offer ``tool``; the returned disposer (also a context manager) withdraws it.

        Raises ``DuplicateToolError`` when the name is taken and ``InvalidToolDefinitionError``
        for a bad name, a ``parameters`` that is not a pydantic model, or a schema that fails.
        """
        schema = _checked_schema(tool)
        if schema.name in self._tools:
            raise DuplicateToolError(schema.name)
        entry = _Registered(tool, schema)
        self._tools[schema.name] = entry

        def withdraw() -> None:
            if self._tools.get(schema.name) is entry:
                del self._tools[schema.name]

        return Disposer(withdraw)

    def get(self, name: str) -> ToolDefinition[Any] | None:
        """The tool registered under ``name``, if any."""
        entry = self._tools.get(name)
        return entry.definition if entry is not None else None

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    def schemas(self) -> list[ToolSchema]:
        """What the model is told: ``{name, description, parameters}`` per tool, in order."""
        return [entry.schema for entry in self._tools.values()]

    # -- hooks ------------------------------------------------------------------------------

    def add_pre_execute_hook(self, hook: PreExecuteHook) -> Disposer:
        """Run ``hook`` before every body (in registration order); returns its disposer."""
        return _add(self._pre_hooks, hook)

    def add_post_execute_hook(self, hook: PostExecuteHook) -> Disposer:
        """Run ``hook`` after every body (in registration order); returns its disposer."""
        return _add(self._post_hooks, hook)

    # -- calls ------------------------------------------------------------------------------

    def is_concurrency_safe(self, call: ToolCall | ToolCallBlock) -> bool:
        """Whether ``call`` may run alongside others: only when its tool says exactly ``True``.

        An unknown tool, invalid arguments or a raising check all mean "run it alone".
        """
        call = ToolCall.from_block(call) if isinstance(call, ToolCallBlock) else call
        entry = self._tools.get(call.name)
        if entry is None:
            return False
        try:
            parameters = entry.definition.parameters
            args = validate_arguments(
                call.name, parameters, parse_arguments(call.name, call.arguments)
            )
            return entry.definition.is_concurrency_safe(args) is True
        except Exception:
            return False

    async def execute(
        self,
        call: ToolCall | ToolCallBlock,
        caller: ToolCaller | None = None,
        *,
        approver: Approver | None = None,
        on_output: ToolOutputListener | None = None,
    ) -> ToolResult:
        """Run one call and return its result; a failure is an error result, never an exception.

        ``on_output`` watches the body run: it becomes the execution's ``on_output``, which a
        tool that has output to show as it goes (bash) reports to.

        Steps, each ending the call with an error result (``Error: <message>``) on failure:

        1. The calling task was already asked to stop (``asyncio.current_task().cancelling()``)
           → ``ABORTED_BEFORE_DISPATCH``; nothing runs.
        2. Unknown tool → ``UNKNOWN_TOOL``.
        3. Arguments parsed (empty text is ``{}``) and validated against the tool's parameters
           → ``INVALID_ARGS``, e.g. ``Invalid arguments for tool bash: command: field required``.
        4. Pre-execute hooks in order; the first ``Deny(reason)`` → ``DENIED`` with
           ``Error: <reason>``; a raising hook → ``HOOK_ERROR`` (fail closed). Cancelled here →
           ``ABORTED_BEFORE_DISPATCH``.
        5. Approval, when a hook answered ``Ask`` or the tool's ``approval_reason(args)`` gives
           a reason (the tool's reason first, then the hook's, joined by ``"; "``):
           ``approver(execution, reason)`` decides; its ``Deny(reason)`` → ``DENIED`` with that
           reason; no approver → ``DENIED`` (``requires approval, but no approval channel is
           available``); a raising approver → ``HOOK_ERROR``; a raising ``approval_reason``
           → that error's result, as from the body; cancelled while asking →
           ``ABORTED_BEFORE_DISPATCH``. Nothing runs unless it is granted.
        6. The body. It raising a ``ToolError`` → that error's code; any other exception →
           ``TOOL_ERROR`` named after its class. Cancelled in the body → ``ABORTED``; a body
           that swallows the cancellation and succeeds is still ``ABORTED``.
        7. Post-execute hooks in order, each seeing the latest result and able to replace it;
           a raising hook → ``HOOK_ERROR``. Cancellation here turns a success into ``ABORTED``.

        Cancellation: ``execute`` catches the ``CancelledError`` to return a result (the loop
        must record one for every call) and does **not** call ``uncancel()``, so the caller's
        task still reports ``cancelling() > 0`` afterwards. A caller that was cancelled should
        record the result and then stop (for example ``raise asyncio.CancelledError``).
        """
        call = ToolCall.from_block(call) if isinstance(call, ToolCallBlock) else call
        if _cancelling():
            return _aborted(before_dispatch=True)
        entry = self._tools.get(call.name)
        if entry is None:
            return ToolResult.from_exception(UnknownToolError(call.name, self.names()))
        definition = entry.definition
        try:
            parsed = parse_arguments(call.name, call.arguments)
            args = validate_arguments(call.name, definition.parameters, parsed)
        except Exception as error:  # a parameters validator may raise anything
            return ToolResult.from_exception(error)
        execution = ToolExecution(
            call_id=call.call_id,
            tool_name=call.name,
            arguments=freeze_json(parsed),
            caller=caller,
            on_output=on_output,
        )

        try:
            decision = await self._decide(execution)
            if isinstance(decision, Deny):
                return ToolResult.from_exception(ToolDeniedError(call.name, decision.reason))
            try:
                own_reason = definition.approval_reason(args, execution)
            except Exception as error:  # the tool's own check refuses, as its body would
                return ToolResult.from_exception(error)
            denied = await self._approve(own_reason, execution, decision, approver)
        except asyncio.CancelledError:
            return _aborted(before_dispatch=True)
        except ToolHookError as error:
            return ToolResult.from_exception(error)
        if denied is not None:
            return ToolResult.from_exception(ToolDeniedError(call.name, denied.reason))

        cancels_before_body = _cancelling()
        try:
            output = await definition.execute(args, execution)
            if isinstance(output, ToolResult):
                result = output
            else:
                result = ToolResult(content=definition.render(args, output))
        except asyncio.CancelledError:
            return _aborted(before_dispatch=False)
        except Exception as error:
            result = ToolResult.from_exception(error)
        if _cancelling() > cancels_before_body and not result.is_error:
            return _aborted(before_dispatch=False)

        try:
            return await self._observe(execution, result)
        except asyncio.CancelledError:
            return result if result.is_error else _aborted(before_dispatch=False)
        except ToolHookError as error:
            return ToolResult.from_exception(error)

    async def _decide(self, execution: ToolExecution) -> Deny | Ask | None:
        """The first ``Deny``, else the first ``Ask``, else ``None`` (every hook allowed)."""
        ask: Ask | None = None
        for hook in list(self._pre_hooks):
            try:
                decision: object = hook(execution)
                if inspect.isawaitable(decision):
                    decision = await decision
            except Exception as error:
                raise ToolHookError("pre-execute", error) from error
            if isinstance(decision, Deny):
                return decision
            if isinstance(decision, Ask):
                ask = ask or decision
            elif decision is not None and not isinstance(decision, Allow):
                problem = TypeError(
                    f"returned {type(decision).__name__}, not Allow, Deny, Ask or None"
                )
                raise ToolHookError("pre-execute", problem)
        return ask

    @staticmethod
    async def _approve(
        own: str | None,
        execution: ToolExecution,
        ask: Ask | None,
        approver: Approver | None,
    ) -> Deny | None:
        """Ask the approver when the call needs approval; ``None`` means it may run."""
        if own is None and ask is None:
            return None
        reasons = [r for r in (own, ask.reason if ask else None) if r]
        reason = "; ".join(reasons) if reasons else None
        if approver is None:
            return Deny(
                f'tool "{execution.tool_name}" requires approval, but no approval channel '
                "is available"
            )
        try:
            verdict: object = await approver(execution, reason)
        except Exception as error:
            raise ToolHookError("approval", error) from error
        if isinstance(verdict, Deny):
            return verdict
        if not isinstance(verdict, Allow):
            problem = TypeError(f"returned {type(verdict).__name__}, not Allow or Deny")
            raise ToolHookError("approval", problem)
        return None

    async def _observe(self, execution: ToolExecution, result: ToolResult) -> ToolResult:
        for hook in list(self._post_hooks):
            try:
                replacement: object = hook(execution, result)
                if inspect.isawaitable(replacement):
                    replacement = await replacement
            except Exception as error:
                raise ToolHookError("post-execute", error) from error
            if isinstance(replacement, ToolResult):
                result = replacement
            elif replacement is not None:
                problem = TypeError(
                    f"returned {type(replacement).__name__}, not ToolResult or None"
                )
                raise ToolHookError("post-execute", problem)
        return result


def _add(hooks: list[Any], hook: Any) -> Disposer:
    hooks.append(hook)
    marker = hooks[-1]

    def remove() -> None:
        for index, existing in enumerate(hooks):
            if existing is marker:
                del hooks[index]
                return

    return Disposer(remove)


def _checked_schema(tool: ToolDefinition[Any]) -> ToolSchema:
    name = getattr(tool, "name", None)
    label = name if isinstance(name, str) else repr(tool)
    if not isinstance(name, str) or not _TOOL_NAME.fullmatch(name):
        raise InvalidToolDefinitionError(label, "the name must be 1-64 letters, digits, '_' or '-'")
    if not isinstance(getattr(tool, "description", None), str):
        raise InvalidToolDefinitionError(label, "the description must be a string")
    parameters = getattr(tool, "parameters", None)
    if not (isinstance(parameters, type) and issubclass(parameters, BaseModel)):
        raise InvalidToolDefinitionError(label, "parameters must be a pydantic model class")
    try:
        schema = tool.schema()
    except Exception as error:
        raise InvalidToolDefinitionError(label, f"its schema failed: {error}") from error
    if schema.name != name:
        raise InvalidToolDefinitionError(label, f"schema() names another tool, {schema.name!r}")
    return schema
