"""pantry: stock, carts and reports for a small shop."""

VERSION = "1.4.2"
