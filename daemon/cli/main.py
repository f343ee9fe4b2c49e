"""The ``troupe`` command. Sub-commands import what they need lazily so ``--help`` stays fast."""

from __future__ import annotations

import argparse
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="troupe", description="A virtual software team next to your repository.")
    parser.add_argument("--version", action="version", version="troupe 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    doctor = sub.add_parser("doctor", help="check the model, the database, the daemon and library versions")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--no-model", action="store_true", help="skip the live model check")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "doctor":
        from daemon.doctor import run_doctor

        return run_doctor(json_output=args.json, check_model=not args.no_model)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
