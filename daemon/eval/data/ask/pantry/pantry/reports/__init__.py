"""Reports on the stock."""
