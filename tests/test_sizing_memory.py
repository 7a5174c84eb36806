"""Memory fit against vLLM's measured numbers (llm-d planner's empirical results, in the data README)."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from ledger.sizing import (SizingError, SizingRequest, kv_bytes_per_token, kv_bytes_per_token_per_gpu,
                           load_model_config, memory_fit, model_kv_from_config, parse_anchors, size)
from ledger.sizing.memory import hybrid_plan

# The fields of meta-llama/Llama-3.1-8B-Instruct's config.json that matter here (no head_dim: it is
# hidden_size / num_attention_heads = 4096 / 32 = 128).
LLAMA_31_8B = json.loads("""{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
  "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "max_position_embeddings": 131072,
  "vocab_size": 128256
}""")
LLAMA_33_70B = json.loads("""{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 8192,
  "num_attention_heads": 64, "num_hidden_layers": 80, "num_key_value_heads": 8
}""")
DEEPSEEK_V3 = json.loads("""{
  "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "hidden_size": 7168,
  "num_attention_heads": 128, "num_key_value_heads": 128, "num_hidden_layers": 61,
  "kv_lora_rank": 512, "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
  "v_head_dim": 128
}""")

H100_GIB = 79.18


def test_llama_31_8b_is_128_kib_per_token_in_bf16():
    # 2 (K and V) x 32 layers x 8 KV heads x 128 head dim x 2 bytes = 131,072 B = 128 KiB.
    m = model_kv_from_config(LLAMA_31_8B)
    assert (m.layers, m.kv_heads, m.head_dim, m.is_mla) == (32, 8, 128, False)
    assert kv_bytes_per_token(m, "bf16") == 131_072 == 128 * 1024
    assert kv_bytes_per_token(m, "fp8") == 65_536


def test_llama_31_8b_fits_about_420_9k_tokens_on_an_h100():
    # vLLM on an H100 (79.18 GiB, gpu_memory_utilization 0.9): weights 14.99 GiB, activation peak 4.76,
    # non-torch 0.13, KV cache 51.38 GiB, about 420.9k tokens.
    # Budget: 79.18 x 0.9 = 71.262; - 14.99 - (4.76 + 0.13) = 51.382 GiB (vLLM: 51.38).
    # Tokens: 51.382 x 2^30 / 131,072 = 51.382 x 8,192 = 420,921.3 -> 420,921 (vLLM: ~420.9k).
    # Concurrency at ISL + OSL = 1,024 + 1,024: 420,921 / 2,048 = 205.5 -> 205 sequences.
    fit = memory_fit(model_kv_from_config(LLAMA_31_8B), kv_dtype="bf16", gpu_mem_gib=H100_GIB, mem_util=0.9,
                     weights_gib=14.99, workspace_gib=4.76 + 0.13, isl=1024, osl=1024)
    assert fit.kv_budget_gib_per_gpu == pytest.approx(51.382)
    assert round(fit.kv_budget_gib_per_gpu, 2) == 51.38
    assert fit.tokens_fit == 420_921
    assert round(fit.tokens_fit / 1000, 1) == 420.9
    assert (fit.tokens_per_sequence, fit.concurrency_cap) == (2048, 205)


def test_llama_33_70b_at_tp2_is_320_kib_per_token_and_32_gib_per_gpu():
    # 2 x 80 layers x 8 KV heads x 128 x 2 B = 327,680 B = 320 KiB per token (the model);
    # at TP2 each GPU holds 4 of the 8 KV heads: 163,840 B per token per GPU.
    # Budget per GPU: 71.262 - 33.88 - 4.84 - 0.55 = 31.992 GiB (vLLM: 32.00 GiB).
    # Tokens: 31.992 x 2^30 / 163,840 = 31.992 x 6,553.6 = 209,662.7 -> 209,662.
    m = model_kv_from_config(LLAMA_33_70B)
    assert m.head_dim == 128 and kv_bytes_per_token(m, "bf16") == 320 * 1024
    fit = memory_fit(m, kv_dtype="bf16", gpu_mem_gib=H100_GIB, mem_util=0.9, weights_gib=33.88,
                     workspace_gib=4.84 + 0.55, gpus=2)
    assert fit.kv_bytes_per_token_per_gpu == 163_840
    assert round(fit.kv_budget_gib_per_gpu, 2) == pytest.approx(31.99)
    assert fit.tokens_fit == 209_662
    assert fit.concurrency_cap is None  # no ISL/OSL given


def test_deepseek_v3_mla_is_70272_bytes_per_token_replicated_on_every_gpu():
    # MLA: 61 layers x (kv_lora_rank 512 + rope 64) x 2 B = 70,272 B; TP does not split the latent.
    m = model_kv_from_config(DEEPSEEK_V3)
    assert m.is_mla and (m.kv_lora_rank, m.rope_dim) == (512, 64)
    assert kv_bytes_per_token(m, "bf16") == 70_272
    assert kv_bytes_per_token_per_gpu(m, "bf16", 8) == 70_272


def test_kv_heads_are_replicated_when_tp_exceeds_them():
    # 8 KV heads over 16 GPUs: each GPU still holds one head: 2 x 32 x 1 x 128 x 2 = 16,384 B per token.
    m = model_kv_from_config(LLAMA_31_8B)
    assert kv_bytes_per_token_per_gpu(m, "bf16", 16) == 16_384
    assert kv_bytes_per_token_per_gpu(m, "bf16", 4) == 32_768


def test_multimodal_text_config_and_explicit_head_dim(tmp_path):
    cfg = {"model_type": "gemma3", "text_config": {"num_hidden_layers": 4, "num_attention_heads": 8,
                                                   "num_key_value_heads": 4, "head_dim": 256, "hidden_size": 1024}}
    f = tmp_path / "config.json"
    f.write_text(json.dumps(cfg))
    m = load_model_config(f)
    # head_dim 256 as written (not 1024 / 8 = 128): 2 x 4 x 4 x 256 x 2 = 16,384 B.
    assert kv_bytes_per_token(m, "bf16") == 16_384


@pytest.mark.parametrize("cfg, needle", [
    ({"hidden_size": 4096}, "no num_hidden_layers"),
    ({"num_hidden_layers": 32, "num_attention_heads": 32}, "no head_dim"),
    ({"num_hidden_layers": 61, "kv_lora_rank": 512}, "needs qk_rope_head_dim"),
    ({"num_hidden_layers": "32", "num_attention_heads": 32, "head_dim": 128}, "not a positive whole number"),
])
def test_bad_configs_fail_loudly(cfg, needle):
    with pytest.raises(SizingError, match=needle):
        model_kv_from_config(cfg)


def test_unknown_dtype_and_no_room_fail_loudly():
    m = model_kv_from_config(LLAMA_31_8B)
    with pytest.raises(SizingError, match="unknown KV dtype 'fp6'"):
        kv_bytes_per_token(m, "fp6")
    with pytest.raises(SizingError, match="leave no KV cache"):
        memory_fit(m, kv_dtype="bf16", gpu_mem_gib=24, weights_gib=16, workspace_gib=6, mem_util=0.9)
    with pytest.raises(SizingError, match="memory utilization must be in"):
        memory_fit(m, kv_dtype="bf16", gpu_mem_gib=80, weights_gib=16, workspace_gib=6, mem_util=1.5)


def test_c_star_never_exceeds_the_kv_cap():
    # The 8B fit at 1,024 + 1,024 tokens caps concurrency at 205. SLA 20 would pick c* = 256 unconstrained;
    # measured, the highest point within the cap is c = 10; interpolated, c* stops at 205, limited by kv_cap:
    # u = ln(20.5) / ln(25.6) = 3.0204 / 3.2426 = 0.9315, t = 122.2 - 0.9315 x 80.4 = 47.31 tok/s/user,
    # 205 x 47.31 = 9,698 tok/s.
    fit = memory_fit(model_kv_from_config(LLAMA_31_8B), kv_dtype="bf16", gpu_mem_gib=H100_GIB, mem_util=0.9,
                     weights_gib=14.99, workspace_gib=4.89, isl=1024, osl=1024)
    curve = parse_anchors("1:215.5,10:122.2,256:41.8")
    for interpolate, want in ((False, 10), (True, 205)):
        r = size(curve, SizingRequest(tpm=3_000_000, slas=(20, 50), gpus_per_replica=1, kv_cap=fit.concurrency_cap,
                                      interpolate=interpolate, isl=1024, osl=1024), memory=fit)
        assert r.rows[0].c_star == pytest.approx(want)
        assert all(row.c_star <= fit.concurrency_cap for row in r.rows)
        assert r.memory is fit
    assert r.rows[0].limited_by == "kv_cap"
    assert r.rows[0].tok_s_user == pytest.approx(47.31, abs=0.01)
    assert r.rows[0].replica_output_tok_s == pytest.approx(9_698, abs=1)


# --- Hybrid, sliding-window, fp8 / fp4 and MLA configs (issue 13, item 10) --------------------------------------

# The user's model: a Qwen3.5-27B-style hybrid (the fields of its text_config that matter here). 64 layers,
# full_attention_interval 4: layers 3, 7, ..., 63 are full attention (16), the other 48 Gated DeltaNet linear
# attention. mamba_ssm_dtype float32: vLLM keeps the recurrent state in fp32 (Qwen3.5's config hook), the conv
# state in the model dtype (bf16).
QWEN35_27B = """{
  "architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
  "text_config": {
    "model_type": "qwen3_5_text", "dtype": "bfloat16", "hidden_size": 5120, "num_hidden_layers": 64,
    "full_attention_interval": 4, "num_attention_heads": 24, "num_key_value_heads": 4, "head_dim": 256,
    "linear_num_key_heads": 16, "linear_num_value_heads": 48, "linear_key_head_dim": 128,
    "linear_value_head_dim": 128, "linear_conv_kernel_dim": 4, "mamba_ssm_dtype": "float32",
    "max_position_embeddings": 262144
  }
}"""


def _reference_fit(**kw):
    # The log's "Available KV cache memory: 4.99 GiB" per GPU, fp8 KV cache, TP2, ISL + OSL = 1,024 + 1,024.
    return memory_fit(model_kv_from_config(json.loads(QWEN35_27B)), kv_dtype="fp8", gpu_mem_gib=4.99, mem_util=1.0,
                      weights_gib=0, workspace_gib=0, gpus=2, isl=1024, osl=1024, **kw)


def test_hybrid_reads_16_full_attention_layers_and_a_fixed_linear_attention_state():
    m = model_kv_from_config(json.loads(QWEN35_27B))
    assert (m.layers, m.full_layers, m.state_layers, m.sliding_layers) == (16, 16, 48, 0)
    assert m.is_hybrid and m.max_model_len == 262_144
    # Per token per GPU, only the 16 full-attention layers: 16 x 2 (K and V) x (4 heads / TP2) x 256 x 1 B = 16,384 B
    # (the old every-layer reading was 64 layers: 65,536 B, hence its 81,756 tokens).
    assert kv_bytes_per_token_per_gpu(m, "fp8", 2) == 16_384
    assert kv_bytes_per_token(m, "fp8") == 32_768
    # One linear-attention layer's state on one of 2 GPUs:
    #   conv: (2 x 16 key heads x 128 + 48 value heads x 128) / 2 = 10,240 / 2 = 5,120 channels x (4 - 1) x 2 B (bf16)
    #         = 30,720 B
    #   recurrent: 48 / 2 = 24 heads x 128 x 128 x 4 B (fp32) = 1,572,864 B
    #   = 1,603,584 B per layer; x 48 layers = 76,972,032 B (73.4 MiB) per running sequence per GPU.
    assert m.state.bytes_per_gpu(2) == 30_720 + 1_572_864 == 1_603_584


def test_hybrid_reference_reproduces_vllms_302921_tokens():
    # vLLM's hybrid allocator (vllm/model_executor/models/config.py, vllm/v1/core/kv_cache_utils.py):
    #   attention page per token per layer per GPU: 2 x 2 heads x 256 x 1 B = 1,024 B
    #   block size: 16 x ceil(1,603,584 / (16 x 1,024)) = 16 x ceil(97.875) = 16 x 98 = 1,568 tokens
    #   page: 1,568 x 1,024 = 1,605,632 B; each linear-attention state is padded from 1,603,584 B to it
    #   groups: 16 full vs 48 linear layers -> group size 16 (48 >= 1.5 x 16): 1 full group + 3 linear groups
    #   available: int(4.99 x 2^30) = 5,357,971,701 B; 5,357,971,701 // 1,605,632 = 3,336 pages; // 16 = 208 blocks
    #   one sequence of max_model_len L holds ceil(L / 1,568) attention blocks + 3 state blocks (1 each, prefix
    #   caching off = mamba_cache_mode none), or + 6 (2 each, prefix caching on = align)
    #   "GPU KV cache size" = int(208 / blocks per sequence x L)
    # The log does not show max_model_len; two settings give its 302,921 exactly:
    #   L = 65,536, none:   ceil(65,536 / 1,568) = 42 + 3 = 45 blocks;  208 / 45 x 65,536 = 302,921.96 -> 302,921
    #   L = 131,072, align: ceil(131,072 / 1,568) = 84 + 6 = 90 blocks; 208 / 90 x 131,072 = 302,921.96 -> 302,921
    # (vLLM's next line, "Maximum concurrency for L tokens per request", tells them apart: 4.62x or 2.31x.)
    for max_len, mode in ((65_536, "none"), (131_072, "align")):
        fit = _reference_fit(max_model_len=max_len, mamba_cache_mode=mode)
        assert (fit.block_size, fit.num_blocks) == (1_568, 208)
        assert fit.tokens_fit == 302_921
        assert fit.max_model_len == max_len and fit.mamba_cache_mode == mode
        assert fit.state_bytes_per_sequence_per_gpu == 76_972_032
    # Bytes alone would say 5,357,971,701 / 16,384 = 327,024 tokens; the gap to 302,921 is the linear-attention
    # state (3 of every max_model_len sequence's blocks), rounding 3,336 pages down to 16 x 208 and each
    # sequence's last partial block.


def test_hybrid_default_max_model_len_is_the_configs_and_the_cap_counts_the_state():
    # Without --max-model-len, vLLM's default (max_position_embeddings 262,144):
    #   none:  ceil(262,144 / 1,568) = 168 + 3 = 171 blocks; 208 / 171 x 262,144 = 318,865.96 -> 318,865
    #   align: 168 + 6 = 174 blocks;                         208 / 174 x 262,144 = 313,367.17 -> 313,367
    # The cap at ISL + OSL = 2,048 does not depend on max_model_len:
    #   none:  ceil(2,048 / 1,568) = 2 + 3 = 5 blocks per sequence; 208 // 5 = 41 sequences
    #   align: 2 + 6 = 8 blocks;                                     208 // 8 = 26 sequences
    # (302,921 / 2,048 would claim 147: each sequence's 73.4 MiB of state per GPU weighs as much as 4,698 tokens.)
    none, align = _reference_fit(), _reference_fit(mamba_cache_mode="align")
    assert (none.max_model_len, none.tokens_fit, none.blocks_per_sequence, none.concurrency_cap) == (262_144, 318_865,
                                                                                                        5, 41)
    assert (align.tokens_fit, align.blocks_per_sequence, align.concurrency_cap) == (313_367, 8, 26)


def test_hybrid_explicit_layer_types_read_like_the_interval():
    cfg = json.loads(QWEN35_27B)
    cfg["text_config"]["layer_types"] = ["linear_attention", "linear_attention", "linear_attention",
                                         "full_attention"] * 16
    m = model_kv_from_config(cfg)
    assert (m.layers, m.state_layers) == (16, 48)
    assert memory_fit(m, kv_dtype="fp8", gpu_mem_gib=4.99, mem_util=1.0, weights_gib=0, workspace_gib=0, gpus=2,
                      max_model_len=65_536).tokens_fit == 302_921
    # Without the state's dimensions the state is not counted, and said so: the 16 full layers are fitted by bytes.
    for k in ("linear_num_value_heads", "linear_conv_kernel_dim"):
        del cfg["text_config"][k]
    m = model_kv_from_config(cfg)
    assert m.state is None and not m.is_hybrid
    assert m.notes == ("48 layers: linear-attention state not counted: config lacks linear_num_value_heads, "
                       "linear_conv_kernel_dim",)
    fit = memory_fit(m, kv_dtype="fp8", gpu_mem_gib=4.99, mem_util=1.0, weights_gib=0, workspace_gib=0, gpus=2)
    assert fit.tokens_fit == 327_024 and fit.notes == m.notes  # 4.99 x 2^30 / 16,384 = 327,024.6


def test_mamba2_state_from_mamba_fields():
    # A Granite-4-style "mamba" / "attention" hybrid: 4 layers, 3 Mamba2 + 1 attention, 128 Mamba heads of 64,
    # d_state 128, 1 group, d_conv 4, bf16, at TP2:
    #   conv: (128 x 64 + 2 x 2 groups x 128) / 2 = (8,192 + 512) / 2 = 4,352 channels x 3 x 2 B = 26,112 B
    #         (1 group does not split over 2 GPUs: vLLM raises it to 2)
    #   ssm: 128 / 2 = 64 heads x 64 x 128 x 2 B = 1,048,576 B;  = 1,074,688 B per layer
    cfg = {"num_hidden_layers": 4, "layer_types": ["mamba", "mamba", "mamba", "attention"], "num_attention_heads": 32,
           "num_key_value_heads": 8, "head_dim": 128, "mamba_n_heads": 128, "mamba_d_head": 64, "mamba_d_state": 128,
           "mamba_n_groups": 1, "mamba_d_conv": 4, "torch_dtype": "bfloat16", "max_position_embeddings": 131072}
    m = model_kv_from_config(cfg)
    assert (m.layers, m.state_layers, m.state.kind) == (1, 3, "mamba2")
    assert m.state.bytes_per_gpu(2) == 26_112 + 1_048_576


# gpt-oss-20b's attention (its config.json fields that matter): 24 layers alternating sliding (window 128) and full,
# 8 KV heads of 64.
GPT_OSS_20B = """{
  "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "num_hidden_layers": 24,
  "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "sliding_window": 128,
  "layer_types": ["sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention",
                  "sliding_attention", "full_attention", "sliding_attention", "full_attention"],
  "max_position_embeddings": 131072
}"""


def test_sliding_window_layers_hold_at_most_the_window():
    # Per token per layer (bf16, TP1): 2 x 8 x 64 x 2 B = 2,048 B; 24 layers: 49,152 B while a token is in every window.
    # vLLM's plan: block 16 tokens, page 16 x 2,048 = 32,768 B; 12 full + 12 sliding layers -> group size 12,
    # 1 full group + 1 sliding group. Budget 10 GiB: 10,737,418,240 // 32,768 = 327,680 pages; // 12 = 27,306 blocks.
    # A 1,024 + 1,024 = 2,048-token sequence: full ceil(2,048 / 16) = 128 blocks; sliding ceil(min(2,048, 128) / 16)
    # = 8, + 1 (the window need not start on a block boundary) = 9; 137 blocks -> 27,306 // 137 = 199 sequences.
    # (Every layer full would be 10 x 2^30 / 49,152 = 218,453 tokens: 106 sequences of 2,048.)
    # max_model_len 131,072: 8,192 + 9 = 8,201 blocks; 27,306 / 8,201 x 131,072 = 436,416.7 -> 436,416 tokens.
    m = model_kv_from_config(json.loads(GPT_OSS_20B))
    assert (m.layers, m.full_layers, m.sliding_layers, m.sliding_window) == (24, 12, 12, 128)
    assert kv_bytes_per_token(m, "bf16") == 49_152
    fit = memory_fit(m, kv_dtype="bf16", gpu_mem_gib=10, mem_util=1.0, weights_gib=0, workspace_gib=0,
                     isl=1024, osl=1024)
    assert (fit.block_size, fit.num_blocks, fit.blocks_per_sequence, fit.concurrency_cap) == (16, 27_306, 137, 199)
    assert fit.tokens_fit == 436_416
    assert fit.mamba_cache_mode is None and fit.state_bytes_per_sequence_per_gpu == 0
    # A short sequence never leaves its window: 64 + 64 tokens = 8 full + 8 sliding blocks; 27,306 // 16 = 1,706.
    assert memory_fit(m, kv_dtype="bf16", gpu_mem_gib=10, mem_util=1.0, weights_gib=0, workspace_gib=0,
                      isl=64, osl=64).concurrency_cap == 1_706


def test_gemma3_sliding_window_pattern():
    # Gemma-3-27B's text_config: 62 layers, sliding_window_pattern 6 -> layer i slides unless (i + 1) % 6 == 0:
    # full layers 5, 11, ..., 59 = 10, sliding 52 (window 1,024). Groups: size 10 (52 >= 15): 1 full group and
    # ceil(52 / 10) = 6 sliding groups (the last padded with 8 empty layers, as vLLM pads it).
    cfg = {"model_type": "gemma3", "text_config": {"num_hidden_layers": 62, "sliding_window_pattern": 6,
                                                   "sliding_window": 1024, "num_attention_heads": 32,
                                                   "num_key_value_heads": 16, "head_dim": 128,
                                                   "max_position_embeddings": 131072}}
    m = model_kv_from_config(cfg)
    assert (m.full_layers, m.sliding_layers, m.sliding_window) == (10, 52, 1024)
    plan = hybrid_plan(m, "bf16", 1)
    assert (plan.group_size, plan.full_groups, plan.sliding_groups, plan.block_size) == (10, 1, 6, 16)
    # Qwen-style configs that write a sliding_window but turn it off are read as full attention.
    off = {"num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"], "sliding_window": 4096,
           "use_sliding_window": False, "num_attention_heads": 8, "head_dim": 64}
    assert not model_kv_from_config(off).is_hybrid


def test_fp8_and_fp4_kv_dtypes():
    # Llama-3.1-8B per token: 2 x 32 x 8 x 128 = 65,536 elements: bf16 131,072 B, fp8 65,536 B, fp4 32,768 B;
    # nvfp4 also stores one fp8 scale per 16 elements: 128 / 2 + 128 / 16 = 72 B per head: 2 x 32 x 8 x 72 = 36,864 B.
    m = model_kv_from_config(LLAMA_31_8B)
    assert [kv_bytes_per_token(m, d) for d in ("bf16", "fp8", "fp4", "nvfp4")] == [131_072, 65_536, 32_768, 36_864]
    # On the H100 of the first vector (51.382 GiB of KV): fp8 51.382 x 2^30 / 65,536 = 51.382 x 16,384 = 841,842.7
    # -> 841,842 tokens, 411 sequences of 2,048; fp4 51.382 x 32,768 = 1,683,685.4 -> 1,683,685 tokens, 822.
    kw = dict(gpu_mem_gib=H100_GIB, mem_util=0.9, weights_gib=14.99, workspace_gib=4.89, isl=1024, osl=1024)
    fp8, fp4 = memory_fit(m, kv_dtype="fp8", **kw), memory_fit(m, kv_dtype="FP4", **kw)
    assert (fp8.tokens_fit, fp8.concurrency_cap) == (841_842, 411)
    assert (fp4.kv_dtype, fp4.kv_bytes_per_token, fp4.tokens_fit, fp4.concurrency_cap) == ("fp4", 32_768, 1_683_685,
                                                                                          822)


def test_deepseek_v3_mla_fit_is_not_divided_by_tp():
    # MLA caches (kv_lora_rank 512 + qk_rope_head_dim 64) = 576 elements per layer per token, on every GPU:
    # fp8 61 x 576 x 1 B = 35,136 B; bf16 70,272 B; fp4 17,568 B. At TP8 each GPU still holds 35,136 B per token.
    # Budget per GPU: 140 x 0.9 - 84 - 6 = 36 GiB; tokens 36 x 2^30 / 35,136 = 1,100,145.3 -> 1,100,145
    # (bf16: 550,072); 4,096 + 1,024 tokens per sequence: 1,100,145 / 5,120 = 214.9 -> 214 sequences.
    m = model_kv_from_config(DEEPSEEK_V3)
    assert [kv_bytes_per_token_per_gpu(m, d, 8) for d in ("fp8", "bf16", "fp4")] == [35_136, 70_272, 17_568]
    kw = dict(gpu_mem_gib=140, mem_util=0.9, weights_gib=84, workspace_gib=6, gpus=8, isl=4096, osl=1024)
    fit = memory_fit(m, kv_dtype="fp8", **kw)
    assert (fit.kv_bytes_per_token, fit.kv_bytes_per_token_per_gpu) == (35_136, 35_136)
    assert (fit.tokens_fit, fit.concurrency_cap) == (1_100_145, 214)
    assert memory_fit(m, kv_dtype="bf16", **kw).tokens_fit == 550_072


@pytest.mark.parametrize("cfg, needle", [
    ({"num_hidden_layers": 2, "layer_types": ["full_attention"], "num_attention_heads": 8, "head_dim": 64},
     "one type per layer"),
    ({"num_hidden_layers": 2, "layer_types": ["full_attention", "chunked_attention"], "num_attention_heads": 8,
      "head_dim": 64}, "unknown layer_types chunked_attention"),
    ({"num_hidden_layers": 2, "layer_types": ["full_attention", "sliding_attention"], "num_attention_heads": 8,
      "head_dim": 64}, "no sliding_window"),
    ({"num_hidden_layers": 2, "layer_types": ["mamba", "mamba"], "mamba_n_heads": 8, "mamba_d_head": 64,
      "mamba_d_state": 16}, "no attention layer"),
])
def test_bad_hybrid_configs_fail_loudly(cfg, needle):
    with pytest.raises(SizingError, match=needle):
        model_kv_from_config(cfg)


def test_bad_hybrid_fit_inputs_fail_loudly():
    m = model_kv_from_config(json.loads(QWEN35_27B))
    with pytest.raises(SizingError, match="mamba cache mode must be one of none, align"):
        _reference_fit(mamba_cache_mode="all")
    with pytest.raises(SizingError, match="max model length"):
        _reference_fit(max_model_len=0)
    no_len = replace(m, max_model_len=None)
    with pytest.raises(SizingError, match="needs a max model length"):
        memory_fit(no_len, kv_dtype="fp8", gpu_mem_gib=4.99, mem_util=1.0, weights_gib=0, workspace_gib=0, gpus=2)


def test_cli_reads_the_hybrid_config(tmp_path):
    import typer
    from typer.testing import CliRunner

    from ledger.sizing.cli import register

    app = typer.Typer(add_completion=False)
    app.callback()(lambda: None)
    register(app)
    cfg = tmp_path / "config.json"
    cfg.write_text(QWEN35_27B)
    base = ["size", "--tpm", "3000000", "--sla", "20", "--anchors", "1:215.5,10:122.2,256:41.8",
            "--gpus-per-replica", "2", "--isl", "1024", "--osl", "1024", "--model-config", str(cfg),
            "--kv-dtype", "fp8", "--gpu-mem-gib", "4.99", "--mem-util", "1", "--weights-gib", "0",
            "--workspace-gib", "0", "--max-model-len", "65536", "--json"]
    r = CliRunner().invoke(app, base)
    assert r.exit_code == 0, r.output
    m = json.loads(r.stdout)["memory"]
    assert (m["tokens_fit"], m["concurrency_cap"], m["block_size"], m["num_blocks"]) == (302_921, 41, 1_568, 208)
    r = CliRunner().invoke(app, ["size", "--tpm", "1", "--sla", "20", "--anchors", "1:215.5", "--gpus-per-replica",
                                 "1", "--max-model-len", "65536"])
    assert r.exit_code == 1 and "also give --model-config" in r.output
