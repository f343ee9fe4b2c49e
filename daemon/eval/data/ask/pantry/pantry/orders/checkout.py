"""Checkout: take the cart's items out of the warehouse and print a receipt."""

from dataclasses import dataclass

from pantry.inventory.warehouse import Warehouse
from pantry.orders.cart import Cart
from pantry.orders.pricing import with_tax


@dataclass
class Receipt:
    lines: dict[str, int]
    subtotal_cents: int
    total_cents: int


def checkout(cart: Cart, warehouse: Warehouse) -> Receipt:
    subtotal = cart.subtotal_cents(warehouse)
    for sku, quantity in cart.lines.items():
        warehouse.remove(sku, quantity)
    receipt = Receipt(dict(cart.lines), subtotal, with_tax(subtotal))
    cart.lines.clear()
    return receipt
