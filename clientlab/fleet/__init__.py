"""The matrix shared out over many lab hosts: batches on a Celery queue whose broker (Redis) the
coordinator starts on its own loopback and lends each lab host through that host's SSH session."""
