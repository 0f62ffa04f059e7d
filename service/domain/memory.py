"""GPU memory needed to run or fine-tune a language model, per GPU, term by term.

Pure functions: no I/O. The catalog CSVs (service/catalog/models.csv, quantizations.csv) are
parsed from text by `parse_models` / `parse_quantizations`; whoever reads the files passes the
text in. Units: bytes internally, GB = 1e9 bytes in the answer (the unit of model-card
parameter counts and of Hugging Face file listings; 1 GiB = 1.074 GB).

Terms (P = total params, A = active params, L layers, h hidden, i intermediate, a heads,
g kv heads, d head dim, V vocab, s context, b batch, N GPUs; a GGUF file run for inference is
split by layers as llama.cpp does, and its weights and KV are those of the GPU holding the
most layers, x ceil(L / N) / L, at full width; other inference tensor-parallel, / N; training
sharded data parallel, below):

- weights: P x bits/8. Formats that leave embeddings in 16 bit (NF4, AWQ/GPTQ/int4) count the
  embedding (and untied lm_head) params at 2 bytes. Mixture-of-experts keeps every expert
  resident, so total params, not active. Split over N GPUs: / N.
- kv_cache (inference): 2 x L x g x d x kv_bytes x s x b (keys and values, grouped-query
  attention stores g, not a, heads). Multi-head latent attention (DeepSeek-V2/V3): one
  compressed latent of kv_lora_rank plus one shared rope key of qk_rope_head_dim per token
  per layer: L x (kv_lora_rank + qk_rope_head_dim) x kv_bytes x s x b (DeepSeek-V2 paper,
  arXiv:2405.04434, sec. 2.1). Over N GPUs the g heads split, ceil(g / N) per GPU (a GPU
  never holds less than one head: vLLM replicates KV heads when N > g); the MLA latent is
  not split by head, so every GPU holds all of it. A sliding-window layer (Gemma 2 and 3's
  local layers, models.csv `sliding_window`, `sliding_layers`) keeps at most its window plus
  one prefill chunk of tokens (llama.cpp's SWA cache since ggml-org/llama.cpp PR #13194, May
  2025: n_swa + n_ubatch cells) and a decode step reads at most its window (`kv_tokens`).
  Costed as full layers, Gemma 3 27B at 131,072 tokens had needed 66.6 GB of KV where 52 of
  its 62 layers keep 1,536 tokens: 11.4 GB, and one 32 GB card holds it at Q4_K_M.
- activations, inference: working buffers of one layer for a prefill chunk of c = min(s,
  512) tokens (llama.cpp's default n_ubatch): b x c x (4h + 2i') x 2 bytes, i' the FFN width
  that runs per token, plus last-token logits b x V x 4 bytes. Attention scores are not
  materialised (flash attention).
- activations, training (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
  Transformer Models", arXiv:2205.05198, eq. 1): per layer s x b x h x (34 + 5 a s / h)
  bytes at 16-bit activations. The 34 splits into attention 11, norms 4 and MLP 19 = 3 + 4 x
  (i/h) for i = 4h; a gated MLP (SwiGLU) stores three i-wide tensors, 3 + 6 x (i/h). The
  5 a s / h term is the stored attention matrix, gone with flash attention (the default).
  With full gradient checkpointing only each layer's input is kept, 2 s b h bytes per layer
  (ibid. sec. 4), plus one layer's full activations while it is recomputed. Logits:
  s x b x V x 6 bytes (16-bit logits and their fp32 copy for the loss). Over N GPUs training
  is sharded data parallel (FSDP, ZeRO-3: what the recommendations' speed assumes, a
  data-parallel profile): each GPU runs ceil(b / N) whole sequences, so activations are those
  of ceil(b / N) sequences, never less than one; weights, gradients and optimizer states are
  / N, plus one transformer block's weights gathered whole while it runs (FSDP all-gathers a
  wrapped unit before its forward and backward and frees it after). Counted as a tensor split
  with sequence parallelism (activations / N, Korthikanti eq. 5), 8 x RTX 3080 10 GB held Llama
  3.1 70B QLoRA at 7.0 GB each while one sequence of 4,096 tokens stores 9.8 GB of activations.
- gradients: trainable params x gradient bytes (the weight dtype: 2 for bf16/fp16, 4 for fp32).
- optimizer: trainable params x (AdamW 8: fp32 first and second moments; 8-bit Adam 2,
  Dettmers et al. 2021 arXiv:2110.02861; SGD with momentum 4), plus an fp32 master copy
  (4 bytes per trainable param) in mixed precision. Full fine-tuning in bf16 with AdamW is
  then 2 + 2 + 4 + 8 = 16 bytes per param (ZeRO, Rajbhandari et al. 2020, arXiv:1910.02054,
  sec. 3.1). LoRA/QLoRA adapters train in bf16 without a master copy, as QLoRA's reference
  trainer does (artidoro/qlora qlora.py casts LoRA modules to bf16).
- lora adapter params: sum over target projections of r x (d_in + d_out) per layer. Targets
  "all-linear" (QLoRA's choice: q, k, v, o, gate, up, down; every expert's FFN for MoE) or
  "attention" (q, k, v, o).
- overhead: CUDA context and library workspaces, 0.5 GB per GPU. Measured: ~300 MB for a bare
  PyTorch CUDA context with lazy module loading, CUDA >= 11.7 (pytorch/pytorch#107667, ptrblck);
  300-400 MB (pytorch/pytorch#20532); 107 MiB on an RTX 4060 Ti and 555 MiB on an RTX PRO 6000
  (ggml-org/llama.cpp#23604). cuBLAS workspaces and allocator slack come on top, so 0.5 GB.

FLOPs per token (`flops_per_token`): forward 2 x A plus attention 4 x L x a x d x s' (QK^T and
AV), s' the positions attended (decode: the context; prefill: half of it on average). Training
costs `training_passes` forwards' worth: the forward, a backward of two when every weight
trains (gradients for the activations and for the weights: 3 x forward, the familiar 6 x A,
Kaplan et al. 2020, arXiv:2001.08361 sec. 2.1) or of one for adapters on frozen weights (no
weight gradients: LoRA, Hu et al. 2021, arXiv:2106.09685 sec. 4.2, who measured 25% more
training throughput than full fine-tuning of GPT-3 175B for it), plus one more forward with
gradient checkpointing, which recomputes each layer's forward before its backward (Chen et al.
2016, arXiv:1604.06174; with it a full step is 4 x forward, the 96 B s l h^2 of Narayanan et al.
2021, arXiv:2104.04473 eq. 3). The adapters' own FLOPs (r x (d_in + d_out) per target, under 1%
of A at rank 16) are left out. Measured, time follows these FLOPs only in part: LoRA ran 1.12x
full fine-tuning's tokens/s with checkpointing (torchtune, Llama 3.2 3B, A100; FLOPs: 1.33x) and
1.07x without (LitGPT, Phi-3-mini, A10G; FLOPs: 1.5x). QLoRA's on-the-fly dequantization of the
4-bit weights is not counted: with bitsandbytes NF4 at sequences of 512 or less it took 1.4-2.0x
LoRA's time for 3-13B models (LitGPT, A100 and A10G), 1.02x with torchao NF4 at 4,096 (README,
"Which GPU for a language model?", has the citations).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

Task = Literal["inference", "full-finetune", "lora", "qlora"]
Optimizer = Literal["adamw", "adamw-8bit", "sgd"]
LoraTargets = Literal["all-linear", "attention"]
Phase = Literal["prefill", "decode", "train"]
SplitMode = Literal["tensor", "layer", "sharded"]

GB = 1e9
OVERHEAD_BYTES = 0.5 * GB  # CUDA context + workspaces per GPU (sources in the module docstring)
PREFILL_CHUNK = 512  # llama.cpp default n_ubatch
OPTIMIZER_BYTES: dict[str, float] = {"adamw": 8.0, "adamw-8bit": 2.0, "sgd": 4.0}
MASTER_BYTES = 4.0
# quantizations.csv's kind of llama.cpp's block formats (q4_k_m, q8_0, ...): inference only.
GGUF_KIND = "gguf"
# QLoRA's default base format (quantizations.csv row nf4), used when qlora is asked without one.
NF4_BITS = 4.127
TASKS: tuple[str, ...] = ("inference", "full-finetune", "lora", "qlora")
# Forwards' worth of matrix math per token of full training without checkpointing (6 x A).
FULL_TRAINING_PASSES = 3
DEFAULT_QUANT: dict[str, str] = {
    "inference": "bf16",
    "full-finetune": "bf16",
    "lora": "bf16",
    "qlora": "nf4",
}


@dataclass(frozen=True)
class ModelSpec:
    """One row of models.csv. For mixture-of-experts `intermediate` is one expert's width."""

    slug: str
    name: str
    family: str
    params_b: float
    active_params_b: float
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    max_context: int
    tied_embeddings: bool
    gated_mlp: bool = True
    num_experts: int | None = None
    experts_per_token: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    sliding_window: int | None = None  # tokens a sliding-window layer attends to
    sliding_layers: int = 0  # layers that attend to the last sliding_window tokens only
    source: str = ""

    @property
    def is_moe(self) -> bool:
        return (self.num_experts or 1) > 1

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def embedding_params(self) -> int:
        """Token embedding plus lm_head (once when tied)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)


@dataclass(frozen=True)
class Quantization:
    """One row of quantizations.csv: storage bits per weight and the rate the matmuls run at."""

    name: str
    bits_per_weight: float
    compute_precision: str
    kind: str
    quantizes_embeddings: bool = True
    aliases: tuple[str, ...] = ()
    source: str = ""


@dataclass(frozen=True)
class MemoryBreakdown:
    """Bytes per GPU, by term."""

    weights: float
    kv_cache: float
    activations: float
    gradients: float
    optimizer: float
    lora_adapters: float
    overhead: float
    trainable_params: float
    gpus: int
    split: SplitMode = "tensor"

    @property
    def total(self) -> float:
        return (
            self.weights
            + self.kv_cache
            + self.activations
            + self.gradients
            + self.optimizer
            + self.lora_adapters
            + self.overhead
        )

    @property
    def total_gb(self) -> float:
        return self.total / GB

    def as_gb(self) -> dict[str, float]:
        """Each term and the total in GB (1e9 bytes), rounded to 3 decimals."""
        terms = {
            "weights": self.weights,
            "kv_cache": self.kv_cache,
            "activations": self.activations,
            "gradients": self.gradients,
            "optimizer": self.optimizer,
            "lora_adapters": self.lora_adapters,
            "overhead": self.overhead,
        }
        out = {f"{k}_gb": round(v / GB, 3) for k, v in terms.items()}
        out["total_gb"] = round(self.total_gb, 3)
        return out


NF4 = Quantization("nf4", NF4_BITS, "bf16", "nf4", quantizes_embeddings=False)


# ---------------------------------------------------------------- catalog parsing (pure)


def _bool(text: str | None) -> bool:
    return (text or "").strip().lower() in {"true", "1", "yes"}


def _opt_int(text: str | None) -> int | None:
    text = (text or "").strip()
    return int(text) if text else None


def parse_models(text: str) -> list[ModelSpec]:
    """models.csv text -> specs; a malformed row raises ValueError naming its slug."""
    specs = []
    for row in csv.DictReader(text.splitlines()):
        try:
            specs.append(
                ModelSpec(
                    slug=row["slug"].strip(),
                    name=row["name"].strip(),
                    family=row["family"].strip(),
                    params_b=float(row["params_b"]),
                    active_params_b=float(row["active_params_b"]),
                    layers=int(row["layers"]),
                    hidden=int(row["hidden"]),
                    intermediate=int(row["intermediate"]),
                    heads=int(row["heads"]),
                    kv_heads=int(row["kv_heads"]),
                    head_dim=int(row["head_dim"]),
                    vocab=int(row["vocab"]),
                    max_context=int(row["max_context"]),
                    tied_embeddings=_bool(row["tied_embeddings"]),
                    gated_mlp=_bool(row.get("gated_mlp") or "true"),
                    num_experts=_opt_int(row.get("num_experts")),
                    experts_per_token=_opt_int(row.get("experts_per_token")),
                    kv_lora_rank=_opt_int(row.get("kv_lora_rank")),
                    qk_rope_head_dim=_opt_int(row.get("qk_rope_head_dim")),
                    sliding_window=_opt_int(row.get("sliding_window")),
                    sliding_layers=_opt_int(row.get("sliding_layers")) or 0,
                    source=(row.get("source") or "").strip(),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"models.csv row {row.get('slug')!r}: {exc}") from exc
    return specs


def parse_quantizations(text: str) -> list[Quantization]:
    """quantizations.csv text -> rows."""
    rows = []
    for row in csv.DictReader(text.splitlines()):
        aliases = tuple(a.strip().lower() for a in (row.get("aliases") or "").split("|"))
        rows.append(
            Quantization(
                name=row["name"].strip().lower(),
                bits_per_weight=float(row["bits_per_weight"]),
                compute_precision=row["compute_precision"].strip(),
                kind=row["kind"].strip(),
                quantizes_embeddings=_bool(row.get("quantizes_embeddings") or "true"),
                aliases=tuple(a for a in aliases if a),
                source=(row.get("source") or "").strip(),
            )
        )
    return rows


def find_quantization(name: str, table: list[Quantization]) -> Quantization | None:
    """Look a format up by name or alias, case-insensitively ('Q4_K_M', 'awq', 'bfloat16')."""
    key = name.strip().lower()
    for q in table:
        if key == q.name or key in q.aliases:
            return q
    return None


def float_quantization(bits: float) -> Quantization:
    """A plain format of `bits` per weight, for callers that pass a number instead of a name."""
    precision = {32: "fp32", 16: "bf16", 8: "fp8", 4: "fp4"}.get(int(bits), "bf16")
    return Quantization(f"{bits:g}-bit", float(bits), precision, "float")


# ---------------------------------------------------------------- parameter counts


def ffn_width_per_token(model: ModelSpec) -> int:
    """The FFN width one token runs through: i for dense, i x experts_per_token for MoE."""
    return model.intermediate * (model.experts_per_token or 1)


def _attention_params_per_layer(model: ModelSpec) -> int:
    q_out = model.heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    return model.hidden * q_out * 2 + model.hidden * kv_out * 2  # q, o + k, v


def _ffn_params(model: ModelSpec, width: int) -> int:
    return (3 if model.gated_mlp else 2) * model.hidden * width


def architecture_params(model: ModelSpec) -> tuple[float, float]:
    """(total, active) params recomputed from the shape, biases and norms ignored.

    A check on the catalog's published counts, not a replacement: MLA attention and
    DeepSeek's dense first layers are not modelled, so callers skip rows with `is_mla`.
    GPT-2 adds learned position embeddings.
    """
    attn = _attention_params_per_layer(model)
    experts = model.num_experts or 1
    total_ffn = _ffn_params(model, model.intermediate) * experts
    active_ffn = _ffn_params(model, ffn_width_per_token(model))
    emb = model.embedding_params
    if model.family == "gpt2":
        emb += model.max_context * model.hidden
    total = model.layers * (attn + total_ffn) + emb
    active = model.layers * (attn + active_ffn) + emb
    return float(total), float(active)


def lora_params(model: ModelSpec, rank: int, targets: LoraTargets = "all-linear") -> float:
    """Adapter params: sum over target projections of r x (d_in + d_out), times layers."""
    h, q_out, kv_out = model.hidden, model.heads * model.head_dim, model.kv_heads * model.head_dim
    per_layer = (h + q_out) * 2 + (h + kv_out) * 2  # q, o, k, v
    if targets == "all-linear":
        mlp_mats = 3 if model.gated_mlp else 2
        per_layer += mlp_mats * (h + model.intermediate) * (model.num_experts or 1)
    return float(rank * per_layer * model.layers)


# ---------------------------------------------------------------- terms


def weight_bytes(model: ModelSpec, quant: Quantization) -> float:
    """All weights (every expert) at the format's bits; 16-bit embeddings where it keeps them."""
    params = model.params_b * 1e9
    if quant.quantizes_embeddings:
        return params * quant.bits_per_weight / 8
    emb = min(float(model.embedding_params), params)
    return (params - emb) * quant.bits_per_weight / 8 + emb * 2


def dequantized_bytes_per_step(model: ModelSpec, quant: Quantization, passes: int) -> float:
    """Bytes a training step moves, beyond a bf16 run's, to dequantize its stored weights
    (QLoRA): bitsandbytes turns each 4-bit weight into a bf16 buffer before every matmul that
    uses it (the forward, the recomputed forward, the backward's activation gradients: each of
    `passes`), reading it at its storage width and writing 2 bytes that the matmul then reads as
    a bf16 run reads its weights. 0 for weights kept at 16 bits or more. At the GPU's full
    bandwidth this is a floor on the time: bitsandbytes NF4 took 1.39-2.05x LoRA's time at 512
    tokens or less (LitGPT, A10G and A100), where the floor says about 1.1x."""
    if quant.bits_per_weight >= 16:
        return 0.0
    params = model.params_b * 1e9
    stored = params if quant.quantizes_embeddings else params - min(model.embedding_params, params)
    return passes * stored * (quant.bits_per_weight / 8 + 2)


def kv_tokens(model: ModelSpec, context: float, stored: bool = True) -> float:
    """Tokens of KV one sequence at `context` keeps (`stored`) or a decode step reads, in
    full-attention layers' worth: a sliding-window layer keeps its window and one prefill chunk
    (llama.cpp's SWA cache) and reads its window (see the module docstring)."""
    if not model.sliding_window or not model.sliding_layers:
        return context
    window = model.sliding_window + (PREFILL_CHUNK if stored else 0)
    full = model.layers - model.sliding_layers
    return (full * context + model.sliding_layers * min(context, window)) / model.layers


def kv_cache_bytes_per_token(model: ModelSpec, kv_bits: float = 16, gpus: int = 1) -> float:
    """KV cache bytes per token of context for one sequence, on one of `gpus` TP ranks."""
    kv_bytes = kv_bits / 8
    if model.is_mla:
        width = (model.kv_lora_rank or 0) + (model.qk_rope_head_dim or 0)
        return model.layers * width * kv_bytes
    heads_per_gpu = math.ceil(model.kv_heads / gpus)
    return 2 * model.layers * heads_per_gpu * model.head_dim * kv_bytes


def _layer_activation_bytes(model: ModelSpec, tokens: int, flash_attention: bool) -> float:
    """Korthikanti et al. eq. 1 for one layer, MLP term generalised to width i (see docstring)."""
    h = model.hidden
    width = ffn_width_per_token(model)
    mlp = 3 * h + (6 if model.gated_mlp else 4) * width
    per_token = 11 * h + 4 * h + mlp
    attn_matrix = 0.0 if flash_attention else 5 * model.heads * tokens * tokens
    return tokens * per_token + attn_matrix


def activation_bytes(
    model: ModelSpec,
    task: Task,
    context: int,
    batch: int,
    gpus: int = 1,
    gradient_checkpointing: bool = True,
    flash_attention: bool = True,
) -> float:
    """Activation memory per GPU (formulas in the module docstring)."""
    if task == "inference":
        chunk = min(context, PREFILL_CHUNK)
        working = batch * chunk * (4 * model.hidden + 2 * ffn_width_per_token(model)) * 2
        return (working + batch * model.vocab * 4) / gpus
    per_seq_layer = _layer_activation_bytes(model, context, flash_attention)
    if gradient_checkpointing:
        stored = 2 * context * model.hidden * model.layers + per_seq_layer
    else:
        stored = per_seq_layer * model.layers
    logits = context * model.vocab * 6
    return batch * (stored + logits) / gpus


def memory_breakdown(
    model: ModelSpec,
    task: Task = "inference",
    quant: Quantization | None = None,
    context: int = 4096,
    batch: int = 1,
    gpus: int = 1,
    optimizer: Optimizer = "adamw",
    gradient_checkpointing: bool = True,
    lora_rank: int = 16,
    lora_targets: LoraTargets = "all-linear",
    kv_bits: float = 16,
    flash_attention: bool = True,
    master_weights: bool | None = None,
    split: SplitMode | None = None,
) -> MemoryBreakdown:
    """Per-GPU memory for `task` on `gpus` GPUs, split as `split` says (None: split_for).

    quant: the base weights' format (None: bf16, or NF4 for qlora). Full fine-tuning needs
    16- or 32-bit weights; qlora needs a sub-8-bit format. master_weights: None means an fp32
    master copy for full fine-tuning of 16-bit weights and none for adapters.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; one of {', '.join(TASKS)}")
    if context < 1 or batch < 1 or gpus < 1:
        raise ValueError("context, batch and gpus must be >= 1")
    if optimizer not in OPTIMIZER_BYTES:
        raise ValueError(f"unknown optimizer {optimizer!r}; one of {', '.join(OPTIMIZER_BYTES)}")
    if quant is None:
        quant = NF4 if task == "qlora" else float_quantization(16)
    if task == "full-finetune" and quant.bits_per_weight < 16:
        raise ValueError("full fine-tuning trains 16- or 32-bit weights; use lora or qlora")
    if task == "qlora" and quant.bits_per_weight >= 8:
        raise ValueError("qlora trains adapters on a 4-bit base; use lora for 16-bit weights")
    if task != "inference" and quant.kind == GGUF_KIND:
        # llama.cpp runs these blocks for inference; PEFT, bitsandbytes and the trainers this
        # service's training rows come from load none of them
        raise ValueError(
            f"{quant.name} is a GGUF format that llama.cpp runs for inference; no trainer "
            "fine-tunes it: use lora on bf16 weights or qlora on nf4 (the default)"
        )

    split = effective_split(split, quant, task)
    if split == "layer":
        # the GPU holding the most layers holds their weights and KV, at full width
        share = layer_share(model, gpus)
        weights = weight_bytes(model, quant) * share
        kv = kv_cache_bytes_per_token(model, kv_bits) * kv_tokens(model, context) * batch * share
        acts = activation_bytes(model, task, context, batch, 1, flash_attention=flash_attention)
    elif split == "tensor":
        weights = weight_bytes(model, quant) / gpus
        kv = kv_cache_bytes_per_token(model, kv_bits, gpus) * kv_tokens(model, context) * batch
        acts = activation_bytes(model, task, context, batch, gpus, flash_attention=flash_attention)
    else:
        # sharded data parallel (FSDP, ZeRO-3): weights, gradients and optimizer states / N,
        # one block's weights gathered whole at a time, and every GPU runs whole sequences of
        # its own: ceil(b / N) of them, at least one
        whole = weight_bytes(model, quant)
        weights = whole / gpus + (whole / model.layers if gpus > 1 else 0.0)
        kv = 0.0
        per_gpu = math.ceil(batch / gpus)
        acts = activation_bytes(
            model, task, context, per_gpu, 1, gradient_checkpointing, flash_attention
        )

    trainable = 0.0
    adapters = grads = opt = 0.0
    if task == "full-finetune":
        trainable = model.params_b * 1e9
        grad_bytes = quant.bits_per_weight / 8
        master = (quant.bits_per_weight < 32) if master_weights is None else master_weights
        grads = trainable * grad_bytes / gpus
        opt = trainable * (OPTIMIZER_BYTES[optimizer] + (MASTER_BYTES if master else 0)) / gpus
    elif task in ("lora", "qlora"):
        trainable = lora_params(model, lora_rank, lora_targets)
        master = bool(master_weights)
        adapters = trainable * 2 / gpus
        grads = trainable * 2 / gpus
        opt = trainable * (OPTIMIZER_BYTES[optimizer] + (MASTER_BYTES if master else 0)) / gpus

    return MemoryBreakdown(
        weights=weights,
        kv_cache=kv,
        activations=acts,
        gradients=grads,
        optimizer=opt,
        lora_adapters=adapters,
        overhead=OVERHEAD_BYTES,
        trainable_params=trainable,
        gpus=gpus,
        split=split,
    )


# ---------------------------------------------------------------- headroom and fit


def _largest(fits: Callable[[int], bool], lo: int, hi: int) -> int | None:
    """Largest n in [lo, hi] with fits(n), given fits is monotone (true then false)."""
    if hi < lo or not fits(lo):
        return None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def max_context_that_fits(
    model: ModelSpec, memory_gb: float, *, batch: int = 1, **kwargs: Any
) -> int | None:
    """Largest context (<= the model's max_context) whose total fits in memory_gb per GPU;
    None when not even one token fits. kwargs go to `memory_breakdown`."""

    def fits(ctx: int) -> bool:
        total = memory_breakdown(model, context=ctx, batch=batch, **kwargs).total_gb
        return total <= memory_gb

    return _largest(fits, 1, model.max_context)


def max_batch_that_fits(
    model: ModelSpec,
    memory_gb: float,
    *,
    context: int = 4096,
    max_batch: int = 4096,
    **kwargs: Any,
) -> int | None:
    """Largest batch (<= max_batch) whose total fits in memory_gb per GPU; None if 1 does not."""

    def fits(b: int) -> bool:
        total = memory_breakdown(model, context=context, batch=b, **kwargs).total_gb
        return total <= memory_gb

    return _largest(fits, 1, max_batch)


def split_for(quant: Quantization | None, task: Task = "inference") -> SplitMode:
    """How a model is split over GPUs: for inference by layers for a GGUF file (llama.cpp,
    its runtime, splits "layers and KV across GPUs" by default: `--split-mode layer`,
    ggml-org/llama.cpp common/arg.cpp), else tensor-parallel (vLLM, TensorRT-LLM shard every
    layer over the GPUs); training is sharded data parallel (FSDP, DeepSpeed ZeRO-3)."""
    if task != "inference":
        return "sharded"
    gguf = quant is not None and quant.kind == "gguf"
    return "layer" if gguf else "tensor"


def effective_split(
    split: SplitMode | None, quant: Quantization | None, task: Task = "inference"
) -> SplitMode:
    """The split memory is counted by: `split` (None: split_for the format) for inference;
    training is sharded data parallel whatever runtime is named."""
    return (split or split_for(quant, task)) if task == "inference" else "sharded"


def layer_share(model: ModelSpec, gpus: int) -> float:
    """The largest share of the layers one of `gpus` GPUs holds in a layer split: 80 layers
    over 3 GPUs put 27 on one (0.3375, not a third)."""
    return math.ceil(model.layers / max(1, min(gpus, model.layers))) / model.layers


def total_over_gpus(model: ModelSpec, per_gpu: MemoryBreakdown) -> float:
    """Bytes over all of per_gpu.gpus GPUs. A tensor split is N x the per-GPU total; in a
    layer split per_gpu is the busiest GPU, so the weights and KV count once, whole, and each
    GPU adds its own activations and overhead."""
    if per_gpu.split == "layer" and per_gpu.gpus > 1:
        whole = (per_gpu.weights + per_gpu.kv_cache) / layer_share(model, per_gpu.gpus)
        return whole + per_gpu.gpus * (per_gpu.activations + per_gpu.overhead)
    return per_gpu.total * per_gpu.gpus


def split_fits(model: ModelSpec, gpus: int, split: SplitMode) -> bool:
    """Whether `gpus` GPUs can share the model as `split` says: tensor parallelism gives each
    GPU whole attention heads, so it needs the heads divisible by the count (vLLM and
    Megatron refuse others), and whole KV heads, split evenly or each copied to a whole number
    of GPUs (vLLM's QKVParallelLinear divides the KV heads by the count, or the count by
    them: Phi-4's 10 KV heads go on 2, 5 or 10 GPUs, not 4 or 8); an MLA model's latent KV is
    copied to every GPU. A layer split, or sharded data parallel, takes any count up to the
    number of layers."""
    if split == "tensor":
        if model.heads % gpus:
            return False
        kv = model.kv_heads
        return model.is_mla or (kv % gpus == 0 if gpus <= kv else gpus % kv == 0)
    return gpus <= model.layers  # a layer each at least; a sharded model: a block each at least


def gpus_needed(
    model: ModelSpec, memory_gb_per_gpu: float, max_gpus: int = 8, unit: int = 1, **kwargs: Any
) -> int | None:
    """Fewest GPUs, in multiples of `unit` (the GPUs one purchase brings), on which the per-GPU
    total fits; None when even max_gpus do not. Tensor parallelism needs the attention heads
    divisible by N; a layer split (kwargs' `split`, or split_for the format) takes any N up to
    the number of layers."""
    split = effective_split(
        kwargs.get("split"), kwargs.get("quant"), kwargs.get("task", "inference")
    )
    for n in range(max(unit, 1), max_gpus + 1, max(unit, 1)):
        if not split_fits(model, n, split):
            continue
        if memory_breakdown(model, gpus=n, **kwargs).total_gb <= memory_gb_per_gpu:
            return n
    return None


# ---------------------------------------------------------------- compute


def training_passes(task: Task, gradient_checkpointing: bool = False) -> int:
    """Forwards' worth of matrix math per trained token (module docstring): the forward, a
    backward of 2 (every weight trains) or 1 (adapters on frozen weights), +1 recomputed
    forward with gradient checkpointing."""
    if task == "inference":
        raise ValueError("inference trains nothing")
    backward = 2 if task == "full-finetune" else 1
    return 1 + backward + (1 if gradient_checkpointing else 0)


def flops_per_token(
    model: ModelSpec,
    phase: Phase = "decode",
    context: int = 4096,
    passes: int = FULL_TRAINING_PASSES,
) -> float:
    """FLOPs per token: 2 x active params + attention 4 L a d s' forward; train = `passes` x
    forward (3, pretraining without checkpointing, unless given: training_passes)."""
    attended = context if phase == "decode" else context / 2
    attention = 4 * model.layers * model.heads * model.head_dim * attended
    forward = 2 * model.active_params_b * 1e9 + attention
    return passes * forward if phase == "train" else forward
