"""The Core tables of `ledger.schema` (what `ledger runs`, `ledger batches`, a period's close and
`ledger ingest` read and write without SQLModel) agree with the SQLModel classes of `ledger.models`, column by column, so the two
cannot drift; and a row read through either is the same row."""
from __future__ import annotations

from datetime import datetime, timezone
from decimal import Decimal

import pytest
import sqlalchemy as sa
from sqlalchemy.types import TypeDecorator
from sqlmodel import SQLModel
from sqlmodel.sql.sqltypes import AutoString

from ledger import models, schema


def _type(t) -> tuple:
    """A column type as what it stores: SQLModel's AutoString is a String of its length."""
    if isinstance(t, AutoString):
        return _type(sa.String(t.length))
    if isinstance(t, TypeDecorator):
        return (type(t).__name__, _type(t.impl))
    return (type(t).__name__, getattr(t, "length", None), getattr(t, "timezone", None),
            getattr(t, "precision", None), getattr(t, "scale", None))


def _columns(table: sa.Table) -> list[tuple]:
    return [(c.name, _type(c.type), c.nullable, c.primary_key,
             sorted(fk.target_fullname for fk in c.foreign_keys)) for c in table.columns]


@pytest.mark.parametrize("core", list(schema.METADATA.tables.values()), ids=lambda t: t.name)
def test_each_core_table_agrees_with_its_sqlmodel_class(core):
    orm = SQLModel.metadata.tables[core.name]
    assert _columns(core) == _columns(orm)


def test_the_core_tables_are_those_the_light_commands_read():
    assert set(schema.METADATA.tables) == {"ingest_batch", "allocation_run", "period", "period_signoff", "tenant",
                                           "product", "pool", "price_book", "price_entry", "sync_watermark"}
    assert {schema.INGEST_BATCH.name, schema.ALLOCATION_RUN.name, schema.PERIOD.name, schema.PERIOD_SIGNOFF.name,
            schema.TENANT.name, schema.PRODUCT.name, schema.POOL.name, schema.PRICE_BOOK.name, schema.PRICE_ENTRY.name,
            schema.SYNC_WATERMARK.name} == set(schema.METADATA.tables)
    assert schema.DIMENSIONS == {"tenant": schema.TENANT, "product": schema.PRODUCT}


def test_the_column_finder_sees_a_difference():
    other = sa.Table("period", sa.MetaData(), sa.Column("name", sa.String(8), primary_key=True),
                     *(sa.Column(c.name, c.type, nullable=c.nullable) for c in list(schema.PERIOD.columns)[1:]))
    assert _columns(other) != _columns(SQLModel.metadata.tables["period"])
    renamed = sa.Table("period", sa.MetaData(), *(sa.Column(c.name if c.name != "end" else "ends", c.type,
                                                            nullable=c.nullable, primary_key=c.primary_key)
                                                  for c in schema.PERIOD.columns))
    assert _columns(renamed) != _columns(SQLModel.metadata.tables["period"])


def test_the_models_use_the_schemas_column_types():
    assert models.Money is schema.Money and models.UTCDateTime is schema.UTCDateTime


@pytest.mark.store
def test_rows_read_through_core_are_the_rows_of_the_classes(ledger_home):
    """A batch, a run, a closed period and its sign-off written through the SQLModel classes read back
    the same through the Core tables (a session, and a connection of `store.reading`)."""
    from ledger import store
    from ledger.ingest.batches import list_batches
    from ledger.runlist import list_runs

    at = datetime(2026, 10, 5, 10, 0, 0, 123456, tzinfo=timezone.utc)
    start, end = store.month_bounds("2026-10")
    with store.session() as s:
        s.add(models.IngestBatch(id="b1", kind="requests", files='[{"path": "a.csv"}]', rows_read=3, rows_new=2,
                                 rows_duplicate=1, first_at=at, last_at=at, booked_period="2026-10"))
        run = models.AllocationRun(id="r1", period_start=start, period_end=end, currency="USD", idle_policy="share",
                                   basis="tokens", inputs_digest="d" * 64, code_version="0.1",
                                   total=Decimal("1234.567890123456"), summary="{}")
        s.add(run)
        s.flush()
        store.sign_off(s, name="2026-10", by="Dana Reyes", note="checked", run=run, now=at)
    with store.session() as s:
        orm_batch = s.get(models.IngestBatch, "b1")
        orm_run = s.get(models.AllocationRun, "r1")
        closing = store.closing(s, "2026-10")
        by_session = (list_batches(s), list_runs(s))
    with store.reading() as conn:
        by_conn = (list_batches(conn), list_runs(conn))
        assert store.closings(conn, ["2026-10", "2026-09"]) == {"2026-10": closing,
                                                               "2026-09": store.Closing(period="2026-09")}
    for batches, runs in (by_session, by_conn):
        assert [b._asdict() for b in batches] == [orm_batch.model_dump()]
        assert [r._asdict() for r in runs] == [orm_run.model_dump()]
    assert closing.signed and closing.by == "Dana Reyes" and closing.total == Decimal("1234.567890123456")


@pytest.mark.store
def test_what_the_ingest_writes_through_core_the_classes_read(ledger_home, tmp_path):
    """A batch ingested through Core (its names registered, a fleet's pool) reads back through the
    SQLModel classes with their defaults: display name the name, no owner, aware instants."""
    from ledger import store
    from ledger.ingest import ingest

    requests = tmp_path / "r.csv"
    requests.write_text("request_id,occurred_at,tenant,product,model,provider,input_tokens,output_tokens,status\n"
                        "r-0,2026-10-05T10:00:00Z,acme,chat,gpt-5-mini,openai,100,20,ok\n")
    fleet = tmp_path / "f.csv"
    fleet.write_text("interval_id,pool,start,end,device,gpus,region,purchase_option,role\n"
                     "i1,p1,2026-10-05T00:00:00Z,2026-10-05T01:00:00Z,H100,8,us,on_demand,serving\n")
    first = ingest("requests", [requests], register_new=True)
    second = ingest("fleet", [fleet])
    with store.session() as s:
        for model, name in ((models.Tenant, "acme"), (models.Product, "chat"), (models.Pool, "p1")):
            row = s.get(model, name)
            assert (row.display_name, row.owner, row.created_at.tzinfo) == (name, "", timezone.utc)
        for result, kind in ((first, "requests"), (second, "fleet")):
            b = s.get(models.IngestBatch, result.batch_id)
            assert (b.kind, b.status, b.rows_new, b.as_adjustment, b.booked_period) == (kind, "committed", 1, False,
                                                                                          None)
            assert b.first_at.tzinfo == timezone.utc and b.created_at <= datetime.now(timezone.utc)
