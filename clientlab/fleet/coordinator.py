"""The coordinator's loop: each idle lab host is sent the next batch it has not tried, on its own
queue; each answer's run is stored once (by the batch's uid); a host whose session ended gives its
batch back to the others; a batch that failed on every host still alive ends as failed cells with
the reasons, keeping whatever its last attempt measured."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from celery import Celery

from clientlab.fleet.batches import Batch
from clientlab.fleet.queue import RUN_BATCH
from clientlab.fleet.sessions import HostWorker
from clientlab.store import Store
from clientlab.store.transfer import import_run

POLL_S = 0.25   # the coordinator's own pace: it runs beside no measurement of its own


@dataclass
class BatchState:
    """Where one batch stands: queued, sent (to a host's queue), running, done or failed."""

    batch: Batch
    payload: dict
    status: str = "queued"
    host: str | None = None
    task_id: str | None = None
    tried: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    partial: dict | None = None   # the last failed attempt's run, kept if every host fails it
    run_id: int | None = None
    sent_at: float = 0.0   # time.monotonic() when sent to its host


@dataclass
class Coordinator:
    store: Store
    app: Celery
    workers: list[HostWorker]
    states: list[BatchState]
    say: Callable[[str], None]
    record_failed: Callable[[BatchState], int]
    on_stored: Callable[[BatchState], None] | None = None   # told of each batch's run once stored, done or failed
    live: dict[str, HostWorker] = field(init=False)

    def __post_init__(self) -> None:
        self.live = {w.host.name: w for w in self.workers}

    def run(self) -> list[BatchState]:
        """Until every batch is done or failed."""
        while any(s.status not in ("done", "failed") for s in self.states):
            changed = self._collect() | self._watch_hosts() | self._give_up() | self._dispatch()
            if changed:
                self.say(self.progress())
            time.sleep(POLL_S)
        return self.states

    def _label(self, state: BatchState) -> str:
        return state.batch.label(len(self.states))

    def _busy(self) -> dict[str, BatchState]:
        return {s.host: s for s in self.states if s.status in ("sent", "running") and s.host}

    def _dispatch(self) -> bool:
        busy, changed = self._busy(), False
        for name, worker in self.live.items():
            if name in busy:
                continue
            state = next((s for s in self.states if s.status == "queued" and name not in s.tried), None)
            if state is None:
                continue
            state.status, state.host, state.sent_at = "sent", name, time.monotonic()
            state.task_id = f"{state.batch.uid}.{len(state.tried) + 1}"
            self.app.send_task(RUN_BATCH, args=[state.payload], queue=worker.queue, task_id=state.task_id)
            self.say(f"{self._label(state)} → {name}" + (f" (attempt {len(state.tried) + 1})" if state.tried else ""))
            busy[name], changed = state, True
        return changed

    def _collect(self) -> bool:
        changed = False
        for state in [s for s in self.states if s.status in ("sent", "running")]:
            # the backend's record read as is: an AsyncResult would linger and call the broker once stopped
            meta = self.app.backend.get_task_meta(state.task_id)
            status, result = meta.get("status"), meta.get("result")
            if status == "STARTED" and state.status == "sent":
                state.status, changed = "running", True
            elif status == "SUCCESS":
                self._answered(state, result)
                changed = True
            elif status == "FAILURE":
                self._attempt_failed(state, f"{state.host}: the batch raised {result!r}", None)
                changed = True
        return changed

    def _answered(self, state: BatchState, answer: dict) -> None:
        if not answer.get("ok"):
            self._attempt_failed(state, answer.get("error") or f"{state.host}: failed", answer.get("doc"))
            return
        run_id, added = import_run(self.store, answer["doc"])
        state.status, state.run_id = "done", run_id
        run = answer["doc"]["run"]
        measured = (run.get("finished_at") or 0) - (run.get("started_at") or 0)
        self.say(f"{self._label(state)} done on {state.host} in {time.monotonic() - state.sent_at:.1f} s "
                 f"(its run {measured:.1f} s): "
                 + (f"stored as run {run_id} ({len(answer['doc']['cells'])} cells)" if added
                    else f"already stored as run {run_id}"))
        if self.on_stored:
            self.on_stored(state)

    def _attempt_failed(self, state: BatchState, error: str, doc: dict | None) -> None:
        self.say(f"{self._label(state)} failed on {state.host}: {error}")
        state.tried.append(state.host or "?")
        state.errors.append(error)
        state.partial = doc or state.partial
        state.status, state.host, state.task_id = "queued", None, None

    def _watch_hosts(self) -> bool:
        """Hosts whose session ended: out of the fleet run, their batch back in the queue."""
        changed = False
        for name, worker in list(self.live.items()):
            if worker.alive():
                continue
            why = worker.why_ended()
            del self.live[name]
            changed = True
            self.say(f"{name}: its session ended ({why}); {len(self.live)} host(s) left")
            lost = self._busy().get(name)
            if lost is not None:
                self._attempt_failed(lost, f"{name}: lost mid-batch ({why})", None)
        return changed

    def _give_up(self) -> bool:
        """Queued batches no live host can still try: failed, with every reason."""
        changed = False
        for state in self.states:
            if state.status == "queued" and all(name in state.tried for name in self.live):
                state.status, changed = "failed", True
                state.run_id = self.record_failed(state)
                self.say(f"{self._label(state)} FAILED on every host ({'; '.join(state.errors) or 'no host left'}): "
                         f"its cells are stored as failed in run {state.run_id}")
                if self.on_stored:
                    self.on_stored(state)
        return changed

    def progress(self) -> str:
        counts = {k: sum(s.status == k for s in self.states) for k in ("queued", "sent", "running", "done", "failed")}
        where = ", ".join(f"{s.host}: batch {s.batch.index}" for s in self.states if s.status in ("sent", "running"))
        return (f"batches: {counts['queued']} queued, {counts['sent'] + counts['running']} on hosts"
                + (f" ({where})" if where else "") + f", {counts['done']} done, {counts['failed']} failed")
