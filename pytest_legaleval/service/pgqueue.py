"""The run queue in PostgreSQL, with leases: runs shared by any number of replicas.

A worker claims the next run with ``SELECT … FOR UPDATE SKIP LOCKED`` (two replicas never
take the same one, and neither waits for the other) and holds it on a lease that its
heartbeat renews (:meth:`PgRunQueue.renew`). A replica that dies — ``kill -9``, a host
lost — renews nothing: its leases run out after ``lease_s`` and the next worker of any
replica claims the run and continues it (``service.execution``). A worker that dies
inside a live replica is released at once by its supervisor, as with SQLite.
"""

from __future__ import annotations

from typing import Any

from pytest_legaleval.service.postgres import PgConnections, PgTarget
from pytest_legaleval.service.storage import WORKER_PATIENCE, Patience

__all__ = ["DEFAULT_LEASE_S", "PgRunQueue"]

DEFAULT_LEASE_S = 30.0
"""How long a claim holds without a heartbeat (``serve --lease-seconds``)."""


class PgRunQueue:
    """:class:`~pytest_legaleval.service.queue.RunQueue` in a PostgreSQL table, with leases.

    Args:
        target: the database.
        patience: how long a call waits for the database.
        lease_s: seconds a claim holds without being renewed.

    """

    def __init__(
        self,
        target: PgTarget,
        patience: Patience = WORKER_PATIENCE,
        lease_s: float = DEFAULT_LEASE_S,
    ) -> None:
        self.target = target
        self.lease_s = lease_s
        self.db = PgConnections(target, patience)

    def close(self) -> None:
        """Close the connections."""
        self.db.close()

    def put(self, run_id: str) -> None:
        """See :meth:`RunQueue.put`."""
        self.db.run(
            lambda conn: conn.execute(
                "INSERT INTO legaleval_queue (run_id) VALUES (%s) ON CONFLICT (run_id) DO NOTHING",
                (run_id,),
            )
        )

    def prioritize(self, run_id: str) -> None:
        """See :meth:`RunQueue.prioritize`."""
        self.db.run(
            lambda conn: conn.execute(
                "UPDATE legaleval_queue SET priority = 1 WHERE run_id = %s", (run_id,)
            )
        )

    def claim(self, worker: str) -> str | None:
        """The next waiting run, or one whose lease ran out; held by ``worker`` on a lease."""

        def take(conn: Any) -> str | None:
            found = conn.execute(
                "SELECT run_id FROM legaleval_queue "
                "WHERE claimed_by IS NULL OR lease_until < now() "
                "ORDER BY priority DESC, seq LIMIT 1 FOR UPDATE SKIP LOCKED"
            ).fetchone()
            if found is None:
                return None
            conn.execute(
                "UPDATE legaleval_queue SET claimed_by = %s, claimed_at = now(), "
                "lease_until = now() + make_interval(secs => %s) WHERE run_id = %s",
                (worker, self.lease_s, found[0]),
            )
            return str(found[0])

        result: str | None = self.db.run(take)
        return result

    def renew(self, worker: str) -> list[str]:
        """Extend the leases ``worker`` holds (its heartbeat); return the runs still held."""
        rows = self.db.run(
            lambda conn: conn.execute(
                "UPDATE legaleval_queue SET lease_until = now() + make_interval(secs => %s) "
                "WHERE claimed_by = %s RETURNING run_id",
                (self.lease_s, worker),
            ).fetchall()
        )
        return [str(row[0]) for row in rows]

    def done(self, run_id: str) -> None:
        """See :meth:`RunQueue.done`."""
        self.db.run(
            lambda conn: conn.execute("DELETE FROM legaleval_queue WHERE run_id = %s", (run_id,))
        )

    def release(self, worker: str | None = None) -> list[str]:
        """Put back ``worker``'s claims; ``None``: every claim whose lease ran out.

        Replicas share the queue: a starting replica must not take back the runs that the
        others' workers are evaluating, only those nobody renews any more.
        """
        where, args = (
            ("claimed_by IS NOT NULL AND lease_until < now()", ())
            if worker is None
            else ("claimed_by = %s", (worker,))
        )

        def give_back(conn: Any) -> list[str]:
            rows = conn.execute(
                "UPDATE legaleval_queue "
                "SET claimed_by = NULL, claimed_at = NULL, lease_until = NULL, "
                f"priority = 1 WHERE {where} RETURNING run_id",
                args,
            ).fetchall()
            return [str(row[0]) for row in rows]

        result: list[str] = self.db.run(give_back)
        return result

    def claimants(self) -> list[str]:
        """Every worker that holds a claim now (live or not)."""
        rows = self.db.run(
            lambda conn: conn.execute(
                "SELECT DISTINCT claimed_by FROM legaleval_queue WHERE claimed_by IS NOT NULL"
            ).fetchall()
        )
        return [str(row[0]) for row in rows]

    def claimed_by(self, worker: str) -> list[str]:
        """See :meth:`RunQueue.claimed_by`."""
        rows = self.db.run(
            lambda conn: conn.execute(
                "SELECT run_id FROM legaleval_queue WHERE claimed_by = %s", (worker,)
            ).fetchall()
        )
        return [str(row[0]) for row in rows]
