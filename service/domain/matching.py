"""Fuzzy name matching: did-you-mean suggestions for slugs and device names.

A device name maps to a catalog GPU by an exact (normalized) name or alias, else by a fuzzy
match that must agree on the model: the tokens that carry a digit (4090, b70, mi300x, m2, but
not memory sizes, memory types or form factors: 80gb, hbm3, sxm4, pcie, gen5) and the variant
words that make another product (ti, super, xt, xtx, laptop, d, max, ...). A fuzzy score alone
cannot tell "Arc Pro B70" from "Arc Pro B60", or "RX 7900 XT" from "RX 7900 XTX": one character
apart, far above any threshold. Parenthesised parts ("(R)", "(TM)", Vulkan's "(RADV NAVI31)")
are driver decoration and do not count.
"""

import re
from collections.abc import Iterable

from rapidfuzz import fuzz, utils

# Words that name a different product of the same model number.
VARIANT_WORDS = frozenset(
    {"ti", "super", "xt", "xtx", "gre", "d", "laptop", "mobile", "max", "q", "ultra", "pro", "ada"}
    | {"blackwell", "nvl"}
)
_PARENTHESES = re.compile(r"\([^)]*\)")
_SEPARATORS = re.compile(r"[^a-z0-9]")
_NOT_A_MODEL = re.compile(
    r"^(\d+(\.\d+)?(gb|gib|g|mb|tb)|\d+w|(sxm|pcie|gen|hbm|gddr|lpddr|ddr)\d*[a-z]?)$"
)


MAX_QUERY_CHARS = 128  # twice the longest slug a catalog row may have


def suggest(query: str, choices: Iterable[str], limit: int = 3, cutoff: float = 60.0) -> list[str]:
    """The closest `choices` to `query`, best first; empty when nothing is close.

    Each choice is scored as written and with its separators dropped (`compact`), and the
    higher counts: users type "rtx4090" and "4070tisuper", which score as written no closer
    to nvidia-rtx-4090 than to nvidia-quadro-rtx-4000 (77 each), or closer to the RTX 4070
    Super than to the 4070 Ti Super. Ties go to the plain similarity of the compact forms, so
    "a10" names the A10 before the A100s. Only the first MAX_QUERY_CHARS of a query are
    scored: a 60,000-character path segment took a second, and no longer query is close to a
    catalog slug anyway."""
    query = query[:MAX_QUERY_CHARS]
    wanted = compact(query)
    scored = []
    for index, choice in enumerate(choices):
        joined = compact(choice)
        score = max(
            fuzz.WRatio(query, choice, processor=utils.default_process),
            fuzz.WRatio(wanted, joined),
        )
        if score >= cutoff:
            scored.append((-score, -fuzz.ratio(wanted, joined), index, choice))
    return [choice for *_, choice in sorted(scored)[:limit]]


def compact(name: str) -> str:
    """Lower case letters and digits only: "RTX 4070 Ti" and "rtx4070ti" alike."""
    return _SEPARATORS.sub("", name.lower())


def normalize(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


def undecorated(name: str) -> str:
    """normalize() without parenthesised parts: what a fuzzy match compares."""
    return normalize(_PARENTHESES.sub(" ", name).replace("/", " "))


def model_tokens(name: str) -> frozenset[str]:
    """The tokens a fuzzy match must agree on: model numbers and variant words."""
    tokens = undecorated(name).split()
    return frozenset(
        t
        for t in tokens
        if t in VARIANT_WORDS or (not _NOT_A_MODEL.match(t) and any(c.isdigit() for c in t))
    )


def map_device(
    device_name: str,
    memory_gb: float | None,
    catalog: Iterable[tuple[str, Iterable[str], float]],
) -> tuple[str | None, str]:
    """Map a reported device name to a catalog slug: (slug or None, how or why not).

    `catalog` holds (slug, names and aliases, memory_gb). An exact (normalized) name or alias
    wins; when several GPUs share a name (RTX 4060 Ti 8 GB and 16 GB), the reported memory
    decides. Otherwise a fuzzy match counts only among names with the same model_tokens, when it
    is clearly the best (score >= 90 and 5 points ahead) and the memory agrees within 15%.
    Anything else is left unmapped and reported, never guessed.
    """
    entries = [(slug, list(names), mem) for slug, names, mem in catalog]
    wanted = normalize(device_name)
    wanted_tokens = model_tokens(device_name)
    plain = undecorated(device_name)
    exact = [(slug, mem) for slug, names, mem in entries if wanted in map(normalize, names)]
    if len(exact) == 1:
        return exact[0][0], "alias"
    if len(exact) > 1:
        if memory_gb is None:
            return None, f"ambiguous name, memory unknown: {sorted(s for s, _ in exact)}"
        slug, mem = min(exact, key=lambda e: abs(e[1] - memory_gb))
        if abs(mem - memory_gb) <= 0.15 * mem:
            return slug, "alias+memory"
        return None, f"no {device_name!r} with ~{memory_gb:.0f} GB in the catalog"
    scored = []
    for slug, names, mem in entries:
        same_model = [undecorated(n) for n in names if model_tokens(n) == wanted_tokens]
        score = max((fuzz.token_set_ratio(plain, n) for n in same_model), default=0)
        scored.append((score, slug, mem))
    scored.sort(reverse=True)
    if not scored or scored[0][0] < 90:
        model = " ".join(sorted(wanted_tokens)) or "none"
        return None, f"no catalog GPU matches {device_name!r} (model: {model})"
    best, runner_up = scored[0], scored[1] if len(scored) > 1 else (0.0, "", 0.0)
    if best[0] - runner_up[0] < 5:
        return None, f"ambiguous: {best[1]} or {runner_up[1]}"
    if memory_gb is not None and abs(best[2] - memory_gb) > 0.15 * best[2]:
        return None, f"{best[1]} matches the name but not the memory ({memory_gb:.0f} GB)"
    return best[1], "fuzzy"
