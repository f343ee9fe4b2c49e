"""The language server's features, one module per LSP area; each has ``register(server)``."""
