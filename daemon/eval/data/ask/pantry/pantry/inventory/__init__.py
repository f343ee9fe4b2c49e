"""Products and the warehouse that holds them."""

from pantry.inventory.items import Item
from pantry.inventory.warehouse import Warehouse

__all__ = ["Item", "Warehouse"]
