"""The bill map (TOML): which rows of a cloud bill are the cost of which ledger resource.

```toml
[[pools]]                    # a self-hosted GPU pool of the ledger
pool = "h100-chat"
Tags = { "user:ledger-pool" = "h100-chat" }

[[pools]]
pool = "h100-chat"
ResourceId = "arn:aws:ec2:us-east-1:123456789012:instance/i-0h100chat*"

[[providers]]                # an external API priced per token
provider = "bedrock"
ServiceName = "Amazon Bedrock"

[[categories]]               # any other category of the ledger (egress, storage, observability, ...)
category = "egress"
ServiceName = "AWS Data Transfer"
```

A rule names its target (``pool``, ``provider`` or ``category``) and one or more conditions, keyed
by FOCUS column (:data:`MATCH`), each a glob (``*`` any text, ``?`` one character, ``[...]`` one of;
case-sensitive; a value without them is matched exactly); ``Tags`` is a table of tag key = glob of
its value; a key starting with ``x_`` tests that provider column, as ingest kept it in the row's
extras (``x_UsageType = "*-DataTransfer-Out-Bytes"``). A row matches a rule when every condition
holds. Rules are tried in order: every ``[[pools]]`` rule first, then ``[[providers]]``, then
``[[categories]]``, each in file order, and the first that matches places the row. A row no rule
matches is *unmatched*: listed with its cost, never dropped.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path

from .. import tomlfile
from ..allocate import CATEGORIES
from ..errors import LedgerError, Problem
from ..sqltext import literal, quote_ident


class ReconcileError(LedgerError, ValueError):
    """Reconciliation or a true-up cannot be made: `problems` holds one per problem (a map's
    problems as :class:`~ledger.errors.Problem` records, the file, rule and message each)."""


#: Sections of the map and the key naming each rule's target.
SECTIONS = {"pools": "pool", "providers": "provider", "categories": "category"}
#: Condition keys (FOCUS column names) -> the ledger bill column they test. ``ProviderName`` tests
#: the bill's provider, which ingest took from ServiceProviderName (FOCUS 1.3) or ProviderName.
MATCH = {"ProviderName": "provider", "ServiceName": "service_name", "ServiceCategory": "service_category",
         "ChargeCategory": "charge_category", "ResourceId": "resource_id", "ResourceName": "resource_name",
         "SkuId": "sku_id", "RegionId": "region", "BillingAccountId": "billing_account_id",
         "CommitmentDiscountId": "commitment_discount_id"}
TAGS = "Tags"
EXTRA = "x_"
#: Categories a [[categories]] rule may name: GPU cost is a pool's, token cost a provider's.
MAPPED_CATEGORIES = tuple(c for c in CATEGORIES if c not in ("gpu", "provider_tokens"))


@dataclass(frozen=True)
class Rule:
    """One rule: `kind` (pool | provider | category), the `target` name, `conditions` as
    ``(ledger bill column, glob)`` pairs, `tags` as ``(tag key, glob)`` pairs, `extras` as
    ``(x_ column, glob)`` pairs, `label`, where it is written (``pools[2]``, counting from 1), and
    `line`, the map's line that names its target (its ``pool = ...``; None when not found)."""

    kind: str
    target: str
    conditions: tuple[tuple[str, str], ...]
    tags: tuple[tuple[str, str], ...]
    label: str
    extras: tuple[tuple[str, str], ...] = ()
    line: int | None = None

    def where(self, path: str) -> str:
        """``map.toml:5: pools[1]``: the map, the line and the rule, as a problem names them."""
        return f"{path}:{self.line}: {self.label}" if self.line else f"{path}: {self.label}"

    def sql(self) -> str:
        """SQL true for a bill row (the columns of the ``bill`` kind) that this rule places."""
        parts = [f"coalesce({quote_ident(col)} GLOB {literal(glob)}, false)" for col, glob in self.conditions]
        parts += [f"coalesce((CASE WHEN json_valid({col}) THEN CAST({col} AS JSON) ->> {literal(key)} END) "
                  f"GLOB {literal(glob)}, false)"
                  for col, pairs in (("tags", self.tags), ("extras", self.extras)) for key, glob in pairs]
        return "(" + " AND ".join(parts) + ")"


@dataclass(frozen=True)
class BillMap:
    """A loaded map: its `path` as given, the `sha256` of its bytes and its `rules` in the order
    they are tried."""

    path: str
    sha256: str
    rules: tuple[Rule, ...]

    def rule_sql(self) -> str:
        """SQL: the index of the first rule placing a bill row, NULL when none does."""
        cases = " ".join(f"WHEN {r.sql()} THEN {i}" for i, r in enumerate(self.rules))
        return f"(CASE {cases} END)" if cases else "CAST(NULL AS INTEGER)"

    def as_dict(self) -> dict:
        return {"path": self.path, "sha256": self.sha256, "rules": len(self.rules)}


def load_map(path: str | Path) -> BillMap:
    """The map at `path`; ReconcileError naming the file and the rule for every problem."""
    p = Path(path)
    if not p.is_file():
        rules = "a TOML file of [[pools]], [[providers]] and [[categories]] rules: docs/reconcile.md"
        raise ReconcileError(Problem(file=str(path), message=f"no such bill map ({rules})"))
    return map_from_bytes(p.read_bytes(), str(path))


def map_from_bytes(raw: bytes, name: str) -> BillMap:
    """A map from its bytes (a file's, an upload's) named `name`; ReconcileError as :func:`load_map`."""
    try:
        doc = tomlfile.loads_bytes(raw, name)
    except tomlfile.TomlError as e:  # not UTF-8, a syntax error, values nested too deep: line and column
        raise ReconcileError(e.problems) from None
    rules, problems = parse_rules(doc, name)
    if problems:
        raise ReconcileError(problems)
    lines = rule_lines(raw.decode("utf-8", errors="replace"))
    rules = [replace(r, line=lines.get(r.label)) for r in rules]
    return BillMap(path=name, sha256=hashlib.sha256(raw).hexdigest(), rules=tuple(rules))


_HEADER = re.compile(r"""^\s*\[\[\s*(?:"(\w+)"|'(\w+)'|(\w+))\s*\]\]""")
_TABLE = re.compile(r"^\s*\[")


def rule_lines(text: str) -> dict[str, int]:
    """``{rule label: line}``: the line naming each ``[[pools]]`` (``[[providers]]``,
    ``[[categories]]``) rule's target (``pool = "..."``), else its ``[[...]]`` header line. Read from
    the text, as TOML parsers keep no lines: a rule written in an inline array has none."""
    out: dict[str, int] = {}
    seen = {section: 0 for section in SECTIONS}
    current: tuple[str, str] | None = None
    for n, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            section = next(g for g in m.groups() if g)
            if section in SECTIONS:
                seen[section] += 1
                current = (section, f"{section}[{seen[section]}]")
                out[current[1]] = n
            else:
                current = None
            continue
        if _TABLE.match(line):
            current = None
            continue
        if current is not None:
            key = SECTIONS[current[0]]
            if re.match(rf"""^\s*(?:{key}|"{key}"|'{key}')\s*=""", line):
                out[current[1]] = n
                current = None
    return out


def parse_rules(doc: dict, where: str) -> tuple[list[Rule], list[Problem]]:
    """The rules of a map document, in the order they are tried, and its problems (file `where`,
    the table or rule, the message)."""
    problems = [Problem(file=where, message=f"unknown table {k!r} (expected {', '.join(SECTIONS)})")
                for k in doc if k not in SECTIONS]
    rules = []
    for section, target_key in SECTIONS.items():
        entries = doc.get(section, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            problems.append(Problem(file=where, entry=section, message=f"write each rule as a [[{section}]] table"))
            continue
        for n, entry in enumerate(entries, start=1):
            label = f"{section}[{n}]"
            rule, bad = _rule(entry, section, target_key, label)
            problems += [Problem(file=where, entry=label, message=b) for b in bad]
            if rule is not None:
                rules.append(rule)
    if not problems and not rules:
        problems.append(Problem(file=where, message="the map has no rule ([[pools]], [[providers]] or [[categories]])"))
    return rules, problems


def _rule(entry: dict, section: str, target_key: str, label: str) -> tuple[Rule | None, list[str]]:
    bad = [f"unknown key {k!r} (expected {target_key}, {', '.join(MATCH)}, {TAGS} or an {EXTRA} column)"
           for k in entry if k not in MATCH and k not in (TAGS, target_key) and not k.startswith(EXTRA)]
    target = entry.get(target_key)
    if not isinstance(target, str) or not target.strip():
        bad.append(f"{target_key} is required: the {target_key} these rows are the cost of")
    elif section == "categories" and target not in MAPPED_CATEGORIES:
        bad.append(f"category {target!r} is not one of {', '.join(MAPPED_CATEGORIES)} (GPU cost is a pool's: "
                   "[[pools]]; token cost a provider's: [[providers]])")
    conditions = []
    for key, col in MATCH.items():
        if key in entry:
            v = entry[key]
            if not isinstance(v, str) or not v:
                bad.append(f"{key} must be a non-empty text (a glob)")
            else:
                conditions.append((col, v))
    extras = []
    for key, v in entry.items():
        if key.startswith(EXTRA):
            if not isinstance(v, str) or not v:
                bad.append(f"{key} must be a non-empty text (a glob)")
            else:
                extras.append((key, v))
    tags = []
    if TAGS in entry:
        t = entry[TAGS]
        if not isinstance(t, dict) or not t:
            bad.append(f"{TAGS} must be a table of tag key = glob of its value, e.g. {{ team = \"ml\" }}")
        else:
            for k, v in t.items():
                if not isinstance(v, str) or not v:
                    bad.append(f"{TAGS}.{k} must be a non-empty text (a glob)")
                elif k.startswith(("$", "/")):
                    bad.append(f"{TAGS}: a tag key starting with $ or / cannot be matched ({k!r})")
                else:
                    tags.append((k, v))
    if not conditions and not tags and not extras and not any(b.startswith(("unknown", f"{TAGS} ")) for b in bad):
        bad.append(f"a rule needs at least one condition ({', '.join(MATCH)} or {TAGS}): it would place every row")
    if bad:
        return None, bad
    return Rule(kind=target_key, target=target, conditions=tuple(conditions), tags=tuple(tags), label=label,
                extras=tuple(extras)), []
