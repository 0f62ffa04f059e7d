"""Configuration, database access, the error family, observability, middleware, migrations."""
