"""Every run gets a uid (the same in every store it is copied to: pushing is idempotent by it) and
its host's fingerprint; every finished cell its fingerprint. Existing rows are filled in."""

import json
import uuid

import sqlalchemy as sa
from alembic import op

from clientlab.store.fingerprint import cell_fingerprint, host_fingerprint

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("runs", sa.Column("uid", sa.Text))
    op.add_column("runs", sa.Column("host_fingerprint", sa.Text))
    op.add_column("cells", sa.Column("fingerprint", sa.Text))
    _fill_in(op.get_bind())
    op.create_index("runs_uid", "runs", ["uid"], unique=True)
    op.create_index("cells_fingerprint", "cells", ["fingerprint"])


def _fill_in(conn: sa.Connection) -> None:
    runs = sa.table("runs", sa.column("id"), sa.column("machine"), sa.column("config"), sa.column("uid"),
                    sa.column("host_fingerprint"))
    cells = sa.table("cells", *(sa.column(c) for c in ("id", "run_id", "driver", "scenario", "params", "versions",
                                                       "finished_at", "fingerprint")))
    for run in conn.execute(sa.select(runs.c.id, runs.c.machine, runs.c.config)).mappings().all():
        host = host_fingerprint(_loaded(run["machine"]) or {})
        conn.execute(runs.update().where(runs.c.id == run["id"]).values(uid=uuid.uuid4().hex, host_fingerprint=host))
        config = _loaded(run["config"]) or {}
        finished = conn.execute(sa.select(cells).where(cells.c.run_id == run["id"], cells.c.finished_at.is_not(None)))
        for cell in finished.mappings().all():
            decoded = {**cell, "params": _loaded(cell["params"]), "versions": _loaded(cell["versions"])}
            conn.execute(cells.update().where(cells.c.id == cell["id"])
                         .values(fingerprint=cell_fingerprint(decoded, config, host)))


def _loaded(text: str | None):
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None
