"""The daemon's own knobs, from the environment (tests and benchmarks shorten the timings).

    TROUPE_JOBS_CONCURRENCY   jobs running at once (default 2)
    TROUPE_JOBS_RESERVED      more slots, for interactive jobs only (ask, change, build; default 2)
    TROUPE_TCP_PORT           also listen on 127.0.0.1:PORT with a bearer token, for the run viewer and
                              TCP clients (default 0: any free port; off or none: no TCP listener)
    TROUPE_API_MAX_BODY       largest request body in bytes (default 1 MiB)
    TROUPE_API_BODY_TIMEOUT   seconds a request body may take to arrive (default 10), then a 408
    TROUPE_SSE_HEARTBEAT      seconds between heartbeat comments on idle streams (default 15)
    TROUPE_WATCH_DEBOUNCE     seconds of quiet before a burst of saves is handled (default 0.5)
    TROUPE_WATCH_FILES_PER_JOB  files reviewed together by one save-triggered job (default 5)
    TROUPE_WATCH_JOBS_PER_MINUTE  save-triggered jobs per workspace per minute (default 6)
    TROUPE_WATCH_POLLING      1: poll instead of inotify (network file systems)
    TROUPE_EXECUTOR           package.module:factory of the job executor (default: the agent engine)
    TROUPE_PRELOAD_LLM        0: import litellm and start the local model at the first model call instead
                              of right after start-up
    TROUPE_LOCAL_MODEL        the local model run when no model is configured: unset or 1 (the configured
                              `[model] local`, else qwen2.5-coder-0.5b), a model's name (qwen2.5-coder-1.5b),
                              0: none (daemon/llm/local_models.py)
    TROUPE_LOCAL_THREADS      the local model server's threads (`[model] threads`; default: the cores this
                              process may use less the load average, 1 to 8)

The model's own settings (TROUPE_MODEL, TROUPE_API_BASE, TROUPE_LOCAL_THREADS and the rest) are read
by daemon/config.py, over the repository's and the user's settings files.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from daemon.config import ConfigError
from daemon.watch.registry import WatchOptions

TCP_OFF = ("off", "none", "no", "false", "disabled")


def _number(name: str, default: float, kind: type[int] | type[float] = float, minimum: float = 0) -> float:
    raw = os.environ.get(name, "")
    if not raw:
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ConfigError(f"environment variable {name}={raw!r} is not a valid {kind.__name__}") from None
    if value < minimum:
        raise ConfigError(f"environment variable {name}={raw!r} must be at least {minimum}")
    return value


@dataclass
class DaemonOptions:
    concurrency: int = 2
    reserved: int = 2  # slots only interactive jobs take: a person never waits behind background reviews
    tcp_port: int | None = 0  # None: no TCP listener; 0: any free port
    tcp_required: bool = False  # a port was asked for: failing to bind it stops the daemon
    max_body: int = 1 << 20
    body_timeout: float = 10.0
    heartbeat: float = 15.0
    executor: str | None = None
    preload_llm: bool = True
    watch: WatchOptions = field(default_factory=WatchOptions)

    @classmethod
    def from_env(cls) -> DaemonOptions:
        tcp = os.environ.get("TROUPE_TCP_PORT", "").strip().lower()
        off = tcp in TCP_OFF
        port = None if off else int(_number("TROUPE_TCP_PORT", 0, int))
        if port is not None and port > 65535:
            raise ConfigError(f"environment variable TROUPE_TCP_PORT={tcp!r} is not a TCP port (0-65535, or off)")
        return cls(
            concurrency=int(_number("TROUPE_JOBS_CONCURRENCY", 2, int, 1)),
            reserved=int(_number("TROUPE_JOBS_RESERVED", 2, int, 0)),
            tcp_port=port,
            tcp_required=bool(tcp) and not off,
            max_body=int(_number("TROUPE_API_MAX_BODY", 1 << 20, int, 1024)),
            body_timeout=_number("TROUPE_API_BODY_TIMEOUT", 10.0, float, 0.05),
            heartbeat=_number("TROUPE_SSE_HEARTBEAT", 15.0, float, 0.05),
            executor=os.environ.get("TROUPE_EXECUTOR") or None,
            preload_llm=os.environ.get("TROUPE_PRELOAD_LLM", "1") not in ("0", "false", "no"),
            watch=WatchOptions(
                debounce=_number("TROUPE_WATCH_DEBOUNCE", 0.5),
                files_per_job=int(_number("TROUPE_WATCH_FILES_PER_JOB", 5, int, 1)),
                jobs_per_minute=int(_number("TROUPE_WATCH_JOBS_PER_MINUTE", 6, int, 1)),
                force_polling=os.environ.get("TROUPE_WATCH_POLLING", "") in ("1", "true", "yes"),
            ),
        )
