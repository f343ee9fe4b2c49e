"""The static lane's lint: the project's ruff configuration, else ruff's defaults; severities,
fixes and messages as the editor shows them; and the short summary a review prompt gets."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from daemon.lint.ruff import lint_text
from daemon.lint.summary import lint_summary

SOURCE = "import os\nfrom typing import Optional\n\n\ndef f(x: Optional[int]):\n    return undefined_six\n"


async def test_without_ruff_configuration_only_ruffs_defaults_apply(tmp_path: Path) -> None:
    result = await lint_text(str(tmp_path / "util.py"), SOURCE, str(tmp_path))
    assert not result.configured and result.error is None
    assert [d.rule for d in result.diagnostics] == ["F401", "F821"]  # no I001, UP007, UP045…


async def test_the_projects_own_ruff_configuration_decides(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.ruff.lint]\nselect = ["F821", "UP"]\n')
    (tmp_path / "pkg").mkdir()
    result = await lint_text(str(tmp_path / "pkg" / "util.py"), SOURCE, str(tmp_path))
    assert result.configured
    assert sorted({d.rule for d in result.diagnostics}) == ["F821", "UP045"]


async def test_an_undefined_name_is_an_error_and_an_unused_import_offers_ruffs_safe_fix(tmp_path: Path) -> None:
    result = await lint_text(str(tmp_path / "a.py"), SOURCE, str(tmp_path))
    unused, undefined = result.diagnostics
    assert (undefined.severity, undefined.message) == ("major", "Undefined name `undefined_six`")
    assert (undefined.start_line, undefined.start_col, undefined.end_col) == (6, 12, 25)
    assert unused.severity == "minor" and unused.message == "`os` imported but unused"
    assert unused.fix is not None and unused.fix.applicability == "safe"
    assert [(e.start_line, e.start_col, e.end_line, e.end_col, e.text) for e in unused.fix.edits] == [(1, 1, 2, 1, "")]


async def test_the_text_is_linted_not_the_file_on_disk(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n")
    result = await lint_text(str(tmp_path / "a.py"), "print(y)\n", str(tmp_path))
    assert [d.rule for d in result.diagnostics] == ["F821"] and len(result.content_hash) == 64


def test_the_prompt_gets_a_short_summary_of_any_amount_of_lint() -> None:
    issues = [SimpleNamespace(file="util.py", line=n, code=f"X{n % 9}", message="m " * 50) for n in range(1, 200)]
    summary = lint_summary(issues)
    assert summary.startswith("199 lint issue(s)") and len(summary) < 800
    assert "X1 ×23 in util.py (line 1, 10, 19, 28, …)" in summary and "and 66 more of 3 other rule(s)" in summary
    assert lint_summary([]) == "(nothing)"
