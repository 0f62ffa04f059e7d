"""/models and /memory answers. Each memory term's description names its formula (details and
citations: service/domain/memory.py)."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TaskName = Literal["inference", "full-finetune", "lora", "qlora"]
GRADIENT_CHECKPOINTING_DOC = (
    "Training asks: recompute each layer's forward in the backward (default true): only each "
    "layer's input is stored, and a token costs one forward more (full fine-tuning 4 forwards' "
    "worth of FLOPs instead of 3, LoRA and QLoRA 3 instead of 2)."
)
OptimizerName = Literal["adamw", "adamw-8bit", "sgd"]


class ModelRead(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    slug: str
    name: str
    family: str
    params_b: float = Field(description="Total parameters, 1e9 (every expert for MoE).")
    active_params_b: float = Field(description="Parameters one token runs through, 1e9.")
    layers: int
    hidden: int
    intermediate: int = Field(description="FFN width; one expert's for mixture-of-experts.")
    heads: int
    kv_heads: int = Field(description="Key/value heads (grouped-query attention).")
    head_dim: int
    vocab: int
    max_context: int
    tied_embeddings: bool
    num_experts: int | None
    experts_per_token: int | None
    kv_lora_rank: int | None = Field(description="Multi-head latent attention latent width.")
    source: str


class MemoryAnswer(BaseModel):
    """Memory per GPU (GB = 1e9 bytes) on `gpus` GPUs, split as `split` says."""

    model: str
    task: TaskName
    quant: str
    bits_per_weight: float
    context: int
    batch: int
    gpus: int
    split: Literal["tensor", "layer", "sharded"] = Field(
        description="How the model is split over the GPUs: layer for a GGUF file run for "
        "inference (llama.cpp's default --split-mode layer: each GPU holds whole layers, their "
        "weights and KV, and the figures are the GPU holding the most, ceil(layers / N) of "
        "them); tensor for other inference (every layer sharded over the N GPUs, / N); "
        "sharded for training (FSDP / ZeRO-3 data parallel: weights, gradients and optimizer "
        "/ N plus one block gathered whole, and each GPU's own ceil(batch / N) sequences of "
        "activations)."
    )
    optimizer: OptimizerName
    lora_rank: int
    gradient_checkpointing: bool
    kv_bits: int
    weights_gb: float = Field(
        description="P x bits_per_weight / 8 (embeddings and lm_head at 2 bytes for formats that "
        "keep them 16-bit: nf4, awq, gptq, int4); every expert of a MoE; / N GPUs (split tensor), "
        "x ceil(layers / N) / layers (split layer: the GPU holding the most layers)."
    )
    kv_cache_gb: float = Field(
        description="Inference: 2 x layers x ceil(kv_heads / N) x head_dim x kv_bits/8 x context "
        "x batch (grouped-query attention stores kv_heads, not heads); MLA: layers x "
        "(kv_lora_rank + qk_rope_head_dim) x kv_bits/8 x context x batch; split layer: every "
        "kv head of the busiest GPU's ceil(layers / N) layers; a sliding-window layer (Gemma 2, "
        "Gemma 3) keeps min(context, window + 512) tokens. 0 for training."
    )
    activations_gb: float = Field(
        description="Inference: batch x min(context, 512) x (4 h + 2 i) x 2 bytes + batch x vocab "
        "x 4 (logits). Training (Korthikanti et al. 2022 eq. 1, flash attention): per layer "
        "context x batch x (15 h + MLP), MLP = 3 h + 6 i gated / 4 i plain, bytes; with "
        "gradient checkpointing 2 x context x batch x h per layer plus one full layer; logits "
        "context x batch x vocab x 6; / N GPUs."
    )
    gradients_gb: float = Field(
        description="Trainable params x 2 bytes (16-bit; 4 for fp32 weights); / N GPUs."
    )
    optimizer_gb: float = Field(
        description="Trainable params x (AdamW 8 | 8-bit Adam 2 | SGD momentum 4 bytes), plus a "
        "4-byte fp32 master copy in mixed-precision full fine-tuning (16 bytes/param in all); "
        "/ N GPUs."
    )
    lora_adapters_gb: float = Field(
        description="LoRA params x 2 bytes; LoRA params = rank x sum over q, k, v, o, gate, up, "
        "down of (d_in + d_out) x layers; / N GPUs."
    )
    overhead_gb: float = Field(description="CUDA context and library workspaces: 0.5 GB per GPU.")
    total_gb: float = Field(description="Per GPU: the sum of the terms above.")
    total_all_gpus_gb: float = Field(
        description="Over every GPU: total_gb x gpus (split tensor); weights and KV once plus "
        "each GPU's activations and overhead (split layer)."
    )
    trainable_params: float = Field(description="Parameters the task trains (0 for inference).")
