"""Request and response models: the API contract, one module per resource."""
