"""Pure domain functions: no I/O, no database, no HTTP."""
