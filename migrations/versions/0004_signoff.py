"""Month-end sign-off (issue 28): who closed a period, when, why, the final run.

Reviewed by hand. One table, ``period_signoff``: a row per closed period, written once by
``ledger close --period P --by NAME [--note TEXT]`` with the run it signs as final, that run's total,
currency and inputs digest as they were at the close. The period is the primary key (a period is
signed once: a second sign-off is refused by the key), the run a foreign key (a signed run cannot go).
Immutable in the database too, not only in the code: a trigger refuses every UPDATE and DELETE of
the table (SQLite: ``RAISE(ABORT)``; PostgreSQL: a PL/pgSQL function raising an exception).

Periods closed before this revision keep no sign-off (nothing records who closed them); they read
"closed at T, no sign-off recorded", and can be signed once with ``ledger close --by``.

Revision ID: 0004_signoff
Revises: 0003_line_checks
Create Date: 2026-12-20 10:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa

import ledger.models

revision = '0004_signoff'
down_revision = '0003_line_checks'
branch_labels = None
depends_on = None

#: What the triggers say when a sign-off is changed or removed.
IMMUTABLE = "a sign-off is immutable: a correction after close is a true-up run"


def upgrade() -> None:
    op.create_table(
        'period_signoff',
        sa.Column('period', sa.String(length=7), sa.ForeignKey('period.name'), primary_key=True),
        sa.Column('signed_by', sa.String(length=200), nullable=False),
        sa.Column('signed_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('note', sa.Text(), nullable=False),
        sa.Column('run_id', sa.String(length=40), sa.ForeignKey('allocation_run.id'), nullable=False),
        sa.Column('total', ledger.models.Money(length=64), nullable=False),
        sa.Column('currency', sa.String(length=3), nullable=False),
        sa.Column('inputs_digest', sa.String(length=64), nullable=False),
    )
    if op.get_context().dialect.name == 'postgresql':
        op.execute("CREATE FUNCTION period_signoff_immutable() RETURNS trigger LANGUAGE plpgsql AS "
                   f"$$ BEGIN RAISE EXCEPTION '{IMMUTABLE}'; END $$")
        op.execute("CREATE TRIGGER period_signoff_immutable BEFORE UPDATE OR DELETE ON period_signoff "
                   "FOR EACH ROW EXECUTE FUNCTION period_signoff_immutable()")
    else:
        for event in ('UPDATE', 'DELETE'):
            op.execute(f"CREATE TRIGGER period_signoff_no_{event.lower()} BEFORE {event} ON period_signoff "
                       f"BEGIN SELECT RAISE(ABORT, '{IMMUTABLE}'); END")


def downgrade() -> None:
    if op.get_context().dialect.name == 'postgresql':
        op.execute("DROP TRIGGER period_signoff_immutable ON period_signoff")
        op.execute("DROP FUNCTION period_signoff_immutable()")
    else:
        for event in ('update', 'delete'):
            op.execute(f"DROP TRIGGER period_signoff_no_{event}")
    op.drop_table('period_signoff')
