"""A measured prompt rate moved to another model or length (service/domain/prefill.py)."""

import math
from dataclasses import replace

import pytest

from service.catalog import llm
from service.domain import prefill

MODELS = llm.models()
SMALL, LARGE = MODELS["llama-3-8b"], MODELS["llama-3-70b"]


def synthetic(weight: float, speeds: dict[str, float]) -> list[prefill.PrefillPoint]:
    """Each GPU reads `speed` units of token cost per second at `weight`: exact moves."""
    return [
        prefill.PrefillPoint(
            gpu, model, "q4_k_m", tokens, speed / prefill.token_cost(model, tokens, weight)
        )
        for gpu, speed in speeds.items()
        for model in (SMALL, LARGE)
        for tokens in (512, 1024, 4096, 8192)
    ]


def test_the_fitted_attention_weight_is_the_one_the_results_were_made_with():
    points = synthetic(5.0, {"a": 1e15, "b": 3e14, "c": 7e13})
    assert prefill.fit_attention_weight(points) == pytest.approx(5.0, rel=0.04)
    assert prefill.fit_attention_weight(synthetic(1.0, {"a": 1e15})) == pytest.approx(1.0)
    # moves made with the fitted weight hold: their conformal half-width is near zero
    assert prefill.move_half_width(points, 0.8) < 0.02


def test_flops_alone_where_no_gpu_has_two_results():
    one_each = [
        prefill.PrefillPoint("a", SMALL, "q4_k_m", 512, 3000.0),
        prefill.PrefillPoint("b", LARGE, "q4_k_m", 512, 400.0),
        prefill.PrefillPoint("c", SMALL, "f16", 512, 2500.0),
        prefill.PrefillPoint("c", SMALL, "q4_k_m", 512, 2600.0),  # another format: no move
    ]
    assert prefill.fit_attention_weight(one_each) == 1.0
    assert prefill.move_half_width(one_each, 0.8) == 0.0


def test_a_move_to_a_longer_prompt_is_slower_per_token_and_back_again():
    assert prefill.moved_rate(1000.0, SMALL, 4096, SMALL, 4096, 4.5) == 1000.0
    longer = prefill.moved_rate(1000.0, SMALL, 4096, SMALL, 32768, 4.5)
    by_flops = prefill.moved_rate(1000.0, SMALL, 4096, SMALL, 32768, 1.0)
    assert longer < by_flops < 1000.0
    assert prefill.moved_rate(longer, SMALL, 32768, SMALL, 4096, 4.5) == pytest.approx(1000.0)
    assert prefill.moved_rate(1000.0, SMALL, 512, LARGE, 512, 1.0) < 1000.0 * 8 / 70 * 1.1


def test_a_sliding_window_layer_attends_to_its_window_only():
    gemma = MODELS["gemma-3-27b"]
    assert gemma.sliding_window and gemma.sliding_layers
    full = replace(gemma, sliding_window=None, sliding_layers=0)
    short = gemma.sliding_window // 2
    assert prefill.attention_flops(gemma, short) == prefill.attention_flops(full, short)
    long = 131072
    windowed, unwindowed = prefill.attention_flops(gemma, long), prefill.attention_flops(full, long)
    full_share = (gemma.layers - gemma.sliding_layers) / gemma.layers
    window = gemma.sliding_window
    # a local layer's mean span over a causal prompt of s tokens is W - W^2 / 2s, against s / 2
    local = (1 - full_share) * (2 * window - window**2 / long) / long
    assert windowed / unwindowed == pytest.approx(full_share + local, rel=1e-3)


def test_prompt_seconds():
    assert prefill.prompt_seconds(4096, 2048.0) == 2.0
    assert prefill.prompt_seconds(4096, 0.0) is None
    assert prefill.prompt_seconds(4096, math.inf) is None
