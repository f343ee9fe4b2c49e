"""Plain-text reports on what the warehouse holds."""

from pantry.config import DEFAULT_CURRENCY
from pantry.inventory.items import is_low
from pantry.inventory.warehouse import Warehouse


def format_cents(cents: int, currency: str = DEFAULT_CURRENCY) -> str:
    return f"{cents // 100}.{cents % 100:02d} {currency}"


def low_stock_report(warehouse: Warehouse) -> list[str]:
    """One line per item to reorder, by SKU."""
    return [f"{item.sku} {item.name}: {item.quantity} left" for item in warehouse.items() if is_low(item)]


def stock_value_line(warehouse: Warehouse) -> str:
    return f"stock value: {format_cents(warehouse.total_value())}"
