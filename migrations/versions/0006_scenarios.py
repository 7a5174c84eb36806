"""What-if scenario results, stored apart from runs (issue 30).

Reserved in the migration chain so the issues of the third wave land in one order; the issue's
work fills in upgrade and downgrade.

Reviewed by hand. Two new tables, nothing else touched: ``scenario_run`` (one row per scenario run
by ``ledger whatif``: its period, the actual run it was set beside, both totals, VERDICT/DRAFT, the
scenario file's text and digest, the books, the JSON document) and ``scenario_line`` (its lines,
the columns of allocation_line, with the same CHECKs on kind and category, written out here as the
sets were when this revision was made). A scenario is never an allocation run, so no row of
allocation_run or allocation_line is read or written; downgrade drops the two tables.
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import sqlmodel
import ledger.models

revision = '0006_scenarios'
down_revision = '0005_sync'
branch_labels = None
depends_on = None

KINDS = ('tenant', 'idle_slack', 'idle_reserve', 'unallocated', 'variance')
CATEGORIES = ('gpu', 'provider_tokens', 'tool', 'egress', 'observability', 'storage', 'evaluation',
              'engineering_ops', 'network', 'other')


def _one_of(column: str, values: tuple[str, ...]) -> str:
    quoted = ", ".join(f"'{v}'" for v in values)
    return f"{column} IN ({quoted})"


def _text(n: int):
    return sqlmodel.sql.sqltypes.AutoString(length=n)


def upgrade() -> None:
    op.create_table(
        'scenario_run',
        sa.Column('id', _text(40), nullable=False),
        sa.Column('name', _text(200), nullable=False),
        sa.Column('period', _text(7), nullable=False),
        sa.Column('period_start', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('period_end', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('created_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('run_id', _text(40), nullable=False),
        sa.Column('currency', _text(3), nullable=False),
        sa.Column('actual_total', ledger.models.Money(length=64), nullable=False),
        sa.Column('scenario_total', ledger.models.Money(length=64), nullable=False),
        sa.Column('status', _text(10), nullable=False),
        sa.Column('scenario_digest', _text(64), nullable=False),
        sa.Column('scenario_text', sa.Text(), nullable=False),
        sa.Column('price_books', sa.Text(), nullable=False),
        sa.Column('summary', sa.Text(), nullable=False),
        sa.Column('code_version', _text(40), nullable=False),
        sa.ForeignKeyConstraint(['run_id'], ['allocation_run.id'], ),
        sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('scenario_run', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_scenario_run_period'), ['period'], unique=False)
    op.create_table(
        'scenario_line',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('scenario_id', _text(40), nullable=False),
        sa.Column('day', sa.Date(), nullable=False),
        sa.Column('kind', _text(20), nullable=False),
        sa.Column('tenant', _text(200), nullable=True),
        sa.Column('product', _text(200), nullable=True),
        sa.Column('model', _text(200), nullable=True),
        sa.Column('pool', _text(200), nullable=True),
        sa.Column('provider', _text(200), nullable=True),
        sa.Column('category', _text(30), nullable=False),
        sa.Column('work', _text(10), nullable=False),
        sa.Column('shared_from', _text(20), nullable=True),
        sa.Column('quantity', ledger.models.Money(length=64), nullable=False),
        sa.Column('unit', _text(50), nullable=False),
        sa.Column('amount', ledger.models.Money(length=64), nullable=False),
        sa.Column('currency', _text(3), nullable=False),
        sa.CheckConstraint(_one_of('kind', KINDS), name='ck_scenario_line_kind'),
        sa.CheckConstraint(_one_of('category', CATEGORIES), name='ck_scenario_line_category'),
        sa.ForeignKeyConstraint(['scenario_id'], ['scenario_run.id'], ),
        sa.PrimaryKeyConstraint('id'))
    with op.batch_alter_table('scenario_line', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_scenario_line_scenario_id'), ['scenario_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('scenario_line', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_scenario_line_scenario_id'))
    op.drop_table('scenario_line')
    with op.batch_alter_table('scenario_run', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_scenario_run_period'))
    op.drop_table('scenario_run')
