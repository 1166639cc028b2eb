"""The results store (SQLite file or PostgreSQL team store): see core.py and schema.py."""

from clientlab.store.core import KILLED_CELL, Store, Trial, open_store

__all__ = ["KILLED_CELL", "Store", "Trial", "open_store"]
