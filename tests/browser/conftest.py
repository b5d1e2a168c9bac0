"""End to end: a real JupyterLab server and a real (headless) Chromium driven by Playwright.

Session fixtures:
  chromium_path  Debian's Chromium at /usr/bin/chromium, installed with apt-get when missing
                 (as root; elsewhere the suite is skipped, unless ADK_BROWSER_REQUIRED=1 makes
                 that a failure, as .ci/run does). Playwright never downloads a browser here.
  stand_in_model an OpenAI-compatible server on 127.0.0.1: what `--model auto` resolves to in
                 the kernels (no other provider key reaches them), offline and quick.
  lab            JupyterLab 4 on 127.0.0.1, a free port, a random token, --allow-root, a
                 temporary root dir holding a copy of notebooks/, isolated settings and
                 workspaces (news and update checks off, every cell kept in the DOM).
                 (`running_server` starts Notebook 7 and Voila the same way: test_other_frontends.py.)
  browser        (module scope) Chromium launched by Playwright with the flags this closed
                 network needs; closed after each test module, as Playwright's sync API holds
                 an event loop "running" in this thread while it is open.
  lab_tab        (module scope) one browser context and page: JupyterLab loads once per module.
Function fixture:
  lab_page       that page wrapped in `LabPage` (open a notebook, run all cells, wait for the
                 kernel, hold a run where the test looks, read outputs, save, reload, take
                 screenshots); everything the test opened is closed and its kernels shut down
                 afterwards. Every wait is on what the page shows (or on a run held there),
                 never on a fixed time: the suite must pass on a loaded machine.

JupyterLab and Playwright come from the `browser` extra (`pip install -e ".[browser]"`);
nothing else is installed at test time.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from provider_env import PROVIDER_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
REQUIRED = os.environ.get("ADK_BROWSER_REQUIRED", "") not in ("", "0")
TIMINGS: list[tuple[str, float]] = []  # (what, seconds), printed at the end of the run


@contextmanager
def timed(what: str) -> Iterator[None]:
    start = time.monotonic()
    try:
        yield
    finally:
        TIMINGS.append((what, time.monotonic() - start))


# JupyterLab user settings written into the server's own (temporary) settings dir.
LAB_SETTINGS = {
    # No "Would you like to receive official Jupyter news?" toast, no update check.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Every cell attached to the DOM, so off-screen outputs can be read.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


def unavailable(reason: str) -> None:
    """Skip the browser suite, or fail it when it is required (CI)."""
    if REQUIRED:
        pytest.fail(f"browser suite required (ADK_BROWSER_REQUIRED=1) but {reason}", pytrace=False)
    pytest.skip(reason)


# -- Chromium --------------------------------------------------------------------------------
@pytest.fixture(scope="session")
def chromium_path() -> str:
    """/usr/bin/chromium; installed from Debian's packages when missing (root only)."""
    if not os.path.exists(CHROMIUM):
        if not hasattr(os, "geteuid") or os.geteuid() != 0:
            unavailable(f"{CHROMIUM} is missing and installing it needs root (apt-get install -y chromium)")
        if shutil.which("apt-get") is None:
            unavailable(f"{CHROMIUM} is missing and there is no apt-get to install it")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        lock = ["-o", "DPkg::Lock::Timeout=600"]  # another apt-get may hold the lock for a while
        start = time.monotonic()
        for cmd in (["apt-get", *lock, "update"], ["apt-get", *lock, "install", "-y", "chromium"]):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                pytest.fail(
                    f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
                )
        if not os.path.exists(CHROMIUM):
            pytest.fail(f"apt-get installed chromium but {CHROMIUM} is still missing")
        TIMINGS.append(("apt-get install chromium", time.monotonic() - start))
    return CHROMIUM


# -- the model behind `--model auto` -----------------------------------------------------------


class StandInOpenAI:
    """An OpenAI-compatible Chat Completions server on 127.0.0.1 for notebooks that say
    `--model auto` (the quickstart): the kernels get OPENAI_API_KEY/OPENAI_BASE_URL pointing
    here and no other provider's key, so "auto" is the same offline, quick model everywhere
    (no real provider, no 30 s local model, no llama.cpp needed). A conversation without a tool
    result yet calls the first declared tool (each required string parameter = "Tokyo");
    otherwise it answers with text. Streams like the real API when asked to."""

    ANSWER = "It is sunny in Tokyo, 24 °C."

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        stand_in = self
        self.requests: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                stand_in.requests.append(body)
                message, finish = stand_in.reply(body)
                if body.get("stream"):
                    chunks = [
                        {"choices": [{"index": 0, "delta": message, "finish_reason": None}]},
                        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
                        {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28}},
                    ]
                    data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"
                    kind = "text/event-stream"
                else:
                    data = json.dumps(
                        {
                            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                            "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
                        }
                    ).encode()
                    kind = "application/json"
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reply(self, body: dict[str, Any]) -> tuple[dict[str, Any], str]:
        messages = body.get("messages") or []
        tools = body.get("tools") or []
        if tools and not any(m.get("role") == "tool" for m in messages):
            function = tools[0].get("function", {})
            params = function.get("parameters") or {}
            args = {
                name: "Tokyo"
                for name in params.get("required", [])
                if (params.get("properties", {}).get(name) or {}).get("type") == "string"
            }
            call = {
                "index": 0,
                "id": f"call_{len(self.requests)}",
                "type": "function",
                "function": {"name": function.get("name", ""), "arguments": json.dumps(args)},
            }
            return {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
        return {"role": "assistant", "content": self.ANSWER}, "stop"

    def __enter__(self) -> StandInOpenAI:
        import threading

        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture(scope="session")
def stand_in_model() -> Iterator[StandInOpenAI]:
    with StandInOpenAI() as server:
        yield server


# -- JupyterLab ------------------------------------------------------------------------------
def _die_with_parent() -> None:
    """In the server's process, before exec: SIGTERM it when pytest goes, however it goes (a
    timeout, kill -9), so no JupyterLab outlives the run; on SIGTERM it stops its kernels."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Lab:
    """A running JupyterLab server: its URL, token, root dir and a small REST client."""

    def __init__(self, base_url: str, token: str, root: Path, log: Path, data_dir: Path) -> None:
        self.base_url = base_url  # ends with "/"
        self.token = token
        self.root = root
        self.log = log
        self.data_dir = data_dir  # JUPYTER_DATA_DIR (the notebook-signing secret lives here)

    def api(self, method: str, path: str, body: Any = None, timeout: float = 10) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.base_url + path.lstrip("/"),
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
        return json.loads(raw) if raw else None

    def notebook_json(self, path: str) -> dict[str, Any]:
        """The notebook as saved on disk (via the contents API)."""
        return self.api("GET", f"api/contents/{path}?content=1&type=notebook")["content"]

    def sessions(self) -> list[dict[str, Any]]:
        return self.api("GET", "api/sessions")

    def kernel_state(self, path: str) -> str | None:
        for session in self.sessions():
            if session.get("path") == path and session.get("kernel"):
                return session["kernel"].get("execution_state")
        return None

    def shutdown_kernels(self, path: str | None = None) -> None:
        """Delete the sessions (and so the kernels) of `path`, or of every notebook."""
        for session in self.sessions():
            if path is None or session.get("path") == path:
                try:
                    self.api("DELETE", f"api/sessions/{session['id']}")
                except urllib.error.HTTPError:
                    pass

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-n:]
        except OSError:
            return ""


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory, stand_in_model: StandInOpenAI) -> Iterator[Lab]:
    """JupyterLab on 127.0.0.1:<free port> with a random token, over a copy of notebooks/; its
    kernels see no provider key but the stand-in model's (`--model auto` is offline)."""
    try:
        import jupyterlab  # noqa: F401
        import playwright  # noqa: F401
    except ImportError as exc:
        unavailable(f"{exc.name} is not installed: pip install -e '.[browser]'")
    base = tmp_path_factory.mktemp("lab")
    shutil.copytree(NOTEBOOKS, base / "root", ignore=shutil.ignore_patterns(".ipynb_checkpoints", "*.html"))
    with running_lab(base, {"OPENAI_API_KEY": "stand-in", "OPENAI_BASE_URL": stand_in_model.url}) as server:
        yield server


@contextmanager
def running_lab(base: Path, kernel_env: dict[str, str]) -> Iterator[Lab]:
    """JupyterLab serving `base`/root (made if missing), with every Jupyter and IPython folder
    under `base`; no provider variable reaches its kernels but those in `kernel_env`. Also what
    bench/first_token.py starts."""
    with running_server("jupyterlab", base, kernel_env) as server:
        yield server


@contextmanager
def running_server(app: str, base: Path, kernel_env: dict[str, str]) -> Iterator[Lab]:
    """`app` ("jupyterlab", "notebook" for Notebook 7, or "voila") on 127.0.0.1:<free port> with
    a random token, serving `base`/root, every Jupyter and IPython folder under `base` (so no
    user config leaks in), its kernels seeing no provider variable but those in `kernel_env`."""
    root = base / "root"
    root.mkdir(exist_ok=True)
    settings = base / "settings"
    for name, values in LAB_SETTINGS.items():
        target = settings / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(values))
    for sub in ("config", "runtime", "data", "workspaces", "ipython"):
        (base / sub).mkdir(exist_ok=True)
    token = secrets.token_hex(24)
    port = _free_port()
    env = {
        **{k: v for k, v in os.environ.items() if k not in PROVIDER_VARIABLES},
        **kernel_env,
        "JUPYTER_CONFIG_DIR": str(base / "config"),  # no ~/.jupyter config leaks in
        "JUPYTER_RUNTIME_DIR": str(base / "runtime"),
        "JUPYTER_DATA_DIR": str(base / "data"),  # (kernelspecs and lab extensions still come from sys.prefix)
        "JUPYTERLAB_SETTINGS_DIR": str(settings),
        "JUPYTERLAB_WORKSPACES_DIR": str(base / "workspaces"),
        "IPYTHONDIR": str(base / "ipython"),  # the kernels start with no user profile
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("JUPYTER_TOKEN", None)
    server_options = [
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        "--ServerApp.disable_check_xsrf=False",
        "--ServerApp.terminals_enabled=False",
    ]
    if app == "jupyterlab":
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--allow-root",
            *server_options,
            "--LabApp.news_url=None",  # no announcements fetched
            "--LabApp.expose_app_in_browser=True",  # window.jupyterapp: open/close documents without a page load
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            f"--LabApp.user_settings_dir={settings}",
            f"--LabApp.workspaces_dir={base / 'workspaces'}",
        ]
    elif app == "notebook":
        cmd = [sys.executable, "-m", "notebook", "--allow-root", *server_options]
    elif app == "voila":  # it runs a notebook on the server when its page is asked for
        cmd = [
            sys.executable,
            "-m",
            "voila",
            str(root),
            "--no-browser",
            "--Voila.ip=127.0.0.1",
            f"--Voila.port={port}",
            "--Voila.port_retries=0",
            f"--Voila.token={token}",
            "--VoilaConfiguration.show_tracebacks=True",
        ]
    else:
        raise ValueError(f"unknown Jupyter front end {app!r}")
    log = base / "server.log"
    started = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )
    server = Lab(f"http://127.0.0.1:{port}/", token, root, log, base / "data")
    try:
        deadline = time.monotonic() + 90
        while True:
            if proc.poll() is not None:
                pytest.fail(f"{app} exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                server.api("GET", "api/kernels", timeout=2)
                break
            except urllib.error.HTTPError:
                break  # it answers (Voila has no REST API for kernels)
            except (urllib.error.URLError, ConnectionError, OSError):
                if time.monotonic() > deadline:
                    pytest.fail(f"{app} did not answer within 90 s:\n{server.log_tail()}")
                time.sleep(0.25)
        TIMINGS.append((f"{app} server up", time.monotonic() - started))
        yield server
    finally:
        try:
            server.shutdown_kernels()
        except Exception:  # noqa: BLE001 - best effort before the server goes
            pass
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)  # the server shuts its kernels down on SIGTERM
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        try:  # anything left in the server's process group (kernels have their own: they were
            os.killpg(proc.pid, signal.SIGKILL)  # shut down through the REST API and on SIGTERM)
        except ProcessLookupError:
            pass


# -- the browser -----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def browser(chromium_path: str, lab: Lab) -> Iterator[Any]:
    """Chromium via Playwright: Debian's binary, no download; Playwright gives every launch a
    fresh, temporary --user-data-dir (it rejects one passed in `args`).

    Module scope, not session: while Playwright's sync API is open, its event loop counts as
    running in this thread, and every asyncio test after it (pytest-asyncio, asyncio.run, a
    kernel shell) would fail with "This event loop is already running". It must close before
    the rest of the suite runs."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        with timed("Chromium launch"):
            chromium = p.chromium.launch(
                executable_path=chromium_path, headless=True, args=CHROMIUM_ARGS, chromium_sandbox=False, timeout=60_000
            )
        try:
            yield chromium
        finally:
            chromium.close()


# -- one page --------------------------------------------------------------------------------
# A run's view, live (run_view.js draws render.py's .adk-run inside its .adk-live root) or saved
# (the transcript that replaces the widget when the run ends: the same .adk-run, on its own).
LIVE = ".adk-live .adk-run"
SAVED = ".adk-run:not(.adk-live .adk-run)"

PROMPTS_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')]
  .map(c => (c.querySelector('.jp-InputArea-prompt') || {}).textContent || '')"""


RUN_IN_JS = """(cell) => {
  // What an element (a code cell) shows of a run: the live view (.adk-live, run_view.js) while it
  // runs, or the static transcript that replaces it when it ends. Both hold the same .adk-run, drawn
  // by render.py, its parts and items named by data-adk ("top", "stop", "body", "i0", "i0.md", ...).
  const prompt = ((cell.querySelector('.jp-InputArea-prompt') || {}).textContent || '').trim();
  const txt = (el) => (el ? el.textContent : '');
  const live = cell.querySelector('.adk-live .adk-run');
  const run = live || [...cell.querySelectorAll('.adk-run')].find(r => !r.closest('.adk-live'));
  if (!run) return {prompt, kind: null};
  const part = (name) => run.querySelector(`[data-adk="${name}"]`);
  return {
    prompt, kind: live ? 'live' : 'static',
    status: txt(part('top').querySelector('span')),  // the head: <strong>agent</strong> [model] <span>status</span>
    stopVisible: !!part('stop').querySelector('[data-adk-action=stop]'),
    text: [...run.querySelectorAll('.adk-item.adk-text')].map(txt).join('\\n'),
    tools: [...run.querySelectorAll('.adk-item.adk-tool')].map(t => {
      const card = t.firstElementChild, spans = card.firstElementChild.querySelectorAll(':scope > span');
      const result = [...card.querySelectorAll(':scope > details')].find(d => txt(d.querySelector('summary')) === 'result');
      return {
        name: txt(spans[0]).replace(/^\\S+\\s/, ''),
        status: txt(spans[1]),
        args: txt(card.querySelector(':scope > pre:not([data-adk])')),
        log: txt(card.querySelector(':scope > pre[data-adk$=".log"]')),
        result: result ? txt(result.querySelector('pre')) : null,
      };
    }),
    all: run.innerText,
  };
}"""

RUN_JS = f"""(index) => {{
  const cell = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell')[index];
  return cell ? ({RUN_IN_JS})(cell) : null;
}}"""


SETTLE_JS = """async (roots) => {
  const images = roots.flatMap(root => [...root.querySelectorAll('img')]);
  await Promise.all(images.map(img => img.complete ? null : new Promise(done => {
    img.addEventListener('load', done, {once: true});
    img.addEventListener('error', done, {once: true});
  })));
  // The load/error events of images that just completed are queued tasks: let them run.
  for (let i = 0; i < 3; i++) await new Promise(done => setTimeout(done, 0));
}"""


class LabPage:
    """One browser page on the lab server, with the helpers the tests share."""

    def __init__(
        self, page: Any, lab: Lab, name: str, console: list[str] | None = None, page_errors: list[str] | None = None
    ) -> None:
        self.page = page
        self.lab = lab
        self.name = name  # the test's name: screenshots are written as <name>-<label>.png
        self.path: str | None = None
        self.opened: set[str] = set()  # notebooks whose kernels go when the test ends
        if console is None or page_errors is None:
            console, page_errors = [], []
            page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
            page.on("pageerror", lambda err: page_errors.append(str(err)))
        self.console = console
        self.page_errors = page_errors

    # -- navigation ------------------------------------------------------------------------
    def url_for(self, path: str) -> str:
        workspace = "t" + secrets.token_hex(4)  # a fresh workspace: nothing restored from other tests
        return f"{self.lab.base_url}lab/workspaces/{workspace}/tree/{path}?token={self.lab.token}"

    def app_loaded(self) -> bool:
        """JupyterLab is this page (and started), so documents open without a page load."""
        if not self.page.url.startswith(self.lab.base_url + "lab"):
            return False
        return bool(self.page.evaluate("() => !!(window.jupyterapp && window.jupyterapp.shell)"))

    def open(self, path: str, *, timeout: float = 60, via_url: bool = False) -> None:
        """Open notebook `path` (relative to the lab root) and wait for its kernel to be idle.

        By URL with the token (/lab/workspaces/<fresh>/tree/<path>?token=...) when JupyterLab
        is not loaded in this page yet (or `via_url`); otherwise through the app's document
        manager (`docmanager:open`, what that URL route runs), which saves a ~10 s page load.
        """
        self.path = path
        self.opened.add(path)
        with timed(f"open {path} ({'page load, ' if via_url or not self.app_loaded() else ''}kernel idle)"):
            if via_url or not self.app_loaded():
                self.page.goto(self.url_for(path), wait_until="domcontentloaded", timeout=timeout * 1000)
            else:
                self.page.evaluate(
                    """async (path) => {
                    await window.jupyterapp.commands.execute('docmanager:open', {path, factory: 'Notebook'}); }""",
                    path,
                )
            self.wait_ready(timeout)

    def close_all(self) -> None:
        """Close every document in the main area without saving (no "Save changes?" dialog).

        A launcher is opened first when there is none: JupyterLab opens one itself in a main
        area left empty, a moment later, and it could come in front of the next test's notebook.
        """
        if self.app_loaded():
            self.page.evaluate("""async () => {
                const app = window.jupyterapp, main = () => Array.from(app.shell.widgets('main'));
                const launcher = (w) => !!(w.content && w.content.hasClass('jp-Launcher'));
                if (!main().some(launcher)) await app.commands.execute('launcher:create');
                for (const w of main()) {
                    if (launcher(w)) continue;
                    if (w.context && w.context.model) w.context.model.dirty = false;
                    w.dispose();
                } }""")

    def reload(self, *, timeout: float = 60, kernel_idle: bool = True) -> None:
        """Load the page again, as F5 does, but at its workspace's URL without the /tree/<path>.

        JupyterLab opens the document of a /tree/ URL twice: the layout restorer reopens it,
        then the file browser opens the URL's path once its listing has loaded, seconds later
        on a busy machine. That second open brought back a notebook the test had closed, in
        front of the next test's, whose cells the next test then looked for in vain.
        `kernel_idle=False` for a reload while a run goes on.
        """
        url = urllib.parse.urlsplit(self.page.url)
        workspace = re.sub(r"/tree/.*$", "", url.path)
        self.page.goto(
            f"{url.scheme}://{url.netloc}{workspace}?token={self.lab.token}",
            wait_until="domcontentloaded",
            timeout=timeout * 1000,
        )
        if kernel_idle:
            self.wait_ready(timeout)
        else:
            self.wait_shown(timeout)

    def wait_ready(self, timeout: float = 60) -> None:
        """The notebook is shown (its tab current), dialogs are answered, the kernel is idle."""
        self.wait_shown(timeout)
        self.wait_kernel_idle(timeout)
        self.dismiss()

    def wait_shown(self, timeout: float = 60) -> None:
        """The notebook is shown, its tab current, and dialogs are answered."""
        name = (self.path or "").rsplit("/", 1)[-1]
        self.page.locator(".lm-TabBar-tab.jp-mod-current", has_text=name).first.wait_for(
            state="visible", timeout=timeout * 1000
        )
        self.page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(state="visible", timeout=timeout * 1000)
        self.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="attached", timeout=timeout * 1000)
        self.dismiss()

    def dismiss(self) -> None:
        """Answer whatever JupyterLab put up: "Select Kernel" gets its default (Python 3), other
        dialogs their accept button; toasts are closed."""
        dialogs = self.page.locator(".jp-Dialog")
        for _ in range(5):
            if dialogs.count() == 0:
                break
            dialog = dialogs.first
            try:
                accept = dialog.locator(".jp-Dialog-button.jp-mod-accept")
                if accept.count():
                    accept.first.click(timeout=5000)
                else:
                    self.page.keyboard.press("Escape")
                dialog.wait_for(state="detached", timeout=5000)
            except Exception:  # noqa: BLE001 - the dialog went away on its own
                pass
        for close in self.page.locator(".Toastify__toast .jp-toast-button, .Toastify__close-button").all():
            try:
                close.click(timeout=1000)
            except Exception:  # noqa: BLE001
                pass

    def wait_kernel_idle(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.lab.kernel_state(self.path or "") == "idle" and self._status() == "idle":
                return
            self.dismiss()
            time.sleep(0.2)
        raise AssertionError(
            f"kernel for {self.path} not idle after {timeout} s "
            f"(server: {self.lab.kernel_state(self.path or '')}, page: {self._status()})"
        )

    def _status(self) -> str | None:
        """The kernel status the page shows (the toolbar's execution indicator)."""
        return self.page.evaluate("""() => {
            const el = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) [data-status]');
            return el ? el.getAttribute('data-status') : null; }""")

    # -- running -------------------------------------------------------------------------
    def prompts(self) -> list[str]:
        """Each code cell's input prompt: "[3]:", "[*]:" while running/queued, "[ ]:"."""
        return [p.strip() for p in self.page.evaluate(PROMPTS_JS)]

    def run_all(self, *, via: str = "menu") -> None:
        """Run → Run All Cells (menu), or Ctrl+Enter through the cells (`via="keyboard"`)."""
        self.dismiss()
        if via == "menu":
            self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        else:
            self.page.locator(".jp-Notebook .jp-Cell").first.click()
            self.page.keyboard.press("Escape")
            for _ in self.prompts():
                self.page.keyboard.press("Shift+Enter")
        # The prompts of the cells to run turn to [*] at once; wait for that, not for a race
        # (answering a dialog the run may raise, such as "Select Kernel").
        self.wait_for(
            lambda: self.dismiss() or any("*" in p for p in self.prompts()) or self.all_numbered(),
            60,
            "the run to start",
        )

    def all_numbered(self) -> bool:
        prompts = self.prompts()
        return bool(prompts) and all(re.fullmatch(r"\[\d+\]:", p) for p in prompts)

    def wait_run_done(self, timeout: float = 120) -> None:
        """The run is over as the page shows it: no cell running or queued, the kernel idle in the
        page (its idle status comes after every output of the run on the same channel) and on the
        server, and no live run view left (each %%chat's view is replaced by its transcript)."""
        live = self.page.locator(f".jp-NotebookPanel:not(.lm-mod-hidden) {LIVE}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if (
                not any("*" in p for p in self.prompts())
                and self._status() == "idle"
                and self.lab.kernel_state(self.path or "") == "idle"
                and live.count() == 0
            ):
                return
            time.sleep(0.1)
        self.screenshot("timeout")
        raise AssertionError(
            f"the run did not end within {timeout} s: prompts {self.prompts()}, page status "
            f"{self._status()}, {live.count()} live views left"
        )

    def run_all_and_wait(self, timeout: float = 120) -> None:
        with timed(f"run all cells of {self.path}"):
            self.run_all()
            self.wait_run_done(timeout)

    def wait_for(self, check: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {what}")
            time.sleep(interval)

    def eventually(self, check: Callable[[], None], timeout: float = 15, interval: float = 0.1) -> None:
        """Run `check`, which asserts what the page shows, until it passes; after `timeout`, its last failure.

        JupyterLab draws outputs after the kernel sends them (markdown and HTML renderers are
        asynchronous), so a page read once right after a run may be read at an unlucky moment.
        """
        deadline = time.monotonic() + timeout
        while True:
            try:
                check()
                return
            except AssertionError:
                if time.monotonic() > deadline:
                    raise
            time.sleep(interval)

    # -- holding a run where the test wants to look at it --------------------------------
    def hold(self, *names: str) -> None:
        """Create the files `names` in the lab root: the notebook under test waits at a point of
        its run while its file exists (`held` in test_lab.py), so the test can look at the page
        there for as long as it needs, however slow the machine."""
        for name in names:
            (self.lab.root / name).touch()

    def release(self, *names: str) -> None:
        """Let a run held by `hold` go on."""
        for name in names:
            (self.lab.root / name).unlink(missing_ok=True)

    def settle(self, scope: Any = None) -> None:
        """Every image in `scope` (a locator, on this page or another; default: this page) has
        loaded or failed, and the event handlers queued for that have run: what an <img onerror>
        payload would need to fire, if it were markup."""
        (scope if scope is not None else self.page.locator("body")).evaluate_all(SETTLE_JS)

    # -- reading -------------------------------------------------------------------------
    def cells(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def code_cells(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-CodeCell")

    def output_text(self, code_cell: int | None = None) -> str:
        """innerText of the outputs of one code cell (0-based among code cells), or of all."""
        scope = self.code_cells().nth(code_cell) if code_cell is not None else self.page
        return "\n".join(scope.locator(".jp-OutputArea-output").all_inner_texts())

    def errors(self) -> dict[int, str]:
        """Error outputs (tracebacks) shown, by code cell index."""
        found: dict[int, str] = {}
        cells = self.code_cells()
        for i in range(cells.count()):
            shown = cells.nth(i).locator('.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.error"]')
            if shown.count():
                found[i] = "\n".join(shown.all_inner_texts())
        return found

    def assert_no_errors(self) -> None:
        """No cell raised, but those tagged "raises-exception" (their error is the lesson)."""
        import nbformat

        nb = nbformat.read(self.lab.root / (self.path or ""), as_version=4)
        code = [c for c in nb.cells if c.cell_type == "code"]
        allowed = {i for i, c in enumerate(code) if "raises-exception" in c.get("metadata", {}).get("tags", [])}
        errors = {i: e for i, e in self.errors().items() if i not in allowed}
        assert not errors, "cells raised:\n" + "\n---\n".join(f"[code cell {i}]\n{e}" for i, e in errors.items())

    def pwned(self) -> Any:
        """window.__pwned, which the XSS probe's payloads set if any of them ever runs."""
        return self.page.evaluate("() => window.__pwned")

    # -- a run: the live widget (run_view.js), then the static transcript (render.py) -----------
    def widgets(self, code_cell: int | None = None) -> Any:
        """The live run views (the `.adk-run` inside run_view.js's `.adk-live`), in one code cell or all."""
        scope = self.code_cells().nth(code_cell) if code_cell is not None else self.page
        return scope.locator(LIVE)

    def transcripts(self, code_cell: int | None = None) -> Any:
        """The static transcripts (`.adk-run` outside `.adk-live`) a finished run leaves, in one cell or all."""
        scope = self.code_cells().nth(code_cell) if code_cell is not None else self.page
        return scope.locator(SAVED)

    def run_snapshot(self, code_cell: int) -> dict[str, Any]:
        """What `code_cell` shows of its run right now: kind ("live" | "static" | None), status,
        text, tools [{name, status, args, log, result}], stopVisible, and its prompt."""
        return self.page.evaluate(RUN_JS, code_cell)

    # -- saving and pictures -------------------------------------------------------------
    def save(self, timeout: float = 20) -> None:
        """Save the notebook (File > Save, as a command: it resolves once the server has the file),
        then check the tab is clean."""
        self.dismiss()
        self.page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
        self.wait_for(
            lambda: self.page.locator(".lm-TabBar-tab.jp-mod-current.jp-mod-dirty").count() == 0,
            timeout,
            "the notebook to be saved",
        )

    def screenshot_path(self, label: str) -> Path:
        """tests/browser/screenshots/<test name>-<label>.png"""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS / f"{self.name}-{label}.png"

    def screenshot(self, label: str) -> Path:
        """The whole JupyterLab window (the notebook scrolls inside it: see `screenshot_of`)."""
        path = self.screenshot_path(label)
        self.page.screenshot(path=str(path))
        return path

    def screenshot_of(self, locator: Any, label: str) -> Path:
        """One element (a cell, a run widget), scrolled into view; the window grows for the
        shot when the element is taller than the notebook's scroll area would show."""
        path = self.screenshot_path(label)
        size = self.page.viewport_size
        box = locator.bounding_box()
        grow = size is not None and box is not None and box["height"] > size["height"] - 250
        if grow:
            self.page.set_viewport_size({"width": size["width"], "height": int(box["height"]) + 300})
        try:
            locator.screenshot(path=str(path))
        finally:
            if grow:
                self.page.set_viewport_size(size)
        return path

    def diagnostics(self) -> str:
        documents = self.page.evaluate(
            """() => window.jupyterapp ? Array.from(window.jupyterapp.shell.widgets('main'))
                .map(w => (w === window.jupyterapp.shell.currentWidget ? '* ' : '') + (w.context ? w.context.path : w.id))
                : []"""
        )
        return (
            f"documents open (* current): {documents}\n"
            "page errors:\n"
            + "\n".join(self.page_errors[-20:])
            + "\nconsole:\n"
            + "\n".join(self.console[-40:])
            + "\nserver log:\n"
            + self.lab.log_tail(3000)
        )


@pytest.fixture(scope="module")
def lab_tab(browser: Any, lab: Lab) -> Iterator[tuple[Any, list[str], list[str]]]:
    """One browser context and page per module, kept across its tests so that JupyterLab
    loads once (each load costs 8-20 s on these 2 cores); each test closes what it opened."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, device_scale_factor=1)
    context.set_default_timeout(30_000)
    page = context.new_page()
    console: list[str] = []
    page_errors: list[str] = []
    page.on("console", lambda msg: console.append(f"{msg.type}: {msg.text}"))
    page.on("pageerror", lambda err: page_errors.append(str(err)))
    try:
        yield page, console, page_errors
    finally:
        context.close()


@pytest.fixture
def lab_page(lab_tab: tuple[Any, list[str], list[str]], lab: Lab, request: pytest.FixtureRequest) -> Iterator[LabPage]:
    page, console, page_errors = lab_tab
    console.clear()
    page_errors.clear()
    helper = LabPage(page, lab, re.sub(r"\W+", "_", request.node.name).strip("_"), console, page_errors)
    try:
        yield helper
    finally:
        failed = getattr(request.node, "rep_call", None)
        if failed is not None and failed.failed:
            try:
                helper.screenshot("failed")
            except Exception:  # noqa: BLE001
                pass
            print(helper.diagnostics())
        try:
            helper.dismiss()
            helper.close_all()
        except Exception:  # noqa: BLE001 - the next open() loads the page again if need be
            pass
        for path in helper.opened:
            try:
                lab.shutdown_kernels(path)  # each test starts from a new kernel
            except Exception:  # noqa: BLE001
                pass


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]
    return report


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).resolve().parent
    for item in items:
        if Path(str(item.fspath)).resolve().is_relative_to(here):
            item.add_marker(pytest.mark.browser)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if TIMINGS:
        terminalreporter.section("browser suite timings")
        for what, seconds in TIMINGS:
            terminalreporter.write_line(f"{seconds:7.1f} s  {what}")
