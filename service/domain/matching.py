"""Fuzzy name matching: did-you-mean suggestions for slugs and device names."""

from collections.abc import Iterable

from rapidfuzz import fuzz, process, utils


def suggest(query: str, choices: Iterable[str], limit: int = 3, cutoff: float = 60.0) -> list[str]:
    """The closest `choices` to `query`, best first; empty when nothing is close."""
    matches = process.extract(
        query,
        list(choices),
        scorer=fuzz.WRatio,
        processor=utils.default_process,
        limit=limit,
        score_cutoff=cutoff,
    )
    return [choice for choice, _score, _index in matches]
