"""The built-in chains and the shared roles, as TOML (shipped as package data)."""
