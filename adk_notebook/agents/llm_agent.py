"""LlmAgent: the agent that asks a model, runs the tools it calls, and repeats until it answers.

One invocation, top to bottom (`run_invocation`):

1. request: `build_request` renders the instruction and takes the session's history;
2. model: (before-model callbacks,) the model's answer, streamed, (after-model callbacks);
3. tools: if it called tools, the dispatcher runs them as the agent's `tool_policy` says, their
   responses are stored, and the next turn starts at 1;
4. decide: otherwise the answer is checked against the output schema (on a mismatch the model
   is asked again with the error, back at 1) and it is the final response.

A tool response that transfers (`transfer_to_agent`) ends the agent's turn there: the target
runs at once. Before/after-agent callbacks run around all of it, in `Agent.invoke`.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Literal, Self, TypeVar, overload

from ..core.content import Content, Part, chunk_mender, make_sendable
from ..core.context import CallbackContext, InvocationContext, ReadonlyContext
from ..core.errors import AdkError
from ..core.events import Event, EventActions, new_id
from ..models.base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from ..models.registry import model_id, resolve_model
from ..plugins.base import plugin_chain
from ..tools.base import Tool, Toolset
from ..tools.builtin import BuiltinTool
from ..tools.function import FunctionTool
from ..tools.toolsets import collect_tools
from .base import Agent, Callbacks
from .callbacks import CallbackChain
from .dispatch import ToolDispatcher
from .history import conversation
from .instruction import render_instruction
from .tool_policy import RetryBudget, ToolExecutionStrategy, ToolPolicy
from .transfer import TransferToAgentTool, transfer, transfer_targets

if TYPE_CHECKING:
    from pydantic import BaseModel

    from .output_schema import OutputSchema

__all__ = ["InstructionProvider", "LlmAgent"]

InstructionProvider = Callable[[ReadonlyContext], str | Awaitable[str]]
_T = TypeVar("_T")


class _InToolPolicy(Generic[_T]):
    """An LlmAgent argument kept in the agent's `tool_policy`, read back under its own name."""

    __slots__ = ("name",)

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, agent: None, owner: type | None = None) -> Self: ...
    @overload
    def __get__(self, agent: LlmAgent, owner: type | None = None) -> _T: ...
    def __get__(self, agent: LlmAgent | None, owner: type | None = None) -> Any:
        return self if agent is None else getattr(agent.tool_policy, self.name)


class LlmAgent(Agent):
    """An agent driven by a model.

    Args:
        name: Identifies the agent in events and logs (a Python identifier).
        model: An `Llm`, or a model string such as "gemini-2.5-flash" or "openai:gpt-4o-mini".
        instruction: The system instruction; `{var}`, `{var?}`, `{app:x}`, `{user:x}`, `{temp:x}`
            and `{artifact.name}` are filled in before each model call.
        instruction_provider: Computes the instruction per call instead: `(ReadonlyContext) -> str`
            (sync or async; no templating).
        description: What the agent does, for other agents and for humans.
        global_instruction: Text put before the instruction.
        tools: Tools, plain functions (wrapped with `@tool`), or built-in tools the provider runs
            (`GoogleSearch()`, `CodeExecution()`, `WebSearch()`).
        toolsets: Toolsets resolved at the start of each run.
        output_schema: A pydantic model or JSON schema the final answer must match.
        output_max_retries: How often the model is asked again when its answer does not match.
        output_key: Save the final answer in session state under this key.
        max_iterations: Most model calls in one invocation before the run stops with an error.
        generate_content_config: Sampling settings passed to the model.
        include_contents: "default" sends the conversation so far; "none" only this invocation.
        tool_execution_strategy: "sequential" (default), "parallel" or "auto".
        default_retry_budget: How often a failing tool is retried (none by default).
        tool_retry_budgets: Per-tool retry budgets by tool name.
        circuit_breaker_threshold: Disable a tool for the run after this many failures in a row.
        tool_timeout: Most seconds one tool call may take, for tools without a `timeout` of their
            own; a call past it is answered `{"error": ...}` naming the limit (None: no limit).
        sub_agents: Agents this one may hand the conversation to: `transfer_to_agent` is offered.
        disallow_transfer_to_parent, disallow_transfer_to_peers: Narrow the agents it may hand
            the conversation to (by default its sub-agents, its parent and its peers).
        before_agent_callback, after_agent_callback, before_model_callback, after_model_callback,
        before_tool_callback, after_tool_callback, on_tool_error: see `agents/callbacks.py`.

    The tool arguments (strategy, budgets, breaker, timeout, tool callbacks) make the agent's
    `tool_policy`, and read back as attributes of the same names.
    """

    transfers_by_model = True
    tool_execution_strategy: _InToolPolicy[ToolExecutionStrategy] = _InToolPolicy()
    default_retry_budget: _InToolPolicy[RetryBudget] = _InToolPolicy()
    tool_retry_budgets: _InToolPolicy[Mapping[str, RetryBudget]] = _InToolPolicy()
    circuit_breaker_threshold: _InToolPolicy[int | None] = _InToolPolicy()
    tool_timeout: _InToolPolicy[float | None] = _InToolPolicy()
    before_tool_callback: _InToolPolicy[CallbackChain] = _InToolPolicy()
    after_tool_callback: _InToolPolicy[CallbackChain] = _InToolPolicy()
    on_tool_error: _InToolPolicy[CallbackChain] = _InToolPolicy()

    def __init__(
        self,
        *,
        name: str,
        model: Llm | str | None = None,
        instruction: str | InstructionProvider = "",
        instruction_provider: InstructionProvider | None = None,
        description: str = "",
        global_instruction: str = "",
        tools: Sequence[Tool | BuiltinTool | Callable[..., Any]] = (),
        toolsets: Sequence[Toolset] = (),
        output_schema: type[BaseModel] | dict[str, Any] | None = None,
        output_max_retries: int = 3,
        output_key: str | None = None,
        max_iterations: int = 100,
        generate_content_config: GenerateContentConfig | None = None,
        include_contents: Literal["default", "none"] = "default",
        tool_execution_strategy: ToolExecutionStrategy | str = ToolExecutionStrategy.SEQUENTIAL,
        default_retry_budget: RetryBudget | None = None,
        tool_retry_budgets: Mapping[str, RetryBudget] | None = None,
        circuit_breaker_threshold: int | None = None,
        tool_timeout: float | None = None,
        before_agent_callback: Callbacks = None,
        after_agent_callback: Callbacks = None,
        before_model_callback: Callbacks = None,
        after_model_callback: Callbacks = None,
        before_tool_callback: Callbacks = None,
        after_tool_callback: Callbacks = None,
        on_tool_error: Callbacks = None,
        sub_agents: Sequence[Agent] = (),
        disallow_transfer_to_parent: bool = False,
        disallow_transfer_to_peers: bool = False,
    ) -> None:
        _check_config(name, max_iterations, include_contents, output_max_retries)
        self.name = name
        self.model = model
        self.instruction = instruction_provider if instruction_provider is not None else instruction
        self.description = description
        self.global_instruction = global_instruction
        # Built-in tools (GoogleSearch(), ...) run at the provider: declared, never dispatched.
        self.builtin_tools: list[BuiltinTool] = [t for t in tools if isinstance(t, BuiltinTool)]
        self.tools: list[Tool] = [
            t if isinstance(t, Tool) else FunctionTool.from_function(t) for t in tools if not isinstance(t, BuiltinTool)
        ]
        self.toolsets = list(toolsets)
        self.output_schema = output_schema
        self._output = _output_schema(output_schema)
        self.output_max_retries = output_max_retries
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.generate_content_config = generate_content_config or GenerateContentConfig()
        self.include_contents = include_contents
        self.tool_policy = ToolPolicy(
            tool_execution_strategy=ToolExecutionStrategy.parse(tool_execution_strategy),
            default_retry_budget=default_retry_budget or RetryBudget(),
            tool_retry_budgets=tool_retry_budgets or {},
            circuit_breaker_threshold=circuit_breaker_threshold,
            tool_timeout=tool_timeout,
            before_tool_callback=CallbackChain(before_tool_callback),
            after_tool_callback=CallbackChain(after_tool_callback),
            on_tool_error=CallbackChain(on_tool_error),
        )
        self.before_agent_callback = CallbackChain(before_agent_callback)
        self.after_agent_callback = CallbackChain(after_agent_callback)
        self.before_model_callback = CallbackChain(before_model_callback)
        self.after_model_callback = CallbackChain(after_model_callback)
        self.sub_agents = self._adopt(sub_agents)
        self.disallow_transfer_to_parent = disallow_transfer_to_parent
        self.disallow_transfer_to_peers = disallow_transfer_to_peers
        self._resolved_model: Llm | None = model if isinstance(model, Llm) else None

    def __repr__(self) -> str:
        return f"LlmAgent(name={self.name!r}, model={self.model!r}, tools={[t.name for t in self.tools]!r})"

    # -- the invocation ------------------------------------------------------------------------
    async def run_invocation(self, ctx: InvocationContext) -> AsyncGenerator[Event, None]:
        # One generator for the whole invocation: each streamed chunk passes one hop fewer.
        model = self.resolve_model()
        tools = await self.resolve_tools(ReadonlyContext(ctx))
        dispatcher = ToolDispatcher(ctx, self.tool_policy, tools)
        before_model = plugin_chain(ctx.plugins, "before_model_callback", self.before_model_callback)
        after_model = plugin_chain(ctx.plugins, "after_model_callback", self.after_model_callback)
        answered_by = ctx.span.model = model_id(model)
        chat = "chat " + answered_by.rpartition(":")[2]  # the span's name: the model without its provider
        schema_retries = 0
        for _ in range(self.max_iterations):
            if ctx.ended:
                break
            # 1. request
            request = await self.build_request(ctx, tools, model_name=model.name)
            # 2. model: its answer, streamed as partial events, then complete
            cb_ctx = CallbackContext(ctx)
            span = ctx.span.child(chat, "model", agent=self.name, model=answered_by)
            try:
                response = await before_model(cb_ctx, request) if before_model else None
                if response is None:
                    ctx.count_llm_call()  # RunConfig.max_llm_calls: the run's, shared by all its agents
                    chunk, name, invocation_id = Event.chunk, self.name, ctx.invocation_id  # locals: once per chunk
                    mend = chunk_mender()  # an emoji split across two chunks: its halves meet
                    async for response in model.generate_content(request, stream=ctx.run_config.streaming):
                        if response.partial:
                            yield chunk(name, mend(response.content), invocation_id)
                    if response is None or response.partial:
                        raise AdkError.model(
                            f"Model {model.name!r} ended its answer without a complete response.",
                            code="no_response",
                            category="unavailable",
                        )
                if after_model:
                    response = await after_model(cb_ctx, response) or response
            except BaseException as exc:
                span.finish(exc)
                raise
            if response.usage is not None:
                span.input_tokens, span.output_tokens = response.usage.input_tokens, response.usage.output_tokens
            span.finish()
            event = self._model_event(ctx, response, cb_ctx.actions, tools)
            event.metadata["model"] = answered_by  # who answered: RunResult.model, the widget's header
            # 3. tools: run the calls, then the next turn sees their responses
            calls = event.function_calls()
            if calls:
                yield event
                async for tool_event in dispatcher.run(calls):
                    yield tool_event
                target = tool_event.actions.transfer_to_agent
                if target is not None:
                    async for transferred in transfer(self, target, ctx):
                        yield transferred
                    return
                if tool_event.actions.skip_summarization:
                    break
                continue
            # 4. decide: the final answer, or ask again when it does not match the output schema
            problem = self._accept(event)
            yield event
            if problem is None:
                break
            if schema_retries >= self.output_max_retries:
                raise AdkError.agent(
                    f"Agent {self.name!r}: the model's answer did not match the output schema after "
                    f"{schema_retries} retries: {problem}",
                    code="output_schema_mismatch",
                    category="invalid_input",
                )
            schema_retries += 1
            yield self._event(
                ctx,
                Content(
                    "user",
                    [
                        Part(
                            text=(
                                f"Your answer does not match the required JSON schema: {problem}. "
                                "Reply again with only the corrected JSON object."
                            )
                        )
                    ],
                ),
                metadata={"kind": "output_schema_retry"},
            )
        else:
            raise self._out_of_iterations()

    async def build_request(
        self, ctx: InvocationContext, tools: Mapping[str, Tool] | None = None, *, model_name: str | None = None
    ) -> LlmRequest:
        """The request this agent sends its model next in the invocation `ctx`; nothing is sent.

        It holds the system instruction after templating (global instruction, instruction, the
        output schema's note), the conversation so far (only this invocation's with
        `include_contents="none"`), the tools' declarations, the built-in tools the provider
        runs and the generation config: exactly what `%adk request` shows.

        Args:
            ctx: The invocation: its session's events and state, its artifacts.
            tools: This run's tools by name, as `resolve_tools` gives them (resolved now by default).
            model_name: The model the request names (default: the name of the agent's model).
        """
        if tools is None:
            tools = await self.resolve_tools(ReadonlyContext(ctx))
        if model_name is None:
            model_name = self.resolve_model().name
        parts = [await self._render(self.global_instruction, ctx), await self._render(self.instruction, ctx)]
        config = replace(self.generate_content_config)
        if self._output is not None:
            parts.append(self._output.instruction())
            config.response_schema = self._output.json_schema
            config.response_mime_type = "application/json"
        system = "\n\n".join(p for p in parts if p)
        declarations = [t.declaration() for t in tools.values()]
        return LlmRequest(
            model_name, self._contents(ctx), system or None, declarations, config, list(self.builtin_tools)
        )

    # -- the steps' parts ----------------------------------------------------------------------
    def _accept(self, event: Event) -> str | None:
        """Take a text answer as the final one (its output value, its `output_key`); or say why
        it does not match the output schema."""
        if self._output is not None:
            try:
                event.output = self._output.validate(event.text)
            except ValueError as problem:
                return str(problem)
        if self.output_key:
            value = self._output.dump(event.output) if self._output is not None else event.text
            event.actions.state_delta[self.output_key] = value
        return None

    def _out_of_iterations(self) -> AdkError:
        return AdkError.agent(
            f"Agent {self.name!r} made {self.max_iterations} model calls without a final answer (max_iterations="
            f"{self.max_iterations}). The model keeps calling tools: check the tool results it gets, or raise the limit.",
            code="max_iterations_exceeded",
            category="cancelled",
        )

    def _contents(self, ctx: InvocationContext) -> list[Content]:
        events = ctx.session.events
        if self.include_contents == "none":
            events = [e for e in events if e.invocation_id == ctx.invocation_id]
        return conversation(events, self.name, ctx.branch)

    async def _render(self, instruction: str | InstructionProvider, ctx: InvocationContext) -> str:
        if callable(instruction):
            text = instruction(ReadonlyContext(ctx))
            return await text if inspect.isawaitable(text) else text
        if not instruction:
            return ""
        loader = None
        if ctx.artifact_service is not None:
            cb_ctx = CallbackContext(ctx)

            async def loader(name: str) -> str | None:
                part = await cb_ctx.load_artifact(name)
                return _part_text(part)

        return await render_instruction(instruction, ctx.session.state, agent_name=self.name, load_artifact=loader)

    def _model_event(
        self, ctx: InvocationContext, response: LlmResponse, actions: EventActions, tools: Mapping[str, Tool]
    ) -> Event:
        # The complete answer, made sendable before anything reads it (an output schema, the tools).
        content = make_sendable(response.content) if response.content is not None else Content("model", [])
        pending: list[str] = []
        for call in content.function_calls():
            # Our own id, whatever the provider sent: some servers number calls per answer
            # (`call_0` every turn), and a session must never hold two calls of one id. What we
            # send back pairs calls and responses by these ids, consistently.
            call.id = "adk-" + new_id()
            tool = tools.get(call.name)
            if tool is not None and tool.is_long_running:
                pending.append(call.id)
        event = self._event(
            ctx,
            content,
            actions=actions,
            turn_complete=response.turn_complete,
            usage=response.usage,
            long_running_tool_ids=pending,
        )
        if response.finish_reason:
            event.metadata["finish_reason"] = response.finish_reason
        if response.grounding:
            event.metadata["grounding"] = response.grounding.to_dict()
        return event

    def _event(self, ctx: InvocationContext, content: Content | None, **fields: Any) -> Event:
        return Event(self.name, content, ctx.invocation_id, branch=ctx.branch, **fields)

    # -- resolution ----------------------------------------------------------------------------
    def resolve_model(self) -> Llm:
        """The model object, resolving a model string once."""
        if self._resolved_model is None:
            if self.model is None:
                raise AdkError.config(
                    f"Agent {self.name!r} has no model. Pass model=... (an Llm or a string like 'gemini-2.5-flash').",
                    code="no_model",
                )
            self._resolved_model = resolve_model(self.model)
        return self._resolved_model

    async def resolve_tools(self, ctx: ReadonlyContext) -> dict[str, Tool]:
        """This run's tools by name: the agent's own, then each toolset's; a duplicate name is an error."""
        groups = [("tools=", self.tools)] + [(f"toolset {ts.name!r}", await ts.tools(ctx)) for ts in self.toolsets]
        targets = transfer_targets(self)
        if targets:
            groups.append(("sub_agents=", [TransferToAgentTool(targets)]))
        return collect_tools(f"Agent {self.name!r}", groups)


def _check_config(name: str, max_iterations: int, include_contents: str, output_max_retries: int) -> None:
    problems = []
    if not isinstance(name, str) or not name.isidentifier():
        problems.append(f"name {name!r} must be a Python identifier (letters, digits, '_'), e.g. 'weather_bot'")
    if max_iterations < 1:
        problems.append(f"max_iterations must be at least 1, got {max_iterations}")
    if include_contents not in ("default", "none"):
        problems.append(f"include_contents must be 'default' or 'none', got {include_contents!r}")
    if output_max_retries < 0:
        problems.append(f"output_max_retries must be 0 or more, got {output_max_retries}")
    if problems:
        raise AdkError.config("LlmAgent: " + "; ".join(problems) + ".", code="invalid_agent_config")


def _output_schema(schema: type[BaseModel] | dict[str, Any] | None) -> OutputSchema | None:
    if schema is None:
        return None
    from .output_schema import (
        OutputSchema,  # pydantic is imported only for agents that need it
    )

    return OutputSchema(schema)


def _part_text(part: Part | None) -> str | None:
    if part is None:
        return None
    if part.text is not None:
        return part.text
    if part.inline_data is not None and part.inline_data.mime_type.startswith("text/"):
        return part.inline_data.data.decode("utf-8", errors="replace")
    return None
