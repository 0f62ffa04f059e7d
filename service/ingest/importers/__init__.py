"""Importers: turn what benchmark tools print into ResultIn items + provenance.

Each importer is a pure parser from the raw text to `Converted` rows; `service.ingest.
importers.resolve` turns those into gate input against the database (device matcher, workload
names), collecting one 422 error per bad item so a file is stored whole or not at all.
"""

from service.ingest.importers.base import Converted, ImportFailed

FORMATS = ("llama-bench", "lambda-csv", "mlperf")

__all__ = ["FORMATS", "Converted", "ImportFailed"]
