"""Extraction jobs of the users' turns: records in the store, run after the answer.

A job is a record in ``Namespace("jobs", tenant, user)``, so whichever worker process
is asked answers with its state (``queued`` -> ``running`` -> ``done`` or ``failed``),
what it stored and why it failed. It runs as a task on the event loop of the call that
queued it: the write that queued it has answered already, and a failure is recorded on
the job, never raised into a request. A job record expires after ``JOB_TTL_S``.

A job never stays ``queued`` or ``running`` for good: one that outlives
``JOB_DEADLINE_S`` fails as timed out, one stopped with its server (``stop``) fails as
interrupted, and one whose worker died without a word reads as interrupted once its
deadline has passed, from whichever worker is asked.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Final

from memstack.clock import Clock
from memstack.redaction import redact
from memstack.service.user_types import JOB_STATES, JobState, JobStatus
from memstack.storage import Namespace, Record, RecordStore

__all__ = ["JOB_DEADLINE_S", "JOB_TTL_S", "UserJobs", "jobs_namespace"]

JOB_TTL_S: Final = 7 * 86_400
"""How long a job's record is kept: long enough to follow it, short enough that a busy
user's jobs do not pile up."""
JOB_DEADLINE_S: Final = 900.0
"""The longest a job may run: past it the job fails, and a record still ``queued`` or
``running`` after it belongs to a worker that is gone."""
_GRACE_S: Final = 60.0
_MAX_ERROR_CHARS: Final = 1_000
INTERRUPTED: Final = (
    "interrupted: the server running this job stopped before it finished; send the turns "
    "again (with the same ids) to extract them."
)

_log = logging.getLogger("memstack.service")

Run = Callable[[], Awaitable[list[str]]]
"""The job's work: the ids of the memories it stored."""


def jobs_namespace(tenant: str, user_id: str) -> Namespace:
    return Namespace("jobs", tenant, user_id)


class UserJobs:
    """The jobs of every tenant's users: their records, and the tasks running them."""

    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock
        self._tasks: dict[tuple[str, str], set[asyncio.Task[None]]] = {}
        self._stopping = False

    def create(self, tenant: str, user_id: str) -> JobStatus:
        """A queued job, recorded (call it in a worker thread)."""
        now = self.clock.now()
        job = JobStatus(id=uuid.uuid4().hex, state="queued", created_at=now, updated_at=now)
        self._put(tenant, user_id, job)
        return job

    def get(self, tenant: str, user_id: str, job_id: str) -> JobStatus | None:
        found = self.records.get(jobs_namespace(tenant, user_id), [job_id])
        if not found:
            return None
        job = _status(found[0])
        abandoned = self.clock.now() - job.updated_at > JOB_DEADLINE_S + _GRACE_S
        if job.state in ("queued", "running") and abandoned:
            return replace(job, state="failed", error=INTERRUPTED)
        return job

    def start(self, tenant: str, user_id: str, job: JobStatus, run: Run) -> None:
        """Run ``job`` on the running loop, after the caller has answered."""
        task = asyncio.create_task(self._run(tenant, user_id, job, run))
        running = self._tasks.setdefault((tenant, user_id), set())
        running.add(task)
        task.add_done_callback(lambda done: self._forget(tenant, user_id, done))

    async def _run(self, tenant: str, user_id: str, job: JobStatus, run: Run) -> None:
        try:
            job = await self._moved(tenant, user_id, job, state="running")
            async with asyncio.timeout(JOB_DEADLINE_S):
                stored = await run()
            await self._moved(tenant, user_id, job, state="done", stored=stored)
        except asyncio.CancelledError:
            if self._stopping:  # the server is stopping: say so on the job
                self._put(tenant, user_id, _failed(job, INTERRUPTED, self.clock.now()))
            raise
        except Exception as exc:  # recorded on the job: the write answered long ago
            error = redact(f"{type(exc).__name__}: {exc}")[:_MAX_ERROR_CHARS]
            if isinstance(exc, TimeoutError):
                error = f"timed out: extraction took longer than {JOB_DEADLINE_S:.0f} s."
            try:
                await self._moved(tenant, user_id, job, state="failed", error=error)
            except Exception:
                _log.warning("extraction job %s: its failure was not recorded", job.id)

    async def _moved(
        self,
        tenant: str,
        user_id: str,
        job: JobStatus,
        *,
        state: JobState,
        stored: list[str] | None = None,
        error: str | None = None,
    ) -> JobStatus:
        moved = replace(
            job,
            state=state,
            stored=stored if stored is not None else job.stored,
            error=error,
            updated_at=self.clock.now(),
        )
        await asyncio.to_thread(self._put, tenant, user_id, moved)
        return moved

    def _put(self, tenant: str, user_id: str, job: JobStatus) -> None:
        self.records.upsert([_record(jobs_namespace(tenant, user_id), job)])

    def _forget(self, tenant: str, user_id: str, task: asyncio.Task[None]) -> None:
        running = self._tasks.get((tenant, user_id))
        if running is not None:
            running.discard(task)
            if not running:
                del self._tasks[(tenant, user_id)]

    def running(self) -> int:
        """Jobs this process runs now, queued or running (the server's ``/metrics``)."""
        return sum(len(tasks) for tasks in self._tasks.values())

    def cancel(self, tenant: str, user_id: str) -> None:
        """Stop the user's running jobs (the user is being erased)."""
        for task in self._tasks.pop((tenant, user_id), set()):
            task.cancel()

    def erase(self, tenant: str, user_id: str) -> int:
        return self.records.delete_namespace(jobs_namespace(tenant, user_id))

    async def stop(self) -> None:
        """Stop every running job, each recorded as interrupted (the server stops)."""
        self._stopping = True
        pending = [t for running in self._tasks.values() for t in running]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def wait(self) -> None:
        """Wait for every job started so far (for shutdown and tests)."""
        while self._tasks:
            pending = [t for running in self._tasks.values() for t in running]
            await asyncio.gather(*pending, return_exceptions=True)


def _failed(job: JobStatus, error: str, now: float) -> JobStatus:
    return replace(job, state="failed", error=error, updated_at=now)


def _record(namespace: Namespace, job: JobStatus) -> Record:
    return Record(
        id=job.id,
        namespace=namespace.encode(),
        text="extraction job",
        kind="job",
        metadata={
            "state": job.state,
            "stored": list(job.stored),
            "error": job.error,
        },
        created_at=job.created_at,
        updated_at=job.updated_at,
        expires_at=job.created_at + JOB_TTL_S,
    )


def _status(record: Record) -> JobStatus:
    meta = record.metadata
    state: JobState = "failed"  # a record no state can be read from
    for known in JOB_STATES:
        if known == meta.get("state"):
            state = known
    stored = meta.get("stored")
    error = meta.get("error")
    return JobStatus(
        id=record.id,
        state=state,
        stored=[s for s in stored if isinstance(s, str)] if isinstance(stored, list) else [],
        error=error if isinstance(error, str) else None,
        created_at=record.created_at,
        updated_at=record.updated_at,
    )
