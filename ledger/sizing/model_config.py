"""What a model's config.json says about its KV cache: layers and their kinds, heads, windows, MLA,
and the fixed state of linear-attention / Mamba layers (vllm/model_executor/models/config.py)."""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from .curve import SizingError

#: Bytes per element of a model / state dtype as config.json names it (torch_dtype, mamba_ssm_dtype).
_TORCH_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "half": 2, "float32": 4, "float": 4}


@dataclass(frozen=True)
class StateShape:
    """The fixed per-sequence state of one linear-attention or Mamba layer, as vLLM allocates it.

    - `kind`: ``gated_delta_net`` (Qwen3-Next / Qwen3.5 linear attention) or ``mamba2``.
    - gated_delta_net: `heads` = linear_num_value_heads, `key_heads` = linear_num_key_heads,
      `key_dim`, `value_dim` (head dims), `conv_kernel` = linear_conv_kernel_dim.
    - mamba2: `heads` = mamba heads, `value_dim` = mamba head dim, `key_dim` = d_state (SSM state
      size), `groups` = n_groups, `conv_kernel` = d_conv.
    - `conv_bytes`, `ssm_bytes`: bytes per element of the conv state (the model dtype) and of the
      SSM / recurrent state (config mamba_ssm_dtype, else the model dtype).
    """

    kind: str
    heads: int
    key_dim: int
    value_dim: int
    conv_kernel: int
    conv_bytes: int
    ssm_bytes: int
    key_heads: int = 0
    groups: int = 1

    def bytes_per_gpu(self, gpus: int) -> int:
        """Bytes of one layer's state on one of `gpus` tensor-parallel GPUs (vLLM's
        MambaStateShapeCalculator; channels and heads split over the GPUs, rounded up).

        gated_delta_net: conv (2 x key_heads x key_dim + heads x value_dim) / TP x (kernel - 1)
        x conv bytes + recurrent heads / TP x value_dim x key_dim x ssm bytes.
        mamba2: conv (heads x value_dim + 2 x groups x d_state) / TP x (d_conv - 1) x conv bytes
        + heads / TP x value_dim x d_state x ssm bytes (groups are raised to TP when TP does not
        divide them, as vLLM replicates them with the heads)."""
        if self.kind == "gated_delta_net":
            conv_dim = 2 * self.key_heads * self.key_dim + self.heads * self.value_dim
        else:
            groups = self.groups if self.groups % gpus == 0 else gpus
            conv_dim = self.heads * self.value_dim + 2 * groups * self.key_dim
        conv = math.ceil(conv_dim / gpus) * (self.conv_kernel - 1) * self.conv_bytes
        ssm = math.ceil(self.heads / gpus) * self.value_dim * self.key_dim * self.ssm_bytes
        return conv + ssm


@dataclass(frozen=True)
class ModelKV:
    """What a model's attention caches per token, and what its other layers keep per sequence.

    - `name`: the model (its config's `_name_or_path` or the file name).
    - `layers`: decoder layers with a KV cache (count): full-attention plus sliding-window layers.
    - `kv_heads`, `head_dim`: KV heads and head dimension of grouped-query / multi-head attention,
      or None for MLA.
    - `kv_lora_rank`, `rope_dim`: MLA's compressed latent and decoupled RoPE key dimensions
      (DeepSeek-V2/V3), or None.
    - `sliding_layers`, `sliding_window`: how many of `layers` attend to a window of at most
      `sliding_window` tokens (count, token).
    - `state_layers`, `state`: linear-attention / Mamba layers (count) and their fixed per-sequence
      state (a StateShape, or None when the config does not give enough to compute it).
    - `max_model_len`: the config's max_position_embeddings (vLLM's default max_model_len), or None.
    - `notes`: what was read in a way worth saying (a state not counted, sliding turned off).
    """

    name: str
    layers: int
    kv_heads: int | None = None
    head_dim: int | None = None
    kv_lora_rank: int | None = None
    rope_dim: int | None = None
    sliding_layers: int = 0
    sliding_window: int | None = None
    state_layers: int = 0
    state: StateShape | None = None
    max_model_len: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def is_mla(self) -> bool:
        return self.kv_lora_rank is not None

    @property
    def full_layers(self) -> int:
        """Layers whose KV cache grows with every token (count)."""
        return self.layers - self.sliding_layers

    @property
    def is_hybrid(self) -> bool:
        """Sliding-window layers or a counted per-sequence state: fitted by vLLM's block plan."""
        return self.sliding_layers > 0 or (self.state_layers > 0 and self.state is not None)


def _int_field(cfg: Mapping, key: str, name: str) -> int | None:
    v = cfg.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
        raise SizingError(f"{name}: config field {key} = {v!r} is not a positive whole number")
    return v


def _first_int(cfg: Mapping, keys: tuple[str, ...], name: str) -> int | None:
    for k in keys:
        v = _int_field(cfg, k, name)
        if v is not None:
            return v
    return None


#: layer_types entries (Hugging Face configs) and what each layer keeps.
_LAYER_KINDS = {
    "full_attention": "full", "attention": "full",
    "sliding_attention": "sliding",
    "linear_attention": "linear", "mamba": "mamba",
}


def _layer_kinds(cfg: Mapping, layers: int, label: str) -> list[str]:
    """One kind per decoder layer: full, sliding, linear or mamba. From `layer_types` (or
    `layers_block_type`), else `full_attention_interval` (layer i is full when (i + 1) % interval
    == 0, the others linear attention: Qwen3-Next), else Gemma's `sliding_window_pattern` (layer i
    slides when (i + 1) % pattern != 0), else every layer full."""
    types = cfg.get("layer_types")
    if types is None:
        types = cfg.get("layers_block_type")
    if types is not None:
        if not isinstance(types, list) or len(types) != layers:
            raise SizingError(f"{label}: layer_types must list one type per layer ({layers}), "
                              f"got {len(types) if isinstance(types, list) else repr(types)}")
        unknown = sorted({str(t) for t in types if t not in _LAYER_KINDS})
        if unknown:
            raise SizingError(f"{label}: unknown layer_types {', '.join(unknown)} "
                              f"(known: {', '.join(_LAYER_KINDS)})")
        return [_LAYER_KINDS[t] for t in types]
    interval = _int_field(cfg, "full_attention_interval", label)
    if interval is not None:
        return ["full" if (i + 1) % interval == 0 else "linear" for i in range(layers)]
    pattern = _int_field(cfg, "sliding_window_pattern", label)
    if pattern is not None and cfg.get("sliding_window") is not None:
        return ["sliding" if (i + 1) % pattern else "full" for i in range(layers)]
    return ["full"] * layers


def _dtype_bytes_of(value, label: str, key: str) -> int | None:
    if value is None:
        return None
    b = _TORCH_DTYPE_BYTES.get(str(value).lower().removeprefix("torch."))
    if b is None:
        raise SizingError(f"{label}: config field {key} = {value!r} is not a dtype this fit knows "
                          f"({', '.join(_TORCH_DTYPE_BYTES)})")
    return b


def _state_shape(cfg: Mapping, top: Mapping, kind: str, label: str) -> tuple[StateShape | None, str | None]:
    """The per-layer state of `kind` (linear or mamba) from the config, or (None, why not)."""
    model_bytes = (_dtype_bytes_of(cfg.get("dtype") or cfg.get("torch_dtype") or top.get("dtype")
                                   or top.get("torch_dtype"), label, "torch_dtype") or 2)
    ssm_bytes = (_dtype_bytes_of(cfg.get("mamba_ssm_dtype") or cfg.get("mamba_ssm_cache_dtype"), label,
                                 "mamba_ssm_dtype") or model_bytes)
    if kind == "linear":
        need = ("linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
                "linear_conv_kernel_dim")
        vals = {k: _int_field(cfg, k, label) for k in need}
        missing = [k for k, v in vals.items() if v is None]
        if missing:
            return None, f"linear-attention state not counted: config lacks {', '.join(missing)}"
        return StateShape("gated_delta_net", heads=vals["linear_num_value_heads"],
                          key_dim=vals["linear_key_head_dim"], value_dim=vals["linear_value_head_dim"],
                          conv_kernel=vals["linear_conv_kernel_dim"], conv_bytes=model_bytes, ssm_bytes=ssm_bytes,
                          key_heads=vals["linear_num_key_heads"]), None
    heads = _first_int(cfg, ("mamba_n_heads", "mamba_num_heads"), label)
    head_dim = _first_int(cfg, ("mamba_d_head", "mamba_head_dim"), label)
    d_state = _first_int(cfg, ("mamba_d_state", "ssm_state_size", "state_size"), label)
    missing = [n for n, v in (("mamba_n_heads", heads), ("mamba_d_head", head_dim), ("mamba_d_state", d_state))
               if v is None]
    if missing:
        return None, f"Mamba state not counted: config lacks {', '.join(missing)}"
    groups = _first_int(cfg, ("mamba_n_groups", "n_groups"), label) or 1
    d_conv = _first_int(cfg, ("mamba_d_conv", "conv_kernel"), label) or 4
    return StateShape("mamba2", heads=heads, key_dim=d_state, value_dim=head_dim, conv_kernel=d_conv,
                      conv_bytes=model_bytes, ssm_bytes=ssm_bytes, groups=groups), None


def model_kv_from_config(cfg: Mapping, *, name: str = "config.json") -> ModelKV:
    """Read the KV shape from a Hugging Face `config.json` (a multimodal model's `text_config` when
    the top level has no layers). GQA: num_hidden_layers, num_key_value_heads (default
    num_attention_heads), head_dim (default hidden_size / num_attention_heads). MLA: kv_lora_rank
    and qk_rope_head_dim. Layer kinds: `layer_types` ("full_attention", "sliding_attention",
    "linear_attention", "mamba"), `full_attention_interval` or `sliding_window_pattern`;
    sliding layers need `sliding_window`; linear-attention layers' state comes from linear_num_key_heads,
    linear_num_value_heads, linear_key_head_dim, linear_value_head_dim, linear_conv_kernel_dim; Mamba
    layers' from mamba_n_heads, mamba_d_head, mamba_d_state (with n_groups, d_conv)."""
    top = cfg
    if "num_hidden_layers" not in cfg and isinstance(cfg.get("text_config"), Mapping):
        cfg = cfg["text_config"]
    label = str(cfg.get("_name_or_path") or top.get("_name_or_path") or name)
    total = _int_field(cfg, "num_hidden_layers", label)
    if total is None:
        raise SizingError(f"{label}: config has no num_hidden_layers")
    kinds = _layer_kinds(cfg, total, label)
    notes: list[str] = []
    sliding = kinds.count("sliding")
    window = None
    if sliding:
        window = _int_field(cfg, "sliding_window", label)
        if window is None:
            raise SizingError(f"{label}: {sliding} sliding_attention layers but no sliding_window")
        if cfg.get("use_sliding_window") is False:
            notes.append(f"use_sliding_window is false: {sliding} sliding_attention layers counted as full attention")
            sliding, window = 0, None
    state_kinds = sorted({k for k in kinds if k in ("linear", "mamba")})
    if len(state_kinds) > 1:
        raise SizingError(f"{label}: both linear_attention and mamba layers: one state kind per model is supported")
    state_layers = sum(1 for k in kinds if k in ("linear", "mamba"))
    state = None
    if state_layers:
        state, why = _state_shape(cfg, top, state_kinds[0], label)
        if why:
            notes.append(f"{state_layers} layers: {why}")
    layers = total - state_layers
    if layers == 0:
        raise SizingError(f"{label}: no attention layer: a pure state-space model has no KV cache to fit")
    common = dict(sliding_layers=sliding, sliding_window=window, state_layers=state_layers, state=state,
                  max_model_len=_int_field(cfg, "max_position_embeddings", label), notes=tuple(notes))
    if cfg.get("kv_lora_rank") is not None:
        rank, rope = _int_field(cfg, "kv_lora_rank", label), _int_field(cfg, "qk_rope_head_dim", label)
        if rope is None:
            raise SizingError(f"{label}: an MLA config (kv_lora_rank) needs qk_rope_head_dim")
        return ModelKV(label, layers, kv_lora_rank=rank, rope_dim=rope, **common)
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
    return ModelKV(label, layers, kv_heads=kv_heads, head_dim=head_dim, **common)


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
