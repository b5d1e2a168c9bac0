"""The local model's own process: llama.cpp behind a pipe, one JSON object per line.

`LocalModel` starts this file as ``python -P local_worker.py`` (``-P``: nothing from
adk_notebook is importable, and nothing needs to be: this program knows only the standard
library, llama-cpp-python and the protocol below). A native crash in llama.cpp then ends this
process, not the user's kernel; the parent sees the pipe close, reads the exit status and the
last lines of stderr, and reports them.

Protocol (parent -> worker, on stdin)::

    {"type": "load", "model_path": str, "llama": {Llama kwargs}, "extra_buffer_types": bool}   first line
    {"type": "complete", "id": int, "messages": [{"role", "content"}], "prefix": str,
     "grammar": null | {"choices": [str]} | {"json_schema": {...}}, "max_tokens": int,
     "temperature": float, "top_p": float, "top_k": int, "stop": [str], "stream": bool}
    {"type": "cancel", "id": int}       stop that completion at its next token (or never start it)

Worker -> parent, on the original stdout (fd 1 is pointed at stderr, so nothing llama.cpp or a
library prints can corrupt the protocol)::

    {"type": "ready", "pid": int, "extra_buffer_types": bool | null, "chat_template": bool}
    {"type": "text", "id": int, "text": str}                      streamed pieces (with "stream")
    {"type": "done", "id": int, "text": str, "finish": "stop" | "max_tokens" | "cancelled",
     "prompt_tokens": int, "output_tokens": int}
    {"type": "error", "id": int | null, "code": str, "category": str, "message": str}

Completions run one at a time, in order (a llama.cpp context is not thread-safe); a reader
thread takes cancels while one runs. The worker exits when stdin closes (its parent is gone).

Extra buffer types. llama.cpp's CPU backend may place weights in "extra" buffer types: AMX
tiles on Intel Xeons that report ``amx_int8``/``amx_bf16``, repacked layouts on AVX2/NEON.
The AMX path crashed on the first decode on such a machine (``ggml_backend_amx_mul_mat``), so
they are off unless the parent asks for them: llama-cpp-python builds its model parameters
inside ``Llama.__init__`` from ``llama_model_default_params()``, so that function is wrapped,
in this process and for the load only, to set ``use_extra_bufts``.
"""

from __future__ import annotations

import faulthandler
import json
import os
import queue
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

# ChatML, for a GGUF without a chat template (SmolLM2 and many small models speak it).
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


_LOOSE_CHAR = r'char ::= [^"\\]'
_JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F]'


class Worker:
    """One loaded model answering completion requests; `out` is the protocol channel."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.write_lock = threading.Lock()
        self.requests: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self.cancelled: set[Any] = set()
        self.current: tuple[Any, threading.Event] | None = None  # (request id, its stop)
        self.state_lock = threading.Lock()
        self.grammars: dict[str, Any] = {}
        self.llama: Any = None
        self.format: Any = None
        self.stop: list[str] = []
        self.bos = ""

    def send(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, ensure_ascii=False)
        with self.write_lock:
            self.out.write(line + "\n")
            self.out.flush()

    # -- the reader thread -------------------------------------------------------------------
    def read(self, stream: TextIO) -> None:
        """Queue completions, apply cancels at once; on end of input, stop (the parent is gone)."""
        for line in stream:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if message.get("type") == "cancel":
                with self.state_lock:
                    self.cancelled.add(message.get("id"))
                    if self.current is not None and self.current[0] == message.get("id"):
                        self.current[1].set()
            elif message.get("type") == "complete":
                self.requests.put(message)
        with self.state_lock:
            if self.current is not None:
                self.current[1].set()
        self.requests.put(None)

    # -- loading -----------------------------------------------------------------------------
    def load(self, spec: dict[str, Any]) -> None:
        import llama_cpp
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        with _extra_buffer_types(bool(spec.get("extra_buffer_types"))) as applied:
            llama = llama_cpp.Llama(model_path=spec["model_path"], **spec.get("llama", {}))
        eos = _token_text(llama, llama.token_eos())
        self.bos = _token_text(llama, llama.token_bos())
        template = llama.metadata.get("tokenizer.chat_template")
        self.format = Jinja2ChatFormatter(template=template or CHATML, eos_token=eos, bos_token=self.bos)
        self.stop = [eos] if eos else []
        self.llama = llama
        used = getattr(llama.model_params, "use_extra_bufts", None) if applied else None
        self.send(
            {
                "type": "ready",
                "pid": os.getpid(),
                "extra_buffer_types": None if used is None else bool(used),
                "chat_template": bool(template),
            }
        )

    # -- completions -------------------------------------------------------------------------
    def serve(self) -> None:
        while (request := self.requests.get()) is not None:
            rid = request.get("id")
            stop = threading.Event()
            with self.state_lock:
                if rid in self.cancelled:
                    self.cancelled.discard(rid)
                    stop.set()
                self.current = (rid, stop)
            try:
                if stop.is_set():
                    self.send(
                        {
                            "type": "done",
                            "id": rid,
                            "text": "",
                            "finish": "cancelled",
                            "prompt_tokens": 0,
                            "output_tokens": 0,
                        }
                    )
                else:
                    self.complete(request, stop)
            except Exception as exc:  # noqa: BLE001 - reported to the parent, the worker goes on
                self.send(
                    {
                        "type": "error",
                        "id": rid,
                        "code": "local_model_error",
                        "category": "internal",
                        "message": f"llama.cpp failed: {type(exc).__name__}: {exc}",
                    }
                )
            finally:
                with self.state_lock:
                    self.current = None
                    self.cancelled.discard(rid)

    def complete(self, request: dict[str, Any], stop: threading.Event) -> None:
        from llama_cpp import StoppingCriteriaList

        rid, llama = request["id"], self.llama
        prompt = self.format(messages=request["messages"]).prompt + request.get("prefix", "")
        tokens = llama.tokenize(
            prompt.encode("utf-8"), add_bos=not (self.bos and prompt.startswith(self.bos)), special=True
        )
        room = llama.n_ctx() - len(tokens) - 1
        if room < 8:
            self.send(
                {
                    "type": "error",
                    "id": rid,
                    "code": "context_overflow",
                    "category": "invalid_input",
                    "message": f"The conversation is {len(tokens)} tokens long, too long for the local model's "
                    f"context window (n_ctx={llama.n_ctx()}). Pass LocalModel(n_ctx=...) a larger "
                    "window, or start a new session.",
                }
            )
            return
        stream = bool(request.get("stream"))
        chunks = llama.create_completion(
            tokens,
            max_tokens=min(int(request.get("max_tokens") or room), room),
            temperature=float(request.get("temperature", 0.2)),
            top_p=float(request.get("top_p", 0.95)),
            top_k=int(request.get("top_k", 40)),
            repeat_penalty=1.1,
            stop=self.stop + list(request.get("stop") or ()),
            stream=True,
            grammar=self.grammar(request.get("grammar")),
            stopping_criteria=StoppingCriteriaList([lambda _ids, _logits: stop.is_set()]),  # after every token
        )
        pieces: list[str] = []
        finish = None
        try:
            for chunk in chunks:
                choice = chunk["choices"][0]
                if choice["text"]:
                    pieces.append(choice["text"])
                    if stream:
                        self.send({"type": "text", "id": rid, "text": choice["text"]})
                finish = choice.get("finish_reason") or finish
                if stop.is_set():
                    break
        finally:
            chunks.close()
        text = "".join(pieces)
        # Streamed chunks carry no usage; the text's tokens are what was generated.
        generated = len(llama.tokenize(text.encode("utf-8"), add_bos=False, special=True)) if text else 0
        reason = "cancelled" if stop.is_set() else "max_tokens" if finish == "length" else "stop"
        self.send(
            {
                "type": "done",
                "id": rid,
                "text": text,
                "finish": reason,
                "prompt_tokens": len(tokens),
                "output_tokens": generated,
            }
        )

    def grammar(self, spec: dict[str, Any] | None) -> Any:
        """The grammar a request names, made once: the same tool schemas come with every call."""
        if not spec:
            return None
        key = json.dumps(spec, sort_keys=True)
        grammar = self.grammars.get(key)
        if grammar is None:
            from llama_cpp import LlamaGrammar
            from llama_cpp.llama_grammar import JSON_GBNF, json_schema_to_gbnf

            if "choices" in spec:
                text = "root ::= " + " | ".join(json.dumps(c) for c in spec["choices"])
            else:
                try:
                    text = json_schema_to_gbnf(json.dumps(spec["json_schema"]))
                except Exception:  # noqa: BLE001 - a schema the converter does not handle: any JSON then
                    text = JSON_GBNF
                # Its string characters admit raw control characters, which no JSON parser accepts
                # (a newline inside "setup": "..."); llama.cpp's own converter excludes them.
                text = text.replace(_LOOSE_CHAR, _JSON_CHAR)
            grammar = self.grammars[key] = LlamaGrammar.from_string(text, verbose=False)
        return grammar


@contextmanager
def _extra_buffer_types(enabled: bool) -> Iterator[bool]:
    """While loading, model parameters with `use_extra_bufts = enabled`; yields False when this
    llama-cpp-python has no such field (its default then applies)."""
    import llama_cpp.llama_cpp as lib

    default = lib.llama_model_default_params
    if not any(name == "use_extra_bufts" for name, *_ in default()._fields_):
        yield False
        return

    def params() -> Any:
        made = default()
        made.use_extra_bufts = enabled
        return made

    lib.llama_model_default_params = params
    try:
        yield True
    finally:
        lib.llama_model_default_params = default


def _token_text(llama: Any, token: int) -> str:
    if token < 0:
        return ""
    return llama.detokenize([token], special=True).decode("utf-8", errors="ignore")


def main() -> int:
    faulthandler.enable()  # a native crash leaves the Python stack on stderr, which the parent shows
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal is for the REPL, not for us
    out = os.fdopen(os.dup(1), "w", encoding="utf-8", buffering=1)
    os.dup2(2, 1)  # whatever else writes to stdout lands in stderr
    sys.stdout = sys.stderr
    worker = Worker(out)
    first = sys.stdin.readline()
    if not first:
        return 0
    try:
        worker.load(json.loads(first))
    except Exception as exc:  # noqa: BLE001 - the parent turns this into its error
        worker.send(
            {
                "type": "error",
                "id": None,
                "code": "model_load_failed",
                "category": "invalid_input",
                "message": f"{type(exc).__name__}: {exc}",
            }
        )
        return 3
    threading.Thread(target=worker.read, args=(sys.stdin,), name="adk-worker-reader", daemon=True).start()
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
