"""The fleet's Celery application, the same on the coordinator and on every lab host: one batch at a
time, taken one at a time and acknowledged only once its run is done; no heartbeats, gossip,
mingle, events or remote control, so that an idle worker waits on its broker connection and
does nothing else."""

from __future__ import annotations

from celery import Celery

RUN_BATCH = "clientlab.fleet.run_batch"
# never redeliver by timeout: a batch may measure for hours; the coordinator sends a lost batch again
VISIBILITY_TIMEOUT_S = 7 * 24 * 3600


def host_queue(fleet_uid: str, host: str) -> str:
    """The queue of one lab host in one fleet run: the coordinator sends a batch to a host when it is idle."""
    return f"clientlab.{fleet_uid}.{host}"


def make_app(broker_url: str) -> Celery:
    app = Celery("clientlab-fleet", broker=broker_url, backend=broker_url, set_as_current=False)
    app.conf.update(
        task_serializer="json", result_serializer="json", accept_content=["json"], result_accept_content=["json"],
        task_acks_late=True, worker_prefetch_multiplier=1, worker_concurrency=1,
        task_track_started=True, broker_heartbeat=0, worker_enable_remote_control=False,
        worker_send_task_events=False, task_send_sent_event=False, worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True, broker_connection_max_retries=3,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        result_backend_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        result_expires=None, task_default_queue="clientlab.unrouted", worker_redirect_stdouts=False,
    )
    return app
