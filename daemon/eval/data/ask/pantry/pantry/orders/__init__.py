"""Carts, prices and checkout."""
