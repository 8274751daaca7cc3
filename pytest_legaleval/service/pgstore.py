"""The run table in PostgreSQL: :class:`~pytest_legaleval.service.store.RunTable` for replicas.

Same rows, same answers as the SQLite :class:`~pytest_legaleval.service.store.RunStore`;
every write is one transaction (``service.postgres.PgConnections.run``), and a read-then-write
(a state appended to the transitions) locks its row first (``FOR UPDATE``), so replicas
writing the same run never lose each other's update. The limits checked when a run is
created hold across replicas: the count and the insert run under a transaction-scoped
advisory lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_legaleval.run.manifest import TERMINAL_STATES, utc_now
from pytest_legaleval.service.postgres import LOCK_RUNS, PgConnections, PgTarget
from pytest_legaleval.service.storage import WORKER_PATIENCE, Patience
from pytest_legaleval.service.store import COLUMNS, RunRow, dump_json, row_of

__all__ = ["PgRunStore"]

_TERMINAL = list(TERMINAL_STATES)


def _text(value: str | None) -> str | None:
    """``value`` as PostgreSQL's text can hold it: a NUL (which it refuses) becomes U+FFFD.

    A run's error can quote what a dataset or a model said; SQLite keeps it as it is.
    """
    return None if value is None else value.replace("\x00", "\ufffd")


_DELETION_FIELDS = ("raw_deleted_at", "summary_deleted_at")


class PgRunStore:
    """The run table of a PostgreSQL database; thread-safe (a connection per thread)."""

    def __init__(self, target: PgTarget, patience: Patience = WORKER_PATIENCE) -> None:
        self.target = target
        self.patience = patience
        self.db = PgConnections(target, patience)

    def _read(self, sql: str, args: Sequence[Any] = ()) -> list[Any]:
        rows: list[Any] = self.db.run(lambda conn: conn.execute(sql, args).fetchall())
        return rows

    def _exec(self, sql: str, args: Sequence[Any] = ()) -> None:
        self.db.run(lambda conn: conn.execute(sql, args))

    def close(self) -> None:
        """Close every connection this store opened."""
        self.db.close()

    # -- the HTTP process -------------------------------------------------------------------

    def create(
        self,
        *,
        run_id: str,
        owner: str,
        models: Sequence[str],
        request_id: str,
        validation: Mapping[str, Any],
        dataset: Mapping[str, Any],
        total: int,
        max_queued: int,
        max_per_owner: int,
    ) -> str | None:
        """See :meth:`pytest_legaleval.service.store.RunStore.create` (limits across replicas)."""

        def insert(conn: Any) -> str | None:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK_RUNS,))
            now = utc_now()
            queued = conn.execute(
                "SELECT COUNT(*) FROM legaleval_runs WHERE status = 'queued'"
            ).fetchone()
            if queued[0] >= max_queued:
                return "queue"
            mine = conn.execute(
                "SELECT COUNT(*) FROM legaleval_runs WHERE owner = %s AND NOT (status = ANY(%s))",
                (owner, _TERMINAL),
            ).fetchone()
            if mine[0] >= max_per_owner:
                return "owner"
            conn.execute(
                "INSERT INTO legaleval_runs "
                "(run_id, owner, status, models, request_id, created_at, "
                "updated_at, transitions, validation, dataset, total) "
                "VALUES (%s, %s, 'queued', %s, %s, %s, %s, %s, %s, %s, %s)",
                (
                    run_id, owner, dump_json(list(models)), request_id, now, now,
                    dump_json([{"state": "queued", "at": now}]), dump_json(validation),
                    dump_json(dataset), total,
                ),
            )  # fmt: skip
            return None

        result: str | None = self.db.run(insert)
        return result

    def get(self, run_id: str) -> RunRow | None:
        """The run, or ``None``."""
        found = self._read(f"SELECT {COLUMNS} FROM legaleval_runs WHERE run_id = %s", (run_id,))
        return row_of(found[0]) if found else None

    def page(self, owner: str | None, *, limit: int, before: int | None) -> list[RunRow]:
        """Runs newest first (``owner`` ``None``: everyone's), at most ``limit``."""
        where: list[str] = []
        args: list[str | int] = []
        if owner is not None:
            where.append("owner = %s")
            args.append(owner)
        if before is not None:
            where.append("seq < %s")
            args.append(before)
        clause = f"WHERE {' AND '.join(where)}" if where else ""
        rows = self._read(
            f"SELECT {COLUMNS} FROM legaleval_runs {clause} ORDER BY seq DESC LIMIT %s",
            (*args, limit),
        )
        return [row_of(values) for values in rows]

    def request_cancel(self, run_id: str) -> RunRow | None:
        """Note a cancellation request (kept if one was made); the run as it is now."""
        now = utc_now()
        self._exec(
            "UPDATE legaleval_runs SET cancel_requested_at = COALESCE(cancel_requested_at, %s), "
            "updated_at = %s WHERE run_id = %s AND NOT (status = ANY(%s))",
            (now, now, run_id, _TERMINAL),
        )
        return self.get(run_id)

    def count(self, status: str) -> int:
        """Runs in ``status``."""
        return int(
            self._read("SELECT COUNT(*) FROM legaleval_runs WHERE status = %s", (status,))[0][0]
        )

    def probe(self) -> None:
        """One small write (the health row): raises what a write of the table would raise."""
        self._exec(
            "INSERT INTO legaleval_health (id, at) VALUES (1, %s) "
            "ON CONFLICT (id) DO UPDATE SET at = %s",
            (utc_now(), utc_now()),
        )

    # -- the workers ------------------------------------------------------------------------

    def cancel_requested(self, run_id: str) -> bool:
        """Whether someone asked to cancel the run."""
        found = self._read(
            "SELECT cancel_requested_at FROM legaleval_runs WHERE run_id = %s", (run_id,)
        )
        return bool(found and found[0][0])

    def taken_up(self, run_id: str) -> None:
        """A worker takes up a run another one had started (count it)."""
        self._exec(
            "UPDATE legaleval_runs SET resumes = resumes + 1, updated_at = %s WHERE run_id = %s",
            (utc_now(), run_id),
        )

    @staticmethod
    def _transitions(conn: Any, run_id: str) -> list[dict[str, str]] | None:
        found = conn.execute(
            "SELECT transitions FROM legaleval_runs WHERE run_id = %s FOR UPDATE", (run_id,)
        ).fetchone()
        return None if found is None else list(json.loads(found[0]))

    def set_state(self, run_id: str, state: str, at: str) -> None:
        """See :meth:`pytest_legaleval.service.store.RunStore.set_state`."""

        def append(conn: Any) -> None:
            transitions = self._transitions(conn, run_id)
            if transitions is None:
                return
            transitions.append({"state": state, "at": at})
            if state in TERMINAL_STATES:
                conn.execute(
                    "UPDATE legaleval_runs SET transitions = %s, updated_at = %s WHERE run_id = %s",
                    (dump_json(transitions), at, run_id),
                )
            else:
                conn.execute(
                    "UPDATE legaleval_runs SET transitions = %s, updated_at = %s, status = %s "
                    "WHERE run_id = %s",
                    (dump_json(transitions), at, state, run_id),
                )

        self.db.run(append)

    def progress(self, run_id: str, done: int, total: int) -> None:
        """Items recorded so far, of ``total``."""
        self._exec(
            "UPDATE legaleval_runs SET done = %s, total = %s, updated_at = %s WHERE run_id = %s",
            (done, total, utc_now(), run_id),
        )

    def finish(
        self,
        run_id: str,
        status: str,
        *,
        denominators: Mapping[str, Any] | None = None,
        metrics: Mapping[str, Any] | None = None,
        error: str | None = None,
        at: str | None = None,
        transitions: Sequence[Mapping[str, str]] | None = None,
    ) -> None:
        """See :meth:`pytest_legaleval.service.store.RunStore.finish`."""
        now = at or utc_now()

        def end(conn: Any) -> None:
            noted = self._transitions(conn, run_id)
            if noted is None:
                return
            steps = [dict(t) for t in transitions] if transitions else noted
            if not steps or steps[-1]["state"] != status:
                steps.append({"state": status, "at": now})
            conn.execute(
                "UPDATE legaleval_runs SET status = %s, transitions = %s, completed_at = %s, "
                "updated_at = %s, denominators = %s, metrics = %s, error = %s WHERE run_id = %s",
                (
                    status, dump_json(steps), steps[-1]["at"], now,
                    None if denominators is None else dump_json(denominators),
                    None if metrics is None else dump_json(metrics), _text(error), run_id,
                ),
            )  # fmt: skip

        self.db.run(end)

    # -- retention --------------------------------------------------------------------------

    def completed_before(self, cutoff: str, column: str) -> Iterator[RunRow]:
        """Terminal runs completed before ``cutoff`` whose ``column`` deletion is pending."""
        if column not in _DELETION_FIELDS:
            raise ValueError(column)
        rows = self._read(
            f"SELECT {COLUMNS} FROM legaleval_runs "
            "WHERE completed_at IS NOT NULL AND completed_at < %s "
            f"AND {column} IS NULL ORDER BY seq",
            (cutoff,),
        )
        for values in rows:
            yield row_of(values)

    def mark_deleted(self, run_id: str, column: str) -> None:
        """Note that the run's raw artifacts (or its summaries) were deleted."""
        if column not in _DELETION_FIELDS:
            raise ValueError(column)
        self._exec(
            f"UPDATE legaleval_runs SET {column} = %s WHERE run_id = %s", (utc_now(), run_id)
        )

    def unfinished(self) -> list[str]:
        """Runs that have not ended (each must be in the queue until it does)."""
        rows = self._read(
            "SELECT run_id FROM legaleval_runs WHERE NOT (status = ANY(%s)) ORDER BY seq",
            (_TERMINAL,),
        )
        return [str(row[0]) for row in rows]

    def known(self, run_ids: Sequence[str]) -> set[str]:
        """Which of ``run_ids`` have a row."""
        if not run_ids:
            return set()
        rows = self._read(
            "SELECT run_id FROM legaleval_runs WHERE run_id = ANY(%s)", (list(run_ids),)
        )
        return {str(row[0]) for row in rows}
