"""Every trial says which of its cell's driver processes ran it (`trials.process`: 0 the cell's
first, counted up at each process the cell was given), so that a large answer's allocator mode,
a property of a process, is counted by process. Trials stored before stay NULL: not known."""

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("trials", sa.Column("process", sa.Integer))
