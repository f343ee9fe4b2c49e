"""The store's verbs, one module per topic; ``storage.store.Store`` combines them."""
