"""Joining a local model from its parts, and choosing the model and its threads — with small fake part
packages made here (the real models are hundreds of MB; tests/local/test_local_model.py uses one)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from daemon.config import ConfigError, ModelSettings, load_settings
from daemon.llm.local import (
    acceptance,
    choose_batch_threads,
    choose_draft,
    choose_threads,
    ensure_model,
    model_path,
    server_for,
    speed_file,
)
from daemon.llm.local_files import LocalModelError
from daemon.llm.local_models import MODELS, QWEN_05B, QWEN_15B, LocalModelSpec, UnknownLocalModel, choose

CHUNKS = (b"GGUF" + b"a" * 60, b"b" * 64, b"tail")


def _fake_parts(root: Path, prefix: str, chunks: tuple[bytes, ...]) -> None:
    """Part packages shaped like the real ones: ``<prefix>N/__init__.py`` with ``get_part_path()``."""
    for i, chunk in enumerate(chunks, start=1):
        pkg = root / f"{prefix}{i}"
        (pkg / "data").mkdir(parents=True)
        (pkg / "data" / f"part{i:02d}.bin").write_bytes(chunk)
        (pkg / "__init__.py").write_text(
            "import os\n\ndef get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i:02d}.bin')\n")


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalModelSpec]:
    prefix = f"fake_part_{tmp_path.name.replace('-', '_')}_"
    _fake_parts(tmp_path / "site", prefix, CHUNKS)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    yield LocalModelSpec(
        name="fake-model", file="fake.gguf", sha256=hashlib.sha256(b"".join(CHUNKS)).hexdigest(),
        size=sum(map(len, CHUNKS)), requirements="requirements/fake.txt",
        parts=tuple((f"{prefix}{i}", hashlib.sha256(c).hexdigest(), len(c)) for i, c in enumerate(CHUNKS, start=1)))
    for name in [m for m in sys.modules if m.startswith(prefix)]:
        del sys.modules[name]


def _part_file(tmp_path: Path, spec: LocalModelSpec, index: int) -> Path:
    return tmp_path / "site" / spec.part_modules[index] / "data" / f"part{index + 1:02d}.bin"


def test_good_parts_are_joined_into_the_home_and_verified(spec: LocalModelSpec, tmp_path: Path) -> None:
    model = ensure_model(tmp_path / "home", spec)
    assert model == model_path(tmp_path / "home", spec) == tmp_path / "home" / "models" / "fake.gguf"
    assert model.read_bytes() == b"".join(CHUNKS)
    assert model.with_suffix(".verified").exists()
    assert [p.name for p in model.parent.iterdir() if p.name.startswith(".")] == []  # no half-written file left


def test_a_part_of_the_wrong_size_is_refused_naming_it(spec: LocalModelSpec, tmp_path: Path) -> None:
    _part_file(tmp_path, spec, 1).write_bytes(b"b" * 63)
    with pytest.raises(LocalModelError, match=rf"refusing the local model part {spec.part_modules[1]} .*"
                                              r"it is 63 bytes, expected 64\. Reinstall it"):
        ensure_model(tmp_path / "home", spec)
    assert not any((tmp_path / "home" / "models").iterdir())  # nothing half-joined stays behind


def test_a_corrupt_part_of_the_right_size_is_refused_naming_it(spec: LocalModelSpec, tmp_path: Path) -> None:
    _part_file(tmp_path, spec, 2).write_bytes(b"TAIL")
    with pytest.raises(LocalModelError, match=rf"refusing the local model part {spec.part_modules[2]} .*"
                                              r"\(corrupt\)\. Reinstall it: pip install --force-reinstall"):
        ensure_model(tmp_path / "home", spec)
    assert not model_path(tmp_path / "home", spec).exists()


def test_a_missing_part_says_how_to_install_the_model(spec: LocalModelSpec, tmp_path: Path) -> None:
    missing = LocalModelSpec(**{**spec.__dict__, "parts": (*spec.parts, ("no_such_part_module_4", "0" * 64, 1))})
    with pytest.raises(LocalModelError, match=r"no_such_part_module_4 is not installed; install the local model "
                                              r"with `scripts/start` or: pip install .*-r requirements/fake.txt"):
        ensure_model(tmp_path / "home", missing)


def test_a_joined_file_of_the_wrong_size_is_refused(spec: LocalModelSpec, tmp_path: Path) -> None:
    model = ensure_model(tmp_path / "home", spec)
    model.write_bytes(model.read_bytes() + b"x")
    with pytest.raises(LocalModelError, match=r"refusing the local model .*fake\.gguf: it is 133 bytes .*"
                                              r"expected 132 bytes"):
        ensure_model(tmp_path / "home", spec)


def test_the_registry_knows_both_models_with_their_sizes_and_requirements() -> None:
    assert MODELS["qwen2.5-coder-1.5b"].size == 1_117_320_768 == sum(size for _, _, size in QWEN_15B.parts)
    assert QWEN_15B.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert QWEN_05B.size == sum(size for _, _, size in QWEN_05B.parts)
    for model in MODELS.values():
        pins = model.requirements_path.read_text()
        assert pins.count("--hash=sha256:") == len(model.parts)
        assert all(module.replace("_", "-") in pins for module in model.part_modules)


@pytest.mark.parametrize(("env", "configured", "expected"), [
    (None, None, "qwen2.5-coder-0.5b"),
    ("1", None, "qwen2.5-coder-0.5b"),
    ("1", "qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b"),
    ("qwen2.5-coder-1.5b", None, "qwen2.5-coder-1.5b"),
    ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"),  # the environment wins
    ("off", "qwen2.5-coder-1.5b", None),
    ("0", None, None),
])
def test_the_local_model_is_chosen_by_the_environment_then_the_config(
        env: str | None, configured: str | None, expected: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if env is None:
        monkeypatch.delenv("TROUPE_LOCAL_MODEL", raising=False)
    else:
        monkeypatch.setenv("TROUPE_LOCAL_MODEL", env)
    chosen = choose(configured)
    assert (chosen.name if chosen else None) == expected


def test_an_unknown_local_model_is_refused_listing_the_known_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TROUPE_LOCAL_MODEL", "1")
    with pytest.raises(UnknownLocalModel, match=r"\[model\] local = 'qwen-9b': no such local model; known: "
                                                r"qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        choose("qwen-9b")


def test_model_local_and_threads_come_from_the_repository_file_and_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / ".troupe.toml").write_text('[model]\nlocal = "qwen2.5-coder-1.5b"\nthreads = 2\nbatch_threads = 2\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TROUPE_LOCAL_THREADS", raising=False)
    monkeypatch.delenv("TROUPE_LOCAL_BATCH_THREADS", raising=False)
    settings = load_settings(tmp_path).model
    assert (settings.local, settings.threads, settings.batch_threads) == ("qwen2.5-coder-1.5b", 2, 2)
    monkeypatch.setenv("TROUPE_LOCAL_THREADS", "1")
    monkeypatch.setenv("TROUPE_LOCAL_BATCH_THREADS", "1")
    assert (load_settings(tmp_path).model.threads, load_settings(tmp_path).model.batch_threads) == (1, 1)


def test_threads_follow_the_free_cores_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert choose_threads(3) == (3, "set")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    for load, threads in ((0.0, 1), (0.9, 1), (1.6, 1), (5.0, 1)):  # one core left to the rest of the machine
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        assert choose_threads(None) == (threads, f"auto: 2 cores, load {load:.2f}")
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: set(range(16)))
    monkeypatch.setattr(os, "getloadavg", lambda: (3.0, 3.0, 3.0))
    assert choose_threads(None)[0] == 8  # a cap: more threads than that stop paying on CPU inference
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1, 2, 3})
    monkeypatch.setattr(os, "getloadavg", lambda: (0.2, 0.2, 0.2))
    assert choose_threads(None)[0] == 3


def test_the_draft_model_setting_comes_from_the_file_and_the_environment(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("TROUPE_LOCAL_DRAFT", raising=False)
    assert load_settings(tmp_path).model.draft is None  # by default: unset, so no draft (choose_draft)
    (tmp_path / ".troupe.toml").write_text("[model]\ndraft = false\n")
    assert load_settings(tmp_path).model.draft is False
    monkeypatch.setenv("TROUPE_LOCAL_DRAFT", "on")
    assert load_settings(tmp_path).model.draft is True
    monkeypatch.setenv("TROUPE_LOCAL_DRAFT", "0")
    (tmp_path / ".troupe.toml").write_text("[model]\ndraft = true\n")
    assert load_settings(tmp_path).model.draft is False
    monkeypatch.setenv("TROUPE_LOCAL_DRAFT", "maybe")
    with pytest.raises(ConfigError, match=r"TROUPE_LOCAL_DRAFT='maybe' is not on or off"):
        load_settings(tmp_path)
    (tmp_path / ".troupe.toml").write_text('[model]\ndraft = "no"\n')
    monkeypatch.delenv("TROUPE_LOCAL_DRAFT")
    with pytest.raises(ConfigError, match=r"model.draft: expected bool"):
        load_settings(tmp_path)


def test_the_15b_is_drafted_by_the_05b_and_the_05b_by_nothing() -> None:
    assert QWEN_15B.draft == QWEN_05B.name
    assert QWEN_05B.draft is None and choose_draft(QWEN_05B, True) is None


def test_a_draft_model_is_used_only_when_installed_and_not_turned_off(
        spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS, spec.name, spec)  # the fake parts stand for an installed draft model
    drafted = replace(QWEN_15B, draft=spec.name)
    assert choose_draft(drafted, enabled=True) == spec
    assert choose_draft(drafted, enabled=None) is None  # unset: none (slower with it at 1 and 2 threads, measured)
    assert choose_draft(drafted, enabled=False) is None
    missing = replace(spec, name="fake-missing", parts=(("no_such_part_module_1", "0" * 64, 1),))
    monkeypatch.setitem(MODELS, missing.name, missing)
    assert choose_draft(replace(QWEN_15B, draft=missing.name), True) is None  # not installed: served alone


def test_a_server_for_a_drafted_model_gets_the_draft_file_and_the_set_threads(
        spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MODELS, spec.name, spec)
    monkeypatch.setenv("TROUPE_HOME", str(tmp_path / "home"))
    drafted = replace(spec, name="fake-drafted", file="fake-drafted.gguf", draft=spec.name)
    server = server_for(drafted, ModelSettings(threads=2, batch_threads=1, draft=True), tmp_path / "home")
    assert server.model == model_path(tmp_path / "home", drafted)
    assert (server.batch_threads, server.batch_threads_reason) == (1, "set")
    assert server.draft == model_path(tmp_path / "home", spec) and server.draft.read_bytes() == b"".join(CHUNKS)
    assert (server.threads, server.threads_reason) == (2, "set")
    assert server_for(drafted, ModelSettings(threads=2, draft=False), tmp_path / "home").draft is None
    assert server_for(drafted, ModelSettings(threads=2), tmp_path / "home").draft is None  # unset: none
    assert server_for(drafted, ModelSettings(threads=1, draft=True), tmp_path / "home").draft is not None
    assert acceptance({"draft_n": 8.0, "draft_n_accepted": 6.0}) == 0.75
    assert acceptance({"predicted_n": 16.0}) is None  # nothing drafted


def test_prompt_threads_are_set_or_the_fastest_the_speed_file_measured(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = tmp_path / "m.gguf"
    monkeypatch.delenv("TROUPE_LOCAL_BATCH_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 1})
    every_core = (2, "every core (prompt processing is compute; no two counts measured)")
    assert choose_batch_threads(1, model) == every_core  # nothing measured yet
    assert choose_batch_threads(1, model, 1) == (1, "set")
    speed = speed_file(model)
    speed.write_text(json.dumps({"prompt_per_s_by_batch_threads": {"2": 21.0}}))
    assert choose_batch_threads(1, model) == every_core  # one count: nothing to compare
    speed.write_text(json.dumps({"prompt_per_s_by_batch_threads": {"1": 21.0, "2": 34.5, "4": 60.0}}))
    assert choose_batch_threads(1, model) == (2, "measured prompt tokens/s by threads: 1: 21.0, 2: 34.5")  # 4: no cores
    speed.write_text(json.dumps({"prompt_per_s_by_batch_threads": {"1": 21.0, "2": 9.5, "1+draft": 8.0,
                                                                   "2+draft": 15.0}}))
    assert choose_batch_threads(1, model)[0] == 1  # two threads were slower here (the other core was busy)
    assert choose_batch_threads(1, model, drafted=True)[0] == 2  # a drafted server compares its own figures
