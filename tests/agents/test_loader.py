"""Chains as data: the built-in chains load, bad files are rejected with file, line and reason,
and a repository's own chains and roles override the built-in ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.agents.loader import ChainError, load_chain_file, load_chains
from daemon.agents.model import Loop, Phase, Produces, Tool, Until


def test_builtin_chains_load_with_their_steps():
    chains = load_chains()
    assert set(chains.chains) >= {"build", "change", "review", "test", "ask"}
    build = chains.get("build")
    assert [s.name for s in build.steps] == ["coding", "completion", "review", "run", "rerun", "environment",
                                             "manual"]
    review_loop = build.steps[2]
    assert isinstance(review_loop, Loop) and review_loop.until is Until.FINISHED and review_loop.max_cycles == 3
    assert [p.name for p in review_loop.phases] == ["review_comment", "review_modify"]
    assert build.start == "empty" and build.writes_code
    review = chains.get("review")
    assert isinstance(review.steps[0], Tool) and not review.writes_code
    assert [s.name for s in review.steps] == ["static_check", "doctests", "repair", "related_tests", "repair_tests",
                                             "review", "reproduce"]
    assert review.time_limit == 50 and build.time_limit is None  # a review on save ends within a minute
    repair, reviewer = review.steps[2], review.steps[5]
    assert isinstance(repair, Phase) and repair.produces is Produces.REPAIR and repair.token_cap == 600
    assert repair.skip_if_empty == "examples"
    assert isinstance(reviewer, Phase) and reviewer.produces is Produces.FINDINGS and reviewer.skip_if_findings
    assert chains.roles["programmer"].prompt


def test_unknown_chain_name_lists_the_known_ones():
    with pytest.raises(KeyError, match="known: ask, build"):
        load_chains().get("nope")


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


GOOD_STEP = '''
[[steps]]
phase = "answer"
instructor = "cto"
assistant = "programmer"
produces = "answer"
template = "Question: {task}"
'''


def test_toml_syntax_error_names_file_and_line(tmp_path):
    path = _write(tmp_path / "bad.toml", 'name = "bad"\n\n[[steps]\nphase = "x"\n')
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert err.value.file == str(path) and err.value.line == 3
    assert "not valid TOML" in str(err.value) and str(err.value).startswith(f"{path}:3:")


def test_unknown_role_names_the_line_of_the_key(tmp_path):
    text = 'name = "x"\n' + GOOD_STEP + GOOD_STEP.replace('"answer"\ninstructor = "cto"',
                                                         '"second"\ninstructor = "janitor"')
    path = _write(tmp_path / "x.toml", text)
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert "unknown role 'janitor'" in err.value.reason
    assert text.splitlines()[err.value.line - 1] == 'instructor = "janitor"'


def test_a_phase_continues_only_an_earlier_phase_of_the_same_assistant(tmp_path):
    second = GOOD_STEP.replace('"answer"\ninstructor', '"more"\ninstructor')
    continuing = second.replace('produces = "answer"', 'produces = "answer"\ncontinues = "answer"')
    good = 'name = "x"\n' + GOOD_STEP + continuing
    chain = load_chain_file(_write(tmp_path / "good.toml", good))
    assert [p.continues for p in chain.phases()] == [None, "answer"]
    for name, text, reason in [
        ("later", 'name = "x"\n' + GOOD_STEP.replace('produces = "answer"', 'produces = "answer"\ncontinues = "more"')
         + second, "phase 'answer' continues 'more', which is not an earlier phase"),
        ("other", 'name = "x"\n' + GOOD_STEP + second.replace('assistant = "programmer"', 'assistant = "reviewer"\n'
                                                              'continues = "answer"'),
         "phase 'more' continues 'answer', which another assistant speaks in ('programmer', not 'reviewer')"),
    ]:
        with pytest.raises(ChainError) as err:
            load_chain_file(_write(tmp_path / f"{name}.toml", text))
        assert err.value.reason == reason
        assert text.splitlines()[err.value.line - 1].startswith("continues =")


def test_unknown_template_field_and_unknown_kind_are_rejected_at_their_lines(tmp_path):
    text = 'name = "x"\n' + GOOD_STEP.replace("{task}", "{task} {colour}")
    path = _write(tmp_path / "x.toml", text)
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert "unknown field {colour}" in err.value.reason
    assert text.splitlines()[err.value.line - 1].startswith("template =")

    text = 'name = "x"\n' + GOOD_STEP.replace('produces = "answer"', 'produces = "poem"')
    path = _write(tmp_path / "y.toml", text)
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert "produces = 'poem' is not one of" in err.value.reason
    assert text.splitlines()[err.value.line - 1] == 'produces = "poem"'


def test_missing_template_and_typoed_key_in_a_loop_phase(tmp_path):
    text = '''name = "x"

[[steps]]
loop = "review"
until = "finished"

[[steps.phases]]
phase = "comment"
instructor = "programmer"
assistant = "reviewer"
template = "{code}"

[[steps.phases]]
phase = "modify"
instructor = "reviewer"
assistant = "programmer"
max_turn = 3
template = "{comment}"
'''
    path = _write(tmp_path / "x.toml", text)
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert "unknown key 'max_turn'" in err.value.reason and err.value.line == 17

    path.write_text(text.replace('max_turn = 3\ntemplate = "{comment}"\n', ""))
    with pytest.raises(ChainError) as err:
        load_chain_file(path)
    assert "missing required key 'template'" in err.value.reason and err.value.line == 13


def test_a_step_must_be_one_kind_and_loops_need_a_known_condition(tmp_path):
    path = _write(tmp_path / "x.toml", 'name = "x"\n\n[[steps]]\ntool = "tests"\nphase = "p"\n')
    with pytest.raises(ChainError, match=r"x.toml:3: a step needs exactly one of"):
        load_chain_file(path)
    path = _write(tmp_path / "y.toml", 'name = "y"\n\n[[steps]]\nloop = "l"\nuntil = "forever"\nphases = []\n')
    with pytest.raises(ChainError, match=r"y.toml:5: until = 'forever' is not one of"):
        load_chain_file(path)


def test_repo_chain_overrides_builtin_and_adds_roles(tmp_path):
    _write(tmp_path / ".troupe/chains/roles.toml",
           '[roles.security]\nprompt = "You look for security holes."\nmodel = "openai/big-model"\n')
    _write(tmp_path / ".troupe/chains/review.toml", '''name = "review"
description = "Security review only."

[[steps]]
phase = "audit"
instructor = "cto"
assistant = "security"
produces = "findings"
template = "{target}\\n{findings_format}"
''')
    _write(tmp_path / ".troupe/chains/triage.toml", 'name = "triage"\n' + GOOD_STEP)
    chains = load_chains(tmp_path)
    review = chains.get("review")
    assert review.description == "Security review only." and review.source.endswith(".troupe/chains/review.toml")
    assert [s.name for s in review.steps] == ["audit"]
    assert review.roles["security"].model == "openai/big-model"
    assert "triage" in chains.chains and "build" in chains.chains
    assert load_chains().get("review").steps[0].name == "static_check"  # other repos keep the built-in


def test_a_bad_repo_chain_is_reported_not_ignored(tmp_path):
    _write(tmp_path / ".troupe/chains/review.toml", 'name = "review"\n' + GOOD_STEP.replace('"cto"', '"nobody"'))
    with pytest.raises(ChainError, match=r"\.troupe/chains/review\.toml:5: unknown role 'nobody'"):
        load_chains(tmp_path)


def test_a_phase_may_set_its_assistants_temperature_within_0_and_2(tmp_path):
    assert [p.temperature for p in load_chains().get("test").phases()] == [0.7, None, None]  # the patch is sampled
    warm = load_chain_file(_write(tmp_path / "chain.toml", GOOD_STEP + "temperature = 1\n"))
    assert warm.phases()[0].temperature == 1
    with pytest.raises(ChainError, match=r"chain.toml:8: temperature must be between 0 and 2, got 2.5"):
        load_chain_file(_write(tmp_path / "chain.toml", GOOD_STEP + "temperature = 2.5\n"))


def test_every_phase_has_a_token_cap_by_what_it_produces_unless_the_file_sets_one(tmp_path):
    chains = load_chains()
    caps = {p.name: p.max_tokens for p in chains.get("change").phases()}
    assert caps == {"plan": 512, "code": 3072, "review_comment": 512, "review_modify": 3072, "rewrite": 3072,
                    "test_fix": 3072}
    assert [p.max_tokens for p in chains.get("review").phases()] == [600, 600, 320, 256]  # set in review.toml
    test_loop = next(s for s in chains.get("change").steps if isinstance(s, Loop) and s.until is Until.TESTS_PASS)
    assert test_loop.without_tests == "skip" and not test_loop.phases[0].new_files
    with pytest.raises(ChainError, match=r"chain.toml:8: max_tokens must be at least 16, got 4"):
        load_chain_file(_write(tmp_path / "chain.toml", GOOD_STEP + "max_tokens = 4\n"))
    with pytest.raises(ChainError, match=r"chain.toml:1: time_limit is in seconds and must be at least 1, got 0"):
        load_chain_file(_write(tmp_path / "chain.toml", "time_limit = 0\n" + GOOD_STEP))
    with pytest.raises(ChainError, match=r"time_limit_covers needs a time_limit"):
        load_chain_file(_write(tmp_path / "chain.toml", 'time_limit_covers = ["x"]\n' + GOOD_STEP))
    with pytest.raises(ChainError, match=r"time_limit_covers names 'reveiw', which is no phase of this chain"):
        load_chain_file(_write(tmp_path / "chain.toml", 'time_limit = 9\ntime_limit_covers = ["reveiw"]\n' + GOOD_STEP))
    bad_loop = ('[[steps]]\nloop = "t"\nuntil = "tests_pass"\nwithout_tests = "maybe"\n'
                '[[steps.phases]]\nphase = "fix"\ninstructor = "cto"\nassistant = "programmer"\ntemplate = "x"\n')
    with pytest.raises(ChainError, match="without_tests = 'maybe' is not one of: run, skip"):
        load_chain_file(_write(tmp_path / "loop.toml", bad_loop))
