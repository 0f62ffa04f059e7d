"""HTTP routers, one per resource."""
