"""Alembic's entry: migrations run on the connection clientlab hands over (clientlab/store/migrate.py)."""

from alembic import context

from clientlab.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, render_as_batch=False)
with context.begin_transaction():
    context.run_migrations()
