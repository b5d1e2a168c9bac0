"""`python -m adk_notebook chat`: talk to an agent in the terminal."""

from __future__ import annotations

import argparse
import sys

from .agents.llm_agent import LlmAgent
from .core.errors import AdkError
from .launcher import Launcher


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m adk_notebook", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    chat = commands.add_parser("chat", help="chat with an agent in the terminal ('exit' to quit)")
    chat.add_argument("--model", default="auto", help="model string, e.g. gemini-2.5-flash, openai:gpt-4o-mini, local (default: auto)")
    chat.add_argument("--instruction", default="You are a helpful assistant.", help="the system instruction")
    chat.add_argument("--name", default="assistant", help="the agent's name")
    _add_mcp(commands)
    args = parser.parse_args(argv)
    if args.command == "mcp":
        return _mcp(args)
    try:
        agent = LlmAgent(name=args.name, model=args.model, instruction=args.instruction)
        agent.resolve_model()
    except AdkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    Launcher(agent).run()
    return 0


def _add_mcp(commands: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """`mcp serve FILE.py|module:attr [--http PORT]`; the SDK loads only when it runs."""
    serve = commands.add_parser("mcp", help="serve tools over MCP (needs adk-notebook[mcp])").add_subparsers(
        dest="mcp_command", required=True).add_parser("serve", help="serve tools to any MCP client, over stdio "
                                                      "or streamable HTTP")
    serve.add_argument("target", metavar="FILE.py|module:attr", help="a file of @tool functions, or a module "
                       "attribute holding a Tool, a Toolset, an LlmAgent or a list of them")
    serve.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP at http://HOST:PORT/mcp "
                       "instead of stdio (0: any free port)")
    serve.add_argument("--host", default="127.0.0.1", help="the address for --http (default: 127.0.0.1)")
    serve.add_argument("--name", help="the server's name (default: from the file or module)")


def _mcp(args: argparse.Namespace) -> int:
    try:
        from .mcp.serve import main as serve
    except ImportError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
