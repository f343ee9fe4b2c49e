"""The ``troupe`` command. Sub-commands import what they need lazily so ``--help`` stays fast:
nothing here imports aiohttp, litellm or the engine."""

from __future__ import annotations

import argparse
import sys

from daemon.cli.eval import add_eval_parser
from daemon.cli.experience import add_experience_parser
from daemon.cli.team import add_team_parsers


def _json(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _workspace(p: argparse.ArgumentParser) -> None:
    p.add_argument("-w", "--workspace", metavar="DIR",
                   help="the repository root (default: the git root above the current folder)")


def _follow(p: argparse.ArgumentParser) -> None:
    _json(p)
    _workspace(p)
    p.add_argument("--no-wait", action="store_true", help="print the job id and return at once")


def _scale(p: argparse.ArgumentParser) -> None:
    from daemon.teams.config import MERGE_WHEN, ORCHESTRATORS, TOPOLOGIES  # a small module: --help stays fast

    g = p.add_argument_group("teams at scale (override the chain file's keys)")
    g.add_argument("--teams", type=int, metavar="N", help="N teams solve the task at once; their solutions "
                   "are scored, pooled and merged (Croto)")
    g.add_argument("--topology", choices=TOPOLOGIES, help="a network of agents writes the code (MacNet)")
    g.add_argument("--agents", type=int, metavar="N", help="agents in the network (default 8)")
    g.add_argument("--orchestrator", choices=ORCHESTRATORS,
                   help="pick the next agent among the chain's loops: a heuristic, or a policy learnt from outcomes")
    g.add_argument("--merge", choices=MERGE_WHEN, help="Croto: always merge the best solutions (default), or "
                   "stop at one whose tests pass with nothing unfinished and no lint")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="troupe", description="A virtual software team next to your repository.")
    parser.add_argument("--version", action="version", version="troupe 0.1.0")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("daemon", help="run the daemon in the foreground (logs to stderr and TROUPE_HOME/logs)")
    sub.add_parser("up", help="start the daemon in the background (reports the running one if there is one)")
    sub.add_parser("down", help="stop the daemon gracefully (running jobs resume at the next start)")
    _json(sub.add_parser("status", help="is the daemon running; its jobs and watched workspaces"))

    p = sub.add_parser("ask", help="ask the team: a question, or a change to make (shows live progress)")
    p.add_argument("prompt", help="what to ask or what to change, in words")
    p.add_argument("-f", "--file", action="append", default=[], help="a file to focus on (repeatable)")
    p.add_argument("--kind", choices=["ask", "change", "build"], default="ask",
                   help="ask (answer only, default), change (propose a diff), build (new software)")
    p.add_argument("--apply", action="store_true", help="apply the proposed change when the job finishes")
    _scale(p)
    _follow(p)

    p = sub.add_parser("review", help="review files now (findings print as they come), or what a diff changed "
                       "(--diff BASE, --staged: text, JSON or SARIF for CI and pre-commit)")
    p.add_argument("files", nargs="*", metavar="FILE")
    _follow(p)
    from daemon.cli.review_diff import add_diff_arguments  # argparse only: cheap

    add_diff_arguments(p)

    p = sub.add_parser("test", help="run the tests, explain failures, propose fixes")
    p.add_argument("files", nargs="*", metavar="FILE", help="files whose tests matter (default: all)")
    _follow(p)

    p = sub.add_parser("jobs", help="list recent jobs")
    p.add_argument("--state", help="queued, running, waiting_for_answer, succeeded, failed, cancelled, "
                                   "active or all (default: all)")
    p.add_argument("-n", "--limit", type=int, default=20)
    p.add_argument("--open", nargs="?", const="", metavar="ID",
                   help="open the run viewer in a browser on job ID (or on the job list) and print its link")
    _json(p)

    p = sub.add_parser("findings", help="open review findings of a workspace or of one file")
    p.add_argument("file", nargs="?", help="only this file")
    p.add_argument("--all", action="store_true", help="also dismissed and resolved findings")
    _workspace(p)
    _json(p)

    p = sub.add_parser("watch", help="register a workspace, watch it, and print findings as they come")
    p.add_argument("path", nargs="?", default=".", help="the repository (default: the current folder)")
    p.add_argument("--no-follow", action="store_true", help="register and return")
    p.add_argument("--stop", action="store_true", help="stop watching this workspace")
    _json(p)

    for name, text in (("apply", "apply a proposed change to your files (refused if they changed since)"),
                       ("discard", "discard a proposed change")):
        p = sub.add_parser(name, help=text)
        p.add_argument("change_id")
        _json(p)

    p = sub.add_parser("answer", help="answer the question a waiting job asked")
    p.add_argument("job_id")
    p.add_argument("text")
    p.add_argument("--question", help="the question id (default: the one it is waiting on)")
    _json(p)

    p = sub.add_parser("cancel", help="cancel a queued or running job")
    p.add_argument("job_id")
    _json(p)

    add_experience_parser(sub, _json)
    add_eval_parser(sub)
    add_team_parsers(sub)

    # The adapters own their options: `troupe lsp …` / `troupe mcp …` go to lsp.app / mcp_server.app untouched.
    sub.add_parser("lsp", help="the language server over stdio (`troupe lsp --help` lists its options)",
                   add_help=False)
    sub.add_parser("mcp", help="the team as an MCP server over stdio, for agent clients (`troupe mcp --help`)",
                   add_help=False)
    from slack_bot.__main__ import add_arguments as slack_arguments  # argparse only: cheap

    slack_arguments(sub.add_parser("slack", help="the Slack bot (Socket Mode, or --http --port N)"))

    doctor = sub.add_parser("doctor", help="check the model, the database, the daemon and library versions")
    doctor.add_argument("--json", action="store_true", help="machine-readable output")
    doctor.add_argument("--no-model", action="store_true", help="skip the live model check")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["lsp"]:
        from lsp.app import main as lsp_main

        return lsp_main(argv[1:])
    if argv[:1] == ["mcp"]:
        from mcp_server.app import main as mcp_main

        return mcp_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "doctor":
        from daemon.doctor import run_doctor

        return run_doctor(json_output=args.json, check_model=not args.no_model)
    if args.command == "slack":
        from slack_bot.__main__ import run as run_slack

        return run_slack(args)
    if args.command == "eval":
        from daemon.cli.eval import run_eval

        return run_eval(args)
    if args.command in ("server", "worker"):
        from daemon.cli.team import run_team

        return run_team(args)
    if args.command == "daemon":
        from daemon.service.process import run_foreground

        return run_foreground()
    if args.command == "review":
        if args.diff is not None or args.staged:
            if args.no_wait:
                parser.error("--no-wait does not go with --diff or --staged: a diff review waits for its findings")
            from daemon.cli.review_diff import run_review_diff

            return run_review_diff(args)
        if args.format != "text" or args.fail_on != "error" or args.lane:
            parser.error("--format, --fail-on, --static and --model go with --diff BASE or --staged")
        if not args.files:
            parser.error("review needs FILE…, or --diff BASE, or --staged")
    if args.command == "experience" and args.experience_command is None:
        parser.parse_args(["experience", "--help"])
    from daemon.cli.commands import run_command

    return run_command(args)


if __name__ == "__main__":
    sys.exit(main())
