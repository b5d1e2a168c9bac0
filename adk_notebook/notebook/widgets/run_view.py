"""The live view of one run: streamed in place while the agent works, saved when it ends.

Drawn once, in Python. `render.py` draws a run, part by part and item by item, and that HTML is
both what the live view shows and the transcript a finished run leaves in the cell. While the
run goes on, `view_ops.LiveDiff` says what changed as typed ops (an item inserted or drawn again,
a streaming answer's closed blocks and open tail, text appended to a thought or a tool's log),
and run_view.js, which has no renderer, puts the HTML in place.

Why anywidget. The view is one small ES module (`run_view.js`) kept beside this class: no build
step, no npm package to publish, and the same code runs in JupyterLab 4, Notebook 7, Voila,
VS Code and Colab, which all load anywidget's front end. It gives us the two channels the
traffic measurements in DESIGN.md ask for: `widget.send()` custom messages, delivered to every
view and never saved, and synced traits, saved with the notebook's widget state but resent whole
on every assignment. So changes travel as ops, batched every ~50 ms, and the whole run goes into
the `view` trait twice: at the start (nearly empty) and at the end.

Flushing happens on the thread that calls `handle()` (the kernel's event loop), never on a
timer thread: widget comms are not thread-safe. The first delta is sent at once (the first
token should show as soon as it exists: bench/first_token.py), each later one from `handle()`
once 50 ms have passed since the last; when events stop arriving (a tool is running, the model
thinks), one `loop.call_later` on that same loop sends what is pending.

A view rendered mid-run (a second view, a page reload) starts from the trait and asks the
kernel for a snapshot (`{"type": "sync"}`); deltas carry a sequence number so it applies only
those that follow. When the run ends, the cell's output is replaced (same display id) by a
bundle with the widget view, the `text/html` transcript and a `text/plain` one, so nbconvert,
GitHub and VS Code show the run even without saved widget state.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anywidget
import traitlets

from ...core.events import Event, new_id
from ...runner import RunResult
from ..render import state_text
from ..timeline import LiveTrace
from ..transcript import Transcript
from ..view_ops import LiveDiff, Op, wire
from ..waterfall import run_html

__all__ = ["FLUSH_INTERVAL", "RunView", "RunWidget"]

FLUSH_INTERVAL = 0.05  # seconds between two deltas at most once per interval
_WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
_log = logging.getLogger(__name__)
_HERE = Path(__file__).parent


class RunWidget(anywidget.AnyWidget):
    """The widget model: `view` holds the run as drawn when it started ({html, seq, running});
    what changes goes by `send()`."""

    _esm = _HERE / "run_view.js"
    view = traitlets.Dict().tag(sync=True)


class RunView:
    """Shows one run live in the current cell and leaves a transcript behind.

    Example (what `%%chat` does):
        view = RunView(agent_name=agent.name, prompt=prompt, session_id=session_id)
        view.show()
        view.on_stop(task.cancel)
        try:
            async for event in runner.run(...):
                view.handle(event)
        except asyncio.CancelledError:
            view.finish(cancelled=True)
        ...
        view.finish(result=result)
    """

    def __init__(
        self,
        *,
        agent_name: str,
        prompt: str,
        session_id: str | None = None,
        model: str | None = None,
        notice: str | None = None,
        graph: dict[str, Any] | None = None,
    ) -> None:
        self._transcript = Transcript(
            agent_name=agent_name,
            prompt=prompt,
            session_id=session_id,
            track=True,
            model=model,
            notice=notice,
            graph=graph,
        )
        self._trace = LiveTrace(agent_name)  # the Timeline view, filled as events arrive
        self._diff = LiveDiff(self._transcript, self._trace, lambda: self._clock())
        self._clock: Callable[[], float] = time.monotonic
        self._started = self._clock()
        self._last_flush = float("-inf")  # nothing sent yet: the first delta goes at once
        self._timer: asyncio.TimerHandle | None = None
        self._armed = False  # a flush is scheduled, or there is no loop to schedule one on
        self._seq = 0
        self._events = 0
        self._status = "running"
        self._stop_callbacks: list[Callable[[], None]] = []
        self._display_id = "adk-run-" + new_id()
        self._shown = False
        self._final = ""
        self.widget = RunWidget(view={"html": self._html(), "seq": 0, "running": True})
        self.widget.on_msg(self._on_msg)

    def __repr__(self) -> str:
        return f"<RunView {self._transcript.agent_name!r} {self._status}>"

    @property
    def status(self) -> str:
        """ "running", "done", "error" or "cancelled"."""
        return self._status

    @property
    def state(self) -> dict[str, Any]:
        """The run as data (`Transcript.state()`, with its trace): what the view draws."""
        return self._state()

    @property
    def html(self) -> str:
        """The run as drawn now; once it ended, the transcript its cell keeps."""
        return self._final or self._html()

    @property
    def display_id(self) -> str:
        """The display id of the cell output this view owns."""
        return self._display_id

    # -- the run ---------------------------------------------------------------------------
    def show(self) -> None:
        """Display the view in the current cell output; call it before the run starts."""
        self._started = self._clock()
        bundle = self._bundle(f"[{self._transcript.agent_name}] running…")
        if _publish(bundle, self._display_id, update=False):
            self._shown = True

    def handle(self, event: Event) -> None:
        """Take one event (partial ones included, in order); cheap: it buffers, and sends
        a delta at most every FLUSH_INTERVAL."""
        if self._status != "running":
            return
        self._events += 1
        transcript = self._transcript
        transcript.add(event)
        if not event.partial:
            self._trace.add(event)
        if self._diff.pending():
            now = self._clock()
            if now - self._last_flush >= FLUSH_INTERVAL:
                self._flush(now)
            elif not self._armed:
                self._schedule(FLUSH_INTERVAL - (now - self._last_flush))

    def poll(self) -> None:
        """Send pending deltas if FLUSH_INTERVAL has passed. For callers that wait on something
        other than this loop between events (a queue fed by a worker thread, say): call it when
        the wait times out, so the last lines show while a tool runs."""
        if self._status == "running" and self._pending():
            now = self._clock()
            if now - self._last_flush >= FLUSH_INTERVAL:
                self._flush(now)

    def finish(
        self, *, result: RunResult | None = None, error: BaseException | None = None, cancelled: bool = False
    ) -> None:
        """End the view: the cell output (same display id) becomes the HTML + text transcript.

        The live widget is for the run itself. Once it ends, a static transcript shows the same
        thing and survives what a widget does not: a notebook saved without widget state (the
        JupyterLab default) reopened on a new kernel, where JupyterLab would show "model not
        found" rather than fall back to the HTML; nbconvert, GitHub and VS Code.
        """
        if self._status != "running":
            return
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        transcript = self._transcript
        if result is not None and self._events == 0:  # the caller fed no events: use the result's
            for event in result.events:
                transcript.add(event)
                self._trace.add(event)
        status = "cancelled" if cancelled else "error" if error is not None else "done"
        transcript.finish(
            status=status,
            error=None if cancelled else error,
            elapsed=self._clock() - self._started,
            usage=result.usage if result is not None else None,
        )
        self._trace.finish(transcript.elapsed, transcript.error)
        if result is not None and result.trace is not None:  # the runner's own spans win
            self._trace.replace(result.trace.to_dict())
        self._status = status
        self._send(self._diff.take())  # a view that is still open shows the end too
        state = self._state()
        self._final = run_html(state)
        if self._shown:
            _publish({"text/html": self._final, "text/plain": state_text(state)}, self._display_id, update=True)
        self.widget.close()  # the cell shows the transcript now: nothing needs the model, nor saves it

    def on_stop(self, callback: Callable[[], None]) -> None:
        """Call `callback()` when the user presses Stop (the button shows only while running)."""
        self._stop_callbacks.append(callback)

    # -- plumbing --------------------------------------------------------------------------
    def _state(self) -> dict[str, Any]:
        state = self._transcript.state()
        if self._trace.root is not None:
            state["trace"] = self._trace.root
        return state

    def _html(self) -> str:
        return run_html(self._state())

    def _bundle(self, text: str) -> dict[str, Any]:
        return {
            _WIDGET_MIME: {"version_major": 2, "version_minor": 1, "model_id": self.widget.model_id},
            "text/plain": text,
        }

    def _flush(self, now: float) -> None:
        self._last_flush = now
        self._armed = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._send(self._diff.take())
        if self._diff.pending():  # a long answer's tail waits for its turn (markdown.MarkdownStream.due)
            self._schedule(FLUSH_INTERVAL)

    def _send(self, ops: list[Op]) -> None:
        if ops:
            self._seq += 1
            self.widget.send({"type": "delta", "seq": self._seq, "ops": wire(ops)})

    def _pending(self) -> bool:
        return self._diff.pending()

    def _schedule(self, delay: float) -> None:
        self._armed = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # no loop on this thread: the next handle() past 50 ms, or finish(), flushes
            return
        self._timer = loop.call_later(max(delay, 0.0), self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        self._armed = False
        if self._status == "running" and self._pending():
            self._flush(self._clock())

    def _on_msg(self, _widget: Any, content: Any, _buffers: Any) -> None:
        if not isinstance(content, dict):
            return
        kind = content.get("type")
        if kind == "stop":
            if self._status != "running":
                return
            for callback in list(self._stop_callbacks):
                try:
                    callback()
                except Exception:  # noqa: BLE001 - a broken callback must not break the comm
                    _log.exception("adk_notebook: a Stop callback failed")
        elif kind == "sync" and self._status == "running":
            self._flush(self._clock())
            have = content.get("seq")
            snapshot: dict[str, Any] = {
                "type": "snapshot",
                "nonce": content.get("nonce"),
                "seq": self._seq,
                "html": None,
            }
            if have != self._seq:
                streaming, tails = self._diff.snapshot()
                snapshot.update(html=run_html(self._state(), streaming), tails=tails)
            self.widget.send(snapshot)


def _publish(bundle: dict[str, Any], display_id: str, *, update: bool) -> bool:
    """Display (or update) `bundle` in the current cell; False outside IPython."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display

    if not InteractiveShell.initialized():
        return False
    display(bundle, raw=True, display_id=display_id, update=update)
    return True
