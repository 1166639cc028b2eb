"""CPU profiles of cells: each profiler's folded stacks of a cell's profiled trials, kept apart
from the figures (a profile is tens to hundreds of KB of text) but in the store, so that
`store push` carries them with the run."""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "profiles",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id"), nullable=False),
        sa.Column("profiler", sa.Text, nullable=False),
        sa.Column("samples", sa.BigInteger, nullable=False),
        sa.Column("folded", sa.Text, nullable=False),
        sa.Column("meta", sa.Text),
        sqlite_autoincrement=True,
    )
    op.create_index("profiles_cell", "profiles", ["cell_id"])
