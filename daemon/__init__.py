"""Troupe's daemon: the API server, jobs, the agent engine, experience, the LLM gateway and the CLI."""

__version__ = "0.1.0"
