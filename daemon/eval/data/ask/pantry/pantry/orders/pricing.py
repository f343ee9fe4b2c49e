"""Prices in cents: discounts and tax."""

from pantry.config import TAX_RATE


def apply_discount(cents: int, percent: int) -> int:
    """``cents`` less ``percent`` per cent, rounded down."""
    return cents * (100 - percent) // 100


def bulk_discount(quantity: int) -> int:
    """The discount in per cent for buying ``quantity`` units of one item."""
    if quantity >= 10:
        return 10
    if quantity >= 5:
        return 5
    return 0


def with_tax(cents: int) -> int:
    return round(cents * (1 + TAX_RATE))
