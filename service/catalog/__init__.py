"""The catalog: seed data files (a source per row), their loaders, slug lookups, peak rates."""
