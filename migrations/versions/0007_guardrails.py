"""Budgets per tenant, product or model for the guardrails (issue 31).

Reviewed by hand. Two tables, as the price books have: ``budget_book``, one row per loaded version
of a budgets book (name, version, currency, digest, the TOML content as loaded: the source of truth,
immutable; unique by name and version), and ``budget_entry``, its budgets for queries (scope: tenant,
product, model, each null for any; monthly amount as Money; owner; in force from, to (exclusive)).
Nothing else changes: the guardrails' spend to date is provisional and never stored as a run.

Revision ID: 0007_guardrails
Revises: 0006_scenarios
Create Date: 2026-12-20 12:00:00
"""
from __future__ import annotations

from alembic import op
import sqlalchemy as sa
import sqlmodel

import ledger.models

revision = '0007_guardrails'
down_revision = '0006_scenarios'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'budget_book',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('version', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
        sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
        sa.Column('digest', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('path', sqlmodel.sql.sqltypes.AutoString(), nullable=False),
        sa.Column('content', sa.Text(), nullable=False),
        sa.Column('loaded_at', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint('id'),
        sa.UniqueConstraint('name', 'version', name='uq_budget_book_name_version'),
    )
    with op.batch_alter_table('budget_book', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_budget_book_name'), ['name'], unique=False)
    op.create_table(
        'budget_entry',
        sa.Column('id', sa.Integer(), nullable=False),
        sa.Column('book_id', sa.Integer(), sa.ForeignKey('budget_book.id'), nullable=False),
        sa.Column('entry', sa.Integer(), nullable=False),
        sa.Column('tenant', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column('product', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column('model', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=True),
        sa.Column('monthly', ledger.models.Money(length=64), nullable=False),
        sa.Column('currency', sqlmodel.sql.sqltypes.AutoString(length=3), nullable=False),
        sa.Column('owner', sqlmodel.sql.sqltypes.AutoString(length=200), nullable=False),
        sa.Column('effective_from', ledger.models.UTCDateTime(timezone=True), nullable=False),
        sa.Column('effective_to', ledger.models.UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('budget_entry', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_budget_entry_book_id'), ['book_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('budget_entry', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_budget_entry_book_id'))
    op.drop_table('budget_entry')
    with op.batch_alter_table('budget_book', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_budget_book_name'))
    op.drop_table('budget_book')
