"""The shipped GPT-2 (124M) training corpus (service/catalog/gpt2_train_results.csv).

Reads the CSV as the package ships it: every row is the catalog's llm-train workload at its
precision, on a catalog GPU, cites a source and a date, states its stack, stays under its GPU's
peak, and its value is what the derivation written in its note (or the figure quoted in its
source) gives. GPT2_MEASURED.md documents the rules and the dropped rows.
"""

import csv
import re
from datetime import date
from importlib import resources

import pytest

from service.catalog import loaders as catalog
from service.catalog.corpus import CORPUS_FILES
from service.catalog.peaks import peak_rates
from service.domain.plausibility import exceeds_peak

FILE = "gpt2_train_results.csv"
COLUMNS = (
    "gpu,workload,value,precision,gpu_count,batch_size,framework,framework_version,"
    "source,source_date,device_string,system,note"
)
TOKENS_OVER_STEP = re.compile(r"([\d,]+) tokens / ([\d.]+) s = ([\d,]+) tok/s")
FROM_MFU = re.compile(r"tok/s = ([\d.]+) x ([\d.e]+) / ([\d,]+) FLOPs/token = ([\d,]+)")
NANOGPT_FLOPS = re.compile(r"6N \+ 12LHQT with N = ([\d,]+)")
GPT2_RELEASE = date(2019, 2, 14)  # no GPT-2 training report can predate the model
QUOTED_RATE = re.compile(r"(?:tok/s: ~?([\d,]+)(K?))|(?:~?([\d,]+)(K?) tok/s)")


def _text() -> str:
    return resources.files("service.catalog").joinpath(FILE).read_text(encoding="utf-8")


ROWS = list(csv.DictReader(_text().splitlines()))
GPUS = {g.slug: g for g in catalog.load_gpus()}
WORKLOAD = {w.slug: w for w in catalog.load_workloads()}["llm-train"]


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def test_the_file_is_a_seeded_corpus_file_with_the_documented_header() -> None:
    assert FILE in CORPUS_FILES.values()
    assert _text().splitlines()[0] == COLUMNS
    assert len(ROWS) >= 8


def test_rows_are_the_llm_train_workload_on_catalog_gpus_with_source_and_stack() -> None:
    for row in ROWS:
        assert row["workload"] == "llm-train" and row["precision"] == WORKLOAD.precision, row
        assert row["gpu"] in GPUS, row["gpu"]
        assert row["framework"] in {"llm.c", "pytorch"}, row
        assert row["framework_version"] and len(row["framework_version"]) <= 64, row
        assert row["device_string"] and row["system"], row
        assert "@" in row["source"] or row["source"].startswith("https://"), row["source"]
        assert GPT2_RELEASE <= date.fromisoformat(row["source_date"]) <= date.today()
        assert int(row["gpu_count"]) >= 1 and float(row["value"]) > 0


def test_no_row_is_shipped_twice() -> None:
    keys = [(r["gpu"], r["gpu_count"], r["value"], r["source"]) for r in ROWS]
    assert len(keys) == len(set(keys))


def test_no_row_implies_more_than_its_gpus_peak() -> None:
    for row in ROWS:
        rates = peak_rates(GPUS[row["gpu"]])  # the catalog row carries the Gpu spec columns
        value, count = float(row["value"]), int(row["gpu_count"])
        assert not exceeds_peak(value, WORKLOAD.flops_per_unit, count, rates, row["precision"])


def _derived(row: dict[str, str]) -> int | None:
    """The value the note's derivation gives, if the note has one."""
    if m := TOKENS_OVER_STEP.search(row["note"]):
        assert _int(m[3]) == round(_int(m[1]) / float(m[2])), row["note"]
        return _int(m[3])
    if m := FROM_MFU.search(row["note"]):
        n = NANOGPT_FLOPS.search(row["note"])
        assert n is not None
        layers, heads, head_dim, context = 12, 12, 64, 1024  # GPT-2 small at T=1024
        flops = 6 * _int(n[1]) + 12 * layers * heads * head_dim * context
        assert _int(m[3]) == flops
        assert _int(m[4]) == round(float(m[1]) * float(m[2]) / flops), row["note"]
        return _int(m[4])
    return None


def _quoted(row: dict[str, str]) -> set[int]:
    """Rates the source quotes directly in tok/s ("tok/s: 145K", "318777 tok/s")."""
    rates = set()
    for m in QUOTED_RATE.finditer(row["source"]):
        digits, kilo = (m[1], m[2]) if m[1] else (m[3], m[4])
        rates.add(_int(digits) * (1000 if kilo else 1))
    return rates


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['gpu']}-x{r['gpu_count']}" for r in ROWS])
def test_every_value_is_its_quoted_figure_or_its_written_derivation(row: dict[str, str]) -> None:
    value = float(row["value"])
    derived = _derived(row)
    if derived is not None:
        assert value == derived
    else:
        assert value in _quoted(row), (row["source"], value)


def test_figures_quoted_as_approximate_are_flagged_in_the_note() -> None:
    for row in ROWS:
        if "~" in row["source"]:
            assert "approximate" in row["note"], row
