"""A product on the shelf."""

from dataclasses import dataclass

from pantry.config import LOW_STOCK_THRESHOLD


@dataclass
class Item:
    sku: str
    name: str
    price_cents: int
    quantity: int = 0


def is_low(item: Item) -> bool:
    """True when the item should be reordered."""
    return item.quantity <= LOW_STOCK_THRESHOLD
