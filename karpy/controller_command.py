"""`karpy controller`: the subcommand that runs the controller process (see `main.py`)."""

from __future__ import annotations

import argparse
import sys

from controller.settings import Settings


def _controller(args: argparse.Namespace) -> int:
    from controller.main import run

    try:
        settings = Settings.from_args(args)
    except ValueError as err:
        print(f"karpy controller: {err}", file=sys.stderr)
        return 2
    return run(settings)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "controller", help="run the controller (provisioning, deprovisioning, termination, garbage collection)"
    )
    Settings.add_arguments(parser)
    parser.set_defaults(func=_controller)
