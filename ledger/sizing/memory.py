"""Memory fit: KV-cache bytes per token from a model's config.json, and the concurrency the cache holds."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .curve import SizingError

GIB = 2**30

#: Bytes per KV element by cache dtype (vLLM's --kv-cache-dtype names and the usual aliases).
KV_DTYPE_BYTES = {
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
    "fp32": 4, "float32": 4,
}


@dataclass(frozen=True)
class ModelKV:
    """What a model's attention caches per token.

    - `name`: the model (its config's `_name_or_path` or the file name).
    - `layers`: decoder layers with a KV cache (count).
    - `kv_heads`, `head_dim`: KV heads and head dimension of grouped-query / multi-head attention,
      or None for MLA.
    - `kv_lora_rank`, `rope_dim`: MLA's compressed latent and decoupled RoPE key dimensions
      (DeepSeek-V2/V3), or None.
    """

    name: str
    layers: int
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    rope_dim: int | None = None

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None


@dataclass(frozen=True)
class MemoryFit:
    """How many tokens, and so how many concurrent sequences, one replica's KV cache holds.

    - `model`, `kv_dtype`, `gpus` (GPUs per replica = tensor-parallel degree).
    - `gpu_mem_gib`: memory of one GPU [GiB]; `mem_util`: the share the engine may use (vLLM's
      gpu_memory_utilization); `weights_gib`, `workspace_gib`: per GPU [GiB] (workspace = activation
      peak + non-torch memory, as vLLM's profiler reports them).
    - `kv_bytes_per_token`: the model's KV bytes per token [byte/token] (all layers, all KV heads).
    - `kv_bytes_per_token_per_gpu`: what one GPU stores per token [byte/token]: GQA heads are split
      over the GPUs (a GPU holds at least one head), MLA's latent is replicated on every GPU.
    - `kv_budget_gib_per_gpu` = gpu_mem_gib x mem_util - weights_gib - workspace_gib [GiB].
    - `tokens_fit` = floor(budget bytes / bytes per token per GPU) [token].
    - `tokens_per_sequence` = ISL + OSL [token], or None.
    - `concurrency_cap` = floor(tokens_fit / (ISL + OSL)): sequences at full length that fit, or None.
    """

    model: str
    kv_dtype: str
    gpus: int
    gpu_mem_gib: float
    mem_util: float
    weights_gib: float
    workspace_gib: float
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    kv_budget_gib_per_gpu: float
    tokens_fit: int
    tokens_per_sequence: float | None
    concurrency_cap: int | None


def _int_field(cfg: Mapping, key: str, name: str) -> int | None:
    v = cfg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise SizingError(f"{name}: config field {key} = {v!r} is not a positive whole number")
    return v


def model_kv_from_config(cfg: Mapping, *, name: str = "config.json") -> ModelKV:
    """Read the KV shape from a Hugging Face `config.json` (a multimodal model's `text_config` when
    the top level has no layers). GQA: num_hidden_layers, num_key_value_heads (default
    num_attention_heads), head_dim (default hidden_size / num_attention_heads). MLA: kv_lora_rank
    and qk_rope_head_dim. Every layer is taken to cache full attention (sliding-window layers
    would cache less: the fit is then conservative)."""
    if "num_hidden_layers" not in cfg and isinstance(cfg.get("text_config"), Mapping):
        cfg = cfg["text_config"]
    label = str(cfg.get("_name_or_path") or name)
    layers = _int_field(cfg, "num_hidden_layers", label)
    if layers is None:
        raise SizingError(f"{label}: config has no num_hidden_layers")
    if cfg.get("kv_lora_rank") is not None:
        rank, rope = _int_field(cfg, "kv_lora_rank", label), _int_field(cfg, "qk_rope_head_dim", label)
        if rope is None:
            raise SizingError(f"{label}: an MLA config (kv_lora_rank) needs qk_rope_head_dim")
        return ModelKV(label, layers, kv_lora_rank=rank, rope_dim=rope)
    heads = _int_field(cfg, "num_attention_heads", label)
    kv_heads = _int_field(cfg, "num_key_value_heads", label) or heads
    head_dim = _int_field(cfg, "head_dim", label)
    if head_dim is None:
        hidden = _int_field(cfg, "hidden_size", label)
        if hidden is None or heads is None or hidden % heads:
            raise SizingError(f"{label}: config has no head_dim and no hidden_size / num_attention_heads to derive it")
        head_dim = hidden // heads
    if kv_heads is None:
        raise SizingError(f"{label}: config has neither num_key_value_heads nor num_attention_heads")
    return ModelKV(label, layers, kv_heads=kv_heads, head_dim=head_dim)


def load_model_config(path: str | Path) -> ModelKV:
    """`model_kv_from_config` of a config.json file."""
    p = Path(path)
    try:
        cfg = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise SizingError(f"{p.name}: cannot read the model config ({e})") from None
    if not isinstance(cfg, Mapping):
        raise SizingError(f"{p.name}: a model config is a JSON object")
    return model_kv_from_config(cfg, name=p.name)


def dtype_bytes(kv_dtype: str) -> int:
    try:
        return KV_DTYPE_BYTES[kv_dtype.lower()]
    except KeyError:
        raise SizingError(f"unknown KV dtype {kv_dtype!r} (one of {', '.join(KV_DTYPE_BYTES)})") from None


def kv_bytes_per_token(model: ModelKV, kv_dtype: str) -> int:
    """The model's KV bytes per token: 2 (K and V) x layers x KV heads x head dim x dtype bytes;
    MLA caches one latent per layer: layers x (kv_lora_rank + rope dim) x dtype bytes."""
    b = dtype_bytes(kv_dtype)
    if model.is_mla:
        return model.layers * (model.kv_lora_rank + model.rope_dim) * b
    return 2 * model.layers * model.kv_heads * model.head_dim * b


def kv_bytes_per_token_per_gpu(model: ModelKV, kv_dtype: str, gpus: int) -> int:
    """What one of `gpus` tensor-parallel GPUs stores per token: GQA heads are split (ceil, and at
    least one head per GPU: engines replicate KV heads when TP exceeds them); MLA's latent is
    replicated on every GPU."""
    b = dtype_bytes(kv_dtype)
    if model.is_mla:
        return kv_bytes_per_token(model, kv_dtype)
    return 2 * model.layers * max(1, math.ceil(model.kv_heads / gpus)) * model.head_dim * b


def memory_fit(model: ModelKV, *, kv_dtype: str, gpu_mem_gib: float, weights_gib: float, workspace_gib: float,
               mem_util: float = 0.9, gpus: int = 1, isl: float | None = None, osl: float | None = None) -> MemoryFit:
    """The KV budget, tokens that fit and the concurrency cap of one replica of `gpus` GPUs.

    KV budget per GPU = gpu_mem_gib x mem_util - weights_gib - workspace_gib (weights and workspace
    per GPU, as the engine logs them); the replica's budget is `gpus` times that, so this is
    DESIGN's GPU memory x gpus x utilization - weights - workspace with replica-wide weights and
    workspace. Tokens = per-GPU budget / per-GPU bytes per token (each GPU holds its heads of every
    token). The cap counts every sequence at its full ISL + OSL: conservative, as a sequence holds
    fewer tokens while it is still generating.
    """
    errors = []
    for what, v, lo_ok in (("GPU memory", gpu_mem_gib, False), ("weights", weights_gib, True),
                           ("workspace", workspace_gib, True)):
        if not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0 or (v == 0 and not lo_ok):
            errors.append(f"{what} must be a {'non-negative' if lo_ok else 'positive'} number of GiB (got {v!r})")
    if not isinstance(mem_util, (int, float)) or not 0 < mem_util <= 1:
        errors.append(f"memory utilization must be in (0, 1] (got {mem_util!r})")
    if not isinstance(gpus, int) or gpus < 1:
        errors.append(f"GPUs per replica must be >= 1 (got {gpus!r})")
    if errors:
        raise SizingError(errors)
    per_token = kv_bytes_per_token(model, kv_dtype)
    per_token_gpu = kv_bytes_per_token_per_gpu(model, kv_dtype, gpus)
    budget = gpu_mem_gib * mem_util - weights_gib - workspace_gib
    if budget <= 0:
        raise SizingError(f"{model.name}: weights {weights_gib} GiB + workspace {workspace_gib} GiB leave no KV cache "
                          f"in {gpu_mem_gib} GiB x {mem_util} = {gpu_mem_gib * mem_util:.2f} GiB per GPU")
    tokens = math.floor(budget * GIB / per_token_gpu)
    seq = None if isl is None or osl is None else isl + osl
    cap = None if seq is None else math.floor(tokens / seq)
    return MemoryFit(model.name, kv_dtype.lower(), gpus, gpu_mem_gib, mem_util, weights_gib, workspace_gib, per_token,
                     per_token_gpu, budget, tokens, seq, cap)
