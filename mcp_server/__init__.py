"""``troupe mcp``: the team as an MCP server over stdio, for agent clients (Claude Code, Cursor, VS Code).

A thin adapter like ``lsp/``: tools submit daemon jobs through :mod:`daemon.client`, report the
daemon's JobProgress as MCP progress, and render what the job produced; decisions stay in the daemon.
"""
