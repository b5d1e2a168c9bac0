"""What the base install (`pip install -e .`, no extras) must do. Run as a script, not by pytest:

    python tests/check_base_install.py                 # .ci/run, in a venv with the base install only
    python tests/check_base_install.py --hide-extras   # tests/reliability/test_extras.py, here

Every star-import works, and each thing that needs an extra fails with an ImportError naming it.
Without `--hide-extras` every extra must really be missing (else this checks nothing); with it,
the extras' modules are made unimportable first (None in sys.modules, as Python documents).
Prints one line per check; exits non-zero at the first that fails.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path

# Python put this file's folder first on the path, and tests/mcp there would pass for the MCP SDK.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

from adk_notebook.extras import EXTRAS, install_hint, missing_module, requires  # noqa: E402  # after the path fix

PACKAGES = ["agents", "core", "evaluation", "extras", "models", "notebook", "plugins", "sessions", "tools"]


def hide_extras() -> None:
    for extra in EXTRAS.values():
        for module in extra.modules:
            sys.modules[module.split(".")[0]] = None  # type: ignore[assignment]  # import raises ImportError


def fails_naming(extra: str, what: str, action: Callable[[], object]) -> None:
    try:
        action()
    except ImportError as exc:
        assert install_hint(extra) in str(exc), f"{what}: the ImportError does not name [{extra}]: {exc}"
        assert "\n" not in str(exc), f"{what}: the error is not one line: {exc!r}"
        print(f"ok  {what}: ImportError: {exc}")
        return
    raise AssertionError(f"{what} did not fail without the [{extra}] extra")


def star_import(package: str) -> None:
    exec(f"from {package} import *", {})  # noqa: S102 - the statement under test
    print(f"ok  from {package} import *")


def main() -> None:
    if sys.argv[1:] == ["--hide-extras"]:
        hide_extras()
    else:
        installed = [e for e in EXTRAS if missing_module(e) is None]
        assert not installed, f"this environment has extras installed ({installed}): it is not a base install"
    for package in ["adk_notebook", *(f"adk_notebook.{p}" for p in PACKAGES)]:
        star_import(package)
    fails_naming(
        "postgres",
        "adk_notebook.PostgresSessionService",
        lambda: importlib.import_module("adk_notebook").PostgresSessionService,
    )
    fails_naming(
        "otel", "adk_notebook.OpenTelemetryPlugin", lambda: importlib.import_module("adk_notebook").OpenTelemetryPlugin
    )
    fails_naming("mcp", "import adk_notebook.mcp", lambda: importlib.import_module("adk_notebook.mcp"))
    fails_naming("local", "LocalModel()", lambda: importlib.import_module("adk_notebook").LocalModel())
    fails_naming("eval", "ResponseMatch()", lambda: importlib.import_module("adk_notebook.evaluation").ResponseMatch())
    for extra in EXTRAS:
        fails_naming(extra, f"requires({extra!r})", lambda extra=extra: requires(extra))
    print("base install: every check held")


if __name__ == "__main__":
    main()
