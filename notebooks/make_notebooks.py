"""Build the teaching notebooks 02–05 from the cells below, so a review reads Python, not JSON.

    python notebooks/make_notebooks.py            # write the .ipynb files next to this script
    python notebooks/make_notebooks.py --check    # exit 1 if a written notebook differs

Each notebook is a list of cells: `md(...)` for markdown, `code(...)` for code. Nothing is
executed here and no outputs are saved: run a notebook to see them (`jupyter nbconvert --to html
--execute NAME.ipynb`). Every notebook runs offline, without API keys: the models are
`ScriptedModel`s and `FunctionModel`s, because what these notebooks teach is the tools, the
agent and the requests, not what a particular model would answer. Cell ids are derived from
each notebook's name and the cell's position, so rebuilding gives byte-identical files.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent


def md(text: str) -> nbformat.NotebookNode:
    return new_markdown_cell(textwrap.dedent(text).strip("\n"))


def code(text: str, *, raises: bool = False) -> nbformat.NotebookNode:
    """A code cell; `raises=True` tags a cell whose error is the lesson (nbconvert then goes on)."""
    cell = new_code_cell(textwrap.dedent(text).strip("\n"))
    if raises:
        cell.metadata["tags"] = ["raises-exception"]
    return cell


# -- helpers shared by two notebooks (each notebook stays self-contained) ------------------------
PNG_HELPER = r'''
import struct
import zlib


def bar_chart_png(values, *, width=320, height=180):
    """A bar chart as PNG bytes, drawn pixel by pixel: no plotting library needed.

    A PNG is a signature and three chunks: IHDR (size, colour type), IDAT (the zlib-compressed
    rows, each prefixed by a filter byte) and IEND. Each chunk carries a CRC-32.
    """
    colors = [(66, 133, 244), (219, 68, 55), (244, 180, 0), (15, 157, 88)]
    margin, gap = 16, 12
    bar = (width - 2 * margin - gap * (len(values) - 1)) // len(values)
    base = height - margin  # the x axis
    tops = [base - round(v / max(values) * (height - 2 * margin)) for v in values]
    rows = []
    for y in range(height):
        row = bytearray(b"\x00")  # filter type 0: the row as it is
        for x in range(width):
            pixel = (60, 60, 60) if y == base else (255, 255, 255)
            i, offset = divmod(x - margin, bar + gap)
            if x >= margin and i < len(values) and offset < bar and tops[i] <= y < base:
                pixel = colors[i % len(colors)]
            row += bytes(pixel)
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8 bits per channel, RGB
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))
'''

def setup(imports: str) -> nbformat.NotebookNode:
    """The first code cell: load the magics, then the imports."""
    return code("%load_ext adk_notebook\n\n" + textwrap.dedent(imports).strip("\n"))


# -- 02: function tools ----------------------------------------------------------------------------
FUNCTION_TOOLS = [
    md(r"""
    # Function tools

    A model on its own only writes text. **Function tools** let an agent do things: call an API,
    compute, query a database, run any code you write. The model decides *when* to call a tool
    from the user's request; your code decides *what happens*.

    This notebook walks through the ADK *Function Tools* page section by section, with its own
    examples, in Python:

    | ADK (Rust page)                           | adk-notebook                                              |
    |-------------------------------------------|-----------------------------------------------------------|
    | `#[tool]` macro (recommended)             | `%%tool` cell, or `@tool` on a function                   |
    | `FunctionTool::new(name, desc, handler)`  | `FunctionTool(name, description, handler)`                |
    | JSON parameters in and out                | a dict in, a dict (or any JSON value) out                 |
    | schemas from types (`schemars`)           | schemas from type hints and the docstring (pydantic)      |
    | `Arc<dyn ToolContext>` first parameter    | a parameter annotated `ToolContext` (or named `ctx`)      |

    **Offline on purpose.** Every agent here uses a `ScriptedModel`: it replays the answers we
    write, tool calls included. The point is the tool, not the model; swap in
    `--model gemini-2.5-flash` and the same cells run against a real one. A scripted model
    replays its script once: to run a chat again, re-run the cell that makes the model.
    """),
    setup('''
    from typing import Literal

    from pydantic import BaseModel, Field

    from adk_notebook import (AdkError, FunctionCall, FunctionModel, FunctionTool, ScriptedModel,
                              SimpleToolContext, StatefulTool, ToolContext, tool)
    '''),
    md(r"""
    ## The tool execution pipeline

    What happens between the model asking for a tool and the model reading its answer:

    ```
    model ──FunctionCall(name, args)──▶ find the tool by name
                                        ▶ validate args against its schema
                                        ▶ run it (a plain `def` runs on a worker thread)
                                        ▶ turn the result into a JSON object (+ images, files)
          ◀──FunctionResponse(name, {...})──
    ```

    Every step can fail (an unknown tool, a missing argument, an exception, a timeout), and every
    failure becomes `{"error": "..."}` in the response: the model reads it and carries on. **A
    tool never crashes the run.** In the chat widget each call is a card with its arguments,
    status, duration, attempts, progress log and result.
    """),
    md(r"""
    ## Recommended: `%%tool` (the `#[tool]` macro)

    The quickest way to make a tool. Like the macro, it reads the docstring for the description
    and derives the JSON schema from the types: the summary line describes the tool, the
    `Args:` section describes each parameter, the annotations give the types, defaults make a
    parameter optional.
    """),
    code(r'''
    %%tool
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] | None = None) -> dict:
        """Get the current weather for a city.

        Args:
            city: The city to look up.
            unit: Temperature unit (celsius or fahrenheit).
        """
        return {"temp": 22, "city": city, "unit": unit or "celsius"}
    '''),
    md(r"""
    `%adk schema` shows the tool exactly as the model sees it. Every description you leave out is
    context the model loses: with three unexplained numbers it can only guess which is which.
    """),
    code(r'''
    %adk schema get_weather
    '''),
    md(r"""
    The cell replaced `get_weather` with a tool object, but it is still callable as the original
    function, so you can try it by hand before any model does:
    """),
    code(r'''
    get_weather("Tokyo")
    '''),
    md(r"""
    If the tool needs the session (who is asking, which session), add a parameter annotated
    `ToolContext`. It receives the context and is left out of the schema: the model never sees it.
    """),
    code(r'''
    %%tool
    def search_docs(ctx: ToolContext, query: str) -> dict:
        """Search the user's saved documents.

        Args:
            query: Words to look for.
        """
        return {"user": ctx.user_id, "query": query, "matches": []}
    '''),
    code(r'''
    %adk schema search_docs
    '''),
    md(r"""
    Now give the tool to an agent and run it. The scripted model calls `get_weather`, reads the
    result and answers. Watch the tool card: arguments, status, duration, and the result the
    model read (click *result*).
    """),
    code(r'''
    weather_model = ScriptedModel([
        FunctionCall("get_weather", {"city": "Tokyo"}),
        "It is 22 °C in Tokyo right now.",
    ])
    '''),
    code(r'''
    %%agent weather_bot --model weather_model --tools get_weather
    You help users check the weather. Use get_weather for weather questions.
    '''),
    code(r'''
    %%chat weather_bot
    What's the weather in Tokyo?
    '''),
    md(r"""
    ## Tool metadata: read-only, concurrency-safe, long-running

    Three flags tell the agent how a tool may be dispatched. All are off by default, so a plain
    `%%tool` changes nothing.

    | flag               | `%%tool` option       | `@tool(...)`              | `FunctionTool` builder     | effect |
    |--------------------|-----------------------|---------------------------|----------------------------|--------|
    | read-only          | `--read-only`         | `read_only=True`          | `.with_read_only()`        | no side effects |
    | concurrency-safe   | `--concurrency-safe`  | `concurrency_safe=True`   | `.with_concurrency_safe()` | may run beside other calls |
    | long-running       | `--long-running`      | `long_running=True`       | `.with_long_running()`     | the model is told not to call it again |

    The `AUTO` strategy runs calls concurrently only when the tool is **both** read-only and
    concurrency-safe (see `04_agent_features.ipynb` for timings).
    """),
    code(r'''
    %%tool --read-only --concurrency-safe
    def cache_lookup(key: str) -> dict:
        """Look up cached data: no side effects, safe for parallel dispatch.

        Args:
            key: The cache key.
        """
        return {"key": key, "result": "cached"}
    '''),
    md(r"""
    The same flags in plain Python, with the decorator. A long-running tool gets a note appended
    to the description the model reads:
    """),
    code(r'''
    @tool(long_running=True)
    def generate_report(topic: str) -> dict:
        """Start a long-running background report."""
        return {"task_id": "abc123", "status": "processing"}

    print(generate_report.declaration().description)
    '''),
    md(r"""
    ## Alternative: `FunctionTool(name, description, handler)`

    For tools built at run time, or when you prefer explicit registration. The handler takes
    `(ctx, args)` with the arguments as a dict, like the Rust closure. **Always give it a
    schema** with `.with_parameters_schema(Model)`: without one the model is not told which
    parameters exist and may never call the tool. Compare:
    """),
    code(r'''
    class WeatherParams(BaseModel):
        location: str = Field(description="The city or location to get weather for")


    def weather_handler(ctx, args):
        location = args.get("location", "unknown")
        return {"location": location, "temperature": "22°C", "conditions": "sunny"}


    bare = FunctionTool("get_weather", "Get current weather for a location", weather_handler)
    weather_tool = FunctionTool("get_weather", "Get current weather for a location",
                                weather_handler).with_parameters_schema(WeatherParams)

    print("without a schema:", bare.declaration().parameters)
    print("with a schema:   ", weather_tool.declaration().parameters)
    '''),
    code(r'''
    weather_agent_model = ScriptedModel([
        FunctionCall("get_weather", {"location": "Tokyo"}),
        "El tiempo en Tokio es soleado, con 22 °C.",
    ])
    '''),
    code(r'''
    %%agent weather_agent --model weather_agent_model --tools weather_tool
    You help users check the weather. Always use the get_weather tool.
    '''),
    code(r'''
    %%chat weather_agent
    ¿Qué tiempo hace en Tokio?
    '''),
    md(r"""
    How it went, step by step (each step is on the card above):

    1. The user asked "¿Qué tiempo hace en Tokio?"
    2. The model decided to call `get_weather` with `{"location": "Tokyo"}`.
    3. The tool returned `{"location": "Tokyo", "temperature": "22°C", "conditions": "sunny"}`.
    4. The model wrote the answer from that result.
    """),
    md(r"""
    ## Step 2: parameters

    The Rust page reads each parameter out of the JSON by hand and returns an error when a required
    one is missing. In Python, declare the parameters as **one pydantic model** (the seed's style:
    one typed struct) and let the schema do the checking: `product_id` and `quantity` are required,
    `priority` has a default, `quantity` must be positive. The model sees the model's fields as the
    tool's parameters; your function receives them as one validated `Order`. Arguments are
    checked *before* your function runs: a bad call never reaches it.

    The scripted model below first forgets `quantity`, as real models sometimes do. It gets an
    error naming the problem and calls again correctly.
    """),
    code(r'''
    %%tool
    class Order(BaseModel):
        product_id: str = Field(description="The product to order, e.g. 'SKU-42'")
        quantity: int = Field(gt=0, description="How many units, at least 1")
        priority: Literal["normal", "express"] = Field("normal", description="Shipping priority")


    def process_order(order: Order) -> dict:
        """Process an order. product_id and quantity are required; priority is optional."""
        return {"order_id": "ORD-12345", **order.model_dump(), "status": "confirmed"}
    '''),
    code(r'''
    order_model = ScriptedModel([
        FunctionCall("process_order", {"product_id": "SKU-42"}),
        FunctionCall("process_order", {"product_id": "SKU-42", "quantity": 2}),
        "Order ORD-12345 is confirmed: 2 × SKU-42, normal priority.",
    ])
    '''),
    code(r'''
    %%agent shop_bot --model order_model --tools process_order
    You take orders. Call process_order with the product and quantity the user asks for.
    '''),
    code(r'''
    %%chat shop_bot
    Please order two of SKU-42.
    '''),
    md(r"""
    ## Step 3: typed parameters with an enum

    For a richer schema, use richer types: an `Enum` (or `Literal`) becomes an `enum` the model
    must pick from. A case the types cannot rule out (dividing by zero) is an error the tool
    raises: `AdkError.tool("Cannot divide by zero")` becomes `{"error": "Cannot divide by zero", ...}`
    for the model, which then explains it to the user.
    """),
    code(r'''
    %%tool
    from enum import Enum


    class Operation(str, Enum):
        ADD = "add"
        SUBTRACT = "subtract"
        MULTIPLY = "multiply"
        DIVIDE = "divide"


    def calculator(operation: Operation, a: float, b: float) -> dict:
        """Perform arithmetic operations.

        Args:
            operation: The arithmetic operation to perform.
            a: First operand.
            b: Second operand.
        """
        if operation is Operation.DIVIDE and b == 0:
            raise AdkError.tool("Cannot divide by zero")
        result = {"add": a + b, "subtract": a - b, "multiply": a * b,
                  "divide": a / b if b else None}[operation.value]
        return {"result": result}
    '''),
    code(r'''
    calc_model = ScriptedModel([
        FunctionCall("calculator", {"operation": "multiply", "a": 250, "b": 0.15}),
        "15% of 250 is 37.5.",
        FunctionCall("calculator", {"operation": "divide", "a": 10, "b": 0}),
        "I can't divide 10 by zero: division by zero is undefined.",
    ])
    '''),
    code(r'''
    %%agent calc_bot --model calc_model --tools calculator
    Use the calculator for any arithmetic.
    '''),
    code(r'''
    %%chat calc_bot
    What's 15% of 250?
    '''),
    code(r'''
    %%chat calc_bot
    And 10 divided by 0?
    '''),
    md(r"""
    ## Step 4: an agent with several tools

    Give one agent several tools and the model picks the right one for each request. Here a
    `FunctionModel` stands in for that choice: it is a function that receives the whole request
    (it can see all three tool declarations) and returns the next answer. Real models choose
    from the descriptions, which is why they matter.
    """),
    code(r'''
    %%tool
    def convert_units(value: float, from_unit: Literal["km", "mi"], to_unit: Literal["km", "mi"]) -> dict:
        """Convert a distance between kilometres and miles.

        Args:
            value: The distance to convert.
            from_unit: The unit of `value`.
            to_unit: The unit wanted.
        """
        factor = {("km", "mi"): 0.621371, ("mi", "km"): 1.609344}.get((from_unit, to_unit), 1.0)
        return {"value": round(value * factor, 2), "unit": to_unit}
    '''),
    code(r'''
    def choose(request):
        """A stand-in for the model: pick a tool from the last user message, then answer from its result."""
        last = request.contents[-1]
        for response in last.function_responses():
            return f"{response.name} says: {response.response}"
        text = last.text.lower()
        if "weather" in text:
            return FunctionCall("get_weather", {"city": "Lima"})
        if "miles" in text:
            return FunctionCall("convert_units", {"value": 10, "from_unit": "km", "to_unit": "mi"})
        return FunctionCall("calculator", {"operation": "add", "a": 2, "b": 2})


    router = FunctionModel(choose)
    '''),
    code(r'''
    %%agent assistant --model router --tools calculator,convert_units,get_weather
    Help with calculations, conversions, and weather.
    '''),
    code(r'''
    %%chat assistant
    How far is 10 km in miles?
    '''),
    code(r'''
    %%chat assistant
    What's the weather in Lima?
    '''),
    code(r'''
    print("the model was offered:", [d.name for d in router.requests[0].tools])
    '''),
    md(r"""
    ### Toolsets: groups of tools chosen per run

    (From the *LlmAgent* page.) A **toolset** is resolved at the start of every run, so what it
    offers can depend on who is asking. Compose them: `BasicToolset` (a fixed group),
    `PrefixedToolset` (rename every tool `prefix_name`, to avoid clashes), `FilteredToolset`
    (keep only some), `MergedToolset` (several as one). Pass them with `--toolsets`.
    """),
    code(r'''
    from adk_notebook import BasicToolset, FilteredToolset, MergedToolset, PrefixedToolset, Toolset

    weather_set = PrefixedToolset(BasicToolset("weather", [get_weather]), "wx")          # wx_get_weather
    utilities = FilteredToolset(BasicToolset("utils", [calculator, convert_units, cache_lookup, search_docs]),
                                ["calculator", "convert_units", "cache_lookup"])
    composed = MergedToolset(weather_set, utilities, name="all")


    class PerUserToolset(Toolset):
        """Admins get every tool; everyone else gets the read-only ones."""

        name = "per_user"

        async def tools(self, ctx):
            everything = await composed.tools(ctx)
            return everything if ctx.user_id.startswith("admin_") else [t for t in everything if t.is_read_only]


    per_user = PerUserToolset()
    offered = FunctionModel(lambda request: "I can use: " + (", ".join(d.name for d in request.tools) or "no tools"))
    '''),
    code(r'''
    %%agent toolbox_bot --model offered --toolsets per_user
    Say which tools you have.
    '''),
    code(r'''
    %%chat toolbox_bot --user admin_ana
    Which tools can you use?
    '''),
    code(r'''
    %%chat toolbox_bot --user bob
    Which tools can you use?
    '''),
    md(r"""
    Bob only got the read-only tool. Two tools with the same name among
    an agent's tools and toolsets are a clear, deterministic error, raised before the model is
    called, never a silent pick:
    """),
    code(r'''
    clash = FunctionModel(lambda request: "unreachable")
    '''),
    code(r'''
    %%agent clash_bot --model clash --tools calculator --toolsets composed
    Two calculators.
    '''),
    code(r'''
    %%chat clash_bot
    Add 2 and 2.
    ''', raises=True),
    md(r"""
    ## Error handling

    Return errors with enough structure for the model to act on. `AdkError(component, category,
    code, message)` is the full form, as in the Rust page; `AdkError.tool("message")` is the short
    one. Either way the model receives `{"error": message, "code": ..., "category": ...}` and can
    retry with other arguments, or tell the user. Errors in the categories `rate_limited`,
    `timeout` and `unavailable` are *transient*: a retry budget (see `04_agent_features`) runs the
    tool again; `invalid_input` is not worth retrying.

    This `divide` tool reads its arguments by hand (no schema), like the Rust example, so it has
    to check them itself:
    """),
    code(r'''
    def divide_handler(ctx, args):
        for name in ("a", "b"):
            if not isinstance(args.get(name), (int, float)):
                raise AdkError("tool", "invalid_input", "tool.divide.missing_param", f"Parameter '{name}' is required")
        if args["b"] == 0:
            raise AdkError("tool", "invalid_input", "tool.divide.division_by_zero", "Cannot divide by zero")
        return {"result": args["a"] / args["b"]}


    divide = FunctionTool("divide", "Divide two numbers a / b", divide_handler)
    divide_model = ScriptedModel([
        FunctionCall("divide", {"a": 1}),
        FunctionCall("divide", {"a": 1, "b": 0}),
        FunctionCall("divide", {"a": 1, "b": 4}),
        "1 / 4 = 0.25.",
    ])
    '''),
    code(r'''
    %%agent divide_bot --model divide_model --tools divide
    Divide numbers with the divide tool.
    '''),
    code(r'''
    %%chat divide_bot
    What is 1 divided by 4?
    '''),
    md(r"""
    What the model actually read for each call (the last request it received holds them all):
    """),
    code(r'''
    for content in divide_model.requests[-1].contents:
        for response in content.function_responses():
            print(response.response)
    '''),
    md(r"""
    An *expected* failure, such as an unknown ticker in a stock tool, reads best as a normal
    result with a status, so the model can reason about it: `{"status": "error", "message":
    "Ticker 'XYZ' not found. Available: AAPL, MSFT"}`. An unexpected exception is caught too
    (`{"error": "Tool 'x' failed: ZeroDivisionError: ..."}`): unlike some frameworks, a raise
    does not cut the agent's loop here, but a message you wrote is more useful than a traceback's.
    """),
    md(r"""
    ## Tool context

    A `ToolContext` parameter gives the tool the session: `ctx.user_id`, `ctx.session_id`,
    `ctx.agent_name`, `ctx.state` (read and write; writes are saved with the run),
    `ctx.artifacts` and `await ctx.search_memory(query)`. This `greet` tool counts greetings in
    `user:` state, which every session of that user shares.
    """),
    code(r'''
    %%tool
    def greet(ctx: ToolContext, message: str | None = None) -> dict:
        """Greet the user with session info.

        Args:
            message: Something to pass along with the greeting.
        """
        count = ctx.state.get("user:greetings", 0) + 1
        ctx.state["user:greetings"] = count
        return {"greeting": f"Hello, user {ctx.user_id}!", "session": ctx.session_id,
                "served_by": ctx.agent_name, "greetings_so_far": count, "message": message}
    '''),
    code(r'''
    greet_model = ScriptedModel([FunctionCall("greet", {}), "Hello Ana! Welcome back.",
                                 FunctionCall("greet", {"message": "good evening"}), "Good evening, Ana!"])
    '''),
    code(r'''
    %%agent greeter --model greet_model --tools greet
    Greet the user with the greet tool.
    '''),
    code(r'''
    %%chat greeter --user ana --session morning
    Hi!
    '''),
    code(r'''
    %%chat greeter --user ana --session evening
    Hi again!
    '''),
    code(r'''
    %adk state greeter --user ana --session evening
    '''),
    md(r"""
    ## Long-running tools

    For work that takes a while (data processing, a slow API), don't make the model wait on one
    call. The non-blocking pattern:

    1. a *start* tool returns a `task_id` at once,
    2. the work runs in the background (here an `asyncio` task on the kernel's loop),
    3. a *status* tool lets the model check on it.

    Marking the start tool long-running (`--long-running`) adds a note to its description so the
    model does not call it again while the task is pending, and the card says *long-running*.
    """),
    code(r'''
    %%tool --long-running
    import asyncio

    tasks = {}


    async def generate_report(topic: str) -> dict:
        """Start generating a report. Returns task_id immediately.

        Args:
            topic: What the report is about.
        """
        task_id = f"task_{len(tasks) + 1}"
        tasks[task_id] = {"status": "processing", "result": None}

        async def work():
            await asyncio.sleep(1.0)  # the slow part
            tasks[task_id].update(status="completed", result=f"Report on {topic}: complete")

        tasks[task_id]["job"] = asyncio.get_running_loop().create_task(work())  # keep a reference
        return {"task_id": task_id, "status": "processing"}
    '''),
    code(r'''
    %%tool --read-only
    def check_report_status(task_id: str) -> dict:
        """Check report generation status.

        Args:
            task_id: The id generate_report returned.
        """
        task = tasks.get(task_id)
        if task is None:
            return {"status": "error", "message": f"Task {task_id!r} not found"}
        return {"status": task["status"], "result": task["result"]}
    '''),
    code(r'''
    %adk schema generate_report
    '''),
    code(r'''
    report_model = ScriptedModel([
        FunctionCall("generate_report", {"topic": "Q4 sales"}),
        FunctionCall("check_report_status", {"task_id": "task_1"}),
        "I've started your Q4 sales report (task_1); it is still processing.",
        FunctionCall("check_report_status", {"task_id": "task_1"}),
        "Your report is ready: Report on Q4 sales: complete.",
    ])
    '''),
    code(r'''
    %%agent reporter --model report_model --tools generate_report,check_report_status
    Start reports with generate_report and check on them with check_report_status.
    '''),
    code(r'''
    %%chat reporter
    Generate a report on Q4 sales.
    '''),
    code(r'''
    await asyncio.sleep(1.2)  # time passes; the background task finishes
    '''),
    code(r'''
    %%chat reporter
    Is my report ready?
    '''),
    md(r"""
    ## Streaming progress from a tool

    A tool that runs for a while can stream what it is doing (a build log, a command's stdout,
    download progress) instead of leaving the user staring at a spinner:
    `ctx.emit_progress(stream, chunk)`. Each chunk becomes a partial event on the **same** event
    stream as the model's text; the widget shows it live in the tool's card. The tool's return
    value is still the complete result the model reads.

    `stream` is a label (`"stdout"`, `"stderr"`, anything); emit a line at a time for
    terminal-like output. `await` it in an `async` tool (it may wait up to 100 ms for a slow
    consumer); in a plain `def` just call it.
    """),
    code(r'''
    %%tool
    async def build_project(ctx: ToolContext, target: str) -> dict:
        """Build the project and report the result.

        Args:
            target: What to build.
        """
        await ctx.emit_progress("stdout", f"Compiling {target}...\n")
        await asyncio.sleep(0.3)
        await ctx.emit_progress("stdout", "Build finished in 4.2s\n")
        await ctx.emit_progress("stderr", "warning: unused variable `x`\n")
        return {"status": "ok", "warnings": 1}
    '''),
    code(r'''
    build_model = ScriptedModel([FunctionCall("build_project", {"target": "app"}),
                                 "The build succeeded with one warning (an unused variable)."])
    '''),
    code(r'''
    %%agent builder --model build_model --tools build_project
    Build what the user asks for with build_project.
    '''),
    md(r"""
    The line form `%chat AGENT message` returns the run's result, so you can look at its events:
    progress events are the ones where `event.tool_progress_stream()` is not `None`.
    """),
    code(r'''
    build = %chat builder Build the app, please.
    '''),
    code(r'''
    for event in build.events:
        if event.tool_progress_stream() is not None:
            print(f"[{event.progress.stream}] {event.progress.chunk}", end="")
    '''),
    md(r"""
    **Progress is bounded and lossy.** A tool can produce output faster than anyone reads it (a
    compiler log, a runaway loop), so the framework keeps at most 256 queued events per batch,
    8 KiB per chunk and 1 MiB per call. Past a bound you get exactly one
    `[adk: tool progress truncated]` line for that call, then nothing more: a visible gap, never
    a silent one, and never unbounded memory. The tool's *result* is not affected. Progress is
    never saved in the session.
    """),
    code(r'''
    %%tool
    def runaway(ctx: ToolContext) -> dict:
        """Print far too much, faster than anyone can read."""
        for i in range(20_000):
            ctx.emit_progress("stdout", f"line {i:05d}: compiling module_{i}.py\n")
        return {"status": "ok", "lines": 20_000}
    '''),
    code(r'''
    runaway_model = ScriptedModel([FunctionCall("runaway", {}), "Done (the log was cut)."])
    '''),
    code(r'''
    %%agent noisy --model runaway_model --tools runaway
    Run runaway.
    '''),
    code(r'''
    noisy_run = %chat noisy Go.
    chunks = [e.progress.chunk for e in noisy_run.events if e.progress is not None]
    print(f"20,000 lines emitted, {len(chunks)} delivered; the last one: {chunks[-1]}")
    '''),
    md(r"""
    ## Running the examples

    This notebook is its own example. To run it from a terminal, headless, as CI does:

    ```
    jupyter nbconvert --to html --execute 02_function_tools.ipynb
    ```
    """),
    md(r"""
    ## Best practices

    1. **Clear descriptions**: say what the tool does, when to use it and what it returns.
    2. **Validate inputs**: put constraints in the types (`Literal`, `Field(gt=0)`), not in prose;
       the model gets a precise error when it gets them wrong.
    3. **Return structured JSON** with clear field names, a consistent `status`, and values the
       model can quote as is (`"18.5%"`, not `0.185`).
    4. **Keep tools focused**: one job each; the model combines them.
    5. **Use schemas** for anything with more than a parameter or two.
    6. **Mark safe tools** both read-only and concurrency-safe, so `AUTO` can run them at once.

    Keep the business logic in the tool, not in the instruction: the agent knows *when* to use
    a tool, the tool knows *how* to compute.
    """),
    md(r"""
    ## Tool metadata: read-only and concurrency

    The flags are how the dispatcher knows what is safe: a lookup has no side effects, an update
    does. `%adk tools` lists every tool with its flags. Under `AUTO`, calls to tools that are both
    read-only and concurrency-safe run concurrently first, then the rest one at a time;
    `PARALLEL` runs everything at once and leaves safety to you.
    """),
    code(r'''
    lookup = FunctionTool("lookup", "Look up data", lambda ctx, args: {"result": "cached data"}) \
        .with_read_only().with_concurrency_safe()          # AUTO needs both signals
    update = FunctionTool("update", "Update record", lambda ctx, args: {"updated": True})
    print(f"lookup: read_only={lookup.is_read_only}, concurrency_safe={lookup.is_concurrency_safe}")
    print(f"update: read_only={update.is_read_only}, concurrency_safe={update.is_concurrency_safe}")
    '''),
    code(r'''
    %adk tools
    '''),
    md(r"""
    ## `SimpleToolContext`: tools outside the agent loop

    To call a tool without an agent (a test, a script, an MCP server), give it a
    `SimpleToolContext`: user `"anonymous"`, an empty session id, fresh state, no artifacts, an
    empty memory, generated ids. Override what your tool cares about.
    """),
    code(r'''
    ctx = SimpleToolContext("my-test-harness")
    print(await get_weather.execute(ctx, {"city": "Tokyo"}))

    ctx = SimpleToolContext("my-mcp-server", function_call_id="custom-call-id", session_id="session-42")
    print(await greet.execute(ctx, {}))
    print(ctx.function_call_id, dict(ctx.state))
    '''),
    md(r"""
    Progress a tool emits outside a run is kept on the context, so a test can check it:
    """),
    code(r'''
    ctx = SimpleToolContext("test")
    print(await build_project.execute(ctx, {"target": "lib"}))
    print([(p.stream, p.chunk) for p in ctx.progress])
    '''),
    md(r"""
    ## `StatefulTool`: state shared across calls

    For a tool that keeps something between calls (a counter, a cache, a client pool), hand one
    state object to `StatefulTool(name, description, state, handler)`; the handler gets
    `(state, ctx, args)`. Every call sees the **same** object, not a copy, and calls run one at a
    time by default, so the handler may read and write it safely. It has `FunctionTool`'s builders.
    """),
    code(r'''
    %%tool
    class AppCache:
        def __init__(self):
            self.entries = {"greeting": "hello"}
            self.lookups = 0


    class LookupArgs(BaseModel):
        key: str = Field(description="The cache key")


    def _lookup(cache, ctx, args):
        cache.lookups += 1
        return {"key": args["key"], "value": cache.entries.get(args["key"], ""), "lookups": cache.lookups}


    cache = AppCache()
    cache_tool = StatefulTool("cache_lookup", "Look up a value in the application cache", cache, _lookup) \
        .with_parameters_schema(LookupArgs).with_read_only().with_concurrency_safe()
    '''),
    code(r'''
    cache_model = ScriptedModel([FunctionCall("cache_lookup", {"key": "greeting"}), "The cached greeting is 'hello'.",
                                 FunctionCall("cache_lookup", {"key": "greeting"}), "Now it is 'hola'."])
    '''),
    code(r'''
    %%agent cache_bot --model cache_model --tools cache_lookup
    Answer from the application cache.
    '''),
    code(r'''
    %%chat cache_bot
    What's the cached greeting?
    '''),
    md(r"""
    Change the state from outside; the tool sees it on its next call:
    """),
    code(r'''
    cache.entries["greeting"] = "hola"
    '''),
    code(r'''
    %%chat cache_bot
    And now?
    '''),
    md(r"""
    ## Multimodal function responses

    A tool can return images, audio, PDFs and file references, not only JSON. Put them under
    `inline_data` (bytes) and/or `file_data` (a URI) in the returned dict; the framework takes
    them out, base64-encodes inline bytes for the wire, and sends them as parts of the function
    response. The widget shows images inline and files as links. (Gemini 3 models accept media
    in function responses; older ones answer 400. `03_multimodal.ipynb` goes further.)

    Without matplotlib (not a dependency), the chart here is drawn by a small helper that writes
    PNG bytes with `zlib` and `struct`:
    """),
    code(PNG_HELPER),
    code(r'''
    %%tool
    def generate_chart(title: str, values: list[float]) -> dict:
        """Draw a bar chart and return it as an image, with its metadata.

        Args:
            title: The chart's title.
            values: One bar per value.
        """
        return {
            "response": {"title": title, "chart_type": "bar"},
            "inline_data": [{"mime_type": "image/png", "data": bar_chart_png(values)}],
        }
    '''),
    md(r"""
    For big files stored elsewhere, send a **reference** instead of bytes: `file_data` with a URI.
    """),
    code(r'''
    %%tool
    def get_report(document_id: str) -> dict:
        """Fetch a stored report as a PDF reference.

        Args:
            document_id: The report's id, e.g. report-2024.
        """
        return {
            "response": {"document_id": document_id, "pages": 12},
            "file_data": [{"mime_type": "application/pdf",
                           "file_uri": f"gs://my-bucket/reports/{document_id}.pdf"}],
        }
    '''),
    code(r'''
    media_model = ScriptedModel([
        [FunctionCall("generate_chart", {"title": "Q4 Sales", "values": [12, 19, 7, 15]}),
         FunctionCall("get_report", {"document_id": "report-2024"})],
        "Here is the Q4 sales chart, and the full 12-page report is attached.",
    ])
    '''),
    code(r'''
    %%agent analyst --model media_model --tools generate_chart,get_report
    Show charts and reports.
    '''),
    code(r'''
    %%chat analyst
    Show me Q4 sales and the 2024 report.
    '''),
    md(r"""
    **Direct construction.** Code that builds responses itself (a custom agent, a converter) can
    build a `FunctionResponseData`; a tool may return one too:
    """),
    code(r'''
    from adk_notebook import FunctionResponseData

    frd = FunctionResponseData({"title": "Q4 Chart"}).with_inline_data("image/png", bar_chart_png([3, 5, 2]))
    frd = frd.with_file_data("application/pdf", "gs://bucket/file.pdf")
    print(frd.response, [p.mime_type for p in frd.parts])
    '''),
    md(r"""
    ## Related

    - `01_quickstart.ipynb`: agents, runners and sessions in plain Python.
    - `03_multimodal.ipynb`: images and PDFs from tools, in depth.
    - `04_agent_features.ipynb`: templates, output schemas, strategies, retries, callbacks.
    - `05_what_the_model_sees.ipynb`: the request each provider would receive.
    """),
]


# -- 03: multimodal ---------------------------------------------------------------------------------
MULTIMODAL = [
    md(r"""
    # Multimodal tool results: images and PDFs

    A tool's answer does not have to be JSON only. It can carry **media** beside the JSON: a chart
    the model can look at, a PDF it can read, a reference to a file stored elsewhere. This notebook
    returns each from a tool and shows how `%%chat` displays it: images inline, PDFs as links
    (the live widget adds an inline viewer for PDFs the tool generated).

    Two ways to attach media to a result dict:

    | key           | holds                                    | use it for                      |
    |---------------|------------------------------------------|---------------------------------|
    | `inline_data` | `{"mime_type": ..., "data": bytes}` items | small media made by the tool    |
    | `file_data`   | `{"mime_type": ..., "file_uri": ...}` items | large files stored elsewhere |

    Offline, like the other notebooks: a `ScriptedModel` plays the model.
    """),
    setup('''
    from adk_notebook import FunctionCall, FunctionResponseData, ScriptedModel
    '''),
    md(r"""
    ## A chart as an inline PNG

    With matplotlib you would `fig.savefig(buffer, format="png")`. It is not installed here and
    not a dependency of adk-notebook, so we draw the PNG by hand: a PNG is a signature and three
    chunks, written with `struct` and compressed with `zlib`. Any bytes work, as long as they are
    a real image.
    """),
    code(PNG_HELPER),
    code(r'''
    png = bar_chart_png([12, 19, 7, 15])
    print(len(png), "bytes, starts with", png[:8])
    '''),
    md(r"""
    The tool returns the JSON the model reads (`response`) and the image beside it
    (`inline_data`). The `mime_type` may be left out for PNG, JPEG, GIF, WEBP and PDF bytes: the
    framework recognises them.
    """),
    code(r'''
    %%tool
    def sales_chart(quarter: str, values: list[float]) -> dict:
        """Draw the sales of a quarter as a bar chart, one bar per month or region.

        Args:
            quarter: Which quarter, e.g. "Q4".
            values: The sales figures to plot.
        """
        return {
            "response": {"title": f"{quarter} Sales", "chart_type": "bar", "bars": len(values),
                         "best": max(values)},
            "inline_data": [{"mime_type": "image/png", "data": bar_chart_png(values)}],
        }
    '''),
    code(r'''
    chart_model = ScriptedModel([
        FunctionCall("sales_chart", {"quarter": "Q4", "values": [12, 19, 7, 15]}),
        "Here is the Q4 chart: the second bar (19) is the best.",
    ])
    '''),
    code(r'''
    %%agent chart_bot --model chart_model --tools sales_chart
    Draw charts with sales_chart.
    '''),
    code(r'''
    %%chat chart_bot
    Chart Q4 sales for me.
    '''),
    md(r"""
    What the model received: the function response's JSON, **plus** a media part with the PNG.
    The scripted model recorded it in its last request:
    """),
    code(r'''
    response = chart_model.requests[-1].contents[-1].function_responses()[0]
    print("json: ", response.response)
    print("media:", [(p.mime_type, len(p.inline_data.data)) for p in response.parts])
    '''),
    md(r"""
    ## A PDF by reference (`file_data`)

    Large documents should not travel as bytes in every request. Return a **reference** instead:
    a URI the provider can fetch (`https://`, or `gs://` for Gemini). Nothing downloads it here:
    the widget shows a link, and the model request carries the URI.
    """),
    code(r'''
    %%tool
    def annual_report(year: int) -> dict:
        """Get the annual report of a year as a PDF.

        Args:
            year: The report's year.
        """
        return {
            "response": {"document_id": f"report-{year}", "pages": 12},
            "file_data": [{"mime_type": "application/pdf",
                           "file_uri": f"https://example.com/reports/annual-report-{year}.pdf"}],
        }
    '''),
    md(r"""
    ## A PDF made by the tool (`inline_data`)

    A PDF is text with a strict layout: numbered objects (catalog, page tree, a page, its content
    stream, a font), then a cross-reference table giving each object's byte offset, then a
    trailer. Here is a one-page PDF written by hand, a few lines of PDF syntax:
    """),
    code(r'''
    def tiny_pdf(title: str, lines: list[str]) -> bytes:
        """A valid one-page PDF: five objects, an xref table of their byte offsets, a trailer."""
        def text(s):
            return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

        stream = f"BT /F1 20 Tf 40 150 Td ({text(title)}) Tj /F1 12 Tf"
        for line in lines:
            stream += f" 0 -22 Td ({text(line)}) Tj"
        stream += " ET"
        objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 360 200] /Contents 4 0 R "
            "/Resources << /Font << /F1 5 0 R >> >> >>",
            f"<< /Length {len(stream)} >>\nstream\n{stream}\nendstream",
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
        out = bytearray(b"%PDF-1.4\n")
        offsets = []
        for number, body in enumerate(objects, start=1):
            offsets.append(len(out))
            out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
        xref = len(out)
        out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
        out += "".join(f"{offset:010d} 00000 n \n" for offset in offsets).encode()
        out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
        return bytes(out)


    pdf = tiny_pdf("Q4 summary", ["Sales: 53 units", "Best month: November"])
    print(pdf.decode("latin-1"))
    '''),
    code(r'''
    %%tool
    def quarter_summary(quarter: str) -> dict:
        """Write a one-page PDF summary of a quarter.

        Args:
            quarter: Which quarter, e.g. "Q4".
        """
        pdf = tiny_pdf(f"{quarter} summary", ["Sales: 53 units", "Best month: November"])
        return {"response": {"quarter": quarter, "pages": 1},
                "inline_data": [{"mime_type": "application/pdf", "data": pdf}]}
    '''),
    code(r'''
    docs_model = ScriptedModel([
        [FunctionCall("annual_report", {"year": 2024}), FunctionCall("quarter_summary", {"quarter": "Q4"})],
        "Attached: the 2024 annual report (12 pages) and a one-page Q4 summary.",
    ])
    '''),
    code(r'''
    %%agent docs_bot --model docs_model --tools annual_report,quarter_summary
    Fetch reports and write summaries.
    '''),
    code(r'''
    %%chat docs_bot
    I need the 2024 annual report and a Q4 summary.
    '''),
    md(r"""
    Both PDFs are on their tool cards: the reference as a link to its URI, the generated one as a
    link to its bytes (it downloads as `quarter_summary.pdf`). While a run is live, the widget
    also has a *preview* under that link, which opens the PDF inline.

    ## Building the response directly

    `FunctionResponseData` is what a result dict becomes; a tool can build and return it with
    its builders. Besides bytes, `inline_data` accepts base64 text, a PIL image or an IPython
    `Image`:
    """),
    code(r'''
    %%tool
    from IPython.display import Image


    def dashboard(quarter: str) -> FunctionResponseData:
        """A quarter's dashboard: a chart and its PDF summary.

        Args:
            quarter: Which quarter, e.g. "Q4".
        """
        return (FunctionResponseData({"quarter": quarter, "status": "success"})
                .with_inline_data("image/png", bar_chart_png([5, 9, 4]))
                .with_inline_data("application/pdf", tiny_pdf(f"{quarter} dashboard", ["3 regions"])))


    def preview(quarter: str) -> dict:
        """A small preview image of a quarter's chart.

        Args:
            quarter: Which quarter, e.g. "Q4".
        """
        thumbnail = Image(data=bar_chart_png([1, 2, 3], width=120, height=80))
        return {"response": {"quarter": quarter}, "inline_data": [thumbnail]}
    '''),
    code(r'''
    board_model = ScriptedModel([
        [FunctionCall("dashboard", {"quarter": "Q3"}), FunctionCall("preview", {"quarter": "Q3"})],
        "Your Q3 dashboard and a preview.",
    ])
    '''),
    code(r'''
    %%agent board_bot --model board_model --tools dashboard,preview
    Build dashboards.
    '''),
    code(r'''
    %%chat board_bot
    Q3 dashboard, please.
    '''),
    md(r"""
    ## When media cannot be sent

    Media that cannot be read never crashes the run either: the model gets an error it can
    explain. Unknown bytes with no `mime_type`, for example:
    """),
    code(r'''
    %%tool
    def broken_chart() -> dict:
        """Return bytes that are not an image."""
        return {"inline_data": [b"not an image"]}
    '''),
    code(r'''
    broken_model = ScriptedModel([FunctionCall("broken_chart", {}), "Sorry, the chart could not be attached."])
    '''),
    code(r'''
    %%agent broken_bot --model broken_model --tools broken_chart
    Draw charts.
    '''),
    code(r'''
    %%chat broken_bot
    Chart, please.
    '''),
    md(r"""
    To see how each provider carries these media on the wire (Gemini's `functionResponse.parts`,
    Anthropic's `image` and `document` blocks), see `05_what_the_model_sees.ipynb`.
    """),
]


# -- 04: agent features -----------------------------------------------------------------------------
AGENT_FEATURES = [
    md(r"""
    # Agent features

    An `LlmAgent` is a loop: build the request, call the model, run the tools it asks for, repeat
    until it answers. This notebook goes through the settings that shape that loop, from the
    *LlmAgent* page: instruction templates, structured output, how tool calls are dispatched,
    retries and the circuit breaker, callbacks, conversation history, saving answers to state,
    and the iteration limit.

    What `%%agent` can set, it sets with options (`%%agent?` lists them); callbacks and
    retry budgets take Python objects, so those agents are made with `LlmAgent(...)` or the
    fluent `LlmAgentBuilder`, and `%%chat` runs them just the same.

    Offline: `ScriptedModel` and `FunctionModel` play the model, so every run is reproducible.
    """),
    setup('''
    import asyncio
    import time

    from pydantic import BaseModel

    from adk_notebook import (AdkError, FunctionCall, FunctionModel, LlmAgent, LlmAgentBuilder,
                              RetryBudget, ScriptedModel)
    '''),
    md(r"""
    ## Instruction templates

    The instruction is a template filled from session state before **every** model call:

    | placeholder   | filled with                                           |
    |---------------|-------------------------------------------------------|
    | `{name}`      | `state["name"]`; missing is an error naming the key   |
    | `{name?}`     | `state["name"]`, or nothing when missing              |
    | `{user:x}`    | state shared by every session of this user            |
    | `{app:x}`     | state shared by every user of the app                 |
    | `{temp:x}`    | state that lives for this invocation only             |

    Anything else in braces (a JSON example, say) is left as written.
    """),
    code(r'''
    concierge_model = ScriptedModel(["Hola Ana! I'm Acme's concierge. How can I help?"])
    '''),
    code(r'''
    %%agent concierge --model concierge_model
    You are {app:brand}'s concierge, helping {user_name}. Answer in {user:language}.
    Loyalty tier: {tier?}. Today's promotion: {temp:promo?}.
    '''),
    md(r"""
    `--state` sets the state of a new session (prefixed keys land in their scope). `%adk request`
    then shows the instruction **after** templating, exactly as the model will get it, without
    calling the model: `{tier?}` and `{temp:promo?}` are empty, not errors.
    """),
    code(r'''
    %%chat concierge --state user_name=Ana user:language=Spanish app:brand=Acme
    Hi!
    '''),
    code(r'''
    %adk request concierge --message "What's on sale?"
    '''),
    md(r"""
    `temp:` state is for values computed during one invocation, by a callback or a tool; it is
    never saved. Here a `before_agent_callback` sets today's promotion; the model sees it in the
    instruction, and after the run it is gone:
    """),
    code(r'''
    def todays_promo(ctx):
        ctx.state["temp:promo"] = "2-for-1 coffee"


    promo_model = FunctionModel(lambda request: "(instruction) " + request.system_instruction.splitlines()[-1])
    promo_concierge = LlmAgent(name="promo_concierge", model=promo_model, before_agent_callback=todays_promo,
                               instruction="You are {app:brand}'s concierge.\nToday's promotion: {temp:promo?}.")
    '''),
    code(r'''
    %%chat promo_concierge --state app:brand=Acme
    Anything on sale today?
    '''),
    code(r'''
    %adk state promo_concierge
    '''),
    md(r"""
    A missing required variable stops the run before the model is called, with one line naming
    the key and the fix:
    """),
    code(r'''
    %%chat concierge --new-session
    Hi!
    ''', raises=True),
    md(r"""
    ## Structured output

    `--output-schema` (or `output_schema=`) makes the final answer data: a pydantic model (or a
    JSON schema) the answer must match. The schema is sent to the provider (as
    `responseSchema`, `response_format`, ...) **and** the answer is validated here, whatever the
    provider enforces. An answer that does not match costs a retry, with the validation error,
    instead of returning bad data (up to 3 times by default).

    The scripted model answers in prose first, as a model might:
    """),
    code(r'''
    class Entities(BaseModel):
        people: list[str]
        locations: list[str]
        dates: list[str]


    extractor_model = ScriptedModel([
        "John met Sarah in Paris on December 25th.",                          # not JSON
        '{"people": ["John", "Sarah"], "locations": ["Paris"]}',              # "dates" missing
        '{"people": ["John", "Sarah"], "locations": ["Paris"], "dates": ["December 25th"]}',
    ])
    '''),
    code(r'''
    %%agent entity_extractor --model extractor_model --output-schema Entities --output-key entities
    Extract entities from the given text.
    '''),
    code(r'''
    %%chat entity_extractor
    John met Sarah in Paris on December 25th.
    '''),
    md(r"""
    The validated value is saved under the output key (as JSON), and the agent told the model
    exactly what was wrong each time:
    """),
    code(r'''
    entities = Entities.model_validate(_.state["entities"])
    print(repr(entities))
    for request in extractor_model.requests[1:]:
        print("retry message:", request.contents[-1].text[:110], "…")
    '''),
    md(r"""
    ## Tool execution strategies

    When the model asks for several tools in one turn, the strategy decides how they run:

    - `sequential` (default): one at a time, in the model's order.
    - `parallel`: all at once. You vouch that they are safe together.
    - `auto`: calls to tools that are **both** read-only and concurrency-safe run at once first,
      then the rest one at a time.

    Results always go back in the model's order. Three tools that each sleep 0.4 s show the
    difference; the planner model calls all three in one turn:
    """),
    code(r'''
    %%tool --read-only --concurrency-safe
    def get_forecast(city: str) -> dict:
        """Get the forecast for a city (slow service)."""
        time.sleep(0.4)
        return {"city": city, "forecast": "sunny"}


    def get_news(city: str) -> dict:
        """Get local news for a city (slow service)."""
        time.sleep(0.4)
        return {"city": city, "headline": "New metro line opens"}
    '''),
    code(r'''
    %%tool
    def save_note(text: str) -> dict:
        """Save a note for the user (writes: not safe to run alongside others)."""
        time.sleep(0.4)
        return {"saved": True}
    '''),
    code(r'''
    def plan(request):
        if request.contents[-1].function_responses():
            return "Sunny, a new metro line, and your note is saved."
        return [FunctionCall("get_forecast", {"city": "Lima"}), FunctionCall("get_news", {"city": "Lima"}),
                FunctionCall("save_note", {"text": "Lima: sunny"})]


    planner = FunctionModel(plan)
    '''),
    code(r'''
    %%agent sequential_bot --model planner --tools get_forecast,get_news,save_note --strategy sequential
    Plan the user's day.
    '''),
    code(r'''
    %%agent parallel_bot --model planner --tools get_forecast,get_news,save_note --strategy parallel
    Plan the user's day.
    '''),
    code(r'''
    %%agent auto_bot --model planner --tools get_forecast,get_news,save_note --strategy auto
    Plan the user's day.
    '''),
    code(r'''
    runs = {}
    runs["sequential"] = %chat sequential_bot Plan my day in Lima.
    '''),
    code(r'''
    runs["parallel"] = %chat parallel_bot Plan my day in Lima.
    '''),
    code(r'''
    runs["auto"] = %chat auto_bot Plan my day in Lima.
    '''),
    md(r"""
    Every tool response event carries a `ToolOutcome` per call (`tool_name`, `args`, `success`,
    `duration`, `error`, `attempt`). Each call takes 0.4 s whatever the strategy; what changes is
    how long the turn waits for all three:
    """),
    code(r'''
    print(f"{'strategy':<11} {'each call (s)':<20} {'sum':>5} {'turn waited':>12}")
    for strategy, result in runs.items():
        calls = next(e for e in result.events if not e.partial and e.function_calls())
        answers = next(e for e in result.events if e.tool_outcomes)
        durations = [o.duration for o in answers.tool_outcomes]
        each = " ".join(f"{d:.2f}" for d in durations)
        print(f"{strategy:<11} {each:<20} {sum(durations):5.2f} {answers.timestamp - calls.timestamp:10.2f} s")
    '''),
    md(r"""
    Sequential waits for the sum (about 1.2 s), parallel for the slowest call (about 0.4 s), and
    auto runs the two read-only lookups together, then the note (about 0.8 s).

    ## Retries

    Some failures are transient: a reset connection, a 503. A **retry budget** runs the failing
    tool again, `delay` seconds apart, before the model hears about it. `default_retry_budget`
    applies to every tool, `tool_retry_budget(name, ...)` overrides it for one. A plain exception
    counts as transient; an `AdkError` retries only when its category says so (`rate_limited`,
    `timeout`, `unavailable`), so `AdkError.tool("Cannot divide by zero")` is not retried.

    This tool fails twice, then answers; the card shows the attempts:
    """),
    code(r'''
    %%tool
    flaky_calls = {"n": 0}


    def flaky_api(query: str) -> dict:
        """Ask the upstream service (it drops the first two connections)."""
        flaky_calls["n"] += 1
        if flaky_calls["n"] <= 2:
            raise ConnectionError("upstream reset the connection")
        return {"query": query, "answer": 42}
    '''),
    code(r'''
    resilient_agent = (
        LlmAgentBuilder("resilient_agent")
        .model(ScriptedModel([FunctionCall("flaky_api", {"query": "meaning of life"}), "The answer is 42."]))
        .instruction("Use flaky_api.")
        .tool(flaky_api)
        .default_retry_budget(RetryBudget(max_retries=2, delay=0.5))          # every tool
        .tool_retry_budget("flaky_api", RetryBudget(max_retries=4, delay=0.05))  # this one
        .build()
    )
    '''),
    code(r'''
    %%chat resilient_agent
    What is the meaning of life?
    '''),
    md(r"""
    ## Circuit breaker

    When a tool keeps failing, calling it again wastes time and tokens. `circuit_breaker_threshold=N`
    disables a tool for the rest of the run after N consecutive failures: the next call is not
    run, and the model is told to answer without it.
    """),
    code(r'''
    %%tool
    def payments_api(order_id: str) -> dict:
        """Look up a payment (the service is down)."""
        raise AdkError.tool("payments service unavailable", category="unavailable")
    '''),
    code(r'''
    breaker_agent = LlmAgent(
        name="breaker_agent",
        model=ScriptedModel([
            FunctionCall("payments_api", {"order_id": "A1"}),
            FunctionCall("payments_api", {"order_id": "A1"}),
            FunctionCall("payments_api", {"order_id": "A1"}),
            "The payments service is down; I'll check order A1 later.",
        ]),
        tools=[payments_api],
        circuit_breaker_threshold=2,
    )
    '''),
    code(r'''
    %%chat breaker_agent
    Has order A1 been paid?
    '''),
    md(r"""
    (`payments_api` raises a *transient* error, yet it was not retried: this agent has no retry
    budget. With one, each of the two failures would have used up its retries first.)

    ## Callbacks

    Callbacks hook into the loop around the agent, each model call and each tool call. A callback
    that returns something short-circuits the step:

    | callback               | gets                         | returning a value...               |
    |------------------------|------------------------------|------------------------------------|
    | `before_agent_callback`| `ctx`                        | Content: the agent does not run    |
    | `after_agent_callback` | `ctx`                        | Content: added as a last answer    |
    | `before_model_callback`| `ctx, request`               | LlmResponse: the model is not called |
    | `after_model_callback` | `ctx, response`              | LlmResponse: replaces the response |
    | `before_tool_callback` | `ctx, tool, args`            | dict: the tool does not run        |
    | `after_tool_callback`  | `ctx, tool, args, response`  | dict: replaces the result          |
    | `on_tool_error`        | `ctx, tool, args, error`     | dict: a fallback result            |

    **Caching with `before_model_callback`.** Answer a question seen before without calling the
    model; `after_model_callback` fills the cache. **Logging with `after_tool_callback`.**
    `ctx.tool_outcome` says how the call went.
    """),
    code(r'''
    answers = {}


    def from_cache(ctx, request):
        cached = answers.get(ctx.user_content.text)
        if cached is not None:
            print(f"cache hit: {ctx.user_content.text!r}")
        return cached                                   # None: go on and call the model


    def into_cache(ctx, response):
        if response.content is not None and not response.content.function_calls():
            answers[ctx.user_content.text] = response


    def log_tool(ctx):
        o = ctx.tool_outcome
        print(f"Tool {o.tool_name!r} {'succeeded' if o.success else 'failed'} in {o.duration * 1000:.0f} ms "
              f"(attempt {o.attempt})")


    cached_model = ScriptedModel([FunctionCall("get_forecast", {"city": "Oslo"}), "Sunny in Oslo."])
    cached_agent = LlmAgent(name="cached_agent", model=cached_model, tools=[get_forecast],
                            before_model_callback=from_cache, after_model_callback=into_cache,
                            after_tool_callback=log_tool)
    '''),
    code(r'''
    %%chat cached_agent
    Weather in Oslo?
    '''),
    code(r'''
    %%chat cached_agent
    Weather in Oslo?
    '''),
    code(r'''
    print("model calls:", len(cached_model.requests))
    '''),
    md(r"""
    The second question was answered from the cache: the model's script had no answer left, and
    it was not needed.

    ## Conversation history: `include_contents`

    By default the model gets the whole conversation so far. With `--include-contents none` it
    gets only the current turn: a stateless agent (its instruction can still read state).
    `%adk request` shows the contents each would send next:
    """),
    code(r'''
    echo = FunctionModel(lambda request: f"I can see {len(request.contents)} message(s).")
    '''),
    code(r'''
    %%agent remembers --model echo
    You remember the conversation.
    '''),
    code(r'''
    %%agent forgets --model echo --include-contents none
    You answer each message on its own.
    '''),
    code(r'''
    %chat remembers My name is Ana.
    %chat forgets My name is Ana.
    '''),
    code(r'''
    %chat remembers What's my name?
    %chat forgets What's my name?
    '''),
    code(r'''
    %adk request forgets --message "Third message"
    '''),
    md(r"""
    ## Saving the answer: `output_key`

    `--output-key K` saves the final answer in session state under `K`, where the next agent, a
    template (`{K}`) or your code can read it:
    """),
    code(r'''
    summary_model = ScriptedModel(["Ana wants a quiet hotel near the beach in Lima."])
    '''),
    code(r'''
    %%agent summarizer --model summary_model --output-key summary
    Summarize the user's request in one sentence.
    '''),
    code(r'''
    %%chat summarizer
    I'm looking for somewhere quiet to stay in Lima, close to the sea if possible.
    '''),
    code(r'''
    %adk state summarizer
    '''),
    md(r"""
    ## The iteration limit: `max_iterations`

    A model that keeps calling tools would loop forever (and bill you for it). `max_iterations`
    caps the model calls per message (default 100; 5–20 suits simple question-answering agents).
    Past it, the run ends with one clear line, not a traceback:
    """),
    code(r'''
    stubborn = FunctionModel(lambda request: FunctionCall("get_forecast", {"city": "Lima"}))
    '''),
    code(r'''
    %%agent bounded_agent --model stubborn --tools get_forecast --max-iterations 3
    You are a helpful assistant.
    '''),
    code(r'''
    %%chat bounded_agent
    Weather in Lima?
    ''', raises=True),
]


# -- 05: what the model sees ------------------------------------------------------------------------
WHAT_THE_MODEL_SEES = [
    md(r"""
    # What the model sees

    A model never sees your Python. It sees one request per call: a **system instruction**
    (after templating), the **contents** of the conversation (user turns, its own earlier
    answers and tool calls, the tool responses), and the **tool declarations** (name,
    description, JSON schema of the parameters). Each provider wants that request in its own
    JSON dialect.

    This notebook looks at the request two ways: `%adk request AGENT`, and each provider's exact
    body from `build_body(request)`. Nothing is sent: the provider models are built with a dummy
    key and never asked to generate anything, so no keys and no network are needed.
    """),
    setup('''
    import json
    from typing import Literal

    from adk_notebook import FunctionCall, ScriptedModel
    '''),
    md(r"""
    ## A tool and an agent

    One tool with a required string, an optional enum with a default, and a list: enough to see
    how each dialect treats a schema.
    """),
    code(r'''
    %%tool --read-only --concurrency-safe
    def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius",
                    fields: list[str] | None = None) -> dict:
        """Get the current weather for a city.

        Args:
            city: The city to look up, e.g. "Tokyo".
            unit: Temperature unit.
            fields: Which fields to return (all when omitted).
        """
        return {"city": city, "temperature": 22, "unit": unit, "condition": "sunny"}
    '''),
    code(r'''
    model = ScriptedModel([FunctionCall("get_weather", {"city": "Tokyo"}), "It is sunny in Tokyo, 22 °C."])
    '''),
    code(r'''
    %%agent weather_bot --model model --tools get_weather
    You help {user_name} with the weather. Use get_weather for weather questions.
    '''),
    code(r'''
    %%chat weather_bot --state user_name=Ana
    What's the weather in Tokyo?
    '''),
    md(r"""
    ## `%adk request`: the next request, in our own terms

    What the agent would send on its next model call if the user now wrote "And in Lima?":
    the instruction with `{user_name}` filled in, the whole conversation so far (the user's
    question, the model's tool call, the tool's response, the answer, and the new message), and
    the tool declarations. Because this agent's model is a `ScriptedModel`, which has no wire
    format, the provider bodies are listed under it, folded: click to open them.
    """),
    code(r'''
    %adk request weather_bot --message "And in Lima?"
    '''),
    md(r"""
    ## Each provider's exact body

    The same request in code. The scripted model recorded every request it received; take the
    second one (after the tool ran) and ask each provider model what it would POST. A model only
    translates; its provider owns the key, the base URL and the HTTP connection, and reads the key
    only when a request is sent. So these models get providers without keys: `build_body` needs
    none, and nothing is sent.
    """),
    code(r'''
    from adk_notebook import (AnthropicModel, AnthropicProvider, GeminiModel, GeminiProvider, OpenAIModel,
                              OpenAIProvider)

    request = model.requests[-1]
    providers = {
        "Gemini": GeminiModel("gemini-2.5-flash", provider=GeminiProvider()),
        "OpenAI": OpenAIModel("gpt-4o-mini", provider=OpenAIProvider()),
        "Anthropic": AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider()),
    }
    bodies = {name: provider.build_body(request) for name, provider in providers.items()}


    def show(value):
        print(json.dumps(value, indent=2, ensure_ascii=False))
    '''),
    md(r"""
    ### Gemini (`POST /v1beta/models/gemini-2.5-flash:generateContent`)

    The instruction goes in `systemInstruction`; the conversation in `contents`, with roles `user`
    and `model` (tool responses travel as `user` turns holding `functionResponse` parts); the tools
    in `tools[0].functionDeclarations`.
    """),
    code(r'''
    show(bodies["Gemini"])
    '''),
    md(r"""
    ### OpenAI Chat Completions (`POST /v1/chat/completions`)

    The instruction is the first message, with role `system`; a tool call is an assistant message
    with `tool_calls` (arguments as a JSON **string**); each tool response is its own message with
    role `tool` and the `tool_call_id`; each tool is `{"type": "function", "function": {...}}`.
    The same body works with every server that speaks this API (Ollama, vLLM, llama.cpp, Groq...).
    """),
    code(r'''
    show(bodies["OpenAI"])
    '''),
    md(r"""
    ### Anthropic Messages (`POST /v1/messages`)

    The instruction is the top-level `system`; messages alternate `user` / `assistant`; a tool call
    is a `tool_use` block, its response a `tool_result` block in the next user message; each tool
    has an `input_schema`. `max_tokens` is required by the API, so it is always set.
    """),
    code(r'''
    show(bodies["Anthropic"])
    '''),
    md(r"""
    ## One tool schema, three dialects

    Side by side, the declaration of `get_weather` as each provider receives it. OpenAI and
    Anthropic take JSON Schema as it is (Anthropic calls it `input_schema`, OpenAI wraps the
    declaration in `{"type": "function", "function": ...}`). Gemini accepts an OpenAPI-style
    **subset**: the translation keeps what it understands (types, descriptions, `enum`,
    `required`, `default`) and rewrites or drops the rest. Here `additionalProperties` is gone
    and the optional list's `anyOf: [array, null]` became an array with `nullable: true`.
    """),
    code(r'''
    print("ours (the declaration every provider starts from):")
    show(request.tools[0].parameters)
    print("\nGemini, tools[0].functionDeclarations[0]:")
    show(bodies["Gemini"]["tools"][0]["functionDeclarations"][0])
    print("\nOpenAI, tools[0]:")
    show(bodies["OpenAI"]["tools"][0])
    print("\nAnthropic, tools[0]:")
    show(bodies["Anthropic"]["tools"][0])
    '''),
    md(r"""
    ## Where each part of the request goes

    | our request            | Gemini                                 | OpenAI                                   | Anthropic                              |
    |------------------------|----------------------------------------|------------------------------------------|----------------------------------------|
    | system instruction     | `systemInstruction.parts[0].text`      | first message, role `system`             | top-level `system`                     |
    | user turn              | `contents[i]`, role `user`             | message, role `user`                     | message, role `user`                   |
    | model's tool call      | `functionCall` part, role `model`      | `tool_calls` on an `assistant` message   | `tool_use` block, role `assistant`     |
    | tool response          | `functionResponse` part, role `user`   | message, role `tool`, `tool_call_id`     | `tool_result` block, role `user`       |
    | tool declaration       | `tools[0].functionDeclarations[i]`     | `tools[i].function`                      | `tools[i]` with `input_schema`         |
    | output schema          | `generationConfig.responseSchema`      | `response_format.json_schema`            | `output_config.format`                 |

    The last row, from an agent with an output schema:
    """),
    code(r'''
    from pydantic import BaseModel

    from adk_notebook import LlmAgent


    class Forecast(BaseModel):
        city: str
        temperature_c: float


    structured = LlmAgent(name="structured", model=ScriptedModel(['{"city": "Lima", "temperature_c": 19}']),
                          instruction="Answer with the forecast.", output_schema=Forecast)
    result = structured.run("Forecast for Lima?")
    print("validated output:", repr(result.output))
    schema_request = structured.model.requests[0]
    show({
        "Gemini generationConfig": providers["Gemini"].build_body(schema_request)["generationConfig"],
        "OpenAI response_format": providers["OpenAI"].build_body(schema_request)["response_format"],
        "Anthropic output_config": providers["Anthropic"].build_body(schema_request)["output_config"],
    })
    '''),
    md(r"""
    ## `%adk request` for an agent on a real provider

    Give an agent a provider model and `%adk request` shows that provider's body directly (still
    without sending anything). `--provider` picks another dialect for comparison:
    """),
    code(r'''
    claude = AnthropicModel("claude-sonnet-4-6", provider=AnthropicProvider())  # no key: nothing is sent
    '''),
    code(r'''
    %%agent claude_bot --model claude --tools get_weather
    You help users with the weather.
    '''),
    code(r'''
    %adk request claude_bot --message "Weather in Oslo?"
    '''),
    code(r'''
    %adk request claude_bot --message "Weather in Oslo?" --provider gemini
    '''),
    md(r"""
    Reading these bodies is the fastest way to debug a tool the model will not call: check that
    the description says when to use it, that every parameter is described, and that the schema
    survived the translation to your provider's dialect.
    """),
]


NOTEBOOKS = {
    "02_function_tools.ipynb": FUNCTION_TOOLS,
    "03_multimodal.ipynb": MULTIMODAL,
    "04_agent_features.ipynb": AGENT_FEATURES,
    "05_what_the_model_sees.ipynb": WHAT_THE_MODEL_SEES,
}


def build(name: str, cells: list[nbformat.NotebookNode]) -> nbformat.NotebookNode:
    """A notebook of `cells` with stable cell ids and the metadata Jupyter expects."""
    nb = new_notebook(metadata={
        "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
        "language_info": {"name": "python"},
    })
    stem = name.split("_", 1)[0]
    for index, cell in enumerate(cells, start=1):
        cell = nbformat.from_dict(dict(cell))
        cell.id = f"nb{stem}-{index:03d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def render(name: str) -> str:
    return nbformat.writes(build(name, NOTEBOOKS[name])) + "\n"


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for name in NOTEBOOKS:
        path = HERE / name
        text = render(name)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
        else:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path.relative_to(HERE.parent)}")
    if stale:
        print("out of date (run python notebooks/make_notebooks.py):", ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
