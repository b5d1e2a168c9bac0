"""The notebooks as sources; the teaching notebooks 02–05 executed and checked on what a learner reads.

Each notebook runs once per module (nbclient, the venv's `python3` kernel, offline, no keys).
The checks read the outputs a learner would look at: the chat transcripts (text/plain and
text/html), what `%adk` printed, the request bodies, and the one-line errors that are part of a
lesson. Cells tagged `raises-exception` are the only ones allowed to fail.
"""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from fnmatch import fnmatch
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
notebook = pytest.mark.notebook


def execute(name: str) -> nbformat.NotebookNode:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


@pytest.fixture(scope="module")
def nb02() -> nbformat.NotebookNode:
    return execute("02_function_tools.ipynb")


@pytest.fixture(scope="module")
def nb03() -> nbformat.NotebookNode:
    return execute("03_multimodal.ipynb")


@pytest.fixture(scope="module")
def nb04() -> nbformat.NotebookNode:
    return execute("04_agent_features.ipynb")


@pytest.fixture(scope="module")
def nb05() -> nbformat.NotebookNode:
    return execute("05_what_the_model_sees.ipynb")


# -- reading outputs ------------------------------------------------------------------------------
def cells(nb: nbformat.NotebookNode, start: str) -> list[nbformat.NotebookNode]:
    """The code cells whose source starts with `start`, in order."""
    found = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
    assert found, f"no code cell starts with {start!r}"
    return found


def cell(nb: nbformat.NotebookNode, start: str) -> nbformat.NotebookNode:
    found = cells(nb, start)
    assert len(found) == 1, f"{len(found)} code cells start with {start!r}"
    return found[0]


def text(c: nbformat.NotebookNode) -> str:
    """What the cell printed and displayed as plain text (transcripts, %adk tables, print())."""
    out = []
    for o in c.outputs:
        if o.output_type == "stream":
            out.append(o.text)
        elif o.output_type in ("display_data", "execute_result"):
            out.append(o.data.get("text/plain", ""))
    return "\n".join(out)


def printed(c: nbformat.NotebookNode) -> str:
    return "".join(o.text for o in c.outputs if o.output_type == "stream" and o.name == "stdout")


def html(c: nbformat.NotebookNode) -> str:
    shown = [o for o in c.outputs if o.output_type in ("display_data", "execute_result")]
    return "\n".join(o.data.get("text/html", "") for o in shown)


def error(c: nbformat.NotebookNode) -> nbformat.NotebookNode:
    errors = [o for o in c.outputs if o.output_type == "error"]
    assert len(errors) == 1, f"expected one error in {c.source.splitlines()[0]!r}, got {len(errors)}"
    return errors[0]


def assert_one_line_error(c: nbformat.NotebookNode, *fragments: str) -> str:
    """The cell failed with one clear line: no traceback, no stack frames."""
    err = error(c)
    lines = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in err.traceback]
    assert len(lines) == 1 and "\n" not in lines[0].strip(), lines
    assert "Traceback" not in lines[0] and "File " not in lines[0], lines[0]
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def assert_only_lessons_fail(nb: nbformat.NotebookNode) -> None:
    for c in nb.cells:
        if c.cell_type != "code":
            continue
        failed = [o for o in c.outputs if o.output_type == "error"]
        stderr = "".join(o.text for o in c.outputs if o.output_type == "stream" and o.name == "stderr")
        assert "UsageError" not in stderr and "Traceback" not in stderr, (c.source.splitlines()[0], stderr)
        if "raises-exception" in c.metadata.get("tags", []):
            assert failed, f"the lesson cell {c.source.splitlines()[0]!r} did not fail"
        else:
            assert not failed, (c.source.splitlines()[0], [(o.ename, o.evalue) for o in failed])


def media_urls(page: str, mime: str) -> list[bytes]:
    """The bytes of every data: URL of `mime` in an HTML transcript."""
    return [base64.b64decode(m) for m in re.findall(rf"data:{re.escape(mime)};base64,([A-Za-z0-9+/=]+)", page)]


def json_documents(c: nbformat.NotebookNode) -> list[object]:
    """The JSON values a cell printed one after another (each `show(...)`)."""
    decoder, source, pos, docs = json.JSONDecoder(), printed(c), 0, []
    while (start := source.find("{", pos)) != -1:
        value, pos = decoder.raw_decode(source, start)
        docs.append(value)
    return docs


# -- the sources ------------------------------------------------------------------------------------
def test_every_notebook_is_a_readable_outputs_stripped_ipynb() -> None:
    """One way for all: each notebook is its own source, an .ipynb saved without outputs, and
    a test executes it.

    No generator and no paired script beside them, so a review and a diff read the cells
    themselves; the file is as Jupyter writes it (nbformat), so saving it again changes nothing.
    """
    ignored = [
        line.removeprefix("notebooks/")
        for line in (NOTEBOOKS.parent / ".gitignore").read_text().splitlines()
        if line.startswith("notebooks/")
    ]  # what running them writes: HTML exports, %%writefile files
    files = [p.name for p in NOTEBOOKS.iterdir() if not p.name.startswith(".")]
    sources = sorted(name for name in files if not any(fnmatch(name, pattern) for pattern in ignored))
    assert sources and all(name.endswith(".ipynb") for name in sources), sources
    tests = "\n".join(p.read_text(encoding="utf-8") for p in Path(__file__).parent.rglob("test_*.py"))
    for name in sources:
        assert f'"{name}"' in tests, f"no test executes {name}"
        path = NOTEBOOKS / name
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code, name
        assert not any(c.outputs or c.execution_count for c in code), f"{name} was saved with outputs"
        assert "widgets" not in nb.metadata, f"{name} was saved with widget state"
        assert path.read_text(encoding="utf-8") == nbformat.writes(nb) + "\n", f"{name} is not as nbformat writes it"


# -- 02: function tools ----------------------------------------------------------------------------
@notebook
def test_02_runs_and_fails_only_where_the_lesson_is_an_error(nb02: nbformat.NotebookNode) -> None:
    assert_only_lessons_fail(nb02)
    assert_one_line_error(cell(nb02, "%%chat clash_bot"), "two tools named 'calculator'", "PrefixedToolset")


@notebook
def test_02_schema_shows_what_the_model_sees(nb02: nbformat.NotebookNode) -> None:
    shown = text(cell(nb02, "%adk schema get_weather"))
    assert '"name": "get_weather"' in shown and '"description": "Get the current weather for a city."' in shown
    assert '"description": "The city to look up."' in shown and '"celsius"' in shown
    docs = text(cell(nb02, "%adk schema search_docs"))
    assert '"query"' in docs and "ctx" not in docs, "the ToolContext parameter is hidden from the model"
    assert "NOTE: This is a long-running operation" in text(cell(nb02, "%adk schema generate_report"))
    assert "'temp': 22, 'city': 'Tokyo'" in text(cell(nb02, 'get_weather("Tokyo")'))


@notebook
def test_02_weather_chats_show_the_tool_result_and_the_answer(nb02: nbformat.NotebookNode) -> None:
    t = text(cell(nb02, "%%chat weather_bot"))
    assert 'tool get_weather({"city": "Tokyo"}) → ok' in t and '"temp": 22' in t
    assert "It is 22 °C in Tokyo right now." in t
    page = html(cell(nb02, "%%chat weather_bot"))
    assert "It is 22 °C in Tokyo right now." in page and "get_weather" in page
    t = text(cell(nb02, "%%chat weather_agent"))
    assert '"temperature": "22°C"' in t and "El tiempo en Tokio es soleado, con 22 °C." in t
    assert "without a schema: None" in printed(cell(nb02, "class WeatherParams"))


@notebook
def test_02_arguments_are_validated_before_the_tool_runs(nb02: nbformat.NotebookNode) -> None:
    t = text(cell(nb02, "%%chat shop_bot"))
    first, second = t.split("tool process_order(")[1:3]
    assert "→ error" in first and "'quantity' is required" in first
    assert "→ ok" in second and '"order_id": "ORD-12345"' in second and '"priority": "normal"' in second
    assert "Order ORD-12345 is confirmed" in t


@notebook
def test_02_calculator_and_divide_by_zero(nb02: nbformat.NotebookNode) -> None:
    chats = cells(nb02, "%%chat calc_bot")
    assert '"result": 37.5' in text(chats[0]) and "15% of 250 is 37.5." in text(chats[0])
    t = text(chats[1])
    assert "→ error" in t and "error: Cannot divide by zero" in t and "I can't divide 10 by zero" in t


@notebook
def test_02_several_tools_and_toolsets(nb02: nbformat.NotebookNode) -> None:
    first, second = cells(nb02, "%%chat assistant")
    assert "convert_units says: {'value': 6.21, 'unit': 'mi'}" in text(first)
    assert "get_weather says: {'temp': 22, 'city': 'Lima'" in text(second)
    assert "['calculator', 'convert_units', 'get_weather']" in printed(cell(nb02, 'print("the model was offered'))
    admin = text(cell(nb02, "%%chat toolbox_bot --user admin_ana"))
    assert "I can use: wx_get_weather, calculator, convert_units, cache_lookup" in admin
    assert "I can use: cache_lookup\n" in text(cell(nb02, "%%chat toolbox_bot --user bob")) + "\n"


@notebook
def test_02_structured_errors_reach_the_model(nb02: nbformat.NotebookNode) -> None:
    t = text(cell(nb02, "%%chat divide_bot"))
    assert "error: Parameter 'b' is required" in t and "error: Cannot divide by zero" in t and "1 / 4 = 0.25." in t
    seen = printed(cell(nb02, "for content in divide_model"))
    assert "'code': 'tool.divide.missing_param', 'category': 'invalid_input'" in seen
    assert "'code': 'tool.divide.division_by_zero'" in seen and "{'result': 0.25}" in seen


@notebook
def test_02_tool_context_and_state(nb02: nbformat.NotebookNode) -> None:
    morning = text(cell(nb02, "%%chat greeter --user ana --session morning"))
    assert '"greeting": "Hello, user ana!"' in morning and '"session": "morning"' in morning
    assert '"served_by": "greeter"' in morning and "user:greetings = 1" in morning
    evening = text(cell(nb02, "%%chat greeter --user ana --session evening"))
    assert '"greetings_so_far": 2' in evening, "user: state is shared by the user's sessions"
    state = text(cell(nb02, "%adk state greeter"))
    assert re.search(r"user:greetings\s+2\s+user", state), state


@notebook
def test_02_long_running_pair(nb02: nbformat.NotebookNode) -> None:
    started, later = cells(nb02, "%%chat reporter")
    assert '"task_id": "task_1"' in text(started) and '"status": "processing"' in text(started)
    assert "long-running" in html(started)
    assert '"status": "completed"' in text(later)
    assert "Your report is ready: Report on Q4 sales: complete." in text(later)


@notebook
def test_02_progress_streams_and_is_bounded(nb02: nbformat.NotebookNode) -> None:
    t = text(cell(nb02, "build = %chat builder"))
    assert "| Compiling app..." in t and "| warning: unused variable `x`" in t and '"warnings": 1' in t
    seen = printed(cell(nb02, "for event in build.events"))
    assert "[stdout] Compiling app...\n[stdout] Build finished in 4.2s\n[stderr] warning: unused variable `x`" in seen
    noisy = cell(nb02, "noisy_run = %chat noisy")
    assert "[adk: tool progress truncated]" in text(noisy)
    assert "the last one: [adk: tool progress truncated]" in printed(noisy)
    assert '"lines": 20000' in text(noisy), "the result is not cut"


@notebook
def test_02_simple_context_stateful_tool_and_media(nb02: nbformat.NotebookNode) -> None:
    direct = printed(cell(nb02, 'ctx = SimpleToolContext("my-test-harness")'))
    assert "'greeting': 'Hello, user anonymous!', 'session': 'session-42', 'served_by': 'my-mcp-server'" in direct
    assert "custom-call-id" in direct
    assert "('stderr', 'warning: unused variable `x`\\n')" in printed(cell(nb02, 'ctx = SimpleToolContext("test")'))
    first, second = cells(nb02, "%%chat cache_bot")
    assert '"value": "hello", "lookups": 1' in text(first) and '"value": "hola", "lookups": 2' in text(second)
    page = html(cell(nb02, "%%chat analyst"))
    assert len(media_urls(page, "image/png")) == 1
    assert "gs://my-bucket/reports/report-2024.pdf" in page
    assert "Here is the Q4 sales chart" in page
    assert "read-only, concurrency-safe" in text(cell(nb02, "%adk tools"))


# -- 03: multimodal --------------------------------------------------------------------------------
def png_size(data: bytes) -> tuple[int, int]:
    """Check a PNG chunk by chunk (CRCs, decompressed size) and return its width and height."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(kind + body)
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            assert depth == 8 and color in (2, 6), (depth, color)  # RGB or RGBA (matplotlib's)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    assert len(zlib.decompress(idat)) == height * (1 + (3 if color == 2 else 4) * width)
    return width, height


def check_pdf(data: bytes) -> None:
    """A PDF whose xref table points at its objects."""
    assert data.startswith(b"%PDF-1.") and data.rstrip().endswith(b"%%EOF")
    start = int(data.rsplit(b"startxref", 1)[1].split()[0])
    assert data[start : start + 4] == b"xref"
    rows = data[start:].split(b"\n")[2:]
    offsets = [int(r.split()[0]) for r in rows if r.endswith(b" n ")]
    assert offsets
    for number, offset in enumerate(offsets, start=1):
        assert data[offset:].startswith(f"{number} 0 obj".encode()), number


@notebook
def test_03_runs(nb03: nbformat.NotebookNode) -> None:
    assert_only_lessons_fail(nb03)


@notebook
def test_03_chart_is_an_inline_png(nb03: nbformat.NotebookNode) -> None:
    chat = cell(nb03, "%%chat chart_bot")
    page = html(chat)
    assert 'src="data:image/png;base64,' in page
    (png,) = media_urls(page, "image/png")
    assert png_size(png) == (320, 180)
    assert '"best": 19.0' in text(chat) and "[image image/png" in text(chat)
    assert "the second bar (19) is the best" in page
    assert "media: [('image/png', " in printed(cell(nb03, "response = chart_model"))


@notebook
def test_03_html_export_shows_the_transcripts(nb03: nbformat.NotebookNode) -> None:
    """What `jupyter nbconvert --to html --execute` gives a reader: the runs themselves, not empty widget slots."""
    from nbconvert import HTMLExporter

    page, _ = HTMLExporter().from_notebook_node(nb03)
    assert len(re.findall(r'<img [^>]*src="data:image/png;base64,', page)) >= 3
    assert re.search(r'<a [^>]*href="https://example.com/reports/annual-report-2024.pdf"', page)
    assert "Here is the Q4 chart: the second bar (19) is the best.</p>" in page


@notebook
def test_03_pdf_reference_and_inline_pdf(nb03: nbformat.NotebookNode) -> None:
    chat = cell(nb03, "%%chat docs_bot")
    page = html(chat)
    assert '<a href="https://example.com/reports/annual-report-2024.pdf"' in page
    (pdf,) = media_urls(page, "application/pdf")
    check_pdf(pdf)
    assert b"(Q4 summary) Tj" in pdf
    assert 'download="quarter_summary.pdf"' in page
    assert "Attached: the 2024 annual report (12 pages) and a one-page Q4 summary." in page
    check_pdf(printed(cell(nb03, "def tiny_pdf")).encode("latin-1"))


@notebook
def test_03_built_responses_and_unreadable_media(nb03: nbformat.NotebookNode) -> None:
    page = html(cell(nb03, "%%chat board_bot"))
    images = media_urls(page, "image/png")
    assert sorted(png_size(i) for i in images) == [(120, 80), (320, 180)]
    (pdf,) = media_urls(page, "application/pdf")
    check_pdf(pdf)
    t = text(cell(nb03, "%%chat broken_bot"))
    assert "→ error" in t and "cannot tell the type of 12 bytes" in t
    assert "Sorry, the chart could not be attached." in t


# -- 04: agent features ----------------------------------------------------------------------------
@notebook
def test_04_runs_and_its_errors_are_one_line(nb04: nbformat.NotebookNode) -> None:
    assert_only_lessons_fail(nb04)
    assert_one_line_error(cell(nb04, "%%chat concierge --new-session"), "uses {user_name}", "--state user_name=")
    line = assert_one_line_error(
        cell(nb04, "%%chat bounded_agent"), "made 3 model calls without a final answer", "max_iterations=3"
    )
    assert error(cell(nb04, "%%chat bounded_agent")).ename == "ChatError", line
    assert text(cell(nb04, "%%chat bounded_agent")).count("tool get_forecast(") == 3


@notebook
def test_04_templates(nb04: nbformat.NotebookNode) -> None:
    request = text(cell(nb04, "%adk request concierge"))
    assert "You are Acme's concierge, helping Ana. Answer in Spanish.\nLoyalty tier: . Today's promotion: ." in request
    assert "What's on sale?" in request
    assert "Today's promotion: 2-for-1 coffee." in text(cell(nb04, "%%chat promo_concierge"))
    state = text(cell(nb04, "%adk state promo_concierge"))
    assert "app:brand" in state and "temp:promo" not in state


@notebook
def test_04_output_schema_retries_until_valid(nb04: nbformat.NotebookNode) -> None:
    t = text(cell(nb04, "%%chat entity_extractor"))
    assert t.count("Your answer does not match the required JSON schema") == 2
    assert "dates: Field required" in t
    assert "Entities(people=['John', 'Sarah'], locations=['Paris'], dates=['December 25th'])" in printed(
        cell(nb04, "entities = Entities")
    )


@notebook
def test_04_strategies_timing(nb04: nbformat.NotebookNode) -> None:
    rows = {}
    for line in printed(cell(nb04, "print(f\"{'strategy'")).splitlines()[1:]:
        name, *numbers, _unit = line.split()
        rows[name] = [float(n) for n in numbers]  # three durations, their sum, the time the turn waited
    assert set(rows) == {"sequential", "parallel", "auto"}
    for name, (a, b, c, total, _waited) in rows.items():
        assert min(a, b, c) >= 0.39 and total >= 1.17, (name, rows[name])
    seq, par, auto = rows["sequential"][-1], rows["parallel"][-1], rows["auto"][-1]
    assert seq >= 1.17 and auto >= 0.78, rows
    assert par < 0.7 * seq and par < auto < seq, rows


@notebook
def test_04_retries_breaker_and_callbacks(nb04: nbformat.NotebookNode) -> None:
    t = text(cell(nb04, "%%chat resilient_agent"))
    assert "→ ok" in t and "3 attempts" in t and "The answer is 42." in t
    t = text(cell(nb04, "%%chat breaker_agent"))
    assert "disabled for the rest of this run" in t and "circuit breaker threshold 2" in t
    assert "The payments service is down" in t
    first, second = cells(nb04, "%%chat cached_agent")
    assert re.search(r"Tool 'get_forecast' succeeded in \d+ ms \(attempt 1\)", printed(first))
    assert "cache hit: 'Weather in Oslo?'" in printed(second) and "Sunny in Oslo." in text(second)
    assert "model calls: 2" in printed(cell(nb04, 'print("model calls:"'))


@notebook
def test_04_include_contents_and_output_key(nb04: nbformat.NotebookNode) -> None:
    first, second = cell(nb04, "%chat remembers My name"), cell(nb04, "%chat remembers What's")
    assert text(first).count("I can see 1 message(s).") == 2
    assert "I can see 3 message(s)." in text(second) and "I can see 1 message(s)." in text(second)
    request = text(cell(nb04, "%adk request forgets"))
    contents = request.split("Contents:")[1].split("Tool declarations:")[0]
    assert "Third message" in contents and "My name is Ana" not in contents
    assert "Ana wants a quiet hotel near the beach in Lima." in text(cell(nb04, "%adk state summarizer"))


# -- 05: what the model sees -----------------------------------------------------------------------
@notebook
def test_05_runs(nb05: nbformat.NotebookNode) -> None:
    assert_only_lessons_fail(nb05)


@notebook
def test_05_adk_request_shows_instruction_contents_and_tools(nb05: nbformat.NotebookNode) -> None:
    shown = text(cell(nb05, "%adk request weather_bot"))
    assert "You help Ana with the weather. Use get_weather for weather questions." in shown
    assert '"text": "And in Lima?"' in shown and '"function_response"' in shown
    for label in ("OpenAI Chat Completions body", "Gemini body", "Anthropic Messages body"):
        assert label in shown
    assert '"functionDeclarations"' in shown and '"input_schema"' in shown and '"type": "function"' in shown
    assert "<details>" in html(cell(nb05, "%adk request weather_bot"))


@notebook
def test_05_each_provider_body(nb05: nbformat.NotebookNode) -> None:
    (gemini,) = json_documents(cell(nb05, 'show(bodies["Gemini"])'))
    assert gemini["systemInstruction"]["parts"][0]["text"].startswith("You help Ana")
    assert gemini["tools"][0]["functionDeclarations"][0]["name"] == "get_weather"
    roles = [(c["role"], next(iter(c["parts"][0]))) for c in gemini["contents"]]
    assert roles == [("user", "text"), ("model", "functionCall"), ("user", "functionResponse")]

    (openai,) = json_documents(cell(nb05, 'show(bodies["OpenAI"])'))
    assert openai["tools"][0]["type"] == "function" and openai["tools"][0]["function"]["name"] == "get_weather"
    assert [m["role"] for m in openai["messages"]] == ["system", "user", "assistant", "tool"]
    call = openai["messages"][2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"city": "Tokyo"}
    assert openai["messages"][3]["tool_call_id"] == call["id"]

    (anthropic,) = json_documents(cell(nb05, 'show(bodies["Anthropic"])'))
    assert anthropic["system"].startswith("You help Ana") and anthropic["max_tokens"] > 0
    assert anthropic["tools"][0]["input_schema"]["properties"]["city"]["type"] == "string"
    blocks = [m["content"][0]["type"] for m in anthropic["messages"]]
    assert blocks == ["text", "tool_use", "tool_result"]


@notebook
def test_05_one_schema_three_dialects(nb05: nbformat.NotebookNode) -> None:
    ours, gemini, openai, anthropic = json_documents(cell(nb05, 'print("ours'))
    assert ours["additionalProperties"] is False
    assert "additionalProperties" not in gemini["parameters"]
    assert gemini["parameters"]["properties"]["fields"]["nullable"] is True
    assert openai["type"] == "function" and openai["function"]["parameters"] == ours
    assert anthropic["input_schema"] == ours
    (configs,) = json_documents(cell(nb05, "from pydantic import BaseModel"))
    assert configs["Gemini generationConfig"]["responseSchema"]["required"] == ["city", "temperature_c"]
    assert configs["OpenAI response_format"]["type"] == "json_schema"
    assert configs["Anthropic output_config"]["format"]["type"] == "json_schema"
    validated = printed(cell(nb05, "from pydantic import BaseModel"))
    assert "validated output: Forecast(city='Lima', temperature_c=19.0)" in validated


@notebook
def test_05_adk_request_for_a_provider_agent(nb05: nbformat.NotebookNode) -> None:
    own, other = (text(c) for c in cells(nb05, "%adk request claude_bot"))
    assert "As AnthropicModel sends it" in own and '"input_schema"' in own and '"functionDeclarations"' not in own
    gemini = other
    assert "Gemini body" in gemini and '"functionDeclarations"' in gemini and '"input_schema"' not in gemini
