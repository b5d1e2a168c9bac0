"""The live run widget: what it sends over the comm, what it leaves in the cell, what its JS draws.

The comm is real ipywidgets/comm machinery with one seam replaced: `comm.create_comm` returns a
comm that records every message instead of publishing it on a kernel's iopub channel. Display
outputs are captured from a real `InteractiveShell`. The front end (`run_view.js`) runs under
Node with a tiny fake DOM that throws if anything touches innerHTML.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import time
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
    FunctionCall,
    LlmAgent,
    Part,
    RunResult,
    ScriptedModel,
    Usage,
)
from adk_notebook.notebook.render import markdown_to_html
from adk_notebook.notebook.transcript import Transcript
from adk_notebook.notebook.widgets import RunView

sys.path.insert(0, str(Path(__file__).parent))
from test_render import IMG_PROBE, JS_LINK, SCRIPT_PROBE, full_run  # noqa: E402

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
JS = Path(__file__).resolve().parent.parent / "adk_notebook" / "notebook" / "widgets" / "run_view.js"


class RecordingComm(BaseComm):
    """A comm that keeps what it would have published."""

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> None:
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
        self.handle_msg({"content": {"comm_id": self.comm_id, "data": {"method": "custom", "content": content}},
                         "buffers": []})


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


def make_view(comms: list[RecordingComm], clock: FakeClock | None = None, prompt: str = "Tell me") -> tuple[RunView, RecordingComm]:
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
    assert len(c.updates()) == 1 and c.updates()[0]["state"]["items"][0]["text"] == "".join(f"w{n} " for n in range(2000))


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


# -- the final state and the cell output ------------------------------------------------------
def test_finish_puts_the_whole_run_in_the_trait_and_a_static_transcript_in_the_cell(comms: list[RecordingComm], shell: Any) -> None:
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

const VOID = new Set(["br", "img"]);
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
             remove: (c) => { this.className = list().filter((x) => x !== c).join(" "); } };
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
globalThis.document = { createElement: (t) => new E(t), createTextNode: (d) => new T(d), createDocumentFragment: () => new Frag() };

class Model {
  constructor(state) { this.state = state; this.handlers = {}; this.sent = []; }
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
const summary = (root, model) => ({
  text: root.textContent,
  tags: root.all().map((e) => e.tag),
  links: root.all().filter((e) => e.tag === "a").map((e) => e.href),
  images: root.all().filter((e) => e.tag === "img").map((e) => e.src.slice(0, 40)),
  sent: model.sent,
  stopHidden: root.all().find((e) => e.tag === "button").hidden,
});
const out = { views: [], markdown: [] };
for (const scenario of input.views) {
  const model = new Model(scenario.state);
  const root = new E("div");
  const cleanup = mod.render({ model, el: root });
  const snaps = [];
  for (const step of scenario.steps) {
    if (step.click) root.all().find((e) => e.tag === "button").fire("click");
    else if (step.snap) snaps.push(summary(root, model));
    else if (step.reply_sync) {
      const ask = model.sent.filter((m) => m.type === "sync").at(-1);
      model.feed({ custom: { ...step.reply_sync, nonce: ask.nonce } });
    } else model.feed(step);
  }
  snaps.push(summary(root, model));
  cleanup();
  out.views.push(snaps);
}
const { renderMarkdown } = await import(process.argv[3]);
for (const text of input.markdown) { const f = renderMarkdown(text); out.markdown.push(f.html()); }
console.log(JSON.stringify(out));
"""

node = pytest.mark.skipif(shutil.which("node") is None, reason="the widget's JS runs under Node")


def run_js(tmp_path: Path, views: list[dict[str, Any]], markdown: list[str] = ()) -> dict[str, Any]:
    (tmp_path / "run_view.mjs").write_text(JS.read_text())
    # The markdown renderer is module-private; a copy of the module exports it for the comparison.
    (tmp_path / "markdown.mjs").write_text(JS.read_text() + "\nexport { renderMarkdown };\n")
    (tmp_path / "harness.mjs").write_text(HARNESS)
    proc = subprocess.run(
        ["node", str(tmp_path / "harness.mjs"), (tmp_path / "run_view.mjs").as_uri(), (tmp_path / "markdown.mjs").as_uri()],
        input=json.dumps({"views": views, "markdown": list(markdown)}), capture_output=True, text=True, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def tracked_run(events: list[Event]) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any], list[dict[str, Any]]]:
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
    live, late, saved = run_js(tmp_path, [
        # the view made when the run starts: the trait, then every delta, then the final trait
        {"state": initial, "steps": [{"custom": d} for d in deltas] + [{"snap": True}, {"state": final}]},
        # a view made mid-run (page reload): a gap, a snapshot, the rest
        {"state": initial, "steps": [{"custom": d} for d in deltas[8:]]
         + [{"snap": True}, {"reply_sync": {"type": "snapshot", "seq": 8, "state": snapshots[8]}}]},
        # a saved notebook with widget state
        {"state": final, "steps": []},
    ])["views"]
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
def test_js_keeps_probes_as_text_and_makes_only_safe_links(tmp_path: Path) -> None:
    initial, deltas, final, _ = tracked_run(full_run())
    (live,) = run_js(tmp_path, [{"state": initial, "steps": [{"custom": d} for d in deltas] + [{"state": final}]}])["views"]
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
    (view,) = run_js(tmp_path, [{"state": initial, "steps": [{"custom": deltas[0]}, {"snap": True}, {"click": True},
                                                             {"snap": True}, {"state": final}]}])["views"]
    running, clicked, done = view
    assert not running["stopHidden"] and "running…" in running["text"]
    assert {"type": "stop"} in clicked["sent"] and "Stopping…" in clicked["text"]
    assert done["stopHidden"] and "done" in done["text"]


@node
def test_js_settles_cards_of_reused_ids_and_cleans_text_as_the_saved_transcript(tmp_path: Path) -> None:
    from test_render import HOSTILE_CHARS, _answers, _calls

    first = FunctionCall("lookup", {"q": HOSTILE_CHARS}, id="call_0")
    second = FunctionCall("lookup", {"q": "b"}, id="call_0")
    events = [_calls(first, second), _answers((first, {"n": 1}), (second, {"error": "no"})),
              Event("bot", Content.model(HOSTILE_CHARS), partial=True), Event("bot", Content.model(HOSTILE_CHARS))]
    initial, deltas, final, _ = tracked_run(events)
    (live,) = run_js(tmp_path, [{"state": initial, "steps": [{"custom": d} for d in deltas] + [{"snap": True},
                                                                                               {"state": final}]}])["views"]
    from_deltas, saved = live
    assert from_deltas["text"] == saved["text"] and from_deltas["tags"] == saved["tags"]
    assert "running" not in saved["text"].replace("🔧", "") and "okerror" not in saved["text"]
    assert saved["text"].count("a\ufffdb\ufffd[31mred") == 1 and '"a\\u0000b\\u001b[31mred' in saved["text"]
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]", saved["text"])


MARKDOWN_CASES = [
    "**bold** and *it* and _em_ and __strong__ and snake_case and a.__b",
    "`a *b* <c>` then [site](https://example.com/?a=1&b=2) and [x](https://e.com/*a*)",
    "one\ntwo\n\nthree",
    "# Title\n## Sub *x*\n- a\n- **b**\n\n1. x\n2) y\ntext\n- item\n  more",
    "```python\nif a < b: **x**\n```\nafter\n```\nunclosed <b>",
    JS_LINK + " " + IMG_PROBE + " " + SCRIPT_PROBE,
    '[x](https://e.com" onmouseover="alert(1)) [y](data:text/html,<b>)',
    "**`code` in bold** and *[link](http://a.b)* and [`x` y](https://a.b/c)",
    "[x](https://a.com/`b`) and `[c](https://d.e)` and [`x` y](https://a.b/`c`/d)",
    "\ue000private\ue004 **use** \x00nul \x1b[31mansi\x1b[0m \x01\x05 \ud800lone\udfff \U0001f600 \u2028",
    "\t```ßµ\ncode\n```\n\u00a0- not a list\n_é_ and *é* and x_é_\n# a\u2028**b\u2029c**\n\ufeff\n\n\u0661. x",    "_a __b_ c__ and **a *b** c* and _<script>window.__pwned=1</script>_é__é_",
]


@node
def test_js_markdown_matches_python(tmp_path: Path) -> None:
    out = run_js(tmp_path, [], MARKDOWN_CASES)["markdown"]
    assert out == [markdown_to_html(text) for text in MARKDOWN_CASES]
