"""models.csv and quantizations.csv: every row sourced and internally consistent."""

from importlib import resources

import pytest

from service.domain import memory as m

MODELS = m.parse_models(resources.files("service.catalog").joinpath("models.csv").read_text())
QUANTS = m.parse_quantizations(
    resources.files("service.catalog").joinpath("quantizations.csv").read_text()
)
# Families whose configs set head_dim explicitly, so heads x head_dim may differ from hidden.
EXPLICIT_HEAD_DIM = {"gemma2", "gemma3", "qwen3", "qwen3-moe", "deepseek-v3"}
REQUIRED = {
    "llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b",
    "llama-3.3-70b", "llama-2-7b", "llama-2-13b", "llama-2-70b", "qwen2.5-7b", "qwen2.5-14b",
    "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b",
    "qwen3-235b-a22b", "mistral-7b", "mixtral-8x7b", "gemma-2-9b", "gemma-2-27b",
    "gemma-3-12b", "gemma-3-27b", "phi-3-mini", "phi-3-medium", "phi-4", "deepseek-v3",
    "deepseek-r1", "gpt2-124m", "gpt2-355m", "gpt2-774m", "gpt2-1.5b",
}  # fmt: skip


def test_required_models_present_and_slugs_unique():
    slugs = [x.slug for x in MODELS]
    assert len(slugs) == len(set(slugs))
    assert set(slugs) >= REQUIRED


@pytest.mark.parametrize("model", MODELS, ids=lambda x: x.slug)
def test_row_is_sourced_and_consistent(model):
    assert len(model.source) > 40
    assert model.heads % model.kv_heads == 0
    assert 0 < model.active_params_b <= model.params_b
    assert model.max_context >= 1024
    if model.family not in EXPLICIT_HEAD_DIM:
        assert model.heads * model.head_dim == model.hidden
    if model.is_moe:
        assert model.active_params_b < model.params_b
        assert model.experts_per_token and model.experts_per_token < (model.num_experts or 0)
    else:
        assert model.active_params_b == model.params_b
    if model.is_mla:
        assert model.qk_rope_head_dim
    assert bool(model.sliding_window) == bool(model.sliding_layers)  # both or neither
    assert 0 <= model.sliding_layers < model.layers  # some layers attend to everything
    if model.sliding_window:
        assert "sliding_window" in model.source and model.sliding_window < model.max_context


@pytest.mark.parametrize("model", [x for x in MODELS if not x.is_mla], ids=lambda x: x.slug)
def test_published_param_count_matches_the_shape(model):
    """The published count and the one recomputed from layers/hidden/heads agree within 4%
    (Gemma 3 cards count a ~0.4B vision encoder the text shape does not have)."""
    total, active = m.architecture_params(model)
    assert total / 1e9 == pytest.approx(model.params_b, rel=0.04)
    assert active / 1e9 == pytest.approx(model.active_params_b, rel=0.04)


def test_quantizations_sourced_and_ordered():
    names = {q.name for q in QUANTS}
    assert {"fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "nvfp4", "mxfp4"} <= names
    assert {"q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "awq-4bit", "gptq-4bit", "nf4"} <= names
    for q in QUANTS:
        assert q.source and 1 < q.bits_per_weight <= 32
        assert q.compute_precision in {"fp32", "bf16", "fp16", "fp8", "int8", "fp4"}
    bits = {q.name: q.bits_per_weight for q in QUANTS}
    assert bits["q8_0"] > bits["q6_k"] > bits["q5_k_m"] > bits["q4_k_m"] > bits["q4_0"] > 4
    # block structs in ggml-common.h: Q4_0 18 bytes / 32 weights, Q8_0 34 / 32, Q6_K 210 / 256
    assert bits["q8_0"] == pytest.approx(34 * 8 / 32, abs=0.01)
    assert bits["q6_k"] == pytest.approx(210 * 8 / 256, abs=0.01)
    assert bits["q4_0"] >= 18 * 8 / 32


def test_quantization_lookup_by_alias_and_case():
    assert m.find_quantization("Q4_K_M", QUANTS).name == "q4_k_m"
    assert m.find_quantization("bfloat16", QUANTS).name == "bf16"
    assert m.find_quantization("awq", QUANTS).name == "awq-4bit"
    assert m.find_quantization("q3_k_xs", QUANTS) is None
