"""Memory fit against vLLM's measured numbers (llm-d planner's empirical results, in the data README)."""
from __future__ import annotations

import json

import pytest

from ledger.sizing import (SizingError, SizingRequest, kv_bytes_per_token, kv_bytes_per_token_per_gpu,
                           load_model_config, memory_fit, model_kv_from_config, parse_anchors, size)

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
