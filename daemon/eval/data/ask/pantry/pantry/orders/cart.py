"""A shopping cart: SKUs and quantities, before checkout."""

from pantry.config import MAX_CART_ITEMS
from pantry.inventory.warehouse import Warehouse
from pantry.orders.pricing import apply_discount, bulk_discount


class CartFull(Exception):
    """The cart already holds MAX_CART_ITEMS different items."""


class Cart:
    def __init__(self) -> None:
        self.lines: dict[str, int] = {}

    def add(self, sku: str, quantity: int = 1) -> None:
        if sku not in self.lines and len(self.lines) >= MAX_CART_ITEMS:
            raise CartFull(sku)
        self.lines[sku] = self.lines.get(sku, 0) + quantity

    def remove(self, sku: str) -> None:
        self.lines.pop(sku, None)

    def subtotal_cents(self, warehouse: Warehouse) -> int:
        total = 0
        for sku, quantity in self.lines.items():
            price = warehouse.get(sku).price_cents * quantity
            total += apply_discount(price, bulk_discount(quantity))
        return total
