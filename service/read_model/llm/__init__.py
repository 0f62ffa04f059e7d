"""Recommendation and ranking rows for a language-model ask (model, task, quant, context,
batch) instead of a fixed workload: fit from the memory breakdown, throughput measured where
the corpus has this model and format, else the throughput model's estimate of a measured
workload scaled to the ask (below), else roofline x an efficiency learned from every measured
LLM result (service/domain/llm_fit.py has the model).

A feature folder of small private modules behind this public face (import from here):

- `_data`: what an ask reads and answers with (GpuRow, Measured, the references, LlmData,
  LlmOption) and how it is kept (caching, below).
- `_load`: reading it from the database, and the decode reference of one ask (`read`).
- `_throughput`: one configuration's tokens/s and band (measured, moved, scaled, roofline).
- `_configurations`: every GPU's configurations that fit, kept per ask shape, ranked.
- `_budget`: what fits the limits (budget with the box, speed, power).
- `_rows`: ranking and recommendation rows; `_words`: a row's why; `_hints`: what an empty
  answer says instead.

Each module's docstring states its design decisions and figures.
"""

from service.read_model.llm._budget import Limits
from service.read_model.llm._data import UNIT, LlmData, LlmDataKey, LlmRead, Pool
from service.read_model.llm._load import load, read
from service.read_model.llm._rows import (
    precision_of,
    ranking_rows,
    recommendation_rows,
    relative_to,
)
from service.read_model.llm._throughput import _peak as _peak
from service.read_model.llm._throughput import learn

__all__ = [
    "UNIT",
    "Limits",
    "LlmData",
    "LlmDataKey",
    "LlmRead",
    "Pool",
    "learn",
    "load",
    "precision_of",
    "ranking_rows",
    "read",
    "recommendation_rows",
    "relative_to",
]
