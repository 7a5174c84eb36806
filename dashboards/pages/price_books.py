"""Price books: the prices in force at a date, each price's history on a timeline, `pricebook check`."""
from __future__ import annotations

from datetime import datetime, time, timedelta, timezone

import altair as alt
import pandas as pd
import streamlit as st
from pages import _common as ui
from pages import _layout

from ledger import dashboard as dd

st.title("Price books")
state = ui.ledger_state()
books = ui.price_books(state)
st.caption(f"Prices from {books.where}. Every price carries its book version and the page it was read from.")
if books.problems:
    ui.show_problems(books.problems, title="The shipped price books have problems (`ledger pricebook check`)")
if not books.books:
    st.info("No price book could be read. Put dated TOML books in `pricebooks/` and run `ledger pricebook load`.")
    st.stop()

f = ui.fmt("USD")  # prices keep their own currency; the locale decides how they are written


def when(day) -> datetime:
    return datetime.combine(day, time(0), tzinfo=timezone.utc)


def stamp(d, empty: str = "open") -> str:
    return empty if d is None or pd.isna(d) else d.strftime("%Y-%m-%d %H:%M")


def naive(d, default: datetime):
    d = default if d is None or pd.isna(d) else d
    return pd.Timestamp(d).tz_convert("UTC").tz_localize(None)


def version_of(frame: pd.DataFrame) -> pd.Series:
    return frame["book"] + "@" + frame["version"]


@st.cache_data(ttl=30, show_spinner=False)
def check_shipped() -> tuple[pd.DataFrame, str]:
    """`ledger pricebook check` of the shipped folder, re-read every 30 s."""
    return dd.check_frame()


# ---- in force at a date -------------------------------------------------------------------------
st.subheader("In force")
left, right = st.columns([1, 2])
day = left.date_input("Prices in force at 00:00 UTC of", value=ui.now_utc().date(), key="pb_at",
                      help="The same instant as `ledger pricebook show --at YYYY-MM-DD`.")
at = when(day)
everything = dd.prices_in_force_frame(books.books, at)
meters = sorted(everything["meter"].unique())
meter = right.selectbox("Meter", ["every meter", *meters], key="pb_meter")
shown = everything if meter == "every meter" else everything[everything["meter"] == meter]

with st.container(key="pb_tiles", horizontal=True):
    st.metric("Prices in force", f.count(len(everything)), border=True,
              help=f"Over the book versions in force (the newest of each book), at {at.isoformat()}.")
    st.metric("Book versions", f.count(len(books.books)), border=True)
    st.metric("Meters priced", f.count(len(meters)), border=True)


ANY = "*"


def span(start, end) -> str:
    """When a price is in force: ``2025-09-29 →`` (open-ended) or ``2023-07-26 → 2025-06-01`` (end
    exclusive); a time of day only when it is not midnight UTC."""
    def day(d) -> str:
        return d.strftime("%Y-%m-%d %H:%M" if (d.hour, d.minute) != (0, 0) else "%Y-%m-%d")
    return f"{day(start)} →" + ("" if end is None or pd.isna(end) else f" {day(end)}")


def prices_table(frame: pd.DataFrame, *, versions: bool = False) -> pd.DataFrame:
    """Prices as the page shows them, each book with its version when `versions`. A column that
    says nothing for these rows (every cell empty, or every cell the wildcard `*`) is left out."""
    full = pd.DataFrame({
        "meter": frame["meter"], "sku": frame["sku"], "region": frame["region"],
        "option": frame["purchase_option"], "provider": frame["provider"],
        "price": [f.price(p, c) for p, c in zip(frame["price"], frame["currency"], strict=True)],
        "per": frame["per"],
        "as written": [f.price(w, c) if w != p else "" for p, w, c in
                       zip(frame["price"], frame["list_price"], frame["currency"], strict=True)],
        "upfront": [f.price(u, c) if u is not None and not pd.isna(u) else "" for u, c in
                    zip(frame["upfront"], frame["currency"], strict=True)],
        "tiers": frame["tiers"],
        "in force": [span(a, b) for a, b in zip(frame["effective_from"], frame["effective_to"], strict=True)],
        "book": version_of(frame) if versions else frame["book"], "source": frame["source_url"]})
    silent = [c for c in full.columns if len(full) and full[c].isin(["", ANY]).all()]
    return full.drop(columns=silent)


HELP = {"option": "purchase option: on_demand, reserved, spot, capacity_block, or a service tier; * = any",
        "as written": "the price as the book wrote it, when the book's currency or unit differs",
        "upfront": "paid once for the term (a reserved instance)",
        "tiers": "the price above a number of input tokens per request",
        "in force": "from (inclusive) → to (exclusive), UTC; no end: open-ended",
        "book": "the book the price comes from (its version in force: Book versions below)"}
LINK = {"source": st.column_config.LinkColumn("source", display_text="source")}


def booked_notes(frame: pd.DataFrame) -> list[str]:
    """How the prices with an upfront amount, or written otherwise than shown, were booked."""
    notes = []
    for r in frame.itertuples():
        upfront = r.upfront is not None and not pd.isna(r.upfront)
        if upfront or r.list_price != r.price:
            what = " ".join(x for x in (r.sku, r.region, r.purchase_option) if x != ANY)
            notes.append(f"{what}: {f.price(r.price, r.currency)} per {r.per}, written as "
                         f"{f.price(r.list_price, r.currency)} per {r.per}"
                         + (f" + {f.price(r.upfront, r.currency)} upfront for {r.term}" if upfront else ""))
    return notes


def price_tables(frame: pd.DataFrame, key: str) -> None:
    """One table per meter (its rows share a unit and most identity columns), in a container keyed
    `key`; an upfront amount or a price written otherwise is said under the table."""
    with st.container(key=key):
        for name, rows in frame.groupby("meter", sort=True):
            shown = prices_table(rows).drop(columns=["meter", "as written", "upfront"], errors="ignore")
            wildcards = [c for c in ("region", "option", "provider") if c not in shown.columns]
            st.markdown(f"**{name}**" + (f" · {', '.join(wildcards)}: any" if wildcards else ""))
            # the price and what it is for, then when and where from: side by side at 1400 px, one under
            # the other at 1024, where the whole table needs 718 to 780 px of the 664 (pages/_layout.py)
            what = [c for c in ("region", "option", "provider", "price", "per") if c in shown.columns]
            _layout.table_in_parts(shown, f"{key}_{name}", [what, [c for c in shown.columns[1:] if c not in what]],
                                   table=ui.table, max_rows=25, help=HELP,
                                   column_config=LINK if "source" in shown.columns else None)
            notes = booked_notes(rows)
            if notes:
                st.caption("  \n".join(notes).replace("$", "\\$"))


price_tables(shown, "pb_in_force")

# ---- each price's history -----------------------------------------------------------------------
@st.cache_data(ttl=30, max_entries=8, show_spinner=False)
def price_counts(books_key: tuple, _books) -> tuple[list, dict]:
    """Every price key of the books and how many prices each has had (re-read with the books)."""
    keys = dd.price_keys(_books)
    return keys, {k: len(dd.price_history_frame(_books, k)) for k in keys}


st.subheader("History of a price")
keys, counts = price_counts((books.source, tuple(b.ref for b in books.books)), books.books)
first = next((k for k in keys if k[0] == "gpu_time" and counts[k] > 1), keys[0])
key = st.selectbox("Price (meter · sku · region · purchase option · provider)", keys, index=keys.index(first),
                   format_func=lambda k: " · ".join(k) + f"  ({counts[k]} price{'s' if counts[k] != 1 else ''})",
                   key="pb_key")
history = dd.price_history_frame(books.books, key)
horizon = max([pd.Timestamp(at), *history["effective_from"]]) + timedelta(days=180)
timeline = pd.DataFrame({
    "entry": version_of(history) + " price[" + history["entry"].astype(str) + "]"
             + history["in_force_version"].map(lambda v: "" if v else " (superseded version)"),
    "from": history["effective_from"].map(lambda d: naive(d, horizon)),
    "to": history["effective_to"].map(lambda d: naive(d, horizon)),
    "ends": history["effective_to"].map(lambda d: stamp(d, "open-ended")),
    "price": [f.price(p, c) + " per " + per
              for p, c, per in zip(history["price"], history["currency"], history["per"], strict=True)],
})
bars = (alt.Chart(timeline).mark_bar(height=18)
        .encode(x=alt.X("from:T", title="effective (UTC)"), x2="to:T",
                y=alt.Y("entry:N", title=None, sort=None, axis=alt.Axis(labelLimit=400)),
                color=alt.Color("price:N", title="price"),
                tooltip=["entry:N", "price:N", alt.Tooltip("from:T", format="%Y-%m-%d"), "ends:N"]))
labels = bars.mark_text(align="left", dx=4, color="black").encode(text="price:N", color=alt.value("black"))
rule = alt.Chart(pd.DataFrame({"at": [naive(at, at)]})).mark_rule(color="red", strokeDash=[4, 4]).encode(
    x="at:T")
with st.container(key="pb_timeline"):
    st.altair_chart(bars + labels + rule, width="stretch")
st.caption("Bars run from `effective_from` to `effective_to` (end exclusive); an open-ended price runs to the "
           "right edge. The dashed line is the date chosen above.")
ui.table(prices_table(history, versions=True).drop(columns=["meter", "sku", "region", "option", "provider"],
                                                   errors="ignore"),
         "pb_history", help=HELP, column_config=LINK)

# ---- book versions and `pricebook check` --------------------------------------------------------
st.subheader("Book versions")
versions = dd.books_frame(books.books)
ui.text_table(pd.DataFrame({
    "book": versions["book"], "version": versions["version"],
    "status": versions["in_force"].map({True: "in force", False: "superseded"}), "currency": versions["currency"],
    "prices": versions["prices"].map(f.count), "FX rates": versions["fx_rates"].map(f.count),
    "retrieved": versions["retrieved_at"].map(lambda d: "" if d is None or pd.isna(d) else f"{d:%Y-%m-%d}"),
    "source": versions["source"]}), "pb_books")

st.subheader("`ledger pricebook check`")
SHIPPED, LOADED, UPLOAD = "the shipped price books", "the books loaded in the ledger", "price book files I upload"
sources = [SHIPPED, *([LOADED] if books.source == "ledger" else []), UPLOAD]
what = st.radio("Check", sources, key="pb_check_source", horizontal=True,
                help="Only books the ledger knows, or files uploaded here: the dashboard opens no path typed "
                     "on the page.")
checked = None
if what == SHIPPED:
    checked = check_shipped()
elif what == LOADED:
    checked = dd.check_books(books.books)
else:
    uploaded = st.file_uploader("Price books (TOML; several are checked together)", type=["toml"],
                                accept_multiple_files=True, key="pb_check_upload",
                                help="Read from the uploaded bytes only, as `ledger pricebook check FILES` reads "
                                     "them; nothing is stored.")
    if uploaded:
        checked = dd.check_uploaded([(u.name, u.getvalue()) for u in uploaded])
with st.container(key="pb_check"):
    if checked is None:
        st.info("Upload one or more price book files (TOML) to check them.", icon=":material/upload_file:")
    else:
        findings, summary = checked
        if findings.empty:
            st.success(summary, icon=":material/check_circle:")
        else:
            st.warning(summary, icon=":material/warning:")
            st.table(findings, hide_index=True)
