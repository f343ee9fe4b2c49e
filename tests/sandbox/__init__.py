"""Tests of daemon.sandbox: where generated code and tests run."""
