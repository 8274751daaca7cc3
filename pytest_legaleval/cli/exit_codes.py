"""The one exit-status table of every ``legaleval`` command (the README has it too).

- **0** done: everything valid, passed, imported or written.
- **1** done, with findings: rejected records (``validate``), failed rows (``import``,
  ``convert``), failed records or gates (``submit``), an alert (``check-dataset``), no
  decision in common (``agreement``), rejected label rows (``audit``), shards that do not
  fit (``merge``), runs with no item in common (``compare``).
- **2** nothing was judged: a usage error (a bad argument, a missing or unreadable input,
  not a run directory), a rejected dataset (``validate``'s contract status, ``submit``), a
  cancelled or interrupted run (``submit``).
- **3** the run or the service failed (``submit``, ``serve``).

``argparse`` exits 2 on a bad argument; every command's own usage errors do the same.
``validate`` keeps the contract's 0 / 1 / 2. The pytest run itself keeps pytest's statuses
(0, 1, 2 interrupted or a rejected dataset, 3 internal error, 4 usage error).
"""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE"]

EXIT_OK = 0
"""Done: everything valid, passed, imported or written."""
EXIT_FINDINGS = 1
"""Done, with findings (rejected records, failed rows or gates, alerts, nothing in common)."""
EXIT_USAGE = 2
"""Nothing was judged: a usage error, a rejected dataset, a cancelled run."""
EXIT_FAILED = 3
"""The run or the service failed."""
