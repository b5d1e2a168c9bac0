"""The live run widget: what it sends over the comm, what it leaves in the cell, what its JS draws.

The comm is real ipywidgets/comm machinery with one seam replaced: `comm.create_comm` returns a
comm that records every message instead of publishing it on a kernel's iopub channel. Display
outputs are captured from a real `InteractiveShell`. The front end (`run_view.js`) runs under
Node with a tiny fake DOM that throws if anything touches innerHTML, and its words are checked
against the saved transcript that render.py draws from the same state.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

from adk_notebook import (
    AdkError,
    Content,
    Event,
    EventActions,
    FunctionCall,
    InMemorySessionService,
    LlmAgent,
    Part,
    RunResult,
    ScriptedModel,
    Usage,
    tool,
)
from adk_notebook.notebook.kernel import ChatPlan, run_chat_blocking
from adk_notebook.notebook.render import _duration, _size, markdown_to_html, state_html
from adk_notebook.notebook.transcript import Transcript
from adk_notebook.notebook.widgets import RunView
from adk_notebook.notebook.widgets import markdown_library as markdown_library_module
from adk_notebook.notebook.widgets.markdown_library import markdown_library

sys.path.insert(0, str(Path(__file__).parent))
from test_render import IMG_PROBE, JS_LINK, SCRIPT_PROBE, full_run

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
JS = Path(__file__).resolve().parent.parent / "adk_notebook" / "notebook" / "widgets" / "run_view.js"


class RecordingComm(BaseComm):
    """A comm that keeps what it would have published."""

    def publish_msg(
        self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any
    ) -> None:
        self.sent.append((msg_type, data or {}))

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        super().__init__(*args, **kwargs)

    # -- what the widget sent -----------------------------------------------------------------
    def custom(self) -> list[dict[str, Any]]:
        return [d["content"] for t, d in self.sent if t == "comm_msg" and d.get("method") == "custom"]

    def updates(self) -> list[dict[str, Any]]:
        return [d["state"] for t, d in self.sent if t == "comm_msg" and d.get("method") == "update"]

    def nbytes(self, *, include_open: bool = True) -> int:
        return sum(len(json.dumps(d, separators=(",", ":"))) for t, d in self.sent if include_open or t != "comm_open")

    # -- what a front end says ----------------------------------------------------------------
    def receive(self, content: dict[str, Any]) -> None:
        self.handle_msg(
            {"content": {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}}, "buffers": []}
        )


@pytest.fixture
def comms(monkeypatch: pytest.MonkeyPatch) -> list[RecordingComm]:
    made: list[RecordingComm] = []

    def create(*args: Any, **kwargs: Any) -> RecordingComm:
        made.append(RecordingComm(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(comm, "create_comm", create)
    return made


@pytest.fixture
def shell() -> Any:
    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_view(
    comms: list[RecordingComm], clock: FakeClock | None = None, prompt: str = "Tell me"
) -> tuple[RunView, RecordingComm]:
    view = RunView(agent_name="bot", prompt=prompt, session_id="s1")
    if clock is not None:
        view._clock = clock
        view._started = clock()
    view._last_flush = view._clock()  # as if a delta had just gone: the batching that follows the first
    return view, comms[-1]


def chunk(text: str) -> Event:
    return Event("bot", Content.model(text), partial=True)


def streamed_text(custom: list[dict[str, Any]]) -> str:
    return "".join(op[2] for m in custom if m["type"] == "delta" for op in m["ops"] if op[0] == "t")


# -- traffic ----------------------------------------------------------------------------------
def test_deltas_are_batched_by_elapsed_time(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    words = [f"w{n} " for n in range(2000)]
    for word in words:  # one token per millisecond, for two seconds
        clock.now += 0.001
        view.handle(chunk(word))
    deltas = [m for m in c.custom() if m["type"] == "delta"]
    assert 35 <= len(deltas) <= 41, len(deltas)  # every 50 ms, not per token
    assert [m["seq"] for m in deltas] == list(range(1, len(deltas) + 1))
    assert "".join(words).startswith(streamed_text(deltas)), "deltas carry the text in order, no repeats"
    assert not c.updates(), "no trait assignment while streaming"


def test_a_fast_stream_sends_few_messages(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)
    started = time.monotonic()
    for n in range(2000):
        view.handle(chunk(f"w{n} "))
    took = time.monotonic() - started
    view.finish()
    assert len(c.custom()) <= took / 0.05 + 1, (len(c.custom()), took)
    assert len(c.custom()) <= 5
    assert len(c.updates()) == 1 and c.updates()[0]["state"]["items"][0]["text"] == "".join(
        f"w{n} " for n in range(2000)
    )


def test_handle_is_cheap(comms: list[RecordingComm]) -> None:
    view, _ = make_view(comms)
    events = [chunk(f"w{n} ") for n in range(20_000)]
    started = time.perf_counter()
    for event in events:
        view.handle(event)
    per_event = (time.perf_counter() - started) / len(events)
    assert per_event < 20e-6, f"{per_event * 1e6:.1f} µs per streamed event"


def run_bytes(comms: list[RecordingComm], tokens: int) -> tuple[int, int]:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    words = [f"word{n % 97} " for n in range(tokens)]
    for word in words:
        clock.now += 0.002
        view.handle(chunk(word))
    view.finish()
    return c.nbytes(include_open=False), len("".join(words))


def test_bytes_grow_linearly_with_the_output(comms: list[RecordingComm]) -> None:
    small, small_text = run_bytes(comms, 2000)
    large, large_text = run_bytes(comms, 8000)
    assert small < 3 * small_text and large < 3 * large_text, (small / small_text, large / large_text)
    assert 3.5 < large / small < 4.5, "4x the tokens, 4x the bytes"


def test_markdown_it_goes_once_per_kernel_not_with_every_run(
    comms: list[RecordingComm], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(markdown_library_module, "_shared", None)  # a fresh kernel
    first, c1 = make_view(comms)
    second, c2 = make_view(comms)
    opens = [(c, d) for c in comms for t, d in c.sent if t == "comm_open"]
    vendored = (JS.parent / "vendor" / "markdown-it.min.js").read_text()
    carrying = [c for c, d in opens if any(isinstance(v, str) and vendored in v for v in d["state"].values())]
    assert len(carrying) == 1, "the library's comm_open, once for both runs"
    library = first.widget.markdown
    assert carrying[0].comm_id == library.model_id and second.widget.markdown is library
    for c in (c1, c2):
        (data,) = [d for t, d in c.sent if t == "comm_open"]
        assert data["state"]["markdown"] == f"IPY_MODEL_{library.model_id}", "each run names the library"
        # run_view.js (the provider-native kinds, the multi-agent lanes and graph, the Timeline tab),
        # its CSS and the first state: well under half the 124 KB library it leaves out, so the
        # library cannot ride along unnoticed
        assert len(json.dumps(data)) < len(vendored) / 2, "a run's comm_open: run_view.js, its CSS and the first state"
    library.close()
    third, _ = make_view(comms)
    assert third.widget.markdown is not library and third.widget.markdown.comm is not None, "a closed one is replaced"


async def test_the_first_delta_goes_at_once(comms: list[RecordingComm]) -> None:
    view = RunView(agent_name="bot", prompt="Tell me", session_id="s1")
    c = comms[-1]
    view.handle(chunk("The first token"))
    assert streamed_text(c.custom()) == "The first token", "no wait before the first token"
    view.handle(chunk(" and the next"))
    assert len(c.custom()) == 1, "later ones are batched"
    view.finish()


async def test_a_pending_delta_goes_out_when_the_stream_pauses(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)  # a delta has just gone
    view.handle(Event("bot", Content("model", [Part(function_call=FunctionCall("slow", {}, "c1"))])))
    assert not c.custom(), "less than 50 ms since the last delta: buffered"
    await asyncio.sleep(0.12)  # a tool is running; no events arrive
    deltas = c.custom()
    assert len(deltas) == 1 and deltas[0]["ops"][0][1]["name"] == "slow", "flushed by the loop, not a thread"
    view.finish(cancelled=True)


def test_poll_sends_what_is_pending_once_due(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    view.handle(chunk("hello"))
    view.poll()
    assert not c.custom(), "not due yet"
    clock.now += 0.051
    view.poll()
    assert streamed_text(c.custom()) == "hello"
    clock.now += 0.051
    view.poll()
    assert len(c.custom()) == 1, "nothing pending, nothing sent"


def test_the_thread_fallback_sends_a_running_tools_card_before_its_result(comms: list[RecordingComm]) -> None:
    """Where no await can go, the run's events reach the view over a queue, with no loop to flush
    on: the card of a tool that has just started still goes out while the tool runs."""
    seen: list[bool] = []

    def card_sent() -> bool:
        return any(
            op[0] == "i" and op[1].get("k") == "tool" and op[1]["name"] == "slow" and op[1]["status"] == "running"
            for m in comms[-1].custom()
            if m["type"] == "delta"
            for op in m["ops"]
        )

    @tool
    def slow() -> dict:
        """Take a while."""
        deadline = time.monotonic() + 3
        while not card_sent() and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append(card_sent())
        return {"done": True}

    # Text streams first, so the card arrives right after a delta went out: it waits to be flushed.
    model = ScriptedModel([["Let me look that up.", FunctionCall("slow", {})], "Done."])
    plan = ChatPlan(
        agent=LlmAgent(name="bot", model=model, tools=[slow]),
        message="Go.",
        session_service=InMemorySessionService(),
        user_id="u",
        session_id="s1",
    )
    result = run_chat_blocking(plan, RunView)
    assert result is not None and result.text == "Done."
    assert seen == [True], "the card went out only with the tool's result"


# -- the final state and the cell output ------------------------------------------------------
def test_finish_puts_the_whole_run_in_the_trait_and_a_static_transcript_in_the_cell(
    comms: list[RecordingComm], shell: Any
) -> None:
    events = full_run()
    with capture_output() as captured:
        view, c = make_view(comms, prompt="Weather in Tokyo?")
        view.show()
        for event in events:
            view.handle(event)
        assert view.status == "running"
        view.finish(result=RunResult(events, "s1", {"last_city": "Tokyo"}, usage=Usage(22, 32, 54)))
    assert view.status == "done"

    first, last = captured.outputs
    display_id = first.transient["display_id"]
    assert first.data[WIDGET_MIME]["model_id"] == view.widget.model_id and not first.update
    assert last.update and last.transient["display_id"] == display_id == view.display_id
    # The finished cell holds the transcript only: it renders without widget state or a kernel.
    assert set(last.data) == {"text/html", "text/plain"}
    assert "🔧 render_chart" in last.data["text/html"] and "tokens: 22 in" in last.data["text/html"]
    assert last.data["text/plain"].startswith("[bot] done · ")

    state = view.widget.state
    assert c.updates()[-1]["state"] == state, "the final state went over the comm as one trait update"
    assert state["status"] == "done" and state["prompt"] == "Weather in Tokyo?" and state["error"] is None
    assert state["usage"] == {"input": 22, "output": 32, "total": 54} and state["elapsed"] >= 0
    kinds = [item["k"] for item in state["items"]]
    assert kinds.count("tool") == 3 and "state" in kinds and kinds[-1] == "text"
    chart = next(i for i in state["items"] if i["k"] == "tool" and i["name"] == "render_chart")
    assert chart["status"] == "ok" and chart["attempts"] == 2 and chart["duration"] == 1.5
    assert chart["log"] == f"loading data\nplotting {SCRIPT_PROBE}\n"
    assert [m["k"] for m in chart["media"]] == ["image", "image", "pdf", "pdf", "pdf", "file"]
    assert chart["media"][2]["href"] == "https://example.com/report.pdf"
    assert chart["media"][4]["href"] is None, "a javascript: URI never becomes a link"
    assert state["items"][-1]["done"] and state["items"][-1]["text"].startswith("It is **sunny**")


def test_finish_without_events_uses_the_result(comms: list[RecordingComm]) -> None:
    agent = LlmAgent(name="bot", model=ScriptedModel(["Hello *there*"]))
    result = agent.run("Hi")
    view, _ = make_view(comms, prompt="Hi")
    view.finish(result=result)
    assert [i["text"] for i in view.widget.state["items"]] == ["Hello *there*"]


@pytest.mark.parametrize("how", ["cancelled", "error"])
def test_cancelled_and_failed_runs(comms: list[RecordingComm], shell: Any, how: str) -> None:
    with capture_output() as captured:
        view, c = make_view(comms)
        view.show()
        view.handle(Event("bot", Content("model", [Part(function_call=FunctionCall("slow", {}, "c1"))])))
        view.handle(chunk("partial"))
        if how == "cancelled":
            view.finish(error=asyncio.CancelledError(), cancelled=True)
        else:
            view.finish(error=AdkError.model("provider down\nTraceback (most recent call last):\n  ..."))
    state = view.widget.state
    assert view.status == state["status"] == how
    assert state["items"][0]["status"] == "cancelled", "the tool never finished"
    expected = "Run cancelled." if how == "cancelled" else "model.internal: provider down"
    assert state["error"] == expected
    assert f"⚠ {expected}" in captured.outputs[-1].data["text/html"]
    view.handle(chunk("late"))
    view.finish()
    assert view.widget.state == state and len(c.updates()) == 1, "a finished view ignores what comes after"


# -- messages from the front end --------------------------------------------------------------
def test_stop_button_calls_the_callbacks_while_running(comms: list[RecordingComm]) -> None:
    view, c = make_view(comms)
    calls: list[str] = []
    view.on_stop(lambda: calls.append("first"))
    view.on_stop(lambda: 1 / 0)  # a broken callback does not stop the others
    view.on_stop(lambda: calls.append("third"))
    c.receive({"type": "stop"})
    assert calls == ["first", "third"]
    view.finish(cancelled=True)
    c.receive({"type": "stop"})
    assert calls == ["first", "third"], "no Stop once the run has ended"


def test_a_view_that_asks_gets_a_snapshot(comms: list[RecordingComm]) -> None:
    clock = FakeClock()
    view, c = make_view(comms, clock)
    for n in range(11):  # the last one is still pending (30 ms after the last flush)
        clock.now += 0.03
        view.handle(chunk(f"w{n} "))
    sent = len(c.custom())
    c.receive({"type": "sync", "nonce": "abc", "seq": 0})
    *flushed, snapshot = c.custom()[sent:]
    assert snapshot["type"] == "snapshot" and snapshot["nonce"] == "abc"
    assert snapshot["seq"] == view._seq and flushed[-1]["seq"] == snapshot["seq"], "pending ops flushed first"
    assert snapshot["state"]["items"][0]["text"] == "".join(f"w{n} " for n in range(11))
    c.receive({"type": "sync", "nonce": "def", "seq": view._seq})
    assert c.custom()[-1] == {"type": "snapshot", "nonce": "def", "seq": view._seq, "state": None}, "up to date"


# -- the front end, under Node ----------------------------------------------------------------
HARNESS = r"""
import { readFileSync } from "node:fs";

const VOID = new Set(["br", "hr", "img"]);
const esc = (s) => String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;")
  .replace(/"/g, "&quot;").replace(/'/g, "&#x27;");
class N {
  constructor() { this.childNodes = []; this.parentNode = null; }
  appendChild(c) {
    if (c instanceof Frag) { for (const x of [...c.childNodes]) this.appendChild(x); return c; }
    if (c.parentNode) c.parentNode.childNodes.splice(c.parentNode.childNodes.indexOf(c), 1);
    c.parentNode = this; this.childNodes.push(c); return c;
  }
  append(...xs) { for (const x of xs) this.appendChild(typeof x === "string" ? new T(x) : x); }
  replaceChildren(...xs) { for (const c of this.childNodes) c.parentNode = null; this.childNodes = []; this.append(...xs); }
  get textContent() { return this.childNodes.map((c) => c.textContent).join(""); }
  set innerHTML(_) { throw new Error("innerHTML used"); }
  insertAdjacentHTML() { throw new Error("insertAdjacentHTML used"); }
}
class T extends N {
  constructor(d) { super(); this.data = String(d); }
  appendData(s) { this.data += s; }
  get textContent() { return this.data; }
  set textContent(v) { this.data = String(v); }
  html() { return esc(this.data); }
}
class Frag extends N {}
class E extends N {
  constructor(tag) { super(); this.tag = tag; this.className = ""; this.hidden = false; this.listeners = {}; }
  get textContent() { return super.textContent; }
  set textContent(v) { this.replaceChildren(); if (String(v) !== "") this.appendChild(new T(v)); }
  get classList() {
    const list = () => this.className.split(" ").filter(Boolean);
    return { add: (c) => { if (!list().includes(c)) this.className = [...list(), c].join(" "); },
             remove: (c) => { this.className = list().filter((x) => x !== c).join(" "); },
             toggle: (c, on) => { this.className = [...list().filter((x) => x !== c), ...(on ? [c] : [])].join(" "); } };
  }
  setAttribute(k, v) { this[k] = String(v); }
  addEventListener(t, f) { (this.listeners[t] ||= []).push(f); }
  fire(t) { for (const f of this.listeners[t] || []) f({}); }
  querySelector(tag) { return this.all().find((e) => e.tag === tag) || null; }
  all() { return this.childNodes.filter((c) => c instanceof E).flatMap((c) => [c, ...c.all()]); }
  html() {
    let attrs = "";
    for (const k of ["href", "target", "rel", "src", "alt"]) if (this[k] !== undefined) attrs += ` ${k}="${esc(this[k])}"`;
    if (this.className && this.tag === "code") attrs += ` class="${esc(this.className)}"`;
    const inner = this.childNodes.map((c) => c.html()).join("");
    return VOID.has(this.tag) ? `<${this.tag}${attrs}>` : `<${this.tag}${attrs}>${inner}</${this.tag}>`;
  }
}
Frag.prototype.html = function () { return this.childNodes.map((c) => c.html()).join(""); };
globalThis.document = { createElement: (t) => new E(t), createElementNS: (_, t) => new E(t), createTextNode: (d) => new T(d), createDocumentFragment: () => new Frag() };
// An inert document from markdown-it's HTML (well-formed: tags, double-quoted attributes, the
// entities its escaping writes), as a browser's DOMParser gives it.
const ENTITIES = { amp: "&", lt: "<", gt: ">", quot: '"' };
const decode = (s) => s.replace(/&(amp|lt|gt|quot);/g, (_, e) => ENTITIES[e]);
globalThis.DOMParser = class {
  parseFromString(markup) {
    const body = new E("body");
    const stack = [body];
    for (const m of markup.matchAll(/<(\/?)([a-z0-9]+)([^>]*)>|([^<]+)/g)) {
      if (m[4] !== undefined) stack.at(-1).appendChild(new T(decode(m[4])));
      else if (m[1]) stack.pop();
      else {
        const el = new E(m[2]);
        for (const a of m[3].matchAll(/([a-z-]+)="([^"]*)"/g)) el[a[1] === "class" ? "className" : a[1]] = decode(a[2]);
        stack.at(-1).appendChild(el);
        if (!VOID.has(m[2])) stack.push(el);
      }
    }
    return { body };
  }
};

// The browser imports the library model's module from a blob: URL; Node imports only file: and
// data: URLs, so a JavaScript blob becomes a data: URL of the same bytes (counted: once per page).
const imports = [];
globalThis.Blob = class extends Blob {
  constructor(parts, options) { super(parts, options); this.parts = parts; }
};
const objectUrl = URL.createObjectURL;
URL.createObjectURL = (blob) => {
  if (blob.type !== "text/javascript") return objectUrl(blob);
  imports.push(blob.size);
  return `data:text/javascript;base64,${Buffer.from(blob.parts.join("")).toString("base64")}`;
};

// The widget manager: it holds the library model ("lib", the state the kernel's MarkdownLibrary
// has) now, only after a {library: true} step, or not at all.
class Manager {
  constructor(when) {
    this.when = when;
    this.ready = new Promise((resolve) => { this.release = resolve; });
    if (when === "now") this.release();
  }
  async get_model(id) {
    if (id !== "lib" || this.when === "missing") throw new Error(`widget model not found: ${id}`);
    await this.ready;
    return { get: (k) => input.library[k] };
  }
}
// Until nothing more happens: the view's markdown loads through promises and a module import.
const settle = async () => {
  for (let i = 0; i < 3; i += 1) {
    await new Promise((resolve) => setImmediate(resolve));
    await Promise.allSettled(globalThis.__adk_notebook_markdown__?.values() ?? []);
  }
};

class Model {
  constructor(state, library) {
    this.state = state; this.handlers = {}; this.sent = [];
    this.markdown = "IPY_MODEL_lib"; this.widget_manager = new Manager(library);
  }
  get(k) { return this[k]; }
  on(ev, f) { (this.handlers[ev] ||= []).push(f); }
  off(ev, f) { this.handlers[ev] = (this.handlers[ev] || []).filter((g) => g !== f); }
  send(m) { this.sent.push(m); }
  feed(step) {
    if (step.custom) for (const f of this.handlers["msg:custom"] || []) f(step.custom, []);
    if (step.state) { this.state = step.state; for (const f of this.handlers["change:state"] || []) f(); }
  }
}

const mod = (await import(process.argv[2])).default;
const input = JSON.parse(readFileSync(0, "utf8"));
const shown = (node) => (node.hidden ? "" : node instanceof T ? node.data : node.childNodes.map(shown).join(""));
const summary = (root, model) => ({
  text: root.textContent,
  shown: shown(root),
  tags: root.all().map((e) => e.tag),
  links: root.all().filter((e) => e.tag === "a").map((e) => e.href),
  images: root.all().filter((e) => e.tag === "img").map((e) => e.src.slice(0, 40)),
  sent: model.sent,
  stopHidden: root.all().find((e) => e.tag === "button").hidden,
  timeline: root.all().find((e) => e.className === "adk-rv-timeline")?.textContent ?? "",
  bars: root.all().filter((e) => e.className.includes("adk-rv-tl-bar")).map((e) => e.style),
  active: root.all().filter((e) => (e.class || "").split(" ").includes("adk-active")).map((e) => e["data-agent"]),
});
const out = { views: [], markdown: [] };
for (const scenario of input.views) {
  const model = new Model(scenario.state, scenario.library ?? "now");
  const root = new E("div");
  const cleanup = mod.render({ model, el: root });
  await settle();
  const snaps = [];
  for (const step of scenario.steps) {
    if (step.click) root.all().find((e) => e.tag === "button").fire("click");
    else if (step.tab) root.all().find((e) => e.tag === "button" && e.textContent === step.tab).fire("click");
    else if (step.snap) snaps.push(summary(root, model));
    else if (step.library) model.widget_manager.release();
    else if (step.reply_sync) {
      const ask = model.sent.filter((m) => m.type === "sync").at(-1);
      model.feed({ custom: { ...step.reply_sync, nonce: ask.nonce } });
    } else model.feed(step);
    await settle();
  }
  snaps.push(summary(root, model));
  cleanup();
  out.views.push(snaps);
}
out.imports = [...imports]; // by the views (the comparison below imports its own)
const { markdownRenderer, fmtDuration, fmtSize, fmtCount } = await import(process.argv[3]);
const markdownit = (await import(URL.createObjectURL(new Blob([input.library.source], { type: "text/javascript" })))).default;
const markdownHtml = markdownRenderer(markdownit, input.library.settings);
for (const text of input.markdown) out.markdown.push(markdownHtml(text));
const f = input.formats;
out.formats = { durations: f.durations.map(fmtDuration), sizes: f.sizes.map(fmtSize), counts: f.counts.map(fmtCount) };
console.log(JSON.stringify(out));
"""

node = pytest.mark.skipif(shutil.which("node") is None, reason="the widget's JS runs under Node")


FORMATS: dict[str, list[Any]] = {  # ties (1.25 s, 1280 B) included: Python rounds them to even unless told
    "durations": [
        0.0,
        1e-9,
        0.0004,
        0.0005,
        0.0025,
        0.0125,
        0.5,
        0.9995,
        0.9996,
        1.05,
        1.25,
        2.25,
        59.94,
        59.96,
        60,
        61.5,
        62.5,
        3599.5,
    ],
    "sizes": [0, 1023, 1024, 1280, 1792, 2304, 10239, 10240, 10752, 11776, 1048575, 1048576, 1310720, 5505024, 2**30],
    "counts": [0, 7, 999, 1000, 1234567, 2**40],
}


def run_js(tmp_path: Path, views: list[dict[str, Any]], markdown: list[str] = ()) -> dict[str, Any]:
    module = JS.read_text()  # the run widget's _esm
    (tmp_path / "run_view.mjs").write_text(module)
    # The renderer and formatters are module-private; a copy of the module exports them for the comparison.
    (tmp_path / "markdown.mjs").write_text(module + "\nexport { markdownRenderer, fmtDuration, fmtSize, fmtCount };\n")
    (tmp_path / "harness.mjs").write_text(HARNESS)
    library = markdown_library()  # the kernel's library model: what the page's widget manager holds
    proc = subprocess.run(
        [
            "node",
            str(tmp_path / "harness.mjs"),
            (tmp_path / "run_view.mjs").as_uri(),
            (tmp_path / "markdown.mjs").as_uri(),
        ],
        input=json.dumps(
            {
                "views": views,
                "markdown": list(markdown),
                "formats": FORMATS,
                "library": {"source": library.source, "digest": library.digest, "settings": library.settings},
            }
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def tracked_run(
    events: list[Event],
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
    """What a view would receive: the initial trait, one delta per event, the final trait; plus
    the snapshot the kernel would send after each delta."""
    transcript = Transcript(agent_name="bot", prompt="Weather in Tokyo?", track=True)
    initial = {**transcript.state(), "seq": 0}
    deltas: list[dict[str, Any]] = []
    snapshots = [initial]
    for event in events:
        transcript.add(event)
        if transcript.pending():
            deltas.append({"type": "delta", "seq": len(deltas) + 1, "ops": transcript.take_ops()})
            snapshots.append({**transcript.state(), "seq": len(deltas)})
    transcript.finish(status="done", elapsed=1.0)
    deltas.append({"type": "delta", "seq": len(deltas) + 1, "ops": transcript.take_ops()})
    return initial, deltas, {**transcript.state(), "seq": len(deltas)}, snapshots


@node
def test_js_draws_the_same_run_from_deltas_and_from_the_final_state(tmp_path: Path) -> None:
    initial, deltas, final, snapshots = tracked_run(full_run())
    live, late, saved = run_js(
        tmp_path,
        [
            # the view made when the run starts: the trait, then every delta, then the final trait
            {"state": initial, "steps": [{"custom": d} for d in deltas] + [{"snap": True}, {"state": final}]},
            # a view made mid-run (page reload): a gap, a snapshot, the rest
            {
                "state": initial,
                "steps": [{"custom": d} for d in deltas[8:]]
                + [{"snap": True}, {"reply_sync": {"type": "snapshot", "seq": 8, "state": snapshots[8]}}],
            },
            # a saved notebook with widget state
            {"state": final, "steps": []},
        ],
    )["views"]
    from_deltas, after_final = live
    assert from_deltas["text"] == after_final["text"] == saved[0]["text"]
    assert from_deltas["tags"] == after_final["tags"] == saved[0]["tags"]
    assert "🔧 render_chart" in saved[0]["text"] and "2 attempts" in saved[0]["text"]
    assert "loading data\nplotting" in saved[0]["text"] and "last_city" in saved[0]["text"]
    assert "tokens: 22 in · 32 out · 54 total" in saved[0]["text"]
    # the late view asked for a snapshot, held the deltas after the gap, then caught up
    assert late[0]["sent"][0]["type"] == "sync" and late[0]["sent"][0]["seq"] == 0
    assert "get_weather" not in late[0]["text"], "deltas after a gap wait for the snapshot"
    assert late[1]["tags"] == from_deltas["tags"] and late[1]["text"] == from_deltas["text"]


@node
def test_js_shows_a_finished_turn_as_text_until_markdown_it_loads(tmp_path: Path) -> None:
    """The library model may come after the view (or not at all, say a notebook saved without it):
    the turn reads as its plain text, never as HTML, and becomes markdown once the library is there."""
    initial, deltas, final, _ = tracked_run(full_run())
    out = run_js(
        tmp_path,
        [
            {"state": final, "steps": []},
            {"state": final, "library": "later", "steps": [{"snap": True}, {"library": True}]},
            {"state": initial, "library": "missing", "steps": [{"custom": d} for d in deltas] + [{"state": final}]},
        ],
    )
    (now,), (before, after), (missing,) = out["views"]
    assert "strong" in now["tags"] and "It is sunny in Tokyo." in now["text"]
    for plain in (before, missing):
        assert "It is **sunny** in *Tokyo*." in plain["text"], "the turn as the model wrote it"
        assert {"strong", "em", "ul", "p", "script"}.isdisjoint(plain["tags"])
        for probe in (IMG_PROBE, SCRIPT_PROBE, "[click me](javascript:alert(1))"):
            assert probe in plain["text"], probe
    assert after["text"] == now["text"] and after["tags"] == now["tags"], "drawn again once it loaded"
    assert len(out["imports"]) == 1, "the page imports the library once, whichever views ask"


@node
def test_js_keeps_probes_as_text_and_makes_only_safe_links(tmp_path: Path) -> None:
    initial, deltas, final, _ = tracked_run(full_run())
    (live,) = run_js(tmp_path, [{"state": initial, "steps": [{"custom": d} for d in deltas] + [{"state": final}]}])[
        "views"
    ]
    view = live[-1]
    for probe in (IMG_PROBE, SCRIPT_PROBE, "[click me](javascript:alert(1))"):
        assert probe in view["text"], probe
    assert "script" not in view["tags"]
    assert [src[:25] for src in view["images"]] == ["data:image/png;base64,iVB", "data:image/svg+xml;base64"]
    assert "svg" not in view["tags"], "SVG only through <img>"
    links = view["links"]
    assert "https://example.com/report.pdf" in links
    assert [h for h in links if h.startswith("blob:")], "inline PDF: a blob URL link (and a lazy viewer)"
    assert all(h.startswith(("https://", "http://", "blob:")) for h in links), links
    assert "iframe" not in view["tags"], "the PDF viewer loads only when opened"


@node
def test_js_stop_button(tmp_path: Path) -> None:
    initial, deltas, final, _ = tracked_run([chunk("hi")])
    (view,) = run_js(
        tmp_path,
        [
            {
                "state": initial,
                "steps": [{"custom": deltas[0]}, {"snap": True}, {"click": True}, {"snap": True}, {"state": final}],
            }
        ],
    )["views"]
    running, clicked, done = view
    assert not running["stopHidden"] and "running…" in running["text"]
    assert {"type": "stop"} in clicked["sent"] and "Stopping…" in clicked["text"]
    assert done["stopHidden"] and "done" in done["text"]


@node
def test_js_settles_cards_of_reused_ids_and_cleans_text_as_the_saved_transcript(tmp_path: Path) -> None:
    from test_render import HOSTILE_CHARS, _answers, _calls

    first = FunctionCall("lookup", {"q": HOSTILE_CHARS}, id="call_0")
    second = FunctionCall("lookup", {"q": "b"}, id="call_0")
    events = [
        _calls(first, second),
        _answers((first, {"n": 1}), (second, {"error": "no"})),
        Event("bot", Content.model(HOSTILE_CHARS), partial=True),
        Event("bot", Content.model(HOSTILE_CHARS)),
    ]
    initial, deltas, final, _ = tracked_run(events)
    (live,) = run_js(
        tmp_path, [{"state": initial, "steps": [{"custom": d} for d in deltas] + [{"snap": True}, {"state": final}]}]
    )["views"]
    from_deltas, saved = live
    assert from_deltas["text"] == saved["text"] and from_deltas["tags"] == saved["tags"]
    assert "running" not in saved["text"].replace("🔧", "") and "okerror" not in saved["text"]
    assert saved["text"].count("a\ufffdb\ufffd[31mred") == 1 and '"a\\u0000b\\u001b[31mred' in saved["text"]
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", saved["text"])


class _Words(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.words: list[str] = []

    def handle_data(self, data: str) -> None:
        self.words.append(data)


def words(text: str) -> str:
    """The text a reader sees, whitespace left out: the live view lays out with CSS gaps where
    the static HTML has spaces."""
    return re.sub(r"\s+", "", text)


@node
def test_live_view_shows_the_words_of_the_saved_transcript(tmp_path: Path) -> None:
    """Header, prompt, tool cards, logs, results, media, state deltas, errors, the cut marker and
    usage read the same live (run_view.js) as saved (render.py), markdown included."""
    cut = FunctionCall("slow", {"n": 1}, id="s1")
    events = [
        *full_run(),
        Event("bot", Content.user("and tomorrow?"), usage=Usage(3, 4, 7)),
        Event(
            "bot",
            actions=EventActions(
                state_delta={"user:name": "Ana", "big": list(range(100))},
                artifact_delta={"report.pdf": 2},
                transfer_to_agent="helper",
            ),
        ),
        Event("bot", Content("model", [Part(function_call=cut)]), long_running_tool_ids=["s1"]),
        Event(
            "bot",
            Content.model("| a | b |\n|--|--|\n| **1** | [x](mailto:a@b.c) |"),
            metadata={"finish_reason": "max_tokens", "model": "scripted-2"},
            usage=Usage(1, 5, 6),
        ),
        Event("bot", error=AdkError.tool(f"bad {SCRIPT_PROBE}")),
    ]
    _, _, final, _ = tracked_run(events)
    final = {**final, "notice": "a tiny offline demo model", "error": "model.internal: the provider hung up"}
    (view,) = run_js(tmp_path, [{"state": final, "steps": []}])["views"]
    saved = _Words()
    saved.feed(state_html(final))
    # The one thing only the live view has: an inline PDF's viewer, opened on demand ("preview").
    live = words(view[0]["shown"]).replace("preview", "", 1)
    assert live == words("".join(saved.words))
    for shown in (
        "you:andtomorrow?",
        "state:user:name=Ana",
        "artifactreport.pdfv2",
        "transfertohelper",
        "🔧slow",
        "✂cutat5tokens",
        "⚠tool.internal:bad<script>",
        "ℹatinyofflinedemomodel",
        "tokens:26in·41out·67total",
    ):
        assert shown in live, shown


@node
def test_js_formats_numbers_as_python(tmp_path: Path) -> None:
    """Durations, sizes and counts: the same digits live and saved, whatever the browser's locale."""
    out = run_js(tmp_path, [])["formats"]
    assert out["durations"] == [_duration(s) for s in FORMATS["durations"]]
    assert out["sizes"] == [_size(n) for n in FORMATS["sizes"]]
    assert out["counts"] == [f"{n:,}" for n in FORMATS["counts"]]
    assert out["sizes"][3] == "1.3 KB" and out["durations"][10] == "1.3 s", "a tie rounds up on both sides"


MARKDOWN_CASES = [  # what models write, and what they might write to break out of the view
    "**bold** and *it* and _em_ and __strong__ and snake_case and a.__b and 2*3*4 and ~~gone~~",
    "`a *b* <c>` then [site](https://example.com/?a=1&b=2) and [x](https://e.com/*a*)",
    "one\ntwo\n\nthree\r\nfour\rfive",
    "# Title\n## Sub *x*\n###### six\n####### seven\nSetext\n===\n## closed ##\n- a\n- **b**\n\n1. x\n2) y\ntext\n- item\n  more",
    "- a\n  - nested\n    1. deep\n- b\n\n3. starts at three\n4. four\n\n- [ ] task\n* star\n+ plus",
    (
        "```python\nif a < b: **x**\n```\nafter\n~~~js title\nconst s = '</code></pre><script>';\n~~~\n    indented <i>\n\n"
        "`` a ` b `` and ```\nunclosed <b>"
    ),
    "| a | b | c |\n|:--|:-:|--:|\n| `x\\|y` | **z** | [l](https://x.y) |\n| <i> | \U0001f600 |\n\nnot | a | table",
    "> quote **b**\n> > nested\n\n---\n***\n___\n\n\\*not em\\* \\<b\\> \\`x\\` &copy; &amp; &#x3C;script&#x3E; &bogus;",
    JS_LINK + " " + IMG_PROBE + " " + SCRIPT_PROBE,
    '[x](https://e.com" onmouseover="alert(1)) [y](data:text/html,<b>) [z](https://a.b "title <t>")',
    '<div onclick=x>hi</div>\n\n<!-- comment -->\n<a href="javascript:x">y</a>\n<svg onload=alert(1)><iframe src=x>',
    (
        "[a](https://例え.jp/パス?q=ü#frag) [b](HTTPS://EXAMPLE.COM/%zz) [c](<https://a.b/with space>) "
        "[d](https://a.b/(paren)) [e](mailto:ana@example.com) [f](ftp://x.y) [g](//evil.com) [h](JaVaScRiPt:alert(1)) "
        "[i](java\nscript:alert(1)) [j](vbscript:x) [k](file:///etc/passwd) [l](data:image/png;base64,AAAA) "
        "[m](  https://spaced.example  ) [n](https://a.b/\u202etxt.exe) [o](https://xn--e1afmkfd.xn--p1ai/)"
    ),
    (
        "<javascript:alert(1)> <https://a.b/c?d=<e>> <ana@example.com> <mailto:x@y.z> https://bare.link www.x.com "
        "![img](https://e.com/track.png) ![](javascript:alert(1))"
    ),
    '[ref] and [Ref][] and [ẞ][ß] and [x][missing]\n\n[ref]: https://r.example/a_b\n[ß]: https://s.example "t"',
    "**`code` in bold** and *[link](http://a.b)* and [`x` y](https://a.b/c)",
    "[x](https://a.com/`b`) and `[c](https://d.e)` and [`x` y](https://a.b/`c`/d) and <https://a.b/`x`>",
    "\ue000private\ue004 **use** \x00nul \x1b[31mansi\x1b[0m \x01\x05\x07\x7f\x85 \ud800lone\udfff \U0001f600 \u2028",
    (
        "\U0001f600 \U0001f469\u200d\U0001f469\u200d\U0001f467 \U0001f1ef\U0001f1f5 **\U0001f525bold\U0001f525** "
        "\U0001f600*x*\U0001f600 \uff0afull\uff0a x_y_z \u200bzero\u200bwidth \ufeffbom"
    ),
    "\t```ßµ\ncode\n```\n\u00a0- not a list\n_é_ and *é* and x_é_\n# a\u2028**b\u2029c**\n\ufeff\n\n\u0661. x",
    ">" * 120 + " deep\n\n" + "*" * 60 + "x" + "*" * 60 + "\n\n" + "[" * 50 + "a" + "]" * 50,
    "_a __b_ c__ and **a *b** c* and _<script>window.__pwned=1</script>_é__é_",
    # U+FEFF, a space to JavaScript's trim() and \\s but not to Python's: at the ends of a block, in a link
    "\ufeff¨ text\ufeff\n\n# \ufeffhead\ufeff\n\n[x](<\ufeffhttps://a.b>) [y](\ufeffhttps://c.d)\n\n[r\ufeff]\n\n[r]: https://r.s",
    # astral punctuation and symbols beside * _ ~ (two UTF-16 code units, one character to CommonMark)
    (
        "a*\U0001f600*a a**\U00010100**b a**a\U0001d735**a a**\U0001d735a**a \U0001f600_a_ x_\U00010100_ "
        "a~~\U0001f600~~b \U0001f600**a**\U0001f600 _\U0001f525_x"
    ),
    # punctuation newer than some Unicode tables (15.0, 15.1) beside * _ ~
    "?\u31ef~~?a~~ a_\U00011f43_ \u2ffc**a**b a**\U0001fae8**b x_\U0001f6dc_",
    # IPv6 hosts, whose brackets markdown-it 14.1 percent-encodes and markdown-it-py keeps
    (
        "[a](http://[::1]:8080/é?q=[x]#f) <https://u:p@[FE80::1]/p> [b](mailto:u@[::1]) [c](HTTP://[::1]/) "
        "[d](//[::ä]/) [e](http://[::ä1%zz]/)"
    ),
    # code spans after a link label's look-ahead, and their spaces
    "![`x` ` and [`y` ` and ![a[A]![b`x`c` and `   ` and `  a  ` and [a`](https://b.c)`",
]


@node
def test_js_markdown_matches_python(tmp_path: Path) -> None:
    """The vendored markdown-it in the widget and markdown-it-py in render.py: the same HTML."""
    out = run_js(tmp_path, [], MARKDOWN_CASES)["markdown"]
    for text, js in zip(MARKDOWN_CASES, out, strict=True):
        assert js == markdown_to_html(text), text
