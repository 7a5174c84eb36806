"""The demo month's settings: period, tenants and products, pools, traffic shares, outcomes and batch jobs."""
from __future__ import annotations

# The demo month: October 2026 of a small inference fleet, built from the Azure LLM inference trace,
# with the two months before it (August and September) for the month-over-month trend.
#
# :func:`build_inputs` writes the five input files of DESIGN §3 (fleet, requests, outcomes, meters,
# charges) as CSV into a folder. It is a pure function of the shipped trace (``ledger/data``, see
# ``ATTRIBUTION.md`` there) and the constants below: the same files, byte for byte, on every run and
# every machine. Random choices are splitmix64 hashes of (purpose, row key), not a library RNG whose
# stream could change between versions, and all row work is vectorized (numpy, pandas).
#
# The month:
#
# - **Traffic.** Each hour of the month replays the one-hour trace thinned to a fraction of its rows
#   (Bernoulli thinning keeps the trace's burstiness, offsets within the hour and token counts). The
#   fraction follows a diurnal curve (an EU and a US peak), is lower on weekends and grows 10% over
#   the month. The conversation trace feeds chat, search and agent; the code trace feeds code-assist.
# - **Batch jobs.** umbrella re-indexes search every Sunday at 14:00 UTC (40% of the conversation
#   trace hour, requests without tasks); initech runs a code-assist CI job every weekday at 02:00 UTC
#   (18% of the code trace hour, tasks judged by ``tests-pass``).
# - **Pools.** ``h100-chat`` serves llama-3.1-8b on one H100 (on-demand), pre-scaled to two GPUs for
#   the first three Sunday re-index windows; on 2026-10-25 the scale-up did not happen, so that hour
#   is over capacity (timeouts rise). One H100 is held as ``failure_reserve`` all month.
#   ``h200-code`` serves llama-3.3-70b on one 4×H200 replica (on-demand); a second replica is a
#   ``canary`` for three days. Nights and weekends leave idle slack; the batch hours run near capacity.
# - **Provider.** The agent product calls gpt-5 through openai, with cached input on follow-up turns
#   and reasoning tokens, plus web-search and file-search tool calls.
# - **Meters and charges.** Egress (GB), Langfuse spans and CloudWatch log GB per day, tenant and
#   product; hooli's file-search vector store (GiB-days); invoice charges under every allocation rule.
#
# Capacity (``capacity_tokens_per_gpu_s``, active tokens per GPU-second):
#
# - ``h200-code``: 268.7, the sizing engine's figure for Llama-3.3-70B bf16 on a 4×H200 replica at an
#   SLA of 70 output tok/s per user, from the measured SGLang curve of
#   datacrunch-research/h200-benchmarks (ISL 1024, OSL 1024): c* = 7.8, 537.4 output tok/s per
#   replica, so 537.4 × (1024 + 1024) / 1024 / 4 GPUs = 268.7.
# - ``h100-chat``: 1695.8, measured: a vLLM ``benchmark_serving.py`` run of Llama-3.1-8B FP8 on one
#   H100 (LambdaLabsML/vllm-benchmark) served 1,369 input + 442 output tokens in 1.068 s. It is a
#   10-prompt run, so a low figure for that GPU; it is the measurement we have.
#
# No price book shipped with the project carries an FX rate, so every charge is in USD.
#
# The months before October (``MONTHS``): August and September are built by the same rules, with
# their own draws (the keys of their random choices carry the month), at a lower traffic level (the
# fleet grows into October), their own Sunday re-index and weekday CI jobs (every re-index
# pre-scaled; no canary), the same charges dated in their month, and two changes on the way to
# October: hooli is first seen in September (its traffic and its vector store start then), and the
# openai account's gpt-5 rate of August (the demo's own book ``ledger/data/demo-openai-account.toml``,
# provider openai, in force until 2026-09-01) gives way to the list price from September. October is
# built exactly as it always was (same rows, same ids, same prices): the ids of the earlier months
# carry their month (``acme-chat-2026-08-000123``, ``h100-chat-serve-2026-08``) where October's ids
# never did, and a task of an earlier month whose outcome would be decided after its month's end
# gets none (it stays unknown), so no outcome of August or September falls into October.

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path

PERIOD = "2026-10"
MONTH_START = datetime(2026, 10, 1, tzinfo=timezone.utc)
MONTH_END = datetime(2026, 11, 1, tzinfo=timezone.utc)
HOURS = int((MONTH_END - MONTH_START).total_seconds() // 3600)
HOUR_US = 3_600_000_000
DATA_DIR = Path(__file__).resolve().parent.parent / "data"
TRACE_FILES = {"conv": "AzureLLMInferenceTrace_conv.csv", "code": "AzureLLMInferenceTrace_code.csv"}
KINDS = ("fleet", "requests", "outcomes", "meters", "charges")
REGION = "us-east-1"
SEED = 20261001

# name, display name, owner
TENANTS = (("acme", "Acme Corp", "finance@acme.example"),
           ("globex", "Globex", "platform@globex.example"),
           ("hooli", "Hooli", "ai-apps@hooli.example"),
           ("initech", "Initech", "devex@initech.example"),
           ("umbrella", "Umbrella Health", "search@umbrella.example"))
PRODUCTS = (("chat", "Chat assistant", "product-chat"),
            ("search", "Search answers", "product-search"),
            ("agent", "Agent (gpt-5 with tools)", "product-agent"),
            ("code-assist", "Code assistant", "product-code"))
TENANT_NAMES = tuple(t[0] for t in TENANTS)
PRODUCT_NAMES = tuple(p[0] for p in PRODUCTS)


@dataclass(frozen=True)
class Pool:
    """A self-hosted pool of the demo: `name`, the `model` it serves, GPU `device` sku, `purchase_option`,
    GPUs per `replica`, and `capacity` in active tokens per GPU-second with its `capacity_source`."""

    name: str
    model: str
    device: str
    purchase_option: str
    replica: int
    capacity: str
    capacity_source: str


POOLS = {
    "h100-chat": Pool(name="h100-chat", model="llama-3.1-8b", device="H100-SXM-80GB", purchase_option="on_demand",
                      replica=1, capacity="1695.8",
                      capacity_source="measured: vLLM benchmark_serving, Llama-3.1-8B FP8 on 1xH100, 1,811 tokens "
                                      "in 1.068 s"),
    "h200-code": Pool(name="h200-code", model="llama-3.3-70b", device="H200-SXM-141GB", purchase_option="on_demand",
                      replica=4, capacity="268.7",
                      capacity_source="sizing engine: Llama-3.3-70B on 4xH200 at SLA 70 tok/s/user (SGLang curve)"),
}
PROVIDER_MODEL, PROVIDER = "gpt-5", "openai"
# product -> (pool or None, model, provider or None)
ROUTES = {"chat": ("h100-chat", "llama-3.1-8b", None), "search": ("h100-chat", "llama-3.1-8b", None),
          "code-assist": ("h200-code", "llama-3.3-70b", None), "agent": (None, PROVIDER_MODEL, PROVIDER)}

# Interactive traffic: fraction of the trace hour replayed at the diurnal mean, per stream.
RATE = {"conv": 0.020, "code": 0.026}
WEEKEND = 0.45
GROWTH = 0.10
# Tenant shares of each stream, and product shares of the conversation stream per tenant.
STREAM_TENANTS = {"conv": {"acme": 0.38, "umbrella": 0.24, "hooli": 0.16, "globex": 0.14, "initech": 0.08},
                  "code": {"globex": 0.45, "initech": 0.35, "acme": 0.20}}
CONV_PRODUCTS = {"acme": {"chat": 0.65, "search": 0.25, "agent": 0.10},
                 "umbrella": {"search": 0.70, "chat": 0.30},
                 "hooli": {"agent": 0.75, "chat": 0.25},
                 "globex": {"chat": 0.45, "agent": 0.35, "search": 0.20},
                 "initech": {"chat": 1.0}}
# Per product: mean requests per task, share of tasks that get an outcome, criteria, max decision delay (s).
TASKS = {"chat": (3.2, 0.90, "user-accepted", 1200), "search": (1.6, 0.85, "user-accepted", 600),
         "agent": (6.5, 0.97, "user-accepted", 900), "code-assist": (4.5, 0.95, "tests-pass", 900),
         "ci": (4.0, 1.00, "tests-pass", 600)}
SUCCESS = {("acme", "chat"): 0.88, ("umbrella", "chat"): 0.84, ("hooli", "chat"): 0.80, ("globex", "chat"): 0.86,
           ("initech", "chat"): 0.78, ("acme", "search"): 0.91, ("umbrella", "search"): 0.93,
           ("globex", "search"): 0.89, ("acme", "agent"): 0.70, ("hooli", "agent"): 0.66, ("globex", "agent"): 0.72,
           ("acme", "code-assist"): 0.74, ("globex", "code-assist"): 0.81, ("initech", "code-assist"): 0.69,
           ("initech", "ci"): 0.61}
STATUS = (("error", 0.012), ("timeout", 0.006), ("cancelled", 0.004))
OVERLOAD_TIMEOUT = 0.09
# Meter shapes per product: response payload bytes beyond the streamed tokens, Langfuse spans per request.
PAYLOAD_BYTES = {"chat": 1_500, "search": 180_000, "agent": 25_000, "code-assist": 6_000}
STREAM_BYTES_PER_TOKEN = 150  # one server-sent event per generated token
SPANS = {"chat": 3, "search": 4, "agent": 8, "code-assist": 5}
LOG_BYTES_PER_REQUEST = 3_200


@dataclass(frozen=True)
class Batch:
    """A scheduled job: replays `share` of the `stream` trace hour at `hour` for `tenant`/`product`.
    `source` names it in request ids; `tasks` whether its requests belong to tasks; `timeout` the
    timeout rate of its requests."""

    source: str
    stream: str
    hour: datetime
    share: float
    tenant: str
    product: str
    tasks: bool
    timeout: float


@dataclass(frozen=True)
class Month:
    """One month the demo builds: `label` (``YYYY-MM``), ``[start, end)`` in UTC, `tag` (what its ids
    carry: empty for October, whose ids never carried one, else the label), `salt` (mixed into the
    keys of its random choices: 0 for October, so its draws are the ones they always were), traffic
    `level` (a factor on :data:`RATE`), the `tenants` with traffic in it, and whether its last
    Sunday's re-index ran without its pre-scaled GPU (`overloaded`) and the canary ran (`canary`)."""

    label: str
    start: datetime
    end: datetime
    tag: str
    salt: int
    level: float
    tenants: tuple[str, ...]
    overloaded: bool
    canary: bool

    @property
    def hours(self) -> int:
        return int((self.end - self.start).total_seconds() // 3600)

    def days(self) -> list[datetime]:
        return [self.start + timedelta(days=i) for i in range((self.end - self.start).days)]

    @property
    def sundays(self) -> list[datetime]:
        return [d for d in self.days() if d.weekday() == 6]

    @property
    def weekdays(self) -> list[datetime]:
        return [d for d in self.days() if d.weekday() < 5]

    @property
    def overloaded_sunday(self) -> datetime | None:
        """The Sunday whose re-index ran without its pre-scaled GPU (October's last), or None."""
        return self.sundays[-1] if self.overloaded else None

    def ident(self, base: str) -> str:
        """An id of this month: `base` as October has it, with ``-<label>`` before it otherwise."""
        return f"{base}-{self.tag}" if self.tag else base

    @property
    def batches(self) -> tuple[Batch, ...]:
        """The scheduled jobs: umbrella's Sunday re-index at 14:00 UTC, initech's weekday CI at 02:00."""
        over = self.overloaded_sunday
        return tuple(
            [Batch(source="reindex", stream="conv", hour=d + timedelta(hours=14), share=0.40, tenant="umbrella",
                   product="search", tasks=False, timeout=OVERLOAD_TIMEOUT if d == over else STATUS[1][1])
             for d in self.sundays]
            + [Batch(source="ci", stream="code", hour=d + timedelta(hours=2), share=0.18, tenant="initech",
                     product="code-assist", tasks=True, timeout=STATUS[1][1])
               for d in self.weekdays])


def _month(label: str, salt: int, level: float, tenants: tuple[str, ...], *, october: bool = False) -> Month:
    start = datetime(int(label[:4]), int(label[5:]), 1, tzinfo=timezone.utc)
    end = datetime(start.year + (start.month == 12), start.month % 12 + 1, 1, tzinfo=timezone.utc)
    return Month(label=label, start=start, end=end, tag="" if october else label, salt=salt, level=level,
                 tenants=tenants, overloaded=october, canary=october)


#: The months the demo builds, oldest first; October is the demo month (:data:`PERIOD`).
OCTOBER = _month(PERIOD, 0, 1.0, TENANT_NAMES, october=True)
MONTHS = (_month("2026-08", 2, 0.82, tuple(t for t in TENANT_NAMES if t != "hooli")),
          _month("2026-09", 1, 0.91, TENANT_NAMES),
          OCTOBER)
#: The tenant first seen in September.
NEW_TENANT = "hooli"

SUNDAYS = OCTOBER.sundays
WEEKDAYS = OCTOBER.weekdays
OVERLOADED_SUNDAY = OCTOBER.overloaded_sunday  # the re-index ran without its pre-scaled GPU
BATCHES = OCTOBER.batches
