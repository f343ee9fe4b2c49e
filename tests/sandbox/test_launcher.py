"""The launcher's own parsing: mountinfo escapes, and the spec it is handed."""

from __future__ import annotations

import marshal
from pathlib import Path

import pytest

from daemon.sandbox import Isolation, run_sandboxed
from daemon.sandbox.isolation import encode_spec
from daemon.sandbox.launch import unescape_octal
from tests.sandbox.conftest import python


@pytest.mark.parametrize(
    ("escaped", "path"),
    [
        ("/plain/path", "/plain/path"),
        (r"/with\040space", "/with space"),
        (r"/tab\011and\012newline", "/tab\tand\nnewline"),
        (r"/back\134slash", "/back\\slash"),
        (r"/not\04octal", r"/not\04octal"),
        (r"/not\089octal", r"/not\089octal"),
        (r"/trailing\\", "/trailing\\\\"),
    ],
)
def test_mountinfo_escapes_are_undone(escaped: str, path: str) -> None:
    assert unescape_octal(escaped) == path


def test_the_spec_survives_its_trip_on_the_command_line() -> None:
    spec = {"cwd": "/tmp/a b/\udcff", "writable": ["/x"], "rlimits": {"CPU": (3, 4)}, "uid": None, "flag": True}

    word = encode_spec(spec)

    assert word.isalnum() and marshal.loads(bytes.fromhex(word)) == spec


async def test_a_scratch_dir_whose_name_has_a_space_stays_writable(tmp_path: Path, isolation: Isolation) -> None:
    if not isolation.confine_writes:
        pytest.skip(f"this machine cannot keep the sandbox from writing elsewhere: {isolation.limitation}")
    scratch = tmp_path / "scratch dir\twith blanks"
    scratch.mkdir()

    result = await run_sandboxed(python("open('out.txt', 'w').write('ok')"), cwd=scratch, timeout=10)

    assert result.returncode == 0, result.stderr
    assert (scratch / "out.txt").read_text() == "ok"
