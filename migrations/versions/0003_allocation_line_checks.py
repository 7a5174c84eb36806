"""Allocation lines keep to the closed sets: CHECK constraints on allocation_line.kind and .category.

Reviewed by hand. The kinds and the ten line categories are written out here as they were when this
revision was made (ledger.vocab's LineKind and Category; ledger.models declares the same
constraints, and tests/test_store.py checks that the three agree at head): a later change of either
set is a new revision, never an edit of this one.

Every row stored before this revision was written by code that used the same sets, so an upgrade
keeps them all. Should a row hold any other value (a hand edit), the upgrade stops before changing
anything and names the values and their counts, rather than failing halfway through a copy.
Batch mode, so that SQLite (which cannot add a constraint to a table in place) recreates the table
with its rows, index and foreign key; PostgreSQL adds the constraints (checking the rows) in place.

Revision ID: 0003_line_checks
Revises: 0002_price_provider
Create Date: 2026-12-05 10:00:00
"""
from alembic import context, op
import sqlalchemy as sa


revision = '0003_line_checks'
down_revision = '0002_price_provider'
branch_labels = None
depends_on = None

KINDS = ('tenant', 'idle_slack', 'idle_reserve', 'unallocated', 'variance')
CATEGORIES = ('gpu', 'provider_tokens', 'tool', 'egress', 'observability', 'storage', 'evaluation',
              'engineering_ops', 'network', 'other')
CHECKS = (('ck_allocation_line_kind', 'kind', KINDS), ('ck_allocation_line_category', 'category', CATEGORIES))


def _one_of(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


def _rows_outside() -> list[str]:
    """'<column> <value>: <n> rows' for every stored value outside its set."""
    bind = op.get_bind()
    out = []
    for _, column, values in CHECKS:
        rows = bind.execute(sa.text(f"SELECT {column}, count(*) FROM allocation_line "
                                    f"WHERE NOT ({_one_of(column, values)}) GROUP BY {column} ORDER BY {column}"))
        out += [f"{column} {value!r}: {n} row{'s' * (n != 1)}" for value, n in rows]
    return out


def upgrade() -> None:
    if not context.is_offline_mode():
        outside = _rows_outside()
        if outside:
            raise RuntimeError("allocation_line holds values outside the line kinds and categories, so their CHECK "
                               f"constraints cannot be added: {'; '.join(outside)}. The upgrade stopped before this "
                               "revision changed anything: correct or remove those rows, then run `ledger init` again")
    with op.batch_alter_table('allocation_line', schema=None) as batch_op:
        for name, column, values in CHECKS:
            batch_op.create_check_constraint(name, _one_of(column, values))


def downgrade() -> None:
    with op.batch_alter_table('allocation_line', schema=None) as batch_op:
        for name, _, _ in reversed(CHECKS):
            batch_op.drop_constraint(name, type_='check')
