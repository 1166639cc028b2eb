"""The schema as it was before migrations; adopts a store made by that code.

Such a store has the tables but no alembic_version, and may lack the columns that code added with
ALTER TABLE as it grew (trials.noise, page_faults, wakeups; cells.departures; runs.boot_id,
pid_start, host): they are added here, older rows reading them as NULL.
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

def runs() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("started_at", sa.Double, nullable=False),
        sa.Column("finished_at", sa.Double),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("pid", sa.Integer),
        sa.Column("machine", sa.Text, nullable=False),
        sa.Column("config", sa.Text, nullable=False),
        sa.Column("boot_id", sa.Text),
        sa.Column("pid_start", sa.BigInteger),
        sa.Column("host", sa.Text),
    ]
def cells() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id"), nullable=False),
        sa.Column("driver", sa.Text, nullable=False),
        sa.Column("scenario", sa.Text, nullable=False),
        sa.Column("params", sa.Text, nullable=False),
        sa.Column("status", sa.Text, nullable=False),
        sa.Column("reason", sa.Text),
        sa.Column("metric", sa.Text, nullable=False),
        sa.Column("figures", sa.Text),
        sa.Column("versions", sa.Text),
        sa.Column("started_at", sa.Double, nullable=False),
        sa.Column("finished_at", sa.Double),
        sa.Column("departures", sa.Text),
    ]
def trials() -> list[sa.Column]:
    return [
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("cell_id", sa.Integer, sa.ForeignKey("cells.id"), nullable=False),
        sa.Column("kind", sa.Text, nullable=False),
        sa.Column("idx", sa.Integer, nullable=False),
        sa.Column("ok", sa.Integer, nullable=False),
        sa.Column("wall_s", sa.Double),
        sa.Column("user_s", sa.Double),
        sa.Column("sys_s", sa.Double),
        sa.Column("peak_rss_kb", sa.BigInteger),
        sa.Column("startup_s", sa.Double),
        sa.Column("setup_s", sa.Double),
        sa.Column("work_requests", sa.BigInteger),
        sa.Column("work_bytes", sa.BigInteger),
        sa.Column("server", sa.Text),
        sa.Column("problems", sa.Text),
        sa.Column("noise", sa.Text),
        sa.Column("page_faults", sa.BigInteger),
        sa.Column("wakeups", sa.BigInteger),
    ]
# fresh Column objects for every migration: a column belongs to one table
INDEXES = {"cells_run": ("cells", "run_id"), "trials_cell": ("trials", "cell_id")}


def upgrade() -> None:
    seen = sa.inspect(op.get_bind())
    for name, columns in (("runs", runs()), ("cells", cells()), ("trials", trials())):
        if not seen.has_table(name):
            op.create_table(name, *columns, sqlite_autoincrement=True)
            continue
        have = {c["name"] for c in seen.get_columns(name)}
        for column in columns:
            if column.name not in have:
                op.add_column(name, column)
    for index, (table, column) in INDEXES.items():
        op.create_index(index, table, [column], if_not_exists=True)
