"""The documented GitHub Actions recipe (docs/ci/troupe-review.yml) is a valid workflow (checked with
check-jsonschema's vendored GitHub workflow schema, offline) that runs on pull requests, may upload
to code scanning, and uploads what its review step writes. The review step's own script is run for
real in tests/review/test_model_lane.py."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.daemon.conftest import REPO

RECIPE = REPO / "docs" / "ci" / "troupe-review.yml"
BIN = Path(sys.executable).parent


def recipe() -> dict[Any, Any]:
    return yaml.safe_load(RECIPE.read_text())


def step(name_part: str) -> dict[str, Any]:
    (found,) = [s for s in recipe()["jobs"]["review"]["steps"] if name_part in s.get("name", "")]
    return found


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, timeout=60)


def test_the_recipe_is_a_valid_github_workflow_and_a_broken_one_is_not(tmp_path: Path) -> None:
    assert validate(RECIPE).returncode == 0, validate(RECIPE).stdout
    broken = tmp_path / "broken.yml"
    broken.write_text(RECIPE.read_text().replace("runs-on: ubuntu-latest", "runs_on: ubuntu-latest"))
    assert validate(broken).returncode != 0


def test_it_reviews_the_pull_requests_diff_and_uploads_the_sarif_it_wrote() -> None:
    workflow = recipe()
    assert "pull_request" in workflow[True]  # YAML 1.1 reads the key `on` as True
    assert workflow["permissions"]["security-events"] == "write"
    assert recipe()["jobs"]["review"]["steps"][0]["with"]["fetch-depth"] == 0
    review = step("Review the changed lines")
    assert review["env"]["BASE"] == "origin/${{ github.base_ref }}"
    assert 'troupe review --diff "$BASE" --model --format sarif' in review["run"] and "> troupe.sarif" in review["run"]
    upload = step("Upload the findings")
    assert upload["uses"].startswith("github/codeql-action/upload-sarif@")
    assert upload["with"]["sarif_file"] == "troupe.sarif"
    install = step("Install Troupe")["run"]
    assert "requirements/local-model.txt" in install and "[local]" in install
    for name in ("local-runtime.txt", "local-model.txt"):
        assert (REPO / "requirements" / name).is_file()
