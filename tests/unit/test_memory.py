"""The memory model against published figures, and its shape (monotone, TP split).

Convention: GB = 1e9 bytes, the unit of model-card parameter counts and Hugging Face file
listings. 7e9 params x 2 bytes is 14 GB = 13.0 GiB; the "about 13.5 GB" of a 7B fp16 model is
Llama-2-7B's 6.74e9 params x 2 bytes = 13.48 GB.
"""

from importlib import resources

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.domain import memory as m

_CAT = resources.files("service.catalog")
MODELS = {x.slug: x for x in m.parse_models(_CAT.joinpath("models.csv").read_text())}
QUANTS = m.parse_quantizations(_CAT.joinpath("quantizations.csv").read_text())
GIB = 2**30


def q(name):
    found = m.find_quantization(name, QUANTS)
    assert found is not None
    return found


def test_7b_fp16_weights_about_13_5_gb():
    b = m.memory_breakdown(MODELS["llama-2-7b"], "inference", q("fp16"), context=1)
    assert b.weights / m.GB == pytest.approx(13.48, abs=0.05)


def test_70b_q4_k_m_weights_match_the_published_file():
    """bartowski Llama-3.1-70B-Q4_K_M.gguf is 42.52 GB."""
    w = m.weight_bytes(MODELS["llama-3.1-70b"], q("q4_k_m"))
    assert w / m.GB == pytest.approx(42.52, rel=0.01)


@pytest.mark.parametrize(
    ("quant", "gib"), [("q8_0", 7.96), ("q6_k", 6.14), ("q5_k_m", 5.33), ("q4_k_m", 4.58)]
)
def test_8b_gguf_sizes_match_llama_quantize_table(quant, gib):
    """llama.cpp tools/quantize/quantize.cpp lists these sizes (GiB) for Llama-3-8B; the bpw in
    the table come from 70B files, where embeddings weigh less, hence 3% tolerance."""
    w = m.weight_bytes(MODELS["llama-3.1-8b"], q(quant))
    assert w / GIB == pytest.approx(gib, rel=0.03)


def test_llama3_8b_kv_cache_128_kib_per_token_fp16():
    assert m.kv_cache_bytes_per_token(MODELS["llama-3.1-8b"], 16) == 128 * 1024


def test_kv_cache_term_is_per_token_times_context_and_batch():
    model = MODELS["llama-3.1-8b"]
    b = m.memory_breakdown(model, "inference", q("bf16"), context=8192, batch=4)
    assert b.kv_cache == 128 * 1024 * 8192 * 4
    half = m.memory_breakdown(model, "inference", q("bf16"), context=8192, batch=4, kv_bits=8)
    assert half.kv_cache == b.kv_cache / 2


def test_mla_cache_is_latent_plus_rope_key():
    """DeepSeek-V3: 61 layers x (512 + 64) x 2 bytes, not 2 x 61 x 128 heads x 128 x 2."""
    ds = MODELS["deepseek-v3"]
    assert m.kv_cache_bytes_per_token(ds, 16) == 61 * 576 * 2
    assert m.kv_cache_bytes_per_token(ds, 16, gpus=8) == 61 * 576 * 2  # replicated, not split


def test_gqa_heads_split_but_never_below_one_per_gpu():
    model = MODELS["llama-3.1-70b"]  # 8 kv heads
    one = m.kv_cache_bytes_per_token(model, 16, 1)
    assert m.kv_cache_bytes_per_token(model, 16, 8) == one / 8
    assert m.kv_cache_bytes_per_token(model, 16, 16) == one / 8


def test_issue_done_when_70b_q4_k_m_8k_context_between_40_and_50_gb():
    b = m.memory_breakdown(MODELS["llama-3.1-70b"], "inference", q("q4_k_m"), context=8192)
    assert 40 < b.total_gb < 50
    assert b.as_gb()["total_gb"] == pytest.approx(b.total_gb, abs=1e-3)


def test_qlora_65b_fits_48_gb_as_the_qlora_paper_reports():
    """Dettmers et al. 2023: QLoRA finetunes a 65B model on a single 48 GB GPU (NF4 + double
    quantization, LoRA r=64 on all linear layers, gradient checkpointing, batch 1)."""
    b = m.memory_breakdown(
        MODELS["llama-65b"], "qlora", q("nf4"), context=512, batch=1, lora_rank=64
    )
    assert 35 < b.total_gb < 48


def test_full_finetune_is_16_bytes_per_param_before_activations():
    """ZeRO (Rajbhandari et al. 2020): mixed-precision AdamW = 2 + 2 + 12 bytes per param."""
    model = MODELS["llama-3.1-8b"]
    b = m.memory_breakdown(model, "full-finetune", q("bf16"), context=1)
    states = b.weights + b.gradients + b.optimizer
    assert states == pytest.approx(16 * model.params_b * 1e9)
    eight_bit = m.memory_breakdown(
        model, "full-finetune", q("bf16"), context=1, optimizer="adamw-8bit"
    )
    assert eight_bit.optimizer == pytest.approx((2 + 4) * model.params_b * 1e9)


def test_checkpointing_saves_activation_memory():
    model = MODELS["llama-3.1-8b"]
    kw = {"task": "lora", "quant": q("bf16"), "context": 4096, "batch": 2}
    full = m.memory_breakdown(model, gradient_checkpointing=False, **kw).activations
    ckpt = m.memory_breakdown(model, gradient_checkpointing=True, **kw).activations
    assert ckpt < full / 4  # logits (s x V x 6 bytes) are kept either way


def test_lora_params_for_rank_and_targets():
    model = MODELS["llama-2-7b"]  # q,k,v,o 4096x4096; gate/up/down 4096<->11008
    attn = m.lora_params(model, 8, "attention")
    assert attn == 8 * 4 * (4096 + 4096) * 32
    full = m.lora_params(model, 8, "all-linear")
    assert full == attn + 8 * 3 * (4096 + 11008) * 32
    assert m.lora_params(model, 16) == 2 * full


def test_full_finetune_rejects_quantized_weights_and_qlora_rejects_16_bit():
    with pytest.raises(ValueError):
        m.memory_breakdown(MODELS["llama-3.1-8b"], "full-finetune", q("q4_k_m"))
    with pytest.raises(ValueError):
        m.memory_breakdown(MODELS["llama-3.1-8b"], "qlora", q("bf16"))


@pytest.mark.parametrize("task", ["lora", "qlora"])
def test_training_rejects_gguf_formats_that_only_llama_cpp_runs(task):
    with pytest.raises(ValueError, match="GGUF"):
        m.memory_breakdown(MODELS["llama-3.1-8b"], task, q("q4_k_m"))
    assert m.memory_breakdown(MODELS["llama-3.1-8b"], "inference", q("q4_k_m")).total_gb > 0


def test_moe_memory_uses_total_params_and_flops_active_params():
    mix = MODELS["mixtral-8x7b"]
    w = m.weight_bytes(mix, q("bf16"))
    assert w == pytest.approx(mix.params_b * 1e9 * 2)
    f = m.flops_per_token(mix, "decode", context=1)
    assert f == pytest.approx(2 * mix.active_params_b * 1e9, rel=0.01)
    prefill = m.flops_per_token(mix, "prefill", context=4096)
    assert m.flops_per_token(mix, "train", 4096) == pytest.approx(3 * prefill)
    assert prefill < m.flops_per_token(mix, "decode", context=4096)


def test_training_passes_count_the_backward_and_the_recomputed_forward():
    """Full training: forward + 2 backward (6 x A); adapters skip the frozen weights' gradients;
    checkpointing recomputes the forward once."""
    assert m.training_passes("full-finetune") == 3 == m.FULL_TRAINING_PASSES
    assert m.training_passes("full-finetune", gradient_checkpointing=True) == 4
    assert m.training_passes("lora") == m.training_passes("qlora") == 2
    assert m.training_passes("qlora", gradient_checkpointing=True) == 3
    with pytest.raises(ValueError):
        m.training_passes("inference")
    model = MODELS["llama-3.1-8b"]
    forward = m.flops_per_token(model, "prefill", 2048)
    assert m.flops_per_token(model, "train", 2048, passes=4) == pytest.approx(4 * forward)
    assert m.flops_per_token(model, "train", 2048) == pytest.approx(3 * forward)
    assert m.flops_per_token(model, "prefill", 2048, passes=4) == pytest.approx(forward)


def test_headroom_and_gpus_needed_are_consistent_with_the_breakdown():
    model = MODELS["llama-3.1-8b"]
    ctx = m.max_context_that_fits(model, 24, task="qlora")
    assert ctx is not None and ctx < model.max_context
    assert m.memory_breakdown(model, "qlora", context=ctx).total_gb <= 24
    assert m.memory_breakdown(model, "qlora", context=ctx + 1).total_gb > 24
    batch = m.max_batch_that_fits(model, 24, context=4096, quant=q("q4_k_m"))
    assert batch is not None
    assert m.memory_breakdown(model, quant=q("q4_k_m"), context=4096, batch=batch).total_gb <= 24
    big = MODELS["llama-3.1-70b"]
    n = m.gpus_needed(big, 24, max_gpus=8, quant=q("q4_k_m"), context=8192)
    assert n == 2
    assert m.gpus_needed(big, 24, max_gpus=4, quant=q("bf16"), context=8192) is None
    assert m.max_context_that_fits(big, 16, quant=q("bf16")) is None


SLUGS = sorted(MODELS)
TASK = st.sampled_from(["inference", "lora", "full-finetune"])


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SLUGS), TASK, st.integers(1, 65536), st.integers(1, 64), st.integers(1, 64))
def test_total_monotone_in_context_and_batch(slug, task, ctx, batch, step):
    model = MODELS[slug]
    base = m.memory_breakdown(model, task, context=ctx, batch=batch).total
    assert m.memory_breakdown(model, task, context=ctx + step, batch=batch).total >= base
    assert m.memory_breakdown(model, task, context=ctx, batch=batch + step).total >= base


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SLUGS), st.floats(2, 16), st.floats(0.1, 16), st.integers(1, 32768))
def test_total_monotone_in_bits(slug, bits, extra, ctx):
    model = MODELS[slug]
    lo = m.memory_breakdown(model, quant=m.float_quantization(bits), context=ctx)
    hi = m.memory_breakdown(model, quant=m.float_quantization(bits + extra), context=ctx)
    assert hi.total > lo.total


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SLUGS), TASK, st.sampled_from([1, 2, 4, 8]), st.integers(1, 16384))
def test_a_split_divides_weights_and_optimizer_by_n(slug, task, n, ctx):
    """Inference tensor-parallel: weights / N. Training sharded data parallel (FSDP): weights
    / N plus one block gathered whole, and each GPU keeps a whole sequence's activations."""
    model = MODELS[slug]
    one = m.memory_breakdown(model, task, context=ctx, gpus=1)
    split = m.memory_breakdown(model, task, context=ctx, gpus=n)
    gathered = one.weights / model.layers if task != "inference" and n > 1 else 0.0
    assert split.weights == pytest.approx(one.weights / n + gathered)
    assert split.optimizer == pytest.approx(one.optimizer / n)
    if task != "inference":
        assert split.activations == pytest.approx(one.activations)  # batch 1: one sequence
    assert split.total <= one.total


def test_sharded_training_keeps_whole_sequences_per_gpu():
    """8 x 10 GB cards do not hold Llama 3.1 70B QLoRA: each GPU stores its own sequence's
    activations (9.8 GB at 4,096 tokens), which a tensor split divided by 8."""
    model, nf4 = MODELS["llama-3.1-70b"], m.NF4
    one_seq = m.memory_breakdown(model, "qlora", nf4, context=4096, gpus=1).activations
    eight = m.memory_breakdown(model, "qlora", nf4, context=4096, gpus=8)
    assert eight.activations == pytest.approx(one_seq)
    assert eight.total_gb > 10.0 * 2**30 / 1e9  # more than a 10 GiB card holds
    batch8 = m.memory_breakdown(model, "qlora", nf4, context=4096, batch=8, gpus=4)
    assert batch8.activations == pytest.approx(2 * one_seq)  # 8 sequences over 4 GPUs


@pytest.mark.parametrize(("name", "bits"), [("fp8", 8), ("int8", 8), ("nvfp4", 4.5)])
def test_linear_only_formats_keep_embeddings_and_lm_head_at_16_bits(name, bits):
    """FP8, W8A8 and NVFP4 checkpoints quantize the Linear layers (llm-compressor's `targets:
    Linear, ignore: [lm_head]`; ModelOpt's `exclude_modules: [lm_head]`): Llama 3.1 8B's two
    128,256 x 4,096 tables stay bf16, 1.05 GB more than at one byte each in FP8."""
    model = MODELS["llama-3.1-8b"]
    tables = 2 * model.vocab * model.hidden
    b = m.memory_breakdown(model, "inference", q(name), context=1)
    expected = (model.params_b * 1e9 - tables) * bits / 8 + tables * 2
    assert b.weights == pytest.approx(expected, rel=1e-9)
    assert b.weights > model.params_b * 1e9 * bits / 8 + 0.5 * m.GB


def test_dequantization_moves_each_stored_weight_in_and_bf16_out_on_every_pass():
    """QLoRA's 4-bit weights are read at their width and written as bf16 before each matmul
    that uses them; a bf16 run moves nothing extra. Llama 3.1 8B in NF4 with checkpointing
    (3 passes): its 7.0e9 non-embedding params x (0.5 + 2) bytes x 3."""
    from service.catalog import llm
    from service.domain.llm_fit import Ask

    model = llm.model("llama-3.1-8b")
    nf4, bf16 = llm.quantization("nf4"), llm.quantization("bf16")
    stored = model.params_b * 1e9 - model.embedding_params
    moved = m.dequantized_bytes_per_step(model, nf4, 3)
    assert moved == pytest.approx(3 * stored * (nf4.bits_per_weight / 8 + 2))
    assert m.dequantized_bytes_per_step(model, bf16, 3) == 0.0
    short = Ask(model, "qlora", nf4, context=512)
    long = Ask(model, "qlora", nf4, context=4096)
    per_token = short.dequantization_s_per_token(1000.0)
    assert per_token == pytest.approx(moved / 1e12 / 512)
    assert long.dequantization_s_per_token(1000.0) == pytest.approx(per_token / 8)
    assert Ask(model, "lora", bf16, context=512).dequantization_s_per_token(1000.0) == 0.0
    # sharded over 8 GPUs a batch of 8 is one sequence each: each GPU dequantizes every weight
    # for 512 tokens, not 4,096
    eight = Ask(model, "qlora", nf4, context=512, batch=8)
    assert eight.dequantization_s_per_token(1000.0, gpus=8) == pytest.approx(per_token)
    assert eight.dequantization_s_per_token(1000.0) == pytest.approx(per_token / 8)
    assert Ask(model, "inference", nf4, context=512).dequantization_s_per_token(1000.0) == 0.0


def test_sliding_window_layers_keep_their_window_of_kv():
    """Gemma 3 27B: 52 of 62 layers attend to the last 1,024 tokens, and llama.cpp caches
    window + one 512-token prefill chunk for them; at 131,072 tokens the KV is 10 full layers'
    worth plus 52 x 1,536 tokens (11.4 GB at fp16), not 62 full layers (66.6 GB). Up to the
    window every layer keeps every token; a decode step reads the window alone."""
    gemma = MODELS["gemma-3-27b"]
    per_token = m.kv_cache_bytes_per_token(gemma)
    assert per_token == 2 * 62 * 16 * 128 * 2
    long = m.memory_breakdown(gemma, "inference", q("q4_k_m"), context=131072)
    assert long.kv_cache == pytest.approx(per_token * (10 * 131072 + 52 * 1536) / 62)
    assert long.kv_cache / m.GB == pytest.approx(11.39, abs=0.01)
    short = m.memory_breakdown(gemma, "inference", q("q4_k_m"), context=1024)
    assert short.kv_cache == pytest.approx(per_token * 1024)
    assert m.kv_tokens(gemma, 131072, stored=False) == pytest.approx((10 * 131072 + 52 * 1024) / 62)
    llama = MODELS["llama-3.1-8b"]
    assert m.kv_tokens(llama, 131072) == 131072  # no sliding layers: every token, every layer
