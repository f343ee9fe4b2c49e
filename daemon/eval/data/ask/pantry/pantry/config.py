"""Settings shared by every part of pantry."""

DEFAULT_CURRENCY = "EUR"
TAX_RATE = 0.2
LOW_STOCK_THRESHOLD = 5
MAX_CART_ITEMS = 50
