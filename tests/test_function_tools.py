"""Function tools, section by section of the seed's Function Tools page, through the public API.

Also: toolsets, SimpleToolContext, StatefulTool, multimodal function responses and the
file-reference guard.
"""

from __future__ import annotations

import asyncio
import base64
import struct
import time
import typing
import zlib
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from adk_notebook import (
    AdkError,
    BasicToolset,
    Blob,
    FileData,
    FilteredToolset,
    FunctionCall,
    FunctionModel,
    FunctionResponse,
    FunctionResponseData,
    FunctionTool,
    LlmAgent,
    LlmRequest,
    MergedToolset,
    Part,
    PrefixedToolset,
    ReadonlyContext,
    RunResult,
    ScriptedModel,
    SimpleToolContext,
    StatefulTool,
    Tool,
    ToolContext,
    Toolset,
    tool,
)
from adk_notebook.tools import resolve_file_uri
from adk_notebook.tools.base import LONG_RUNNING_NOTE
from adk_notebook.tools.responses import MAX_INLINE_DATA_BYTES, to_function_response, to_response_dict


# -- helpers --------------------------------------------------------------------------------
def make_png(width: int = 2, height: int = 2) -> bytes:
    """A real (tiny, red) PNG built by hand: signature, IHDR, IDAT, IEND."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PNG = make_png()


def tool_events(result: RunResult) -> list:
    return [e for e in result.events if not e.partial and e.function_responses()]


def responses(result: RunResult) -> list[FunctionResponse]:
    return [r for e in tool_events(result) for r in e.function_responses()]


def response_of(result: RunResult, name: str) -> dict[str, Any]:
    return next(r.response for r in responses(result) if r.name == name)


def declared(model: ScriptedModel | FunctionModel, index: int = 0) -> dict[str, Any]:
    return {d.name: d for d in model.requests[index].tools}


# -- Recommended: @tool --------------------------------------------------------------------
class WeatherArgs(BaseModel):
    city: str = Field(description="The city to look up")
    unit: str | None = Field(default=None, description="Temperature unit (celsius or fahrenheit)")


@tool
async def get_weather(args: WeatherArgs) -> dict:
    """Get the current weather for a city."""
    return {"temp": 22, "city": args.city}


async def test_tool_decorator_takes_description_and_schema_from_the_seed_style_function() -> None:
    model = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "22 degrees in Tokyo."])
    result = await LlmAgent(name="weather", model=model, tools=[get_weather]).run_async("Weather in Tokyo?")

    decl = declared(model)["get_weather"]
    assert decl.description == "Get the current weather for a city."
    assert decl.parameters["properties"]["city"]["description"] == "The city to look up"
    assert decl.parameters["required"] == ["city"]
    assert response_of(result, "get_weather") == {"temp": 22, "city": "Tokyo"}
    assert result.text == "22 degrees in Tokyo."


class SearchArgs(BaseModel):
    query: str = Field(description="What to look for")


@tool
async def search_docs(ctx: ToolContext, args: SearchArgs) -> dict:
    """Search the user's saved documents."""
    return {"user": ctx.user_id, "query": args.query, "hits": []}


async def test_a_tool_context_first_parameter_receives_the_context_and_is_not_declared() -> None:
    model = ScriptedModel([FunctionCall("search_docs", {"query": "budget"}), "Nothing found."])
    result = await LlmAgent(name="docs", model=model, tools=[search_docs]).run_async("Find budget", user_id="ana")

    assert list(declared(model)["search_docs"].parameters["properties"]) == ["query"]
    assert response_of(result, "search_docs") == {"user": "ana", "query": "budget", "hits": []}


class Stop(typing.TypedDict):
    """A stop on a route."""

    city: str
    nights: typing.NotRequired[int]


async def test_tool_takes_a_typing_typed_dict_on_every_supported_python() -> None:
    seen: list[Any] = []

    @tool
    def plan_route(stops: list[Stop]) -> dict:
        """Plan a route through some stops."""
        seen.append(stops)
        return {"nights": sum(s.get("nights", 1) for s in stops)}

    model = ScriptedModel(
        [
            FunctionCall("plan_route", {"stops": [{"city": "Lima", "nights": "2"}, {"city": "Cusco"}]}),
            FunctionCall("plan_route", {"stops": [{"nights": 1}]}),
            "Three nights.",
        ]
    )
    result = await LlmAgent(name="trips", model=model, tools=[plan_route]).run_async("Plan it")
    item = declared(model)["plan_route"].parameters["properties"]["stops"]["items"]
    assert item["description"] == "A stop on a route." and item["required"] == ["city"]
    first, second = responses(result)
    assert first.response == {"nights": 3} and seen == [[{"city": "Lima", "nights": 2}, {"city": "Cusco"}]]
    assert second.response["code"] == "invalid_arguments" and "'stops[0].city' is required" in second.response["error"]


# -- Metadata attributes on @tool -----------------------------------------------------------
def test_metadata_attributes_on_the_decorator() -> None:
    @tool(read_only=True, concurrency_safe=True)
    async def cache_lookup(key: str) -> dict:
        """Look up cached data — no side effects, safe for parallel dispatch."""
        return {"result": "cached"}

    @tool(long_running=True)
    async def generate_report(topic: str) -> dict:
        """Start a long-running background report."""
        return {"task_id": "abc123", "status": "processing"}

    @tool
    def plain(x: int) -> int:
        """No attributes: every flag keeps its default."""
        return x

    assert (cache_lookup.is_read_only, cache_lookup.is_concurrency_safe, cache_lookup.is_long_running) == (
        True,
        True,
        False,
    )
    assert (generate_report.is_read_only, generate_report.is_concurrency_safe, generate_report.is_long_running) == (
        False,
        False,
        True,
    )
    assert (plain.is_read_only, plain.is_concurrency_safe, plain.is_long_running) == (False, False, False)
    assert generate_report.declaration().description.endswith(LONG_RUNNING_NOTE)
    assert plain(3) == 3, "the decorated function is still callable"


# -- Alternative: FunctionTool(...) with a parameters schema ---------------------------------
class WeatherParams(BaseModel):
    location: str = Field(description="The city or location to get weather for")


def weather_tool() -> FunctionTool:
    def handler(ctx: ToolContext, args: dict) -> dict:
        return {"location": args.get("location", "unknown"), "temperature": "22°C", "conditions": "sunny"}

    return FunctionTool("get_weather", "Get current weather for a location", handler).with_parameters_schema(
        WeatherParams
    )


async def test_function_tool_with_parameters_schema() -> None:
    model = ScriptedModel(
        [FunctionCall("get_weather", {"location": "Tokyo"}), "El tiempo en Tokio es soleado, con 22 °C."]
    )
    result = await LlmAgent(
        name="weather_agent", model=model, instruction="You help users check the weather.", tools=[weather_tool()]
    ).run_async("¿Qué tiempo hace en Tokio?")

    decl = declared(model)["get_weather"]
    assert decl.parameters["properties"]["location"]["description"] == "The city or location to get weather for"
    assert response_of(result, "get_weather") == {"location": "Tokyo", "temperature": "22°C", "conditions": "sunny"}
    assert result.text == "El tiempo en Tokio es soleado, con 22 °C."


# -- Step 2: parameters from the JSON args --------------------------------------------------
def process_order(ctx: ToolContext, args: dict) -> dict:
    product_id = args.get("product_id")
    if not isinstance(product_id, str):
        raise AdkError.tool("product_id is required")
    quantity = args.get("quantity")
    if not isinstance(quantity, int):
        raise AdkError.tool("quantity is required")
    return {
        "order_id": "ORD-12345",
        "product_id": product_id,
        "quantity": quantity,
        "priority": args.get("priority", "normal"),
        "status": "confirmed",
    }


# -- The TypeScript ADK's form (seed 003): FunctionTool({name, description, parameters, execute}) -----
class Expense(BaseModel):
    category: str = Field(description="Categoría (ej. Vivienda, Comida, Transporte)")
    amount: float = Field(description="Monto mensual en USD")


class BudgetInput(BaseModel):
    monthlyIncome: float = Field(description="Ingresos mensuales en USD")  # the article's names
    expenses: list[Expense] = Field(description="Lista de gastos mensuales")


def analyze(params: BudgetInput) -> dict:
    total = sum(e.amount for e in params.expenses)
    return {"status": "success", "summary": {"totalExpenses": total, "savings": params.monthlyIncome - total}}


async def test_function_tool_in_the_typescript_form() -> None:
    budget_tool = FunctionTool(
        name="analyze_budget",
        description="Analiza ingresos y gastos mensuales",
        parameters=BudgetInput,
        execute=analyze,
    )
    model = ScriptedModel(
        [
            FunctionCall(
                "analyze_budget", {"monthlyIncome": 3000, "expenses": [{"category": "Comida", "amount": "400"}]}
            ),
            FunctionCall("analyze_budget", {"monthlyIncome": 3000}),
            "Ahorrás 2600 USD por mes.",
        ]
    )
    result = await LlmAgent(name="budget", model=model, tools=[budget_tool]).run_async("mis gastos de comida son $400")

    declaration = declared(model)["analyze_budget"]
    assert declaration.description == "Analiza ingresos y gastos mensuales"
    expenses = declaration.parameters["properties"]["expenses"]
    assert expenses["description"] == "Lista de gastos mensuales"
    assert expenses["items"]["properties"]["amount"] == {"type": "number", "description": "Monto mensual en USD"}
    ok, refused = responses(result)
    assert ok.response == {"status": "success", "summary": {"totalExpenses": 400.0, "savings": 2600.0}}
    assert refused.response["code"] == "invalid_arguments" and "'expenses' is required" in refused.response["error"]
    assert budget_tool(BudgetInput(monthlyIncome=10, expenses=[]))["summary"]["savings"] == 10, "still the function"


async def test_typescript_form_with_a_json_schema_and_the_tool_context() -> None:
    async def lookup(params: dict, tool_context: ToolContext) -> dict:
        return {"ticker": params["ticker"].upper(), "call": tool_context.function_call_id}

    quote = FunctionTool(
        name="get_quote",
        description="A stock quote.",
        execute=lookup,
        parameters={"type": "object", "properties": {"ticker": {"type": "string"}}, "required": ["ticker"]},
    )
    ctx = SimpleToolContext().with_function_call_id("c1")
    assert await quote.execute(ctx, quote.validate_args({"ticker": "aapl"})) == {"ticker": "AAPL", "call": "c1"}
    no_schema = FunctionTool(name="echo", description="Echo.", execute=lambda params: params)
    assert await no_schema.execute(ctx, {"anything": 1}) == {"anything": 1}
    for wrong in ({}, {"handler": lambda ctx, args: {}, "execute": lambda params: {}}):
        with pytest.raises(AdkError, match="takes one function"):
            FunctionTool("t", "d", **wrong)


async def test_process_order_reads_parameters_and_reports_missing_ones() -> None:
    order_tool = FunctionTool(
        "process_order",
        "Process an order. Parameters: product_id (required), quantity (required), priority (optional)",
        process_order,
    )
    model = ScriptedModel(
        [
            [
                FunctionCall("process_order", {"product_id": "P-1", "quantity": 2}),
                FunctionCall("process_order", {"quantity": 1}),
            ],
            "Order ORD-12345 is confirmed; the second one needs a product id.",
        ]
    )
    result = await LlmAgent(name="shop", model=model, tools=[order_tool]).run_async("Order two P-1 and one more")

    ok, missing = responses(result)
    assert ok.response == {
        "order_id": "ORD-12345",
        "product_id": "P-1",
        "quantity": 2,
        "priority": "normal",
        "status": "confirmed",
    }
    assert missing.response == {"error": "product_id is required", "code": "tool_error", "category": "internal"}
    assert result.text.startswith("Order ORD-12345")


# -- Step 3: typed parameters with a schema ---------------------------------------------------
class Operation(str, Enum):
    ADD = "add"
    SUBTRACT = "subtract"
    MULTIPLY = "multiply"
    DIVIDE = "divide"


class CalculatorParams(BaseModel):
    operation: Operation = Field(description="The arithmetic operation to perform")
    a: float = Field(description="First operand")
    b: float = Field(description="Second operand")


def calculate(ctx: ToolContext, args: dict) -> dict:
    params = CalculatorParams.model_validate(args)
    a, b = params.a, params.b
    if params.operation is Operation.DIVIDE and b == 0:
        raise AdkError.tool("Cannot divide by zero")
    result = {Operation.ADD: a + b, Operation.SUBTRACT: a - b, Operation.MULTIPLY: a * b}.get(params.operation)
    return {"result": a / b if result is None else result}


def calculator_tool() -> FunctionTool:
    return FunctionTool("calculator", "Perform arithmetic operations", calculate).with_parameters_schema(
        CalculatorParams
    )


async def test_calculator_with_typed_schema_and_divide_by_zero() -> None:
    model = ScriptedModel(
        [
            [
                FunctionCall("calculator", {"operation": "add", "a": 2, "b": 3}),
                FunctionCall("calculator", {"operation": "divide", "a": 1, "b": 0}),
                FunctionCall("calculator", {"operation": "modulo", "a": 1, "b": 2}),
            ],
            "2 + 3 = 5; the rest I cannot do.",
        ]
    )
    result = await LlmAgent(name="calc", model=model, tools=[calculator_tool()]).run_async("2+3, 1/0, 1%2")

    schema = declared(model)["calculator"].parameters
    assert schema["properties"]["operation"]["enum"] == ["add", "subtract", "multiply", "divide"]
    added, divided, modulo = (r.response for r in responses(result))
    assert added == {"result": 5.0}
    assert divided == {"error": "Cannot divide by zero", "code": "tool_error", "category": "internal"}
    assert modulo["code"] == "invalid_arguments" and "operation" in modulo["error"]
    assert result.text == "2 + 3 = 5; the rest I cannot do."


# -- Step 4: an agent with several tools ---------------------------------------------------------
async def test_agent_with_several_tools_declares_each_and_the_model_picks() -> None:
    convert = FunctionTool(
        "convert", "Convert between units", lambda ctx, args: {"value": args["value"] * 2.54, "unit": "cm"}
    )
    model = ScriptedModel([FunctionCall("convert", {"value": 10}), "10 in is 25.4 cm."])
    result = await LlmAgent(
        name="assistant",
        model=model,
        instruction="Help with calculations, conversions, and weather.",
        tools=[calculator_tool(), convert, weather_tool()],
    ).run_async("10 inches in cm?")

    assert list(declared(model)) == ["calculator", "convert", "get_weather"]
    assert [r.name for r in responses(result)] == ["convert"]
    assert response_of(result, "convert") == {"value": 25.4, "unit": "cm"}


# -- Error handling --------------------------------------------------------------------------
def divide(ctx: ToolContext, args: dict) -> dict:
    for name in ("a", "b"):
        if not isinstance(args.get(name), (int, float)):
            raise AdkError("tool", "invalid_input", "tool.divide.missing_param", f"Parameter '{name}' is required")
    if args["b"] == 0:
        raise AdkError("tool", "invalid_input", "tool.divide.division_by_zero", "Cannot divide by zero")
    return {"result": args["a"] / args["b"]}


async def test_error_handling_full_adk_errors_reach_the_model_with_code_and_category() -> None:
    model = ScriptedModel(
        [
            [
                FunctionCall("divide", {"a": 1, "b": 0}),
                FunctionCall("divide", {"b": 2}),
                FunctionCall("divide", {"a": 6, "b": 3}),
            ],
            "6 / 3 = 2.",
        ]
    )
    result = await LlmAgent(
        name="calc", model=model, tools=[FunctionTool("divide", "Divide two numbers", divide)]
    ).run_async("?")

    by_zero, missing, ok = (r.response for r in responses(result))
    assert by_zero == {
        "error": "Cannot divide by zero",
        "code": "tool.divide.division_by_zero",
        "category": "invalid_input",
    }
    assert missing == {
        "error": "Parameter 'a' is required",
        "code": "tool.divide.missing_param",
        "category": "invalid_input",
    }
    assert ok == {"result": 2.0}
    assert result.text == "6 / 3 = 2.", "the run goes on after tool errors"


# Structured errors, as the tool-design article recommends.
async def test_structured_error_reaches_the_model_as_error_code_and_category() -> None:
    @tool
    def get_stock(ticker: str) -> dict:
        """Look up a stock quote by ticker symbol."""
        raise AdkError.tool(
            f"Ticker '{ticker}' not found. Available: AAPL, MSFT, NVDA.", code="ticker_not_found", category="not_found"
        )

    model = ScriptedModel([FunctionCall("get_stock", {"ticker": "XYZ"}), "XYZ is not a ticker I know."])
    result = await LlmAgent(name="stocks", model=model, tools=[get_stock]).run_async("XYZ?")

    assert response_of(result, "get_stock") == {
        "error": "Ticker 'XYZ' not found. Available: AAPL, MSFT, NVDA.",
        "code": "ticker_not_found",
        "category": "not_found",
    }


async def test_a_tool_may_return_its_own_error_status_untouched() -> None:
    returned = {
        "status": "error",
        "message": "Ticker 'XYZ' no encontrado. Tickers disponibles: AAPL, MSFT, NVDA, SPY, VTI...",
    }

    @tool
    def get_stock(ticker: str) -> dict:
        """Look up a stock quote by ticker symbol."""
        return dict(returned)

    model = ScriptedModel([FunctionCall("get_stock", {"ticker": "XYZ"}), "No conozco XYZ."])
    result = await LlmAgent(name="stocks", model=model, tools=[get_stock]).run_async("XYZ?")

    assert response_of(result, "get_stock") == returned
    assert model.requests[1].contents[-1].function_responses()[0].response == returned, "the model sees it as returned"


# -- Tool context ----------------------------------------------------------------------------
class GreetParams(BaseModel):
    message: str | None = None


async def test_greet_tool_sees_user_session_and_agent() -> None:
    async def greet(ctx: ToolContext, args: dict) -> dict:
        return {
            "greeting": f"Hello, user {ctx.user_id}!",
            "session": ctx.session_id,
            "served_by": ctx.agent_name,
            "artifacts": ctx.artifacts is not None,
            "memories": await ctx.search_memory("greetings"),
        }

    greet_tool = FunctionTool("greet", "Greet the user with session info", greet).with_parameters_schema(GreetParams)
    model = ScriptedModel([FunctionCall("greet", {}), "Hello!"])
    result = await LlmAgent(name="greeter", model=model, tools=[greet_tool]).run_async(
        "Hi", user_id="u42", session_id="s1"
    )

    assert response_of(result, "greet") == {
        "greeting": "Hello, user u42!",
        "session": "s1",
        "served_by": "greeter",
        "artifacts": False,
        "memories": [],
    }


# -- Long-running tools ------------------------------------------------------------------------
class ReportParams(BaseModel):
    topic: str


class StatusParams(BaseModel):
    task_id: str


@dataclass
class TaskState:
    status: str
    progress: int = 0
    result: str | None = None


async def test_long_running_report_start_and_status_pair() -> None:
    tasks: dict[str, TaskState] = {}
    finished = asyncio.Event()
    background: set[asyncio.Task] = set()

    async def start(ctx: ToolContext, args: dict) -> dict:
        task_id = f"task_{len(tasks) + 1}"
        tasks[task_id] = TaskState("processing")

        async def work() -> None:  # the seed's tokio::spawn: runs on after the tool returned
            await asyncio.sleep(0.01)
            tasks[task_id].status, tasks[task_id].result = "completed", "Report complete"
            finished.set()

        job = asyncio.get_running_loop().create_task(work())
        background.add(job)
        job.add_done_callback(background.discard)
        return {"task_id": task_id, "status": "processing"}

    async def status(ctx: ToolContext, args: dict) -> dict:
        task = tasks.get(args["task_id"])
        if task is None:
            return {"error": "Task not found"}
        return {"status": task.status, "result": task.result}

    start_tool = (
        FunctionTool("generate_report", "Start generating a report. Returns task_id immediately.", start)
        .with_parameters_schema(ReportParams)
        .with_long_running(True)
    )
    status_tool = FunctionTool("check_report_status", "Check report generation status", status).with_parameters_schema(
        StatusParams
    )
    model = ScriptedModel(
        [
            FunctionCall("generate_report", {"topic": "sales"}),
            "I started the report (task_1).",
            FunctionCall("check_report_status", {"task_id": "task_1"}),
            "The report is complete.",
        ]
    )
    agent = LlmAgent(name="reports", model=model, tools=[start_tool, status_tool])

    first = await agent.run_async("Generate the sales report")
    decls = declared(model)
    assert decls["generate_report"].description == (
        f"Start generating a report. Returns task_id immediately.\n\n{LONG_RUNNING_NOTE}"
    )
    assert LONG_RUNNING_NOTE not in decls["check_report_status"].description
    call_id = first.events[1].function_calls()[0].id
    (event,) = tool_events(first)
    assert event.long_running_tool_ids == [call_id]
    assert event.function_responses()[0].response == {"task_id": "task_1", "status": "processing"}
    assert first.text == "I started the report (task_1)."

    await asyncio.wait_for(finished.wait(), 5)
    second = await agent.run_async("Is it done?", session_id=first.session_id)
    (event,) = tool_events(second)
    assert event.long_running_tool_ids == []
    assert response_of(second, "check_report_status") == {"status": "completed", "result": "Report complete"}
    assert second.text == "The report is complete."


# -- Metadata: read-only and concurrency ---------------------------------------------------------
async def test_read_only_and_concurrency_safe_builders() -> None:
    lookup = (
        FunctionTool("lookup", "Look up data", lambda ctx, args: {"result": "cached data"})
        .with_read_only(True)
        .with_concurrency_safe(True)
    )
    update = FunctionTool("update", "Update record", lambda ctx, args: {"updated": True})
    assert (lookup.is_read_only, lookup.is_concurrency_safe) == (True, True)
    assert (update.is_read_only, update.is_concurrency_safe) == (False, False)

    model = ScriptedModel(
        [
            [FunctionCall("update", {}), FunctionCall("lookup", {}), FunctionCall("lookup", {})],
            "Done.",
        ]
    )
    result = await LlmAgent(name="auto", model=model, tools=[lookup, update], tool_execution_strategy="auto").run_async(
        "go"
    )
    assert [r.name for r in responses(result)] == ["update", "lookup", "lookup"], "responses keep the model's order"


# -- SimpleToolContext -------------------------------------------------------------------------
async def test_simple_tool_context_runs_a_tool_outside_any_agent() -> None:
    @tool
    def city_weather(city: str) -> dict:
        """Get the current weather for a city."""
        return {"city": city, "condition": "sunny"}

    assert await city_weather.execute(SimpleToolContext(), {"city": "Tokyo"}) == {"city": "Tokyo", "condition": "sunny"}


async def test_simple_tool_context_defaults() -> None:
    ctx = SimpleToolContext("my-test-harness")
    assert isinstance(ctx, ToolContext) and isinstance(ctx, ReadonlyContext)
    assert (ctx.user_id, ctx.session_id, ctx.agent_name, ctx.app_name) == (
        "anonymous",
        "",
        "my-test-harness",
        "my-test-harness",
    )
    assert ctx.artifacts is None
    assert await ctx.search_memory("anything") == []
    other = SimpleToolContext()
    assert other.agent_name == "simple"
    assert ctx.function_call_id and ctx.invocation_id
    assert (ctx.function_call_id, ctx.invocation_id) != (other.function_call_id, other.invocation_id)
    assert dict(ctx.state) == {} and dict(other.state) == {}

    ctx.state["visits"] = 1
    assert dict(ctx.state) == {"visits": 1} and ctx.actions.state_delta == {"visits": 1}
    assert dict(other.state) == {}, "every context has its own fresh state"


async def test_simple_tool_context_takes_the_seed_builders() -> None:
    @tool
    def whoami(tool_context: ToolContext) -> dict:
        """Say which call and session this is."""
        return {"call": tool_context.function_call_id, "session": tool_context.session_id}

    # The seed: SimpleToolContext::new("my-mcp-server").with_function_call_id("custom-call-id")
    ctx = SimpleToolContext("my-mcp-server").with_function_call_id("custom-call-id")
    assert isinstance(ctx, SimpleToolContext) and ctx.session_id == ""
    assert await whoami.execute(ctx, {}) == {"call": "custom-call-id", "session": ""}
    bound = SimpleToolContext("my-mcp-server").with_session_id("session-42")
    assert await whoami.execute(bound, {}) == {"call": bound.function_call_id, "session": "session-42"}
    both = SimpleToolContext("srv").with_session_id("s-1").with_function_call_id("c-1")
    assert (both.session_id, both.function_call_id, both.user_id) == ("s-1", "c-1", "anonymous")
    assert repr(both) == "SimpleToolContext(caller='srv', function_call_id='c-1')"


async def test_simple_tool_context_overrides_and_progress() -> None:
    ctx = SimpleToolContext(
        "my-mcp-server",
        function_call_id="custom-call-id",
        session_id="session-42",
        user_id="admin_ana",
        state={"user:lang": "es"},
    )
    assert (ctx.function_call_id, ctx.session_id, ctx.user_id) == ("custom-call-id", "session-42", "admin_ana")
    assert ctx.state["user:lang"] == "es"

    async def build(ctx: ToolContext, args: dict) -> dict:
        await ctx.emit_progress("stdout", "Compiling project...\n")
        ctx.emit_progress("stderr", "warning: unused variable `x`\n")  # awaiting is optional
        return {"status": "ok", "warnings": 1}

    def sync_build(ctx: ToolContext, args: dict) -> dict:  # runs on a worker thread
        ctx.emit_progress("stdout", "Build finished in 4.2s\n")
        return {"status": "ok"}

    assert await FunctionTool("build", "Build the project", build).execute(ctx, {}) == {"status": "ok", "warnings": 1}
    assert await FunctionTool("sync_build", "Build the project", sync_build).execute(ctx, {}) == {"status": "ok"}
    assert [(p.stream, p.chunk) for p in ctx.progress] == [
        ("stdout", "Compiling project...\n"),
        ("stderr", "warning: unused variable `x`\n"),
        ("stdout", "Build finished in 4.2s\n"),
    ]
    assert {p.call_id for p in ctx.progress} == {"custom-call-id"}


# -- StatefulTool ------------------------------------------------------------------------------
@dataclass
class AppCache:
    entries: dict[str, str] = field(default_factory=dict)


class LookupArgs(BaseModel):
    key: str = Field(description="The cache key")


async def test_stateful_cache_lookup_from_the_seed() -> None:
    cache = AppCache({"greeting": "hola"})

    async def lookup(state: AppCache, ctx: ToolContext, args: dict) -> dict:
        key = args["key"]
        return {"key": key, "value": state.entries.get(key, "")}

    cache_tool = (
        StatefulTool("cache_lookup", "Look up a value in the application cache", cache, lookup)
        .with_parameters_schema(LookupArgs)
        .with_read_only(True)
        .with_concurrency_safe(True)
    )
    assert isinstance(cache_tool, StatefulTool) and cache_tool.state is cache
    assert (cache_tool.is_read_only, cache_tool.is_concurrency_safe) == (True, True)

    model = ScriptedModel(
        [
            [FunctionCall("cache_lookup", {"key": "greeting"}), FunctionCall("cache_lookup", {"key": "missing"})],
            "It says hola.",
        ]
    )
    agent = LlmAgent(name="cache", model=model, tools=[cache_tool], tool_execution_strategy="auto")
    result = await agent.run_async("What is the greeting?")

    assert declared(model)["cache_lookup"].parameters["properties"]["key"]["description"] == "The cache key"
    assert [r.response for r in responses(result)] == [
        {"key": "greeting", "value": "hola"},
        {"key": "missing", "value": ""},
    ]
    cache.entries["missing"] = "found now"  # the tool holds the object, not a copy
    assert await cache_tool.execute(SimpleToolContext(), {"key": "missing"}) == {"key": "missing", "value": "found now"}


async def test_stateful_counter_is_shared_across_calls_and_runs() -> None:
    def count(state: dict, ctx: ToolContext, args: dict) -> dict:
        state["calls"] += 1
        return {"calls": state["calls"]}

    counter = StatefulTool("count", "Count calls", {"calls": 0}, count)
    model = ScriptedModel([FunctionCall("count", {}), "one", FunctionCall("count", {}), "two"])
    agent = LlmAgent(name="counter", model=model, tools=[counter])
    first = await agent.run_async("count")
    second = await agent.run_async("count again")  # a new session: the tool's state is not session state

    assert response_of(first, "count") == {"calls": 1}
    assert response_of(second, "count") == {"calls": 2}
    assert counter.state == {"calls": 2}


async def _read_pause_write(state: dict, ctx: ToolContext, args: dict) -> dict:
    """Read, await, write: two overlapping calls would both write the same value."""
    seen = state["n"]
    state["running"] += 1
    state["max_running"] = max(state["max_running"], state["running"])
    await asyncio.sleep(0.001)
    state["running"] -= 1
    state["n"] = seen + 1
    return {"n": state["n"]}


async def test_stateful_tool_is_not_corrupted_by_parallel_dispatch() -> None:
    state = {"n": 0, "running": 0, "max_running": 0}
    counter = StatefulTool("bump", "Add one", state, _read_pause_write)
    model = ScriptedModel([[FunctionCall("bump", {}) for _ in range(20)], "Twenty."])
    result = await LlmAgent(name="par", model=model, tools=[counter], tool_execution_strategy="parallel").run_async(
        "go"
    )

    assert state["n"] == 20 and state["max_running"] == 1
    assert sorted(r.response["n"] for r in responses(result)) == list(range(1, 21))


async def test_stateful_tool_serializes_direct_concurrent_calls_sync_and_async() -> None:
    state = {"n": 0, "running": 0, "max_running": 0}
    bump = StatefulTool("bump", "Add one", state, _read_pause_write)
    await asyncio.gather(*(bump.execute(SimpleToolContext(), {}) for _ in range(25)))
    assert state["n"] == 25 and state["max_running"] == 1

    def slow_sync(state: dict, ctx: ToolContext, args: dict) -> dict:  # runs on worker threads
        seen = state["n"]
        time.sleep(0.001)
        state["n"] = seen + 1
        return {"n": state["n"]}

    sync_state = {"n": 0}
    sync_bump = StatefulTool("sync_bump", "Add one", sync_state, slow_sync)
    await asyncio.gather(*(sync_bump.execute(SimpleToolContext(), {}) for _ in range(10)))
    assert sync_state["n"] == 10


async def test_stateful_tool_without_exclusive_lets_calls_overlap() -> None:
    state = {"n": 0, "running": 0, "max_running": 0}
    bump = StatefulTool("bump", "Add one", state, _read_pause_write, exclusive=False)
    await asyncio.gather(*(bump.execute(SimpleToolContext(), {}) for _ in range(10)))
    assert state["max_running"] > 1, "the lock is what keeps the default safe"


def test_stateful_tool_serves_runs_on_different_event_loops() -> None:
    # agent.run() gives every run a fresh event loop; the tool's lock must not be tied to the first.
    state = {"n": 0, "running": 0, "max_running": 0}
    bump = StatefulTool("bump", "Add one", state, _read_pause_write)
    script: list[Any] = []
    for _ in range(2):
        script += [[FunctionCall("bump", {}) for _ in range(5)], "done"]
    agent = LlmAgent(name="loops", model=ScriptedModel(script), tools=[bump], tool_execution_strategy="parallel")
    for _ in range(2):
        result = agent.run("go")
        assert all("error" not in r.response for r in responses(result))
    assert state["n"] == 10 and state["max_running"] == 1


# -- Multimodal function responses ---------------------------------------------------------------
async def generate_chart(ctx: ToolContext, args: dict) -> dict:
    return {
        "response": {"title": "Q4 Sales", "chart_type": "bar"},
        "inline_data": [{"mime_type": "image/png", "data": PNG}],
    }


def test_to_function_response_for_the_seed_chart() -> None:
    response = to_function_response(
        "generate_chart",
        "call-1",
        {
            "response": {"title": "Q4 Sales", "chart_type": "bar"},
            "inline_data": [{"mime_type": "image/png", "data": PNG}],
        },
    )
    assert response == FunctionResponse(
        "generate_chart",
        {"title": "Q4 Sales", "chart_type": "bar"},
        "call-1",
        [Part(inline_data=Blob("image/png", PNG))],
    )
    # The JSON form sessions store carries the bytes as base64 and reads back the same.
    stored = Part(function_response=response).to_dict()
    assert stored["function_response"]["parts"][0]["inline_data"]["data"] == base64.b64encode(PNG).decode()
    assert Part.from_dict(stored).function_response == response


async def test_chart_tool_inline_png_reaches_the_function_response_event() -> None:
    # Waits on the dispatcher calling to_function_response (the parts are dropped otherwise).
    chart = FunctionTool("generate_chart", "Render a sales chart", generate_chart)
    model = ScriptedModel([FunctionCall("generate_chart", {}), "Here is the Q4 chart."])
    result = await LlmAgent(name="charts", model=model, tools=[chart]).run_async("Chart Q4 sales")

    (response,) = responses(result)
    assert response.response == {"title": "Q4 Sales", "chart_type": "bar"}
    assert response.parts == [Part(inline_data=Blob("image/png", PNG))]
    assert model.requests[1].contents[-1].function_responses()[0].parts == response.parts, "the model receives it"


async def test_pdf_file_reference_reaches_the_function_response_event() -> None:
    # Waits on the dispatcher calling to_function_response (the parts are dropped otherwise).
    @tool
    def get_report(document_id: str) -> dict:
        """Fetch a stored report."""
        return {
            "response": {"document_id": document_id, "pages": 12},
            "file_data": [{"mime_type": "application/pdf", "file_uri": "gs://my-bucket/reports/report-2024.pdf"}],
        }

    model = ScriptedModel([FunctionCall("get_report", {"document_id": "report-2024"}), "The report has 12 pages."])
    result = await LlmAgent(name="docs", model=model, tools=[get_report]).run_async("Get report-2024")

    (response,) = responses(result)
    assert response.response == {"document_id": "report-2024", "pages": 12}
    assert response.parts == [Part(file_data=FileData("application/pdf", "gs://my-bucket/reports/report-2024.pdf"))]


async def test_a_tool_may_return_function_response_data_directly() -> None:
    # Waits on the dispatcher calling to_function_response (the parts are dropped otherwise).
    @tool
    def chart_and_source(title: str) -> FunctionResponseData:
        """Draw a chart and link its data."""
        return (
            FunctionResponseData({"title": title})
            .with_inline_data("image/png", PNG)
            .with_file_data("text/csv", "gs://bucket/q4.csv")
        )

    model = ScriptedModel([FunctionCall("chart_and_source", {"title": "Q4"}), "Done."])
    result = await LlmAgent(name="charts", model=model, tools=[chart_and_source]).run_async("Chart Q4")

    (response,) = responses(result)
    assert response.response == {"title": "Q4"}
    assert response.parts == [
        Part(inline_data=Blob("image/png", PNG)),
        Part(file_data=FileData("text/csv", "gs://bucket/q4.csv")),
    ]


async def test_too_much_inline_data_is_an_error_for_the_model_not_a_crash() -> None:
    half = MAX_INLINE_DATA_BYTES // 2 + 1

    @tool
    def huge() -> dict:
        """Return two big blobs."""
        return {"inline_data": [{"mime_type": "application/octet-stream", "data": bytes(half)}] * 2}

    model = ScriptedModel([FunctionCall("huge", {}), "That was too big."])
    result = await LlmAgent(name="big", model=model, tools=[huge]).run_async("go")

    (response,) = responses(result)
    assert response.response["code"] == "inline_data_too_large"
    assert f"{2 * half:,} bytes" in response.response["error"] and "file_data" in response.response["error"]
    assert response.parts == []
    assert result.text == "That was too big."

    exactly = FunctionResponseData.from_tool_result(
        "t", {"inline_data": {"mime_type": "x/y", "data": bytes(MAX_INLINE_DATA_BYTES)}}
    )
    assert exactly.inline_bytes == MAX_INLINE_DATA_BYTES, "the limit itself is allowed"


# -- FunctionResponseData inputs -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("data", "mime_type"),
    [
        (PNG, "image/png"),
        (b"\xff\xd8\xff\xe0\x00\x10JFIF\x00", "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"GIF87a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"%PDF-1.7\n%\xe2\xe3\xcf\xd3", "application/pdf"),
    ],
)
def test_raw_bytes_are_sniffed(data: bytes, mime_type: str) -> None:
    frd = FunctionResponseData.from_tool_result("t", {"ok": True, "inline_data": data})  # one item, not a list
    assert frd == FunctionResponseData({"ok": True}, [Part(inline_data=Blob(mime_type, data))])


def test_unknown_raw_bytes_need_a_mime_type() -> None:
    frd = FunctionResponseData.from_tool_result("t", {"inline_data": [b"\x00\x01 not an image"]})
    assert frd.parts == []
    assert frd.response["code"] == "invalid_media"
    assert "Tool 't'" in frd.response["error"] and "mime_type" in frd.response["error"]

    given = FunctionResponseData.from_tool_result(
        "t", {"inline_data": [{"mime_type": "audio/wav", "data": b"\x00\x01"}]}
    )
    assert given.parts == [Part(inline_data=Blob("audio/wav", b"\x00\x01"))]


def test_base64_text_is_decoded() -> None:
    text = base64.b64encode(PNG).decode()
    frd = FunctionResponseData.from_tool_result("t", {"inline_data": [{"mime_type": "image/png", "data": text}]})
    assert frd.parts == [Part(inline_data=Blob("image/png", PNG))]
    sniffed = FunctionResponseData.from_tool_result("t", {"inline_data": [{"data": text}]})
    assert sniffed.parts == frd.parts, "without mime_type the decoded bytes are sniffed"

    bad = FunctionResponseData.from_tool_result(
        "t", {"inline_data": [{"mime_type": "image/png", "data": "not base64!"}]}
    )
    assert bad.response["code"] == "invalid_media" and "base64" in bad.response["error"]


def test_pil_image_becomes_png() -> None:
    image_module = pytest.importorskip("PIL.Image", reason="Pillow is not installed; PIL images cannot be tested")
    image = image_module.new("RGB", (3, 2), (255, 0, 0))
    frd = FunctionResponseData.from_tool_result("t", {"inline_data": image})
    (part,) = frd.parts
    assert part.inline_data.mime_type == "image/png" and part.inline_data.data.startswith(b"\x89PNG")


def test_ipython_image_is_sent_with_its_format() -> None:
    display = pytest.importorskip("IPython.display")
    frd = FunctionResponseData.from_tool_result("t", {"caption": "red", "inline_data": [display.Image(data=PNG)]})
    assert frd == FunctionResponseData({"caption": "red"}, [Part(inline_data=Blob("image/png", PNG))])

    linked = FunctionResponseData.from_tool_result("t", {"inline_data": display.Image(url="https://example.com/a.png")})
    assert linked.response["code"] == "invalid_media" and "file_data" in linked.response["error"]


def test_file_data_items() -> None:
    frd = FunctionResponseData.from_tool_result(
        "t",
        {
            "file_data": [
                "reports/q4.pdf",
                "https://example.com/chart.png",
                {"mime_type": "application/pdf", "file_uri": "gs://bucket/report"},
                Path("data/table.csv"),
            ]
        },
    )
    assert frd.response == {}
    assert [(p.mime_type, p.file_uri) for p in frd.parts] == [
        ("application/pdf", "reports/q4.pdf"),
        ("image/png", "https://example.com/chart.png"),
        ("application/pdf", "gs://bucket/report"),
        ("text/csv", "data/table.csv"),
    ]
    unknown = FunctionResponseData.from_tool_result("t", {"file_data": "gs://bucket/blob-without-extension"})
    assert unknown.response["code"] == "invalid_media" and "mime_type" in unknown.response["error"]


def test_response_key_is_unwrapped_only_when_it_is_all_that_is_left() -> None:
    alone = FunctionResponseData.from_tool_result("t", {"response": {"a": 1}, "file_data": "x.pdf"})
    assert alone.response == {"a": 1}
    beside = FunctionResponseData.from_tool_result("t", {"response": {"a": 1}, "note": "n", "file_data": "x.pdf"})
    assert beside.response == {"response": {"a": 1}, "note": "n"}
    plain = FunctionResponseData.from_tool_result("t", {"response": {"a": 1}})
    assert plain.response == {"response": {"a": 1}}, "without media a result stays as it is"


def test_builders() -> None:
    frd = (
        FunctionResponseData({"title": "Q4 Chart"})
        .with_inline_data("image/png", PNG)
        .with_inline_data("image/png", base64.b64encode(PNG).decode())
        .with_file_data("application/pdf", "gs://bucket/file.pdf")
        .with_multimodal(
            [Blob("audio/wav", b"RIFF"), FileData("video/mp4", "gs://b/v.mp4"), Part.from_bytes("image/gif", b"GIF89a")]
        )
    )
    assert [p.mime_type for p in frd.parts] == [
        "image/png",
        "image/png",
        "application/pdf",
        "audio/wav",
        "video/mp4",
        "image/gif",
    ]
    assert frd.inline_bytes == 2 * len(PNG) + 4 + 6
    assert to_function_response("chart_tool", "c1", frd) == FunctionResponse(
        "chart_tool", {"title": "Q4 Chart"}, "c1", frd.parts
    )

    with pytest.raises(AdkError) as excinfo:
        FunctionResponseData({}).with_multimodal([Part(text="not media")])
    assert excinfo.value.code == "invalid_media"
    with pytest.raises(AdkError, match="base64"):
        FunctionResponseData({}).with_inline_data("image/png", "%%%")
    with pytest.raises(AdkError, match="MIME type"):
        FunctionResponseData({}).with_file_data("pdf", "gs://bucket/file.pdf")


async def test_function_response_data_seed_constructors() -> None:
    # The seed: FunctionResponseData::with_inline_data("chart_tool", json!({...}), vec![InlineDataPart {...}])
    chart = FunctionResponseData.with_inline_data(
        "chart_tool", {"title": "Q4 Chart"}, [{"mime_type": "image/png", "data": PNG}]
    )
    assert (chart.name, chart.response) == ("chart_tool", {"title": "Q4 Chart"})
    assert [(p.mime_type, p.inline_data.data) for p in chart.parts] == [("image/png", PNG)]
    doc = FunctionResponseData.with_file_data(
        "doc_tool", {"status": "ok"}, [{"mime_type": "application/pdf", "file_uri": "gs://bucket/file.pdf"}]
    )
    assert (doc.name, doc.response, [(p.mime_type, p.file_uri) for p in doc.parts]) == (
        "doc_tool",
        {"status": "ok"},
        [("application/pdf", "gs://bucket/file.pdf")],
    )
    both = FunctionResponseData.with_multimodal(
        "tool", {"n": 1}, [Blob("image/png", PNG)], [FileData("application/pdf", "gs://b/r.pdf")]
    )
    assert [p.mime_type for p in both.parts] == ["image/png", "application/pdf"] and both.name == "tool"
    with pytest.raises(AdkError, match="needs 'file_uri'"):
        FunctionResponseData.with_file_data("doc_tool", {}, [{"mime_type": "application/pdf"}])

    # the builders on an object are unchanged, and a tool may return what the constructors make
    assert FunctionResponseData({"a": 1}).with_inline_data("image/png", PNG).parts == chart.parts

    @tool
    def chart_tool(title: str) -> FunctionResponseData:
        """Draw a chart."""
        return FunctionResponseData.with_inline_data(
            "chart_tool", {"title": title}, [{"mime_type": "image/png", "data": PNG}]
        )

    result = await LlmAgent(
        name="c", model=ScriptedModel([FunctionCall("chart_tool", {"title": "Q4"}), "Here."]), tools=[chart_tool]
    ).run_async("chart")
    (response,) = responses(result)
    assert response.response == {"title": "Q4"} and [p.mime_type for p in response.parts] == ["image/png"]


def test_to_response_dict_keeps_working() -> None:
    class Quote(BaseModel):
        ticker: str
        price: float

    @dataclass
    class Point:
        x: int
        y: int

    assert to_response_dict("t", {"a": 1}) == {"a": 1}
    assert to_response_dict("t", 3) == {"result": 3}
    assert to_response_dict("t", None) == {"result": None}
    assert to_response_dict("t", [1, 2]) == {"result": [1, 2]}
    assert to_response_dict("t", Quote(ticker="AAPL", price=1.5)) == {"ticker": "AAPL", "price": 1.5}
    assert to_response_dict("t", Point(1, 2)) == {"x": 1, "y": 2}
    assert to_response_dict("t", {"title": "Q4", "inline_data": PNG}) == {"title": "Q4"}
    assert to_response_dict("t", FunctionResponseData({"a": 1}).with_inline_data("image/png", PNG)) == {"a": 1}
    broken = to_response_dict("t", {"when": object()})
    assert broken["code"] == "result_not_serializable" and "'t'" in broken["error"]
    raw = to_response_dict("t", {"blob": PNG})
    assert raw["code"] == "result_not_serializable" and "inline_data" in raw["error"], "the error says where bytes go"


# -- Toolsets ----------------------------------------------------------------------------------------
def named_tool(name: str, description: str = "", **flags: bool) -> FunctionTool:
    made = FunctionTool(name, description or f"The {name} tool.", lambda ctx, args: {"tool": name, "args": args})
    for flag, value in flags.items():
        setattr(made, flag, value)
    return made


async def test_basic_toolset_through_an_agent() -> None:
    def shout(text: str) -> str:
        """Say it loudly."""
        return text.upper()

    toolset = BasicToolset("basics", [named_tool("whisper"), shout])
    model = ScriptedModel([FunctionCall("shout", {"text": "hola"}), "HOLA"])
    result = await LlmAgent(name="basic", model=model, toolsets=[toolset]).run_async("shout hola")

    assert list(declared(model)) == ["whisper", "shout"]
    assert response_of(result, "shout") == {"result": "HOLA"}
    assert [t.name for t in await toolset.tools(SimpleToolContext())] == ["whisper", "shout"]


def test_basic_toolset_refuses_duplicate_names() -> None:
    with pytest.raises(AdkError) as excinfo:
        BasicToolset("dupes", [named_tool("search"), named_tool("fetch"), named_tool("search")])
    assert excinfo.value.code == "duplicate_tool_name"
    assert str(excinfo.value) == (
        "config.invalid_input: Toolset 'dupes' has two tools named 'search' (from tools[0] and tools[2]). "
        "Tool names must be unique: rename one, or wrap a toolset in PrefixedToolset."
    )


async def test_filtered_toolset_by_names_and_by_predicate() -> None:
    base = BasicToolset(
        "all", [named_tool("read", is_read_only=True), named_tool("write"), named_tool("list", is_read_only=True)]
    )
    ctx = SimpleToolContext()

    by_names = FilteredToolset(base, ["list", "read", "not_there"])
    assert [t.name for t in await by_names.tools(ctx)] == ["read", "list"], "the wrapped toolset's order"
    assert by_names.name == "all"
    one_name = FilteredToolset(base, "write", name="writer")
    assert [t.name for t in await one_name.tools(ctx)] == ["write"] and one_name.name == "writer"
    read_only = FilteredToolset(base, lambda t: t.is_read_only)
    assert [t.name for t in await read_only.tools(ctx)] == ["read", "list"]

    model = ScriptedModel([FunctionCall("write", {}), "I cannot write."])
    result = await LlmAgent(name="ro", model=model, toolsets=[read_only]).run_async("write it")
    assert list(declared(model)) == ["read", "list"]
    assert response_of(result, "write")["code"] == "unknown_tool"


class SlowToolset(Toolset):
    """Resolves after a delay, to show merging does not depend on who finishes first."""

    def __init__(self, name: str, tools: list[Tool], delay: float) -> None:
        self.name, self._tools, self.delay = name, tools, delay

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        await asyncio.sleep(self.delay)
        return list(self._tools)


async def test_merged_toolset_keeps_order_and_refuses_duplicates_deterministically() -> None:
    ctx = SimpleToolContext()
    github = SlowToolset("github", [named_tool("search_issues"), named_tool("open_pr")], 0.02)
    jira = SlowToolset("jira", [named_tool("create_ticket")], 0.0)
    merged = MergedToolset(github, jira)
    assert merged.name == "github+jira"
    assert [t.name for t in await merged.tools(ctx)] == ["search_issues", "open_pr", "create_ticket"]

    web = SlowToolset("web", [named_tool("search")], 0.02)
    docs = SlowToolset("docs", [named_tool("search")], 0.0)
    expected = (
        "config.invalid_input: Toolset 'research' has two tools named 'search' (from toolset 'web' and toolset 'docs'). "
        "Tool names must be unique: rename one, or wrap a toolset in PrefixedToolset."
    )
    for _ in range(3):
        with pytest.raises(AdkError) as excinfo:
            await MergedToolset(web, docs, name="research").tools(ctx)
        assert excinfo.value.code == "duplicate_tool_name" and str(excinfo.value) == expected

    model = ScriptedModel(["unused"])
    with pytest.raises(AdkError, match="two tools named 'search'"):
        await LlmAgent(name="r", model=model, toolsets=[MergedToolset(web, docs)]).run_async("search")

    with pytest.raises(TypeError, match="MergedToolset\\(\\*toolsets\\)"):
        MergedToolset([web, docs])  # type: ignore[arg-type]


async def test_merged_toolset_takes_the_seed_form_name_then_a_list() -> None:
    # The seed: MergedToolset::new("all", vec![weather, utils])
    weather = PrefixedToolset(BasicToolset("weather", [named_tool("forecast")]), "wx")
    utils = FilteredToolset(
        BasicToolset("utils", [named_tool("search"), named_tool("calculate"), named_tool("rm")]),
        ["search", "calculate"],
    )
    composed = MergedToolset("all", [weather, utils])
    assert composed.name == "all" and MergedToolset("all", (weather, utils)).name == "all"
    assert [t.name for t in await composed.tools(SimpleToolContext())] == ["wx_forecast", "search", "calculate"]
    model = ScriptedModel([FunctionCall("wx_forecast", {}), "Done."])
    result = await LlmAgent(name="agent", model=model, toolsets=[composed]).run_async("go")
    assert (
        list(declared(model)) == ["wx_forecast", "search", "calculate"] and responses(result)[0].name == "wx_forecast"
    )

    with pytest.raises(TypeError, match="already names the toolset"):
        MergedToolset("all", [weather], name="other")
    with pytest.raises(TypeError, match=r"got list; .*MergedToolset\('all', \[a, b\]\)"):
        MergedToolset([weather, utils])


async def test_duplicate_between_agent_tools_and_a_toolset_is_a_clear_error() -> None:
    agent = LlmAgent(
        name="dup",
        model=ScriptedModel(["unused"]),
        tools=[weather_tool()],
        toolsets=[BasicToolset("weather", [named_tool("get_weather")])],
    )
    with pytest.raises(AdkError) as excinfo:
        await agent.run_async("weather?")
    assert excinfo.value.code == "duplicate_tool_name"
    assert "Agent 'dup' has two tools named 'get_weather' (from tools= and toolset 'weather')" in str(excinfo.value)
    assert "PrefixedToolset" in str(excinfo.value)


async def test_prefixed_toolset_renames_and_delegates() -> None:
    @tool(read_only=True, concurrency_safe=True)
    def search(query: str) -> dict:
        """Search the issues."""
        return {"query": query, "hits": 3}

    report = named_tool("report", "Start a report.", is_long_running=True)
    github = PrefixedToolset(BasicToolset("github", [search, report]), "gh")
    docs = PrefixedToolset(BasicToolset("docs", [named_tool("search")]), "docs")
    assert github.name == "gh_github"

    model = ScriptedModel([FunctionCall("gh_search", {"query": "bug"}), "3 hits."])
    result = await LlmAgent(name="dev", model=model, toolsets=[github, docs]).run_async("find bugs")

    decls = declared(model)
    assert list(decls) == ["gh_search", "gh_report", "docs_search"]
    assert decls["gh_search"].description == "Search the issues."
    assert decls["gh_search"].parameters == search.parameters_schema
    assert decls["gh_report"].description == f"Start a report.\n\n{LONG_RUNNING_NOTE}"
    (gh_search,) = [t for t in await github.tools(SimpleToolContext()) if t.name == "gh_search"]
    assert (gh_search.is_read_only, gh_search.is_concurrency_safe, gh_search.is_long_running) == (True, True, False)
    assert response_of(result, "gh_search") == {"query": "bug", "hits": 3}

    bad_args = ScriptedModel([FunctionCall("gh_search", {"query": 1, "extra": True}), "ok"])
    result = await LlmAgent(name="dev", model=bad_args, toolsets=[github]).run_async("find")
    assert response_of(result, "gh_search")["code"] == "invalid_arguments", "the wrapped tool's validation applies"


async def test_prefixed_toolset_keeps_names_valid() -> None:
    for prefix in ("", "1gh", "g h", "gh.x"):
        with pytest.raises(AdkError) as excinfo:
            PrefixedToolset(BasicToolset("b", []), prefix)
        assert excinfo.value.code == "invalid_tool_prefix"

    long_name = "t" * 60
    too_long = PrefixedToolset(BasicToolset("b", [named_tool(long_name)]), "github")
    with pytest.raises(AdkError) as excinfo:
        await too_long.tools(SimpleToolContext())
    assert excinfo.value.code == "invalid_tool_name"
    assert f"'github_{long_name}' (67 characters)" in str(excinfo.value) and "shorter prefix" in str(excinfo.value)


class AdminToolset(Toolset):
    """The seed's permission-based toolset."""

    name = "admin_toolset"

    def __init__(self, admin_tools: list[Tool], user_tools: list[Tool]) -> None:
        self.admin_tools, self.user_tools = admin_tools, user_tools

    async def tools(self, ctx: ReadonlyContext) -> list[Tool]:
        return list(self.admin_tools if ctx.user_id.startswith("admin_") else self.user_tools)


async def test_permission_based_toolset_is_resolved_per_run() -> None:
    view = named_tool("view_account")
    toolset = AdminToolset([view, named_tool("delete_user")], [view])

    def model_fn(request: LlmRequest) -> Any:
        if request.contents[-1].function_responses():
            return "done"
        return FunctionCall("delete_user", {"user": "bob"})

    model = FunctionModel(model_fn)
    agent = LlmAgent(name="console", model=model, toolsets=[toolset])

    admin = await agent.run_async("delete bob", user_id="admin_ana")
    assert [d.name for d in model.requests[0].tools] == ["view_account", "delete_user"]
    assert response_of(admin, "delete_user") == {"tool": "delete_user", "args": {"user": "bob"}}

    user = await agent.run_async("delete bob", user_id="bob")
    assert [d.name for d in model.requests[2].tools] == ["view_account"]
    assert response_of(user, "delete_user")["code"] == "unknown_tool"

    # Outside an agent, a SimpleToolContext stands in for the run.
    assert [t.name for t in await toolset.tools(SimpleToolContext(user_id="admin_root"))] == [
        "view_account",
        "delete_user",
    ]
    assert [t.name for t in await toolset.tools(SimpleToolContext())] == ["view_account"]


# -- File references: resolve_file_uri ------------------------------------------------------------
def test_remote_uris_pass_through(tmp_path: Path) -> None:
    for uri in (
        "https://example.com/a.pdf",
        "http://example.com/a.pdf",
        "gs://bucket/reports/r.pdf",
        "HTTPS://Example.com/x",
    ):
        assert resolve_file_uri(uri, allowed_root=tmp_path) == uri


def test_local_files_inside_the_root_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "reports").mkdir()
    report = tmp_path / "reports" / "q4 report.pdf"
    report.write_bytes(b"%PDF-1.7")
    root = tmp_path.resolve()
    assert resolve_file_uri("reports/q4 report.pdf", allowed_root=tmp_path) == root / "reports" / "q4 report.pdf"
    assert resolve_file_uri(str(report), allowed_root=tmp_path) == root / "reports" / "q4 report.pdf"
    assert resolve_file_uri(report.as_uri(), allowed_root=tmp_path) == root / "reports" / "q4 report.pdf"
    assert (
        resolve_file_uri("reports/../reports/q4 report.pdf", allowed_root=tmp_path)
        == root / "reports" / "q4 report.pdf"
    )
    (tmp_path / "latest.pdf").symlink_to(report)
    assert resolve_file_uri("latest.pdf", allowed_root=tmp_path) == root / "reports" / "q4 report.pdf"

    monkeypatch.chdir(tmp_path)  # the default root is the working directory
    assert resolve_file_uri("reports/q4 report.pdf") == root / "reports" / "q4 report.pdf"


def test_local_files_outside_the_root_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "notebooks"
    root.mkdir()
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (root / "escape.txt").symlink_to(outside)

    for uri in ("file:///etc/passwd", "/etc/passwd", "../secret.txt", "escape.txt", outside.as_uri()):
        with pytest.raises(AdkError) as excinfo:
            resolve_file_uri(uri, allowed_root=root)
        assert (excinfo.value.category, excinfo.value.code) == ("forbidden", "file_outside_allowed_root"), uri
        assert "outside the allowed folder" in str(excinfo.value) and "allowed_root=" in str(excinfo.value)

    monkeypatch.chdir(root)
    with pytest.raises(AdkError, match="outside the allowed folder"):
        resolve_file_uri("../secret.txt")


def test_other_schemes_and_hosts_are_refused(tmp_path: Path) -> None:
    for uri in (
        "ftp://example.com/a.pdf",
        "s3://bucket/a.pdf",
        "data:application/pdf;base64,JVBERi0=",
        "javascript:alert(1)",
    ):
        with pytest.raises(AdkError) as excinfo:
            resolve_file_uri(uri, allowed_root=tmp_path)
        assert (excinfo.value.category, excinfo.value.code) == ("unsupported", "unsupported_uri_scheme"), uri

    with pytest.raises(AdkError) as excinfo:
        resolve_file_uri("file://fileserver/share/a.pdf", allowed_root=tmp_path)
    assert excinfo.value.category == "forbidden"

    for uri in ("", "   "):
        with pytest.raises(AdkError) as excinfo:
            resolve_file_uri(uri, allowed_root=tmp_path)
        assert excinfo.value.category == "invalid_input"


async def test_a_json_schema_given_to_with_parameters_schema_is_enforced() -> None:
    received: list[dict] = []
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}, "days": {"type": "integer", "maximum": 7}},
        "required": ["city"],
        "additionalProperties": False,
    }
    forecast = FunctionTool("forecast", "Forecast.", lambda ctx, args: received.append(args) or {"ok": True})
    forecast.with_parameters_schema(schema)
    model = ScriptedModel(
        [
            [
                FunctionCall("forecast", {"city": "X", "days": 9, "extra": 1}),
                FunctionCall("forecast", {"city": "Oslo", "days": 3}),
            ],
            "ok",
        ]
    )
    result = await LlmAgent(name="f", model=model, tools=[forecast]).run_async("?")
    bad, good = result.events[2].function_responses()
    assert bad.response["code"] == "invalid_arguments"
    for problem in ("city: needs at least 2 characters", "days: must be <= 7", "extra: not allowed"):
        assert problem in bad.response["error"]
    assert good.response == {"ok": True} and received == [{"city": "Oslo", "days": 3}]


@pytest.mark.parametrize("uri", ["file:///etc/passwd", "../../outside.pdf", "ftp://example.com/a.pdf"])
async def test_a_tool_cannot_hand_out_a_file_outside_the_working_folder(uri: str) -> None:
    @tool
    def leak() -> dict:
        """Returns a file reference."""
        return {"result": "here", "file_data": [{"mime_type": "application/pdf", "file_uri": uri}]}

    result = await LlmAgent(name="f", model=ScriptedModel([FunctionCall("leak", {}), "ok"]), tools=[leak]).run_async(
        "?"
    )
    [response] = [r for e in result.events for r in e.function_responses()]
    assert response.parts == [] and response.response["code"] == "invalid_media"
    assert uri.split("/")[-1] in response.response["error"] or "scheme" in response.response["error"]
    assert result.events[2].tool_outcomes[0].success is False
