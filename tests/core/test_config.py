"""Settings: defaults < user file < repository file < editor overrides < environment, with errors that
name the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.config import ConfigError, Secret, load_settings, with_overrides


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for name in ("TROUPE_MODEL", "TROUPE_API_BASE", "TROUPE_API_KEY", "TROUPE_BUDGET_TOKENS",
                 "TROUPE_BUDGET_DOLLARS", "TROUPE_LLM_TIMEOUT", "TROUPE_LLM_RETRIES", "TROUPE_LLM_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)


def test_a_fresh_checkout_needs_nothing_but_has_no_model(tmp_path: Path) -> None:
    settings = load_settings(tmp_path)
    assert settings.model.default is None
    assert settings.review_on_save is True
    assert settings.sources == []


def test_repository_file_sets_models_per_role_and_budget(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text(
        '[model]\ndefault = "openai/a"\n[model.roles]\nreviewer = "anthropic/b"\n'
        "[budget]\ntokens = 1000\ndollars = 2\n[test]\ncommand = \"pytest -x\"\n"
    )
    settings = load_settings(tmp_path)
    assert settings.model.for_role("reviewer") == "anthropic/b"
    assert settings.model.for_role("programmer") == "openai/a"
    assert (settings.budget.tokens, settings.budget.dollars) == (1000, 2.0)
    assert settings.test_command == "pytest -x"


def test_pyproject_tool_table_is_read_when_there_is_no_dotfile(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.troupe]\nmodel = "ollama/q"\n')
    settings = load_settings(tmp_path)
    assert settings.model.default == "ollama/q"
    assert settings.sources[0].endswith("[tool.troupe]")


def test_environment_wins_over_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".troupe.toml").write_text('[model]\ndefault = "openai/a"\n')
    monkeypatch.setenv("TROUPE_MODEL", "openai/env")
    monkeypatch.setenv("TROUPE_API_KEY", "sk-secret-value-123")
    monkeypatch.setenv("TROUPE_BUDGET_TOKENS", "50")
    settings = load_settings(tmp_path)
    assert settings.model.default == "openai/env"
    assert settings.budget.tokens == 50
    assert isinstance(settings.model.api_key, Secret)
    assert "sk-secret-value-123" not in repr(settings)


def test_user_file_is_overridden_by_repository_file(tmp_path: Path) -> None:
    user = tmp_path / "xdg" / "troupe" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[model]\ndefault = "openai/user"\ntimeout = 5\n')
    (tmp_path / ".troupe.toml").write_text('[model]\ndefault = "openai/repo"\n')
    settings = load_settings(tmp_path)
    assert settings.model.default == "openai/repo"
    assert settings.model.timeout == 5


def test_invalid_toml_names_the_file(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text("[model\n")
    with pytest.raises(ConfigError, match=r"\.troupe\.toml: not valid TOML"):
        load_settings(tmp_path)


def test_wrong_type_names_the_key(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text('[budget]\ntokens = "lots"\n')
    with pytest.raises(ConfigError, match=r"budget\.tokens: expected int"):
        load_settings(tmp_path)


def test_a_providers_model_may_be_given_its_speed_and_it_must_be_positive(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text("[model]\ntokens_per_s = 80\nprompt_per_s = 900.5\n")
    model = load_settings(tmp_path, env=False).model
    assert (model.tokens_per_s, model.prompt_per_s) == (80, 900.5)
    (tmp_path / ".troupe.toml").write_text("[model]\ntokens_per_s = 0\n")
    with pytest.raises(ConfigError, match=r"model\.tokens_per_s must be above 0, got 0"):
        load_settings(tmp_path, env=False)


def test_bad_environment_number_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TROUPE_LLM_TIMEOUT", "soon")
    with pytest.raises(ConfigError, match="TROUPE_LLM_TIMEOUT='soon'"):
        load_settings(tmp_path)


def test_editor_overrides_win_over_the_files_but_not_over_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".troupe.toml").write_text(
        '[model]\ndefault = "openai/repo"\n[model.roles]\nreviewer = "anthropic/r"\n'
        "[review]\non_save = true\n[test]\non_save = false\n")
    overrides = {"model": "ollama/editor", "review_on_save": False, "test_on_save": True}
    settings = with_overrides(load_settings(tmp_path), overrides)
    assert settings.model.default == "ollama/editor"
    assert settings.model.for_role("reviewer") == "anthropic/r"  # a per-role model stays more specific
    assert (settings.review_on_save, settings.test_on_save) == (False, True)
    assert settings.sources[-1] == "editor overrides"
    monkeypatch.setenv("TROUPE_MODEL", "openai/env")
    assert with_overrides(load_settings(tmp_path), overrides).model.default == "openai/env"


def test_empty_or_mistyped_overrides_change_nothing(tmp_path: Path) -> None:
    (tmp_path / ".troupe.toml").write_text('model = "openai/repo"\n[review]\non_save = false\n')
    settings = with_overrides(load_settings(tmp_path), {"model": "", "review_on_save": "yes", "test_on_save": None})
    assert (settings.model.default, settings.review_on_save, settings.test_on_save) == ("openai/repo", False, False)
    assert with_overrides(load_settings(tmp_path), None).sources == [str(tmp_path / ".troupe.toml")]
