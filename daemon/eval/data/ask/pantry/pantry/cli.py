"""The command line: ``python -m pantry.cli stock`` or ``report``."""

import argparse

from pantry.inventory.items import Item
from pantry.inventory.warehouse import Warehouse
from pantry.reports.summary import low_stock_report, stock_value_line


def demo_warehouse() -> Warehouse:
    warehouse = Warehouse()
    warehouse.add(Item("A-100", "rice", 250, 40))
    warehouse.add(Item("B-200", "lentils", 320, 3))
    warehouse.add(Item("C-300", "olive oil", 990, 12))
    return warehouse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pantry")
    parser.add_argument("command", choices=["stock", "report"])
    args = parser.parse_args(argv)
    warehouse = demo_warehouse()
    if args.command == "stock":
        print(stock_value_line(warehouse))
    else:
        print("\n".join(low_stock_report(warehouse)) or "nothing to reorder")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
