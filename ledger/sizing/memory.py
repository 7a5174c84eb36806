"""Memory fit: KV-cache bytes per token from a model's config.json, and the concurrency the cache holds.

Dense models (every layer full attention) are fitted by bytes: tokens = KV budget / bytes per token.
Hybrid models (sliding-window layers, linear-attention / Mamba layers with a fixed state per
sequence) are fitted the way vLLM's hybrid KV-cache allocator lays them out: one block pool of
uniform pages, layers split into groups of the same size, a per-sequence block count per group
(vllm/v1/core/kv_cache_utils.py, vllm/v1/kv_cache_interface.py, vllm/model_executor/models/config.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from .curve import SizingError
from .model_config import ModelKV

GIB = 2**30

#: Bytes per KV element by cache dtype (vLLM's --kv-cache-dtype names and the usual aliases).
#: fp4 is packed fp4 alone (two elements per byte); nvfp4 is vLLM's NVFP4 layout, which also stores
#: one fp8 scale per 16 elements: head_dim / 2 + head_dim / 16 bytes per head = 9/16 byte per element.
KV_DTYPE_BYTES = {
    "bf16": 2, "bfloat16": 2, "fp16": 2, "float16": 2, "half": 2,
    "fp8": 1, "fp8_e4m3": 1, "fp8_e5m2": 1, "int8": 1,
    "fp4": 0.5, "fp4_e2m1": 0.5, "nvfp4": 0.5625,
    "fp32": 4, "float32": 4,
}

#: vLLM's mamba_cache_mode: blocks a running sequence holds per linear-attention / Mamba group.
#: "none" (prefix caching off): one state; "align" (prefix caching on): two (current + checkpoint).
STATE_BLOCKS = {"none": 1, "align": 2}

#: Attention block alignment vLLM uses when it sizes a hybrid's block to the state page: 16 tokens
#: (FlashAttention / FlashInfer), 64 for MLA (vllm/model_executor/models/config.py,
#: HybridAttentionMambaModelConfig). 16 is also the plain block size of a sliding-window hybrid.
_ALIGN, _ALIGN_MLA = 16, 64


@dataclass(frozen=True)
class HybridPlan:
    """vLLM's hybrid allocator layout on one GPU (vllm/v1/core/kv_cache_utils.py).

    - `block_size` [token]: tokens per attention block, raised so one attention page holds one
      layer's state; `page_bytes` = block_size x attention bytes per token per layer (the state
      page is padded to it).
    - `group_size`: layers per KV-cache group; `full_groups`, `sliding_groups`, `state_groups`:
      groups of each kind (the last group of a kind is padded with empty layers).
    - `state_bytes_per_layer`: one layer's state on one GPU before padding [byte].
    """

    block_size: int
    page_bytes: int
    group_size: int
    full_groups: int
    sliding_groups: int
    state_groups: int
    state_bytes_per_layer: int

    def blocks_per_sequence(self, tokens: int, model: ModelKV, state_blocks: int) -> int:
        """Blocks of the shared pool one sequence of `tokens` tokens holds: per full-attention group
        ceil(tokens / block); per sliding group the window's blocks (ceil(min(tokens, window) /
        block), plus one when the window need not start on a block boundary); per state group
        `state_blocks` (1, or 2 with prefix caching's align mode)."""
        b = self.block_size
        full = math.ceil(tokens / b)
        sliding = 0
        if self.sliding_groups:
            w = model.sliding_window
            sliding = math.ceil(min(tokens, w) / b) + (1 if tokens > w else 0)
        return self.full_groups * full + self.sliding_groups * sliding + self.state_groups * state_blocks


@dataclass(frozen=True)
class MemoryFit:
    """How many tokens, and so how many concurrent sequences, one replica's KV cache holds.

    - `model`, `kv_dtype`, `gpus` (GPUs per replica = tensor-parallel degree).
    - `gpu_mem_gib`: memory of one GPU [GiB]; `mem_util`: the share the engine may use (vLLM's
      gpu_memory_utilization); `weights_gib`, `workspace_gib`: per GPU [GiB] (workspace = activation
      peak + non-torch memory, as vLLM's profiler reports them).
    - `kv_bytes_per_token`: the model's KV bytes per token [byte/token] (all attention layers, all
      KV heads; linear-attention / Mamba layers hold no per-token cache).
    - `kv_bytes_per_token_per_gpu`: what one GPU stores per token [byte/token]: GQA heads are split
      over the GPUs (a GPU holds at least one head), MLA's latent is replicated on every GPU.
    - `kv_budget_gib_per_gpu` = gpu_mem_gib x mem_util - weights_gib - workspace_gib [GiB].
    - `tokens_fit` [token]: dense models: floor(budget bytes / bytes per token per GPU); hybrid
      models: vLLM's "GPU KV cache size", int(num_blocks / blocks of one max_model_len sequence x
      max_model_len).
    - `tokens_per_sequence` = ISL + OSL [token], or None.
    - `concurrency_cap`: sequences at full length that fit, or None: dense floor(tokens_fit /
      (ISL + OSL)); hybrid floor(num_blocks / blocks one ISL + OSL sequence holds).
    - hybrid models only (else None): `max_model_len` [token] used for `tokens_fit`,
      `mamba_cache_mode`, `block_size` [token], `num_blocks` (blocks of the shared pool per GPU),
      `blocks_per_sequence` (at ISL + OSL), `state_bytes_per_sequence_per_gpu` [byte] (the fixed
      linear-attention / Mamba state of one sequence on one GPU, before page padding).
    - `notes`: how the config was read where that matters.
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
    max_model_len: int | None = None
    mamba_cache_mode: str | None = None
    block_size: int | None = None
    num_blocks: int | None = None
    blocks_per_sequence: int | None = None
    state_bytes_per_sequence_per_gpu: int | None = None
    notes: tuple[str, ...] = ()


def dtype_bytes(kv_dtype: str) -> float:
    try:
        return KV_DTYPE_BYTES[kv_dtype.lower()]
    except KeyError:
        raise SizingError(f"unknown KV dtype {kv_dtype!r} (one of {', '.join(KV_DTYPE_BYTES)})") from None


def _layer_bytes_per_token(model: ModelKV, kv_dtype: str, gpus: int) -> int:
    """One attention layer's bytes per token on one of `gpus` GPUs: 2 (K and V) x KV heads (split,
    at least one) x head dim x dtype bytes; MLA: (kv_lora_rank + rope dim) x dtype bytes, replicated.
    Sub-byte dtypes are rounded up to whole bytes per layer."""
    b = dtype_bytes(kv_dtype)
    if model.is_mla:
        return math.ceil((model.kv_lora_rank + model.rope_dim) * b)
    return math.ceil(2 * max(1, math.ceil(model.kv_heads / gpus)) * model.head_dim * b)


def kv_bytes_per_token(model: ModelKV, kv_dtype: str) -> int:
    """The model's KV bytes per token: 2 (K and V) x layers x KV heads x head dim x dtype bytes;
    MLA caches one latent per layer: layers x (kv_lora_rank + rope dim) x dtype bytes. Layers are
    the attention layers (full and sliding); linear-attention / Mamba layers cache no tokens."""
    b = dtype_bytes(kv_dtype)
    if model.is_mla:
        return math.ceil(model.layers * (model.kv_lora_rank + model.rope_dim) * b)
    return math.ceil(2 * model.layers * model.kv_heads * model.head_dim * b)


def kv_bytes_per_token_per_gpu(model: ModelKV, kv_dtype: str, gpus: int) -> int:
    """What one of `gpus` tensor-parallel GPUs stores per token: GQA heads are split (ceil, and at
    least one head per GPU: engines replicate KV heads when TP exceeds them); MLA's latent is
    replicated on every GPU."""
    if model.is_mla:
        return kv_bytes_per_token(model, kv_dtype)
    return model.layers * _layer_bytes_per_token(model, kv_dtype, gpus)


def hybrid_plan(model: ModelKV, kv_dtype: str, gpus: int) -> HybridPlan:
    """vLLM's layout of a hybrid model on one GPU.

    Block size: 16 tokens (64 for MLA) when no layer keeps a state; with a state, the smallest
    multiple of that alignment whose attention page (block x bytes per token per layer) holds one
    layer's state, which is then padded to the page (HybridAttentionMambaModelConfig). Groups:
    layers of one kind are split into groups of `group_size` layers, the smallest kind's count, or
    the largest's when that is under 1.5 times the smallest (_get_kv_cache_groups_uniform_page_size);
    a kind of n layers makes ceil(n / group_size) groups."""
    per_layer = _layer_bytes_per_token(model, kv_dtype, gpus)
    align = _ALIGN_MLA if model.is_mla else _ALIGN
    state_bytes = model.state.bytes_per_gpu(gpus) if model.state is not None and model.state_layers else 0
    block = align * math.ceil(state_bytes / (align * per_layer)) if state_bytes else align
    counts = {"full": model.full_layers, "sliding": model.sliding_layers,
              "state": model.state_layers if state_bytes else 0}
    present = [n for n in counts.values() if n > 0]
    lo, hi = min(present), max(present)
    group_size = hi if hi < 1.5 * lo else lo
    groups = {k: math.ceil(n / group_size) for k, n in counts.items()}
    return HybridPlan(block_size=block, page_bytes=block * per_layer, group_size=group_size,
                      full_groups=groups["full"], sliding_groups=groups["sliding"], state_groups=groups["state"],
                      state_bytes_per_layer=state_bytes)


def memory_fit(model: ModelKV, *, kv_dtype: str, gpu_mem_gib: float, weights_gib: float, workspace_gib: float,
               mem_util: float = 0.9, gpus: int = 1, isl: float | None = None, osl: float | None = None,
               max_model_len: int | None = None, mamba_cache_mode: str = "none") -> MemoryFit:
    """The KV budget, tokens that fit and the concurrency cap of one replica of `gpus` GPUs.

    KV budget per GPU = gpu_mem_gib x mem_util - weights_gib - workspace_gib (weights and workspace
    per GPU, as the engine logs them); the replica's budget is `gpus` times that, so this is
    DESIGN's GPU memory x gpus x utilization - weights - workspace with replica-wide weights and
    workspace. Dense models: tokens = per-GPU budget / per-GPU bytes per token (each GPU holds its
    heads of every token). Hybrid models: vLLM's block plan (`hybrid_plan`): num_blocks =
    floor(floor(budget bytes / page) / group_size); tokens_fit = int(num_blocks / blocks of one
    `max_model_len` sequence x max_model_len) (default max_model_len: the config's
    max_position_embeddings); cap = floor(num_blocks / blocks of one ISL + OSL sequence).
    `mamba_cache_mode` is vLLM's: "none" (prefix caching off, one state block per sequence and state
    group) or "align" (prefix caching on, two). The cap counts every sequence at its full ISL + OSL:
    conservative, as a sequence holds fewer tokens while it is still generating.
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
    if max_model_len is not None and (isinstance(max_model_len, bool) or not isinstance(max_model_len, int)
                                      or max_model_len < 1):
        errors.append(f"max model length must be a whole number of tokens >= 1 (got {max_model_len!r})")
    if mamba_cache_mode not in STATE_BLOCKS:
        errors.append(f"mamba cache mode must be one of {', '.join(STATE_BLOCKS)} (got {mamba_cache_mode!r})")
    if errors:
        raise SizingError(errors)
    per_token = kv_bytes_per_token(model, kv_dtype)
    per_token_gpu = kv_bytes_per_token_per_gpu(model, kv_dtype, gpus)
    budget = gpu_mem_gib * mem_util - weights_gib - workspace_gib
    if budget <= 0:
        raise SizingError(f"{model.name}: weights {weights_gib} GiB + workspace {workspace_gib} GiB leave no KV cache "
                          f"in {gpu_mem_gib} GiB x {mem_util} = {gpu_mem_gib * mem_util:.2f} GiB per GPU")
    seq = None if isl is None or osl is None else isl + osl
    common = dict(model=model.name, kv_dtype=kv_dtype.lower(), gpus=gpus, gpu_mem_gib=gpu_mem_gib,
                  mem_util=mem_util, weights_gib=weights_gib, workspace_gib=workspace_gib,
                  kv_bytes_per_token=per_token, kv_bytes_per_token_per_gpu=per_token_gpu,
                  kv_budget_gib_per_gpu=budget, tokens_per_sequence=seq, notes=model.notes)
    if not model.is_hybrid:
        tokens = math.floor(budget * GIB / per_token_gpu)
        cap = None if seq is None else math.floor(tokens / seq)
        return MemoryFit(tokens_fit=tokens, concurrency_cap=cap, **common)

    plan = hybrid_plan(model, kv_dtype, gpus)
    num_blocks = int(budget * GIB) // plan.page_bytes // plan.group_size
    state_blocks = STATE_BLOCKS[mamba_cache_mode]
    length = max_model_len or model.max_model_len
    if length is None and seq is not None:
        length = math.ceil(seq)
    if length is None:
        raise SizingError(f"{model.name}: a hybrid model's token count needs a max model length: the config has no "
                          f"max_position_embeddings; give max_model_len, or ISL and OSL")
    # vLLM's get_max_concurrency_for_kv_cache_config / its "GPU KV cache size" log line, float and all.
    tokens = int(num_blocks / plan.blocks_per_sequence(length, model, state_blocks) * length)
    per_seq = cap = None
    if seq is not None:
        per_seq = plan.blocks_per_sequence(math.ceil(seq), model, state_blocks)
        cap = num_blocks // per_seq
    has_state = plan.state_groups > 0
    return MemoryFit(tokens_fit=tokens, concurrency_cap=cap, max_model_len=length,
                     mamba_cache_mode=mamba_cache_mode if has_state else None, block_size=plan.block_size,
                     num_blocks=num_blocks, blocks_per_sequence=per_seq,
                     state_bytes_per_sequence_per_gpu=model.state_layers * plan.state_bytes_per_layer if has_state
                     else 0, **common)
