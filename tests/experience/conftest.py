"""Fixtures for experience tests: an AsyncStore with a workspace, a gateway and a runner factory
pointed at the fake LLM server (the real litellm HTTP path), and scripted replies for the build
chain whose tests are a fast check run in the sandbox."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from daemon.agents.context import RunContext
from daemon.agents.job import JobSpec
from daemon.agents.runner import ChainRunner
from daemon.config import ModelSettings, Secret
from daemon.experience.session import JobExperience
from daemon.experience.settings import ExperienceSettings
from daemon.llm.gateway import Gateway
from storage import AsyncStore
from tests.agents.conftest import Recorder
from tests.fakes.llm_server import FakeLLM

# The tests of the built program: its doctests, run in the sandbox (pytest would cost seconds a run).
CHECK = "python -m doctest wordcount.py"

GOOD_CODE = '''```python wordcount.py
import sys


def count_words(text):
    """The number of words.

    >>> count_words("a b  c")
    3
    """
    return len(text.split())


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    with open(args[0]) as handle:
        print(count_words(handle.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
```'''

BUGGY_CODE = GOOD_CODE.replace("return len(text.split())", "return len(text.split(' '))")
FIX = '''wordcount.py
```python
<<<<<<< SEARCH
    return len(text.split(' '))
=======
    return len(text.split())
>>>>>>> REPLACE
```'''


def script_quiet_build(llm: FakeLLM, code: str = GOOD_CODE) -> None:
    """A build where the reviewer has nothing to say and no third-party package is needed."""
    llm.add_rule(code, user="Reply with every file of the program in full")
    llm.add_rule("<INFO> Finished", user="Give the ONE most important problem")
    llm.add_rule(FIX, user="The program fails when it runs:")
    llm.add_rule("No third-party package is needed.", user="Write requirements.txt")
    llm.add_rule("# wordcount\n\nCounts words: `python wordcount.py FILE`.\n", user="Write README.md")


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[AsyncStore]:
    opened = await AsyncStore.open(tmp_path / "troupe.db")
    yield opened
    await opened.close()


@pytest.fixture
def gateway(fake_llm: FakeLLM) -> Gateway:
    settings = ModelSettings(default="openai/fake-model", api_base=fake_llm.api_base, api_key=Secret("sk-fake"),
                             max_retries=0, timeout=20)
    return Gateway(settings)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def run_job(gateway: Gateway, recorder: Recorder, store: AsyncStore, tmp_path: Path) -> Callable[..., Any]:
    """Run one job with experience on; returns (outcome, the JobExperience)."""

    async def run(task: str, *, job_id: str, chain: str = "build", workspace_id: int | None = None,
                  settings: ExperienceSettings | None = None, experience: Any = None, **spec: Any) -> Any:
        experience = experience or JobExperience(store, settings or ExperienceSettings(), job_id=job_id,
                                                 workspace_id=workspace_id)
        context = RunContext.of(gateway, recorder, scratch_dir=tmp_path / "scratches", experience=experience)
        runner = ChainRunner(context)
        spec.setdefault("test_command", CHECK if chain == "build" else None)
        outcome = await runner.run(JobSpec(chain=chain, task=task, job_id=job_id, **spec))
        return outcome, experience

    return run
