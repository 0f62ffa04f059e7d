"""Fit, headroom, rooflines and ranking for LLM asks (service/domain/llm_fit.py), and the one
compute-rate table the physics gate and the estimators share."""

import dataclasses
import math
from dataclasses import replace

import pytest

from service.catalog import llm
from service.domain import llm_fit, memory
from service.domain.estimate import BYTES_PER_PARAM
from service.domain.plausibility import PeakRates, peak_tflops
from service.domain.vocabulary import COMPUTE_PRECISION, PRECISIONS


def ask(slug, task="inference", quant=None, context=4096, batch=1):
    q = llm.quantization(quant or memory.DEFAULT_QUANT[task])
    return llm_fit.Ask(llm.model(slug), task, q, context, batch)


def test_every_precision_word_is_a_format_with_the_same_compute_precision_and_bytes():
    named = 0
    for word in PRECISIONS:
        q = memory.find_quantization(word, list(llm.quantizations()))
        if word == "tf32":
            continue  # a compute mode, not a weight format
        assert q is not None, word
        assert COMPUTE_PRECISION[word] == q.compute_precision, word
        assert BYTES_PER_PARAM[word] == pytest.approx(q.bits_per_weight / 8, rel=1e-3), word
        named += 1
    assert named == len(PRECISIONS) - 1


def test_the_gate_judges_a_weight_format_at_its_compute_rate():
    rates = PeakRates(fp32=80, fp16_tensor=330, bf16_tensor=330, fp8_tensor=660, int8=660)
    assert peak_tflops(rates, "q4_k_m") == peak_tflops(rates, "int8") == 660  # llama.cpp MMQ
    assert peak_tflops(rates, "awq") == peak_tflops(rates, "fp16") == 330  # W4A16
    assert peak_tflops(PeakRates(fp32=10, fp16_tensor=112), "q4_k_m") == 112  # no int8 unit
    assert peak_tflops(rates, "nf4") == 330
    assert peak_tflops(rates, "nvfp4") == 660  # no FP4 column: the fp8 rate it surely has
    assert peak_tflops(PeakRates(fp32=35.6), "q4_0") == 35.6  # no tensor cores


def test_capacity_reads_catalog_memory_as_binary():
    assert llm_fit.capacity_gb(24) == pytest.approx(25.77, abs=0.01)


@pytest.mark.parametrize(
    ("memory_gb", "needed"), [(16, 3), (24, 2), (32, 2), (48, 1), (80, 1), (8, 6)]
)
def test_70b_q4_k_m_at_8k_needs_two_24_gb_cards_or_one_48(memory_gb, needed):
    """A GGUF file is split by layers (llama.cpp): any count, 27 of 80 layers on one of 3."""
    a = ask("llama-3.1-70b", quant="q4_k_m", context=8192)
    assert llm_fit.gpus_needed(a, memory_gb, 8) == needed
    per_gpu = a.breakdown(needed).total_gb
    assert per_gpu <= llm_fit.capacity_gb(memory_gb)
    if needed > 1:  # one fewer would not fit
        assert a.breakdown(needed - 1).total_gb > llm_fit.capacity_gb(memory_gb)


@pytest.mark.parametrize(("quant", "split"), [("q4_k_m", "layer"), ("awq-4bit", "tensor")])
def test_a_gguf_file_splits_by_layers_and_other_formats_by_heads(quant, split):
    """70B at 8K on 16 GB cards: llama.cpp holds ceil(80 / 3) = 27 layers' weights and KV on
    one of three; tensor parallelism (vLLM) needs 64 heads divisible by N, so 4."""
    a = ask("llama-3.1-70b", quant=quant, context=8192)
    assert memory.split_for(a.quant, a.task) == split
    one = a.breakdown(1)
    three = a.breakdown(3)
    if split == "layer":
        share = 27 / 80
        assert three.weights == pytest.approx(one.weights * share)
        assert three.kv_cache == pytest.approx(one.kv_cache * share)
        assert three.activations == pytest.approx(one.activations)  # full-width layers
        assert llm_fit.gpus_needed(a, 16, 8) == 3
    else:
        assert llm_fit.gpus_needed(a, 16, 8) == 4
    assert memory.split_for(llm.quantization("q4_k_m"), "qlora") == "sharded"


def test_a_24_gb_card_has_more_headroom_than_a_16_gb_card_for_8b_qlora():
    a = ask("llama-3.1-8b", task="qlora")
    small, large = llm_fit.headroom(a, 16, 1), llm_fit.headroom(a, 24, 1)
    assert small.max_batch is not None and large.max_batch is not None
    assert large.max_batch > small.max_batch
    assert large.max_context > small.max_context  # type: ignore[operator]
    # the headroom is the edge: one more sequence does not fit
    over = llm_fit.Ask(a.model, a.task, a.quant, a.context, large.max_batch + 1)
    assert over.breakdown(1).total_gb > llm_fit.capacity_gb(24)


def test_decode_roofline_reads_weights_and_kv_and_moe_reads_active_weights():
    a = ask("llama-3.1-8b", quant="q4_k_m")
    bytes_step = llm_fit.decode_bytes_per_step(a.model, a.quant, 4096, 1)
    weights = memory.weight_bytes(a.model, a.quant)
    kv = memory.kv_cache_bytes_per_token(a.model) * 4096
    assert bytes_step == pytest.approx(weights + kv)
    rate = llm_fit.roofline_tokens_per_s(a.model, a.quant, "decode", 4096, 1, 1000, 1000)
    assert rate == pytest.approx(1000e9 / bytes_step)
    moe = llm.model("mixtral-8x7b")
    q = llm.quantization("q4_k_m")
    ratio = llm_fit.decode_bytes_per_step(moe, q, 1, 1) / memory.weight_bytes(moe, q)
    assert ratio == pytest.approx(moe.active_params_b / moe.params_b, rel=1e-3)


def test_decode_at_large_batch_is_capped_by_compute():
    a = ask("llama-3.1-8b", quant="q4_k_m")
    slow_compute = llm_fit.roofline_tokens_per_s(a.model, a.quant, "decode", 512, 256, 3000, 10)
    assert slow_compute == pytest.approx(10e12 / memory.flops_per_token(a.model, "decode", 512))


def test_training_roofline_is_peak_over_flops_per_token():
    a = ask("llama-3.1-8b", task="qlora")
    rate = llm_fit.roofline_tokens_per_s(a.model, a.quant, "train", 4096, 1, 1000, 200)
    assert rate == pytest.approx(200e12 / memory.flops_per_token(a.model, "train", 4096))


def test_efficiency_is_learned_as_the_median_ratio_with_a_band_from_its_spread():
    e = llm_fit.learn_efficiency([0.5, 0.6, 0.7, 0.6, 0.55], "decode")
    assert e.basis == "learned" and e.n == 5
    assert e.value == pytest.approx(0.6)
    assert e.log_band >= math.log1p(0.1)
    prior = llm_fit.learn_efficiency([], "train")
    assert prior.basis == "prior" and prior.n == 0
    assert llm_fit.learn_efficiency([], "decode").value != prior.value


def test_split_speedup_uses_the_measured_ratio_at_the_nearest_count_else_none():
    assert llm_fit.split_speedup({}, 1) == (1.0, "single")
    assert llm_fit.split_speedup({}, 4) == (1.0, "split:assumed")
    speed, basis = llm_fit.split_speedup({2: [0.9, 0.95, 1.0], 4: [0.8]}, 2)
    assert speed == pytest.approx(0.95) and basis == "split:learned@2"
    assert llm_fit.split_speedup({2: [0.9], 4: [0.8]}, 8) == (0.8, "split:learned@4")


def option(slug, value, band, batch, price=1000.0):
    room = llm_fit.Headroom(max_context=8192, max_batch=batch)
    return llm_fit.Option(slug, 1, value, value * (1 - band), value * (1 + band), price, room)


def test_inside_each_others_bands_more_headroom_ranks_first():
    fast_small = option("a", 110, 0.2, batch=2)
    slow_large = option("b", 100, 0.2, batch=6)
    assert [o.slug for o in llm_fit.rank([fast_small, slow_large])] == ["b", "a"]


def test_inside_each_others_bands_fewer_gpus_rank_before_more_headroom():
    """One RX 7900 XTX at ~122 tokens/s beside two RX 7900 XT at ~100 with more context room."""
    one = option("xtx", 122, 0.2, batch=2)
    two = dataclasses.replace(option("xt", 100, 0.2, batch=6), count=2)
    assert [o.slug for o in llm_fit.rank([two, one])] == ["xtx", "xt"]


def test_the_reason_a_slower_option_ranks_first_names_only_what_holds():
    """Seven RTX 3090s beside eight RTX 3080 Ti, faster with more room per GPU: the seven rank
    first for their count alone, and the reason must not claim room they do not have."""
    eight = dataclasses.replace(option("3080ti", 6699, 0.3, batch=9), count=8)
    seven = dataclasses.replace(option("3090", 5867, 0.3, batch=7), count=7)
    assert llm_fit.rank([eight, seven]) == [seven, eight]
    assert llm_fit.ranked_above_because(seven, eight) == ("fewer GPUs",)
    roomy = option("b", 100, 0.2, batch=6)
    fast = option("a", 110, 0.2, batch=2)
    assert llm_fit.rank([fast, roomy])[0] is roomy
    assert llm_fit.ranked_above_because(roomy, fast) == ("larger batch",)


def test_more_of_one_gpu_ranks_by_throughput_inside_overlapping_bands():
    """Eight H100 PCIe beside seven and five of them, all inside each other's bands (they share
    the one-GPU estimate): the faster count first; another GPU inside the tier with fewer
    cards still ranks before them."""
    h100 = [
        dataclasses.replace(option("h100", value, 0.3, batch=4), count=n)
        for n, value in ((5, 2605), (7, 3639), (8, 4156))
    ]
    other = dataclasses.replace(option("h200", 3500, 0.3, batch=4), count=4)
    ranked = llm_fit.rank([*h100, other])
    assert [(o.slug, o.count) for o in ranked] == [
        ("h200", 4),
        ("h100", 8),
        ("h100", 7),
        ("h100", 5),
    ]


def test_outside_the_bands_throughput_ranks_first():
    fast_small = option("a", 200, 0.1, batch=2)
    slow_large = option("b", 100, 0.1, batch=6)
    assert [o.slug for o in llm_fit.rank([slow_large, fast_small])] == ["a", "b"]


def test_equal_headroom_keeps_throughput_order():
    ranked = llm_fit.rank([option("a", 100, 0.3, 2), option("b", 120, 0.3, 2)])
    assert [o.slug for o in ranked] == ["b", "a"]


def test_a_slower_dearer_option_with_no_more_room_is_dominated():
    cheap_fast = option("a", 120, 0.3, batch=3, price=800.0)
    dear_slow = option("b", 100, 0.3, batch=3, price=2800.0)
    dear_roomy = option("c", 100, 0.3, batch=6, price=2800.0)
    twin = option("d", 120, 0.3, batch=3, price=800.0)
    kept = llm_fit.undominated([dear_slow, cheap_fast, dear_roomy, twin])
    assert [o.slug for o in kept] == ["a", "c", "d"]  # in order; equals do not drop each other


def test_a_used_card_never_dominates_a_new_one():
    used = replace(option("a", 120, 0.3, batch=3, price=800.0), used=True)
    new = option("b", 100, 0.3, batch=3, price=1200.0)
    assert [o.slug for o in llm_fit.undominated([used, new])] == ["a", "b"]
    dear_used = replace(option("c", 90, 0.3, batch=3, price=1300.0), used=True)
    assert [o.slug for o in llm_fit.undominated([dear_used, new])] == ["b"]


def test_same_shape_links_llama_3_and_3_1_but_not_other_sizes():
    assert llm.same_shape(llm.model("llama-3-8b"), llm.model("llama-3.1-8b"))
    assert not llm.same_shape(llm.model("llama-3-8b"), llm.model("llama-3-70b"))
    assert llm.model("llama-3-8b").max_context == 8192


def test_unknown_model_and_format_suggest_close_names():
    from service.core.errors import UnknownSlug

    with pytest.raises(UnknownSlug) as exc:
        llm.model("llama-3.1-8")
    assert "llama-3.1-8b" in exc.value.suggestions
    with pytest.raises(UnknownSlug) as exc:
        llm.quantization("q4km")
    assert exc.value.suggestions


# Whole-GPU llama.cpp runs and out-of-memory failures that XiongjieDai/GPU-Benchmarks-on-LLM-
# Inference@00dd2bdeb240 README.md publishes (llama-bench, every layer on the GPUs, layers split
# over several): (model, GGUF format, context, GPU memory in the catalog's GB, GPUs, ran).
# Context: the table's test size (tg N and pp N run an N-token context); the LLaMA (1) table of
# Dec 2023 ran llama-bench's default pp 512. Its 7B, 13B and 65B are the catalog's llama-2-7b,
# llama-2-13b (the same shape and parameter count) and llama-65b; its 30B has no catalog row.
PUBLISHED_RUNS = [
    # LLaMA 3 table, NVIDIA GPUs (May 2024): the one close call, 8B F16 on a 16 GB card
    ("llama-3-8b", "f16", 4096, 16, 1, True),  # 4080 16GB: tg 4096 39.44, pp 4096 4720.22
    ("llama-3-8b", "f16", 8192, 16, 1, False),  # 4080 16GB: tg 8192 and pp 8192 OOM
    ("llama-3-8b", "f16", 8192, 24, 1, True),  # 3090 24GB: tg 8192 42.62
    ("llama-3-8b", "q4_k_m", 8192, 8, 1, True),  # 3070 8GB: tg 8192 61.64
    ("llama-3-70b", "q4_k_m", 8192, 24, 2, True),  # 3090 24GB * 2: tg 8192 14.34
    ("llama-3-70b", "f16", 8192, 24, 6, True),  # 3090 24GB * 6: tg 8192 5.53
    # LLaMA table, NVIDIA GPUs (Dec 2023)
    ("llama-2-7b", "f16", 512, 16, 1, True),  # 4080 16GB 7B_f16: 44.22
    ("llama-2-13b", "q4_0", 512, 16, 1, True),  # 4080 16GB 13B_q4_0: 67.92
    ("llama-2-13b", "f16", 512, 16, 1, False),  # 4080 16GB 13B_f16: OOM
    ("llama-2-13b", "f16", 512, 24, 1, False),  # 3090 and 4090 24GB 13B_f16: OOM
    ("llama-2-13b", "f16", 512, 32, 1, True),  # RTX 5000 Ada 32GB 13B_f16: 19.22
    ("llama-2-13b", "f16", 512, 20, 2, True),  # RTX 4000 Ada 20GB * 2 13B_f16: 18.35
    ("llama-65b", "q4_0", 512, 24, 1, False),  # 3090 and 4090 24GB 65B_q4_0: OOM
    ("llama-65b", "q4_0", 512, 24, 2, True),  # 3090 24GB * 2 65B_q4_0: 14.41
    ("llama-65b", "q4_0", 512, 48, 1, True),  # RTX A6000 48GB 65B_q4_0: 15.69
    ("llama-65b", "f16", 512, 48, 1, False),  # RTX A6000 and RTX 6000 Ada 48GB 65B_f16: OOM
    ("llama-65b", "f16", 512, 24, 2, False),  # 3090 and 4090 24GB * 2 65B_f16: OOM
]


@pytest.mark.parametrize(("slug", "quant", "context", "memory_gb", "gpus", "ran"), PUBLISHED_RUNS)
def test_the_memory_model_agrees_with_every_published_run_and_out_of_memory(
    slug, quant, context, memory_gb, gpus, ran
):
    """Fits on `gpus` GPUs exactly where the published run ran: the 0.5 GB per-GPU overhead and
    the binary reading of a card's memory are what put 8B F16 at 4096 tokens inside a 16 GB
    card and at 8192 outside it, as measured."""
    a = ask(slug, quant=quant, context=context)
    kwargs = {**a.memory_kwargs(), "split": "layer"}  # llama.cpp's split, F16 files too
    per_gpu = memory.memory_breakdown(a.model, context=context, gpus=gpus, **kwargs).total_gb
    assert (per_gpu <= llm_fit.capacity_gb(memory_gb)) is ran, (per_gpu, memory_gb)
    cap = llm_fit.capacity_gb(memory_gb)
    needed = memory.gpus_needed(a.model, cap, gpus, context=context, **kwargs)
    assert (needed is not None) is ran


def test_a_split_asked_for_training_is_counted_as_memory_breakdown_counts_it():
    """memory_breakdown shards training data-parallel (FSDP) whatever `split` says, so
    gpus_needed counts it so too: any count, no heads rule (3 GPUs may carry a 64-head model's
    LoRA), each GPU with a whole sequence's activations."""
    model, quant = llm.model("llama-3.1-70b"), llm.quantization("nf4")
    kwargs = {"task": "qlora", "quant": quant, "context": 2048}
    for split in ("layer", "tensor"):
        asked = memory.gpus_needed(model, llm_fit.capacity_gb(24), 8, split=split, **kwargs)
        assert asked == memory.gpus_needed(model, llm_fit.capacity_gb(24), 8, **kwargs)
    assert memory.memory_breakdown(model, gpus=3, split="tensor", **kwargs).split == "sharded"
    assert memory.split_fits(model, 3, "sharded")


def test_transfer_half_width_is_the_conformal_quantile_of_the_roofline_misses():
    """Two models on three GPUs: the roofline ratio holds on two and misses by 2x on the
    third; a GPU with one model only gives no pair."""
    point = llm_fit.DecodePoint
    points = [
        point("a", "8b", 100.0, 1000.0),
        point("a", "70b", 10.0, 100.0),
        point("b", "8b", 50.0, 500.0),
        point("b", "70b", 5.0, 50.0),
        point("c", "8b", 100.0, 1000.0),
        point("c", "70b", 20.0, 100.0),
        point("d", "8b", 1.0, 1.0),
    ]
    # six ordered pairs, |log error| 0, 0, 0, 0, ln 2, ln 2; rank ceil(7 x 0.8) = 6
    assert llm_fit.transfer_half_width(points, 0.8) == pytest.approx(math.log(2))
    assert llm_fit.transfer_half_width(points, 0.5) == pytest.approx(0.0)
    assert llm_fit.transfer_half_width(points[-1:], 0.8) == 0.0


def test_context_move_half_width_pairs_token_counts_of_one_model_and_format_on_one_gpu():
    """Moving tg512 to tg8192 on one GPU: exact on one GPU, 1.5x off on another; other models,
    formats and GPUs with one count give no pair."""
    point = llm_fit.DecodePoint
    points = [
        point("a", "8b", 100.0, 1000.0, "q4_k_m", 512),
        point("a", "8b", 80.0, 800.0, "q4_k_m", 8192),
        point("b", "8b", 100.0, 1000.0, "q4_k_m", 512),
        point("b", "8b", 120.0, 800.0, "q4_k_m", 8192),
        point("b", "8b", 10.0, 1000.0, "f16", 512),
        point("b", "70b", 1.0, 1000.0, "q4_k_m", 512),
        point("c", "8b", 5.0, 10.0, "q4_k_m", 512),
    ]
    # four ordered pairs, |log error| 0, 0, ln 1.5, ln 1.5; rank ceil(5 x q)
    assert llm_fit.context_move_half_width(points, 0.8) == pytest.approx(math.log(1.5))
    assert llm_fit.context_move_half_width(points, 0.4) == pytest.approx(0.0)
    assert llm_fit.context_move_half_width(points[-1:], 0.8) == 0.0


def test_the_decode_ceiling_is_bandwidth_over_layer_weights_and_kv():
    """Llama 3.1 8B in FP8 at 4,096 tokens on an L4 (300 GB/s): 6.98 G layer parameters at one
    byte, 0.54 GB of KV: 40.0 tokens/s; two tensor-parallel GPUs read at once (twice), a batch
    of 4 shares the weights and reads four sequences' KV."""
    spec, fp8 = llm.models()["llama-3.1-8b"], llm.quantization("fp8")
    layers = spec.params_b * 1e9 - 2 * spec.vocab * spec.hidden
    kv = 2 * spec.layers * spec.kv_heads * spec.head_dim * 2 * 4096
    one = llm_fit.decode_ceiling_tokens_per_s(spec, fp8, 4096, 1, 300.0)
    assert one == pytest.approx(300e9 / (layers + kv))
    assert 39.5 < one < 40.5
    assert llm_fit.decode_ceiling_tokens_per_s(spec, fp8, 4096, 1, 300.0, 2) == pytest.approx(
        2 * one
    )
    assert llm_fit.decode_ceiling_tokens_per_s(spec, fp8, 4096, 4, 300.0) == pytest.approx(
        4 * 300e9 / (layers + 4 * kv)
    )


def test_an_estimate_is_held_below_its_ceiling_as_the_throughput_model_holds_its_own():
    # within the envelope: only the band's top stops at the ceiling
    assert llm_fit.held_to_ceiling(30.0, 20.0, 45.0, 40.0, 32.0) == (30.0, 20.0, 40.0)
    # beyond the envelope: the value and its band move down together
    value, low, high = llm_fit.held_to_ceiling(36.0, 24.0, 54.0, 40.0, 30.0)
    assert value == pytest.approx(30.0) and low == pytest.approx(20.0) and high == 40.0
    # no envelope, beyond the ceiling: the value stops there, the band keeps its width below
    value, low, high = llm_fit.held_to_ceiling(50.0, 25.0, 80.0, 40.0, None)
    assert (value, high) == (40.0, 40.0) and low == pytest.approx(40.0 / 4)
    # no ceiling known: unchanged
    assert llm_fit.held_to_ceiling(50.0, 25.0, 80.0, math.inf, 32.0) == (50.0, 25.0, 80.0)


def test_a_training_ask_takes_the_envelope_of_the_measured_workload_nearest_in_size():
    gpt2 = llm_fit.TrainedEnvelope("llm-train", 0.124, 0.79)
    lora = llm_fit.TrainedEnvelope("mlperf-llama2-70b-lora-train", 69.0, 0.56)
    assert llm_fit.nearest_trained(1.24, [gpt2, lora]) == gpt2  # Llama 3.2 1B
    assert llm_fit.nearest_trained(3.21, [gpt2, lora]) == lora  # past sqrt(0.124 x 69) = 2.9
    assert llm_fit.nearest_trained(8.03, [gpt2, lora]) == lora
    assert llm_fit.nearest_trained(8.03, [gpt2]) == gpt2
    assert llm_fit.nearest_trained(8.03, []) is None


def _decode_world(per_layer_s: dict[str, float], metal_gpus: int = 2) -> list[llm_fit.DecodePoint]:
    """GPUs whose time per token is a fixed time per layer (by stack) plus bytes over 90% of
    their bandwidth, measured on two models in two formats each."""
    points = []
    gpus = [("g1", "cuda", 1000.0), ("g2", "cuda", 500.0), ("g3", "metal", 800.0)]
    gpus += [("g4", "metal", 400.0)][: metal_gpus - 1]
    models = [("small", 32, 4.9), ("small", 32, 16.1), ("big", 80, 42.5), ("big", 80, 141.0)]
    for gpu, stack, bandwidth in gpus:
        for i, (model, layers, gb) in enumerate(models):
            t = per_layer_s[stack] * layers + gb / (0.9 * bandwidth)
            quant = "q4" if i % 2 == 0 else "f16"
            roof = bandwidth / gb
            points.append(
                llm_fit.DecodePoint(gpu, model, 1 / t, roof, quant, 512, stack, layers, gb)
            )
    return points


def test_fixed_costs_recover_the_time_per_layer_of_each_stack() -> None:
    world = _decode_world({"cuda": 1e-4, "metal": 3e-4})
    fixed = llm_fit.fixed_costs(world)
    assert fixed.per_layer_s("cuda") == pytest.approx(1e-4, rel=1e-6)
    assert fixed.per_layer_s("metal") == pytest.approx(3e-4, rel=1e-6)
    assert fixed.per_layer_s("rocm") == pytest.approx(2e-4, rel=1e-6)  # the median of the GPUs
    # a GPU measured on one model in one format (only its KV differs) says nothing of it
    one = [p for p in world if p.gpu == "g1" and p.model == "small" and p.quant == "q4"]
    assert llm_fit.fixed_costs(one) == llm_fit.NO_FIXED_COSTS


def test_a_decode_rate_moved_to_more_bytes_keeps_its_fixed_time() -> None:
    """Moved with its fixed time, a rate lands where the world puts it; moved whole by the
    roofline ratio, it carries the fixed time x3.3 with the bytes and lands low."""
    world = _decode_world({"cuda": 1e-4, "metal": 3e-4})
    fixed = llm_fit.fixed_costs(world)
    q4, f16 = (p for p in world if p.gpu == "g2" and p.model == "small")
    moved = llm_fit.moved_decode_rate(
        q4.measured, q4.roofline, f16.roofline, fixed.per_layer_s("cuda") * q4.layers
    )
    assert moved == pytest.approx(f16.measured, rel=1e-9)
    proportional = llm_fit.moved_decode_rate(q4.measured, q4.roofline, f16.roofline)
    assert proportional == pytest.approx(q4.measured * f16.roofline / q4.roofline)
    assert proportional < 0.9 * f16.measured
    # a fixed time larger than the rate leaves beyond its bandwidth's own is cut to it, so the
    # rest never runs faster than the bandwidth allows, there or where it is moved
    fast = llm_fit.moved_decode_rate(0.99 * q4.roofline, q4.roofline, f16.roofline, 1.0)
    assert 0.98 * f16.roofline <= fast <= f16.roofline


def test_moves_with_fixed_costs_miss_by_less_where_the_world_has_them() -> None:
    world = _decode_world({"cuda": 1e-4, "metal": 3e-4})
    held_out = llm_fit.held_out_fixed_costs(world)  # each GPU's moves with the others' costs
    assert llm_fit.transfer_half_width(world, 0.8) > 0.2
    assert llm_fit.transfer_half_width(world, 0.8, held_out) < 1e-6
    assert llm_fit.format_move_half_width(world, 0.8) > 0.2
    assert llm_fit.format_move_half_width(world, 0.8, held_out) < 1e-6
    # a lone Metal GPU, held out, gets the CUDA cards' time per layer: its moves miss
    lone = _decode_world({"cuda": 1e-4, "metal": 3e-4}, metal_gpus=1)
    metal = [p for p in lone if p.stack == "metal"]
    assert llm_fit.format_move_half_width(metal, 0.8, llm_fit.held_out_fixed_costs(lone)) > 1e-3
