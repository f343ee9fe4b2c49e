"""Scaling keys in chain files and on the command line: `teams = 4`, `topology = "small-world"`,
`agents = 32`, `orchestrator = "learned"`; mistakes are named with their file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.loader import ChainError, load_chain_file
from daemon.api.protocol import ProtocolError, SubmitJob
from daemon.cli.main import build_parser
from daemon.teams.config import TeamsConfig
from daemon.teams.run import TeamsRunner
from tests.teams.conftest import MINI_CHAIN


def write_chain(tmp_path: Path, extra: str) -> Path:
    path = tmp_path / "mini.toml"
    path.write_text(MINI_CHAIN.format(extra=extra))
    return path


def test_a_chain_file_declares_teams_topology_agents_and_orchestrator(tmp_path: Path) -> None:
    chain = load_chain_file(write_chain(tmp_path, 'teams = 4\ntopology = "small-world"\nagents = 32\n'
                                                  'orchestrator = "learned"\npool_after = ["coding"]\n'
                                                  'team_temperatures = [0.1, 0.9]\nteam_models = ["openai/a"]'))
    scale = chain.scale
    assert (scale.teams, scale.topology, scale.agents, scale.orchestrator) == (4, "small-world", 32, "learned")
    assert scale.pool_after == ("coding",) and [scale.temperature(t) for t in range(4)] == [0.1, 0.9, 0.1, 0.9]
    assert scale.model(3) == "openai/a"
    assert load_chain_file(write_chain(tmp_path, "")).scale.plain


@pytest.mark.parametrize(("extra", "line", "message"), [
    ("teams = 40", 5, "teams must be between 1 and 16, got 40"),
    ('topology = "ring"', 5, "topology = 'ring' is not one of: chain, star"),
    ('orchestrator = "magic"', 5, "orchestrator = 'magic' is not one of: heuristic, learned"),
    ("agents = 8", 5, "agents needs a topology"),
    ('teams = 2\npool_after = ["design"]', 6, "pool_after names 'design', which is not a phase or loop"),
    ('topology = "star"\nnetwork_phase = "review_comment"', 6, "network_phase = 'review_comment' is not a phase"),
    ('team_temperatures = [0.5, 3]', 5, "every temperature must be a number from 0 to 2"),
    ('teams = 4\nmerge = "sometimes"', 6, "merge = 'sometimes' is not one of: always, when-needed"),
])
def test_a_wrong_scaling_key_is_an_error_at_its_line(tmp_path: Path, extra: str, line: int, message: str) -> None:
    with pytest.raises(ChainError) as caught:
        load_chain_file(write_chain(tmp_path, extra))
    assert caught.value.line == line and message in caught.value.reason


def test_the_command_line_flags_become_the_jobs_options() -> None:
    args = build_parser().parse_args(["ask", "--kind", "change", "add a flag", "--teams", "4", "--topology",
                                      "small-world", "--agents", "32", "--orchestrator", "learned"])
    assert (args.teams, args.topology, args.agents, args.orchestrator) == (4, "small-world", 32, "learned")
    assert build_parser().parse_args(["ask", "x", "--teams", "4", "--merge", "when-needed"]).merge == "when-needed"
    with pytest.raises(SystemExit):
        build_parser().parse_args(["ask", "x", "--topology", "ring"])


def test_the_protocol_refuses_bad_options_with_a_readable_error() -> None:
    def submit(**options: object) -> SubmitJob:  # as a client's JSON reaches the daemon
        return SubmitJob.from_json({"kind": "change", "workspace": "/repo", "prompt": "p", "options": options})

    assert submit(teams=4, agents=32, topology="mesh").options.scaling() == {"teams": 4, "agents": 32,
                                                                             "topology": "mesh"}
    with pytest.raises(ProtocolError, match=r"options\.teams must be between 1 and 16, got 0"):
        submit(teams=0)
    with pytest.raises(ProtocolError, match=r"options\.orchestrator = 'smart' is not one of"):
        submit(orchestrator="smart")
    with pytest.raises(ProtocolError, match=r"options\.merge = 'never' is not one of: always, when-needed"):
        submit(merge="never")
    with pytest.raises(ProtocolError, match=r"options\.teams: Expected `int \| null`, got `str`"):
        submit(teams="four")
    with pytest.raises(ProtocolError, match=r"options: unknown field\(s\) team; known fields are agents"):
        submit(team=2)
    with pytest.raises(ProtocolError, match=r"options\.diff is not an option of a change job; a change job takes: "):
        submit(diff="--- a/x\n")


def test_job_options_win_over_the_chain_file() -> None:
    chain_config = TeamsConfig(teams=4, topology="star", agents=8)
    merged = chain_config.with_options({"teams": 2, "agents": None, "orchestrator": "heuristic"})
    assert (merged.teams, merged.topology, merged.agents, merged.orchestrator) == (2, "star", 8, "heuristic")
    assert chain_config.merge == "always" and chain_config.with_options({"merge": "when-needed"}).merge == "when-needed"


async def test_scaling_a_chain_that_cannot_scale_fails_the_job_with_the_reason(gateway) -> None:
    context = RunContext.of(gateway, _ignore)
    outcome = await TeamsRunner(context, options={"teams": 3}).run(JobSpec(chain="ask", task="why?",
                                                                           workspace=Path("/")))
    assert not outcome.ok and "needs a chain that writes code" in outcome.error
    outcome = await TeamsRunner(context, options={"agents": 5}).run(JobSpec(chain="build", task="x"))
    assert not outcome.ok and "needs a topology" in outcome.error


async def _ignore(event) -> None:  # type: ignore[no-untyped-def]
    return None
