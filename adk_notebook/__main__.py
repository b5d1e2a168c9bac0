"""`python -m adk_notebook chat`: talk to an agent in the terminal.

    python -m adk_notebook chat --model auto --tools weather:get_weather --tools mytools.py:TOOLS

`--tools MODULE:ATTR` (repeatable) gives the agent what ATTR holds: a tool, a plain function, a
Toolset, or a list of those. MODULE is an importable module (the current directory is on the
path) or a .py file. Mistakes (an unknown model, a missing key, a tool that is not there) are one
line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

from .agents.llm_agent import LlmAgent
from .core.errors import AdkError
from .launcher import Launcher, terminal_message
from .tools.base import Tool, Toolset


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adk_notebook", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="chat with an agent in the terminal (Ctrl-D or 'exit' quits)")
    chat.add_argument(
        "--model", default="auto", help="model string, e.g. gemini-2.5-flash, openai:gpt-4o-mini, local (default: auto)"
    )
    chat.add_argument("--instruction", default="You are a helpful assistant.", help="the system instruction")
    chat.add_argument("--name", default="assistant", help="the agent's name")
    chat.add_argument(
        "--tools",
        action="append",
        default=[],
        metavar="MODULE:ATTR",
        help="tools for the agent: a tool, function, Toolset or list of them (repeatable)",
    )
    _add_mcp(commands)
    args = parser.parse_args(argv)
    if args.command == "mcp":
        return _mcp(args)
    try:
        tools, toolsets = _load_tools(args.tools)
        agent = LlmAgent(name=args.name, model=args.model, instruction=args.instruction, tools=tools, toolsets=toolsets)
        agent.resolve_model()
    except (AdkError, ImportError) as exc:  # a bad model string, no key, the [local] extra missing, a bad --tools
        print(f"error: {terminal_message(exc)}", file=sys.stderr)
        return 2
    Launcher(agent).run()
    return 0


def _add_mcp(commands: argparse._SubParsersAction) -> None:
    """`mcp serve FILE.py|module:attr [--http PORT]`; the SDK loads only when it runs."""
    serve = (
        commands.add_parser("mcp", help="serve tools over MCP (needs adk-notebook[mcp])")
        .add_subparsers(dest="mcp_command", required=True)
        .add_parser("serve", help="serve tools to any MCP client, over stdio or streamable HTTP")
    )
    serve.add_argument(
        "target",
        metavar="FILE.py|module:attr",
        help="a file of @tool functions, or a module "
        "attribute holding a Tool, a Toolset, an LlmAgent or a list of them",
    )
    serve.add_argument(
        "--http",
        type=int,
        metavar="PORT",
        help="serve streamable HTTP at http://HOST:PORT/mcp instead of stdio (0: any free port)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="the address for --http (default: 127.0.0.1)")
    serve.add_argument("--name", help="the server's name (default: from the file or module)")


def _mcp(args: argparse.Namespace) -> int:
    try:
        from .mcp.serve import main as serve
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return serve(args)


def _load_tools(specs: list[str]) -> tuple[list[Any], list[Toolset]]:
    tools: list[Any] = []
    toolsets: list[Toolset] = []
    for spec in specs:
        module_name, sep, attr = spec.rpartition(":")
        if not sep or not module_name or not attr:
            raise _bad_tools(f"--tools {spec}: write MODULE:ATTR, e.g. --tools weather:get_weather")
        value = getattr(_module(module_name, spec), attr, _MISSING)
        if value is _MISSING:
            raise _bad_tools(f"--tools {spec}: {module_name} has no attribute {attr!r}")
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, Toolset):
                toolsets.append(item)
            elif isinstance(item, Tool) or callable(item):
                tools.append(item)
            else:
                raise _bad_tools(f"--tools {spec}: {type(item).__name__} is not a tool, a function or a Toolset")
    return tools, toolsets


def _module(name: str, spec: str) -> Any:
    if name.endswith(".py") or "/" in name:
        path = Path(name).expanduser()
        found = importlib.util.spec_from_file_location(path.stem, path) if path.is_file() else None
        if found is None or found.loader is None:
            raise _bad_tools(f"--tools {spec}: there is no Python file {str(path)!r}")
        module = importlib.util.module_from_spec(found)
        sys.modules[path.stem] = module
        found.loader.exec_module(module)
        return module
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` has it; the `adk-notebook` script does not
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not name.startswith(exc.name):
            raise  # the module itself imports something missing: that is its own message
        raise _bad_tools(
            f"--tools {spec}: no module named {name!r} (run from its folder, or give a .py path)"
        ) from None


_MISSING = object()


def _bad_tools(message: str) -> AdkError:
    return AdkError.config(message, code="invalid_tools")


if __name__ == "__main__":
    sys.exit(main())
