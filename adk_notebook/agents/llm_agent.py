"""LlmAgent: the agent that asks a model, runs the tools it calls, and repeats until it answers.

One turn, top to bottom: render the instruction, build the request from the session's
history, stream the model's answer, store it; if it called tools, run them, store their
responses and go round again; otherwise that answer is the final response.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Literal

from ..core.content import Content
from ..core.context import InvocationContext, ReadonlyContext
from ..core.errors import AdkError
from ..core.events import Event, new_id
from ..models.base import GenerateContentConfig, Llm, LlmRequest, LlmResponse
from ..models.registry import resolve_model
from ..tools.base import Tool, Toolset
from ..tools.function import FunctionTool
from .base import Agent
from .dispatch import run_tool_calls
from .instruction import render_instruction

__all__ = ["InstructionProvider", "LlmAgent"]

InstructionProvider = Callable[[ReadonlyContext], str | Awaitable[str]]


class LlmAgent(Agent):
    """An agent driven by a model.

    Args:
        name: Identifies the agent in events and logs (a Python identifier).
        model: An `Llm`, or a model string such as "gemini-2.5-flash" or "openai:gpt-4o-mini".
        instruction: The system instruction; `{var}` / `{var?}` are filled from session state.
            A callable `(ReadonlyContext) -> str` computes it per call instead (no templating).
        description: What the agent does, for other agents and for humans.
        global_instruction: Text put before the instruction.
        tools: Tools, or plain functions (wrapped with `@tool`).
        toolsets: Toolsets resolved at the start of each run.
        output_key: Save the final answer's text in session state under this key.
        max_iterations: Most model calls in one invocation before the run stops with an error.
        generate_content_config: Sampling settings passed to the model.
        include_contents: "default" sends the conversation so far; "none" only the current message.
    """

    def __init__(
        self,
        *,
        name: str,
        model: Llm | str | None = None,
        instruction: str | InstructionProvider = "",
        description: str = "",
        global_instruction: str = "",
        tools: Sequence[Tool | Callable[..., Any]] = (),
        toolsets: Sequence[Toolset] = (),
        output_key: str | None = None,
        max_iterations: int = 100,
        generate_content_config: GenerateContentConfig | None = None,
        include_contents: Literal["default", "none"] = "default",
    ) -> None:
        if not name.isidentifier():
            raise AdkError.config(
                f"Agent name {name!r} must be a Python identifier (letters, digits, '_'), e.g. 'weather_bot'.",
                code="invalid_agent_name",
            )
        if max_iterations < 1:
            raise AdkError.config(f"max_iterations must be at least 1, got {max_iterations}.", code="invalid_max_iterations")
        if include_contents not in ("default", "none"):
            raise AdkError.config(
                f"include_contents must be 'default' or 'none', got {include_contents!r}.", code="invalid_include_contents"
            )
        self.name = name
        self.model = model
        self.instruction = instruction
        self.description = description
        self.global_instruction = global_instruction
        self.tools: list[Tool] = [t if isinstance(t, Tool) else FunctionTool.from_function(t) for t in tools]
        self.toolsets = list(toolsets)
        self.output_key = output_key
        self.max_iterations = max_iterations
        self.generate_content_config = generate_content_config or GenerateContentConfig()
        self.include_contents = include_contents
        self.sub_agents = []
        self._resolved_model: Llm | None = model if isinstance(model, Llm) else None

    def __repr__(self) -> str:
        return f"LlmAgent(name={self.name!r}, model={self.model!r}, tools={[t.name for t in self.tools]!r})"

    # -- the loop ------------------------------------------------------------------------------
    async def run_invocation(self, ctx: InvocationContext) -> AsyncIterator[Event]:
        model = self.resolve_model()
        tools = await self.resolve_tools(ReadonlyContext(ctx))
        declarations = [t.declaration() for t in tools.values()]
        limit = self.max_iterations
        if ctx.run_config.max_llm_calls is not None:
            limit = min(limit, ctx.run_config.max_llm_calls)
        for _ in range(limit):
            if ctx.ended:
                return
            request = LlmRequest(
                model=model.name,
                contents=self._contents(ctx),
                system_instruction=await self._system_instruction(ctx),
                tools=declarations,
                config=replace(self.generate_content_config),
            )
            final: LlmResponse | None = None
            async for response in model.generate_content(request, stream=ctx.run_config.streaming):
                if response.partial:
                    yield Event(self.name, response.content, ctx.invocation_id, partial=True)
                else:
                    final = response
            event = self._model_event(ctx, final)
            calls = event.function_calls()
            if not calls:
                if self.output_key:
                    event.actions.state_delta[self.output_key] = event.text
                yield event
                return
            yield event
            yield await run_tool_calls(ctx, tools, calls)
        raise AdkError.agent(
            f"Agent {self.name!r} made {limit} model calls without a final answer (max_iterations={self.max_iterations}"
            + (f", max_llm_calls={ctx.run_config.max_llm_calls}" if ctx.run_config.max_llm_calls is not None else "")
            + "). The model keeps calling tools: check the tool results it gets, or raise the limit.",
            code="max_iterations_exceeded",
            category="cancelled",
        )

    def _model_event(self, ctx: InvocationContext, response: LlmResponse | None) -> Event:
        if response is None:
            raise AdkError.model(
                f"Model {self.resolve_model().name!r} ended its answer without a complete response.",
                code="no_response",
                category="unavailable",
            )
        content = response.content if response.content is not None else Content("model", [])
        for call in content.function_calls():
            if not call.id:
                call.id = "adk-" + new_id()
        return Event(
            self.name,
            content,
            ctx.invocation_id,
            turn_complete=response.turn_complete,
            usage=response.usage,
            metadata={"finish_reason": response.finish_reason} if response.finish_reason else {},
        )

    def _contents(self, ctx: InvocationContext) -> list[Content]:
        if self.include_contents == "none":
            return [ctx.user_content]
        return [e.content for e in ctx.session.events if e.content is not None and e.content.parts and e.error is None]

    async def _system_instruction(self, ctx: InvocationContext) -> str | None:
        parts = [await self._render(self.global_instruction, ctx), await self._render(self.instruction, ctx)]
        text = "\n\n".join(p for p in parts if p)
        return text or None

    async def _render(self, instruction: str | InstructionProvider, ctx: InvocationContext) -> str:
        if callable(instruction):
            text = instruction(ReadonlyContext(ctx))
            return await text if inspect.isawaitable(text) else text
        return await render_instruction(instruction, ctx.session.state, agent_name=self.name)

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
        tools: dict[str, Tool] = {}
        sources: dict[str, str] = {}
        for source, group in [("tools=", self.tools)] + [
            (f"toolset {ts.name!r}", await ts.tools(ctx)) for ts in self.toolsets
        ]:
            for t in group:
                if t.name in tools:
                    raise AdkError.config(
                        f"Agent {self.name!r} has two tools named {t.name!r} (from {sources[t.name]} and {source}). "
                        "Tool names must be unique: rename one, or wrap a toolset in PrefixedToolset.",
                        code="duplicate_tool_name",
                    )
                tools[t.name] = t
                sources[t.name] = source
        return tools
