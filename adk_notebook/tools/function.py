"""Function tools: a Python function (or a handler) the model can call.

`@tool` reads the schema from the signature and docstring; `FunctionTool(name, description,
handler)` wraps a seed-style `handler(ctx, args)` whose schema you give with the builders.

A plain (non-async) function runs on a worker thread (`tools/threads.py`); `timeout=` bounds a
call either way. A sync function past its timeout cannot be stopped: its thread runs on until
the function returns, its result is dropped, and the tool is refused while too many of its
threads are left running like that.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Collection, Iterable
from typing import TYPE_CHECKING, Any, Self, overload

from ..core.errors import AdkError
from .base import Tool, check_timeout
from .names import check_tool_name
from .threads import run_in_thread

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..core.context import ToolContext

# `tools.schema` (and with it pydantic) is imported when a schema is first built, not by
# `import adk_notebook`: that keeps the package's import time low.

__all__ = ["FunctionTool", "tool"]


class FunctionTool(Tool):
    """A tool backed by a Python callable.

    The TypeScript ADK's form works too: `FunctionTool(name=..., description=...,
    parameters=Model, execute=fn)`, where `fn(args)` or `fn(args, tool_context)` (sync or
    async) gets the validated arguments: an instance of `parameters` when it is a pydantic
    model, else the dict.

    Args:
        name: The name the model calls it by (letters, digits, `_`, `.`, `-`).
        description: What it does and when to use it; the model reads this.
        handler: `handler(ctx, args)` (sync or async) receiving the arguments as a dict.
        parameters: The arguments' schema (a pydantic model or a JSON schema), as
            `with_parameters_schema` takes it.
        execute: Instead of `handler`: the TypeScript-style function described above.
        timeout: Most seconds one call may take (None: the agent's `tool_timeout`, if any). A call
            past it is answered `{"error": ...}` naming the limit; see the module docstring for
            what happens to a sync function's thread.
    """

    def __init__(
        self,
        name: str,
        description: str,
        handler: Callable[[ToolContext, dict[str, Any]], Any] | None = None,
        *,
        parameters: type[BaseModel] | dict[str, Any] | None = None,
        execute: Callable[..., Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        function = handler if handler is not None else execute
        if function is None or (handler is not None and execute is not None):
            raise AdkError.config(
                f"FunctionTool {name!r} takes one function: handler(ctx, args), or execute(args) "
                "as the TypeScript ADK writes it.",
                code="invalid_tool",
            )
        self.name = check_tool_name(name)
        self.description = description
        self.timeout = check_timeout(timeout, f"Tool {name!r}: timeout")
        self._handler: Callable[..., Any] = function  # a handler, execute(args) or @tool's function
        self._blocking = not _is_async_callable(function)
        self._call: Callable[[ToolContext, dict[str, Any]], Any] = (
            handler if handler is not None else _execute_call(function, parameters)
        )
        self._parameters: dict[str, Any] | None = None
        self._response: dict[str, Any] | None = None
        self._validate: Callable[[dict[str, Any]], dict[str, Any]] = _accept
        self._parameters_source: type[BaseModel] | dict[str, Any] | None = None
        # What the tool is made from, for __reduce__: (classmethod or None for the class, args, kwargs).
        self._recipe: _Recipe = (
            None,
            (name, description),
            {"handler": handler, "execute": execute, "parameters": parameters, "timeout": timeout},
        )
        if parameters is not None:
            self.with_parameters_schema(parameters)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> FunctionTool:
        """Build a tool from a plain function: schema from its type hints and docstring."""
        from .schema import function_schema

        schema = function_schema(fn, name=name, description=description)
        self = cls(schema.name, schema.description, fn, timeout=timeout)
        self._validate = schema.validate
        self._parameters = schema.parameters
        context_param = schema.context_param
        if context_param is None:
            self._call = lambda ctx, kwargs: fn(**kwargs)
        else:
            self._call = lambda ctx, kwargs: fn(**kwargs, **{context_param: ctx})
        functools.update_wrapper(self, fn)
        self._recipe = ("from_function", (fn,), {"name": name, "description": description, "timeout": timeout})
        return self

    # -- builders (each returns the tool, as in the seed) --------------------------------------
    def with_parameters_schema(self, schema: type[BaseModel] | dict[str, Any]) -> Self:
        """Declare and enforce the arguments the handler receives (a pydantic model or a JSON schema)."""
        from .schema import args_validator, model_json_schema

        self._parameters = model_json_schema(schema)
        self._validate = args_validator(schema, self._parameters)
        self._parameters_source = schema
        return self

    def with_response_schema(self, schema: type[BaseModel] | dict[str, Any]) -> Self:
        from .schema import model_json_schema

        self._response = model_json_schema(schema)
        return self

    def with_long_running(self, value: bool = True) -> Self:
        self.is_long_running = value
        return self

    def with_read_only(self, value: bool = True) -> Self:
        self.is_read_only = value
        return self

    def with_concurrency_safe(self, value: bool = True) -> Self:
        self.is_concurrency_safe = value
        return self

    def with_scopes(self, scopes: Iterable[str]) -> Self:
        self.required_scopes = tuple(scopes)
        return self

    def with_timeout(self, seconds: float | None) -> Self:
        """Bound each call to `seconds` (None: the agent's `tool_timeout`, if any)."""
        self.timeout = check_timeout(seconds, f"Tool {self.name!r}: timeout")
        return self

    # -- Tool ----------------------------------------------------------------------------------
    @property
    def parameters_schema(self) -> dict[str, Any] | None:
        return self._parameters

    @property
    def response_schema(self) -> dict[str, Any] | None:
        return self._response

    def validate_args(self, args: dict[str, Any]) -> dict[str, Any]:
        return self._validate(args)

    async def execute(self, ctx: ToolContext, args: dict[str, Any]) -> Any:
        if self._blocking:
            # A plain function runs on a worker thread, as in pydantic-ai: the event loop stays
            # free for interrupts, the Stop button, progress lines and parallel calls.
            return await run_in_thread(self, self._call, ctx, args)
        result = self._call(ctx, args)
        if inspect.isawaitable(result):
            result = await result
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Call the original function, so a notebook user can try the tool directly."""
        return self._handler(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle the function and options the tool is made from; loading builds the tool again.

        What is derived from them does not pickle: the calling closures, and the pydantic class
        made at run time to check the arguments (so Ray could not ship a factory naming %%tool tools).
        """
        options = {key: value for key, value in vars(self).items() if key in _OPTIONS}
        return _rebuild, (type(self), self._recipe, options)


_Recipe = tuple[str | None, tuple[Any, ...], dict[str, Any]]
_OPTIONS = frozenset(
    {
        "name",
        "description",
        "timeout",
        "is_read_only",
        "is_concurrency_safe",
        "is_long_running",
        "required_scopes",
        "_response",
        "_parameters_source",
    }
)
"""The attributes the builders and `@tool` set after construction, which a pickled tool keeps."""


def _rebuild(cls: type[FunctionTool], recipe: _Recipe, options: dict[str, Any]) -> FunctionTool:
    """The tool `FunctionTool.__reduce__` pickled: made as before, then given its options again."""
    constructor, args, kwargs = recipe
    made: FunctionTool = (getattr(cls, constructor) if constructor else cls)(*args, **kwargs)
    if options.get("_parameters_source") is not None:
        made.with_parameters_schema(options["_parameters_source"])
    vars(made).update(options)
    return made


def _execute_call(execute: Callable[..., Any], parameters: Any) -> Callable[[ToolContext, dict[str, Any]], Any]:
    """`execute(args[, tool_context])` as a handler; a pydantic `parameters` model is built from the args."""
    build: Callable[[dict[str, Any]], Any] = getattr(parameters, "model_validate", None) or _accept
    params: Collection[inspect.Parameter]
    try:
        params = inspect.signature(execute).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: give it the arguments only
        params = ()
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)]
    if len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional):
        return lambda ctx, args: execute(build(args), ctx)
    return lambda ctx, args: execute(build(args))


def _accept(args: dict[str, Any]) -> dict[str, Any]:
    """No schema declared: the handler takes the arguments as they come."""
    return args


def _is_async_callable(fn: Callable[..., Any]) -> bool:
    """True for `async def` functions (also behind functools.partial or as a callable object's __call__)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004  # its __call__ method, not a callable() test


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool = False,
    long_running: bool = False,
    scopes: Iterable[str] = (),
    timeout: float | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    read_only: bool = False,
    concurrency_safe: bool = False,
    long_running: bool = False,
    scopes: Iterable[str] = (),
    timeout: float | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function into a tool: `@tool` or `@tool(read_only=True, concurrency_safe=True)`.

    The name comes from the function, the description from its docstring's summary, each
    parameter's description from its Args/Parameters section, the types from annotations.
    The result is still callable as the original function. `timeout=` bounds each call in
    seconds (see `FunctionTool`).
    """

    def decorate(func: Callable[..., Any]) -> FunctionTool:
        made = FunctionTool.from_function(func, name=name, description=description, timeout=timeout)
        made.is_read_only = read_only
        made.is_concurrency_safe = concurrency_safe
        made.is_long_running = long_running
        made.required_scopes = tuple(scopes)
        return made

    return decorate(fn) if fn is not None else decorate
