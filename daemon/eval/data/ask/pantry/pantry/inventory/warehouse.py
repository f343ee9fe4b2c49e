"""The warehouse: every item by SKU, with its quantity."""

from pantry.inventory.errors import OutOfStock, UnknownSku
from pantry.inventory.items import Item


class Warehouse:
    def __init__(self) -> None:
        self._items: dict[str, Item] = {}

    def add(self, item: Item) -> None:
        self._items[item.sku] = item

    def get(self, sku: str) -> Item:
        if sku not in self._items:
            raise UnknownSku(sku)
        return self._items[sku]

    def remove(self, sku: str, quantity: int) -> Item:
        item = self.get(sku)
        if quantity > item.quantity:
            raise OutOfStock(f"{sku}: {quantity} asked, {item.quantity} held")
        item.quantity -= quantity
        return item

    def restock(self, sku: str, quantity: int) -> Item:
        if quantity <= 0:
            raise ValueError("restock needs a positive quantity")
        item = self.get(sku)
        item.quantity += quantity
        return item

    def total_value(self) -> int:
        """The stock's worth in cents."""
        return sum(item.price_cents * item.quantity for item in self._items.values())

    def items(self) -> list[Item]:
        return sorted(self._items.values(), key=lambda item: item.sku)
