"""Widget traffic of a streamed run, measured on a real kernel's iopub channel.

A scripted model streams N tokens (20,000 by default) through `%load_ext adk_notebook` +
`%%chat` in a fresh ipykernel started with jupyter_client; every iopub message the cell causes
is captured. Printed: comm messages and their bytes (what the widget costs), the ratio of comm
bytes to the final text's size (target < 2.5), comm messages per second (target < 50; the
server's iopub limit is 1000/s), and the display messages (the transcript left in the cell).

Two runs: "burst" (ScriptedModel, as fast as the loop goes) and "paced" (the same text at
--rate tokens/s, like a fast real provider), so the per-second figure is a sustained one.

Counted per run: the messages of the run's own widgets (the run view and its layout).
With --direct the cell drives `RunView` itself (`await` over `runner.run(...)`) instead of
`%%chat`. Usage:

    python bench/widget_traffic.py [--tokens 20000] [--rate 2000] [--direct]
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
import time
from dataclasses import dataclass, field
from typing import Any

from jupyter_client.manager import start_new_kernel

BYTES_RATIO_TARGET = 2.5
MSGS_PER_SECOND_TARGET = 50.0

SETUP = """
import asyncio
from adk_notebook import Content, LlmAgent, Llm, LlmResponse, Part, ScriptedModel, Usage

VOCAB = ["the", "agent", "streams", "tokens", "into", "a", "widget", "while", "tools", "run", "quickly", "and",
         "notebook", "cells", "show", "markdown", "**bold**", "text", "with", "`code`"]
WORDS = [VOCAB[(i * 7) % len(VOCAB)] + ("\\n\\n" if i % 60 == 59 else " ") for i in range({tokens})]
TEXT = "".join(WORDS)

class PacedModel(Llm):
    \"\"\"Streams WORDS at `rate` tokens per second, then the whole text.\"\"\"
    name = "paced"
    def __init__(self, rate):
        self.rate = rate
    async def generate_content(self, request, stream=False):
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i, word in enumerate(WORDS):
            ahead = start + i / self.rate - loop.time()
            if ahead > 0.005:
                await asyncio.sleep(ahead)
            yield LlmResponse(Content("model", [Part(text=word)]), partial=True, turn_complete=False)
        yield LlmResponse(Content.model(TEXT), usage=Usage(12, len(WORDS), 12 + len(WORDS)))

burst = LlmAgent(name="burst", model=ScriptedModel([LlmResponse(Content.model(TEXT), usage=Usage(12, {tokens}, {tokens} + 12))]))
paced = LlmAgent(name="paced", model=PacedModel({rate}))
print(len(TEXT.encode()))
"""

MAGIC_CELL = "%%chat {agent} --session {session}\nWrite a long answer."

DIRECT_CELL = """
from adk_notebook import InMemorySessionService, Runner
from adk_notebook.notebook.widgets import RunView
_runner = Runner(app_name="bench", agent={agent}, session_service=InMemorySessionService())
_session = await _runner.session_service.create(app_name="bench", user_id="u")
_view = RunView(agent_name={agent}.name, prompt="Write a long answer.", session_id=_session.id)
_view.show()
_events = []
async for _event in _runner.run(user_id="u", session_id=_session.id, content="Write a long answer."):
    _events.append(_event)
    _view.handle(_event)
from adk_notebook import RunResult, Usage
_view.finish(result=RunResult(_events, _session.id, {{}}, usage=Usage(12, len(WORDS), 12 + len(WORDS))))
"""


@dataclass
class CommMsg:
    arrival: float
    kind: str  # comm_open, comm_msg, comm_close
    wire: int
    content: int


@dataclass
class Capture:
    seconds: float = 0.0
    comm: list[CommMsg] = field(default_factory=list)
    display: list[tuple[str, int]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    streams: list[str] = field(default_factory=list)


def size(msg: dict[str, Any]) -> int:
    """Bytes of a message's content as JSON (what dominates the wire message)."""
    return len(json.dumps(msg["content"], separators=(",", ":"), default=str).encode())


def wire_size(msg: dict[str, Any]) -> int:
    """Bytes of header + parent header + metadata + content, roughly what ZMQ carries."""
    parts = [msg["header"], msg["parent_header"], msg["metadata"], msg["content"]]
    return sum(len(json.dumps(p, separators=(",", ":"), default=str).encode()) for p in parts)


def run_cell(kc: Any, code: str, timeout: float = 300) -> Capture:
    capture = Capture()
    started = time.monotonic()
    msg_id = kc.execute(code)
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind = msg["msg_type"]
        now = time.monotonic()
        if kind.startswith("comm_"):
            capture.comm.append(CommMsg(now, kind, wire_size(msg), size(msg)))
        elif kind in ("display_data", "update_display_data", "execute_result"):
            capture.display.append((kind, wire_size(msg)))
        elif kind == "error":
            capture.errors.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif kind == "stream":
            capture.streams.append(msg["content"]["text"])
        elif kind == "status" and msg["content"]["execution_state"] == "idle":
            break
    capture.seconds = time.monotonic() - started
    kc.get_shell_msg(timeout=timeout)
    return capture


def peak_per_second(times: list[float]) -> int:
    best, lo = 0, 0
    for hi, t in enumerate(times):
        while t - times[lo] > 1.0:
            lo += 1
        best = max(best, hi - lo + 1)
    return best


def report(name: str, capture: Capture, text_bytes: int) -> bool:
    run = capture.comm
    wire = sum(m.wire for m in run)
    content = sum(m.content for m in run)
    opens = sum(m.wire for m in run if m.kind == "comm_open")
    msgs = [m.arrival for m in run if m.kind == "comm_msg"]
    span = (msgs[-1] - msgs[0]) if len(msgs) > 1 else capture.seconds
    rate = len(msgs) / max(span, 1e-9) if len(msgs) > 1 else 0.0
    peak = peak_per_second(msgs)
    ratio = wire / text_bytes
    display_bytes = sum(b for _, b in capture.display)
    ok_ratio, ok_rate = ratio < BYTES_RATIO_TARGET, peak < MSGS_PER_SECOND_TARGET
    print(f"\n{name}: cell took {capture.seconds:.2f} s")
    print(
        f"  comm messages   {len(run):9,d}   ({len(run) - len(msgs)} comm_open, {len(msgs)} comm_msg) of the run's widgets"
    )
    print(
        f"  comm bytes      {wire:9,d}   whole messages; {content:,} of it message content; "
        f"{opens:,} in comm_open (ESM + initial view)"
    )
    print(f"  final text      {text_bytes:9,d}   bytes")
    print(
        f"  bytes / text    {ratio:9.2f}   target < {BYTES_RATIO_TARGET:g}: {'ok' if ok_ratio else 'MISSED'}   "
        f"(content only {content / text_bytes:.2f}; without comm_open {(wire - opens) / text_bytes:.2f})"
    )
    print(
        f"  comm msgs / s   {rate:9.1f}   target < {MSGS_PER_SECOND_TARGET:g}: {'ok' if ok_rate else 'MISSED'}   "
        f"(peak in any 1 s window: {peak})"
    )
    print(
        f"  display msgs    {len(capture.display):9,d}   {display_bytes:,} bytes "
        f"({', '.join(k for k, _ in capture.display)}: the HTML + text transcript, the result line)"
    )
    if capture.errors:
        print("  ERRORS: " + "; ".join(capture.errors))
    return not capture.errors and ok_ratio and ok_rate


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2_000.0, help="tokens per second of the paced run")
    parser.add_argument("--direct", action="store_true", help="drive RunView from the cell instead of %%%%chat")
    args = parser.parse_args()

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        setup = run_cell(kc, SETUP.format(tokens=args.tokens, rate=args.rate))
        if setup.errors:
            print("setup failed: " + "; ".join(setup.errors))
            return 1
        text_bytes = int(setup.streams[-1])
        mode = "direct"
        if not args.direct:
            loaded = run_cell(kc, "%load_ext adk_notebook")
            if loaded.errors:
                print("%load_ext adk_notebook failed (" + "; ".join(loaded.errors) + "): driving RunView directly")
            else:
                mode = "%%chat"
        print(
            f"{args.tokens:,} tokens; kernel: {km.kernel_name}; run through {mode}"
            + ("" if mode == "%%chat" else " (a cell that awaits runner.run(...) and feeds RunView)")
        )
        ok = True
        for agent in ("burst", "paced"):
            code = (
                MAGIC_CELL.format(agent=agent, session=f"{agent}-1")
                if mode == "%%chat"
                else textwrap.dedent(DIRECT_CELL.format(agent=agent))
            )
            label = f"{agent} ({'as fast as the loop goes' if agent == 'burst' else f'{args.rate:,.0f} tokens/s'})"
            ok = report(label, run_cell(kc, code), text_bytes) and ok
        return 0 if ok else 1
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    sys.exit(main())
