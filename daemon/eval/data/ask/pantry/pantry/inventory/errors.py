"""What can go wrong with stock."""


class OutOfStock(Exception):
    """More units were asked for than the warehouse holds."""


class UnknownSku(KeyError):
    """No product has this SKU."""
