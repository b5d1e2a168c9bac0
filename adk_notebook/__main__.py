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
    args = parser.parse_args(argv)
    try:
        agent = LlmAgent(name=args.name, model=args.model, instruction=args.instruction)
        agent.resolve_model()
    except AdkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    Launcher(agent).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
