from pantry.orders.pricing import apply_discount, bulk_discount, with_tax


def test_discounts_round_down() -> None:
    assert apply_discount(999, 10) == 899


def test_bulk_discount_steps() -> None:
    assert [bulk_discount(n) for n in (1, 5, 10)] == [0, 5, 10]


def test_tax_is_added() -> None:
    assert with_tax(1000) == 1200
