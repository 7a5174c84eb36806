"""What a sizing emits for operations, per replica: the admission limit, the scale-out thresholds on
queued requests and on KV-cache usage, the headroom at the planned utilisation; and the warm reserve
a traffic rise over the time to ready needs. Pure arithmetic on numbers (the rules: docs/sizing.md)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..hints import Hint, Hinted
from .curve import fmt_num

#: A ratio within this many digits of an integer is that integer before floor()/ceil().
_DIGITS = 9


@dataclass(frozen=True)
class Ops:
    """What operations configure on one replica of a part of a pool.

    - `admission_limit`: requests in flight a replica admits (count) = max(1, floor(c*)); beyond it
      requests wait (vLLM `max_num_seqs`, a router's per-replica limit). None for a prefill replica
      (admitted by its batch token budget, not by concurrency).
    - `queue_scale_out`: waiting requests per replica (vLLM `num_requests_waiting`) at which to scale
      out (count >= 1): the most that can wait and still get a first token within the TTFT limit,
      floor((TTFT limit - TTFT at the operating point) / 1000 x completions/s), where a replica
      completes capacity / tokens per request requests a second; 1 when there is no TTFT budget.
    - `queue_basis`: how `queue_scale_out` was derived (text).
    - `kv_scale_out`: KV-cache usage (share, 0..1; vLLM `kv_cache_usage_perc`) at the planned load:
      util x c* sequences, each holding its full ISL + OSL (the memory fit's count: ISL + OSL tokens
      over the tokens that fit; for a hybrid model its blocks over the pool's blocks). None without
      a memory fit.
    - `kv_at_admission`: KV-cache usage with `admission_limit` sequences in flight (share), or None.
    - `kv_basis`: how the KV figures were derived (text).
    - `capacity_tok_s`: tok/s of one replica at the operating point (output; input for prefill) [token/s].
    - `headroom_tok_s`: (1 - util) x capacity: what a replica holds back at the planned util [token/s].
    - `load_tok_s`: the rate per serving replica as sized, rate / replicas [token/s];
      `utilisation_as_sized` = load / capacity (<= util: the replica count is rounded up).
    """

    admission_limit: int | None
    queue_scale_out: int
    queue_basis: str
    kv_scale_out: float | None
    kv_at_admission: float | None
    kv_basis: str
    capacity_tok_s: float
    headroom_tok_s: float
    load_tok_s: float
    utilisation_as_sized: float


def admission_limit(c_star: float) -> int:
    """The whole number of requests in flight at or below c* (at least one)."""
    return max(1, math.floor(round(c_star, _DIGITS)))


def queue_threshold(*, ttft_limit_ms: float | None, ttft_ms: float | None, capacity_tok_s: float,
                    tokens_per_request: float | None) -> tuple[int, str]:
    """The waiting requests per replica at which to scale out, and how it was derived.

    A replica at its operating point frees a slot each time a request completes, capacity /
    tokens_per_request times a second (OSL for decode, ISL for prefill), so the k-th waiting
    request gets its first token after k / that rate + the TTFT at the operating point. The
    threshold is the largest k that stays within the TTFT limit (at least 1)."""
    if ttft_limit_ms is None:
        return 1, "no TTFT limit: no time budgeted for waiting; scale out at the first waiting request"
    if ttft_ms is None:
        return 1, "no TTFT measured at the operating point; scale out at the first waiting request"
    if not tokens_per_request:
        return 1, "tokens per request unknown (no ISL/OSL); scale out at the first waiting request"
    per_s = capacity_tok_s / tokens_per_request
    raw = max(0.0, (ttft_limit_ms - ttft_ms) / 1000.0 * per_s)
    q = max(1, math.floor(round(raw, _DIGITS)))
    return q, (f"(TTFT limit {fmt_num(ttft_limit_ms)} ms - {fmt_num(ttft_ms)} ms at the operating point) x "
               f"{fmt_num(per_s)} requests/s completed = {raw:,.2f} waiting -> {q}")


def kv_per_sequence(memory: object | None) -> tuple[float | None, str]:
    """The share of a replica's KV cache one ISL + OSL sequence holds, from a memory fit (MemoryFit),
    and its formula: dense (ISL + OSL) / tokens that fit; hybrid blocks per sequence / blocks."""
    if memory is None or not getattr(memory, "tokens_per_sequence", None):
        return None, ""
    if getattr(memory, "num_blocks", None) and getattr(memory, "blocks_per_sequence", None):
        return (memory.blocks_per_sequence / memory.num_blocks,
                f"{memory.blocks_per_sequence:,} blocks / {memory.num_blocks:,} blocks")
    return (memory.tokens_per_sequence / memory.tokens_fit,
            f"{fmt_num(memory.tokens_per_sequence)} tokens / {memory.tokens_fit:,} tokens")


def replica_ops(*, c_star: float | None, capacity_tok_s: float, util: float, rate_tok_s: float, replicas: int,
                ttft_limit_ms: float | None, ttft_ms: float | None, tokens_per_request: float | None,
                memory: object | None = None) -> Ops:
    """The operations figures of one replica (see Ops). `rate_tok_s` is the part's demand (output
    tok/s; input tok/s for prefill) served by `replicas`; the memory fit (a MemoryFit, or None)
    gives the KV-cache figures."""
    adm = admission_limit(c_star) if c_star is not None else None
    q, q_basis = queue_threshold(ttft_limit_ms=ttft_limit_ms, ttft_ms=ttft_ms, capacity_tok_s=capacity_tok_s,
                                 tokens_per_request=tokens_per_request)
    kv_scale = kv_adm = None
    per_seq, per_seq_text = kv_per_sequence(memory)
    if adm is None:
        kv_basis = "a prefill replica holds a sequence's KV only until it is handed to decode"
    elif per_seq is None:
        kv_basis = Hinted(Hint("memory_fit", "no memory fit"), ": the KV cache size is unknown")
    else:
        kv_scale = util * c_star * per_seq
        kv_adm = adm * per_seq
        kv_basis = (f"{util:g} x {fmt_num(c_star)} sequences x ({per_seq_text}) = {kv_scale:.1%} at the planned "
                    f"load; {adm} x ({per_seq_text}) = {kv_adm:.1%} at the admission limit")
    load = rate_tok_s / replicas if replicas else 0.0
    return Ops(admission_limit=adm, queue_scale_out=q, queue_basis=q_basis, kv_scale_out=kv_scale,
               kv_at_admission=kv_adm, kv_basis=kv_basis, capacity_tok_s=capacity_tok_s,
               headroom_tok_s=round((1.0 - util) * capacity_tok_s, _DIGITS), load_tok_s=load,
               utilisation_as_sized=load / capacity_tok_s)


def warm_replicas(*, rise_tpm: float, minutes: float | None, capacity_tok_s: float, util: float,
                  share: float = 1.0, input_per_output: float = 1.0, what: str = "output") -> tuple[int, str]:
    """The warm reserve a rise needs, and why: a new replica serves only after the time to ready, so
    the largest rise of output TPM over that many minutes must already have replicas, each carrying
    capacity x util: ceil(rise x share x input_per_output / 60 / (capacity x util)). `share` is a
    tier's share of the traffic; `input_per_output` = ISL / OSL turns an output rise into an input
    rise for prefill replicas (`what` names the tokens)."""
    over = f" over {fmt_num(minutes)} min" if minutes is not None else ""
    if rise_tpm <= 0:
        return 0, f"the largest rise{over} is {fmt_num(rise_tpm, 0)} TPM: no warm reserve"
    rate = rise_tpm * share * input_per_output / 60.0
    raw = rate / (capacity_tok_s * util)
    n = math.ceil(round(raw, _DIGITS))
    parts = [f"largest rise{over} +{fmt_num(rise_tpm, 0)} output TPM"]
    if share != 1.0:
        parts.append(f"x share {share:g}")
    if input_per_output != 1.0:
        parts.append(f"x ISL/OSL {input_per_output:,.4g}")
    return n, (" ".join(parts) + f" = {rate:,.1f} {what} tok/s / ({fmt_num(capacity_tok_s, 1)} x {util:g}) = "
               f"{raw:,.2f} -> {n}")
