"""Troupe's language server: findings as diagnostics, fixes as code actions, the team's jobs as
commands with progress. ``python -m lsp`` (or ``troupe lsp``) serves it over stdio; the entry
point is :func:`lsp.app.main`; lsp/README.md lists the commands and the custom ``troupe/…`` messages."""
