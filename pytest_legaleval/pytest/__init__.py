"""The pytest layer: what makes a run a pytest session.

``plugin.py`` (the ``pytest11`` entry point) holds the hook functions; they delegate here:
options (:mod:`.options`), the session's plan in ``config.stash`` (:mod:`.state`),
configure-time checks and SIGTERM (:mod:`.preflight`), the ``record`` and ``evaluation``
fixtures (:mod:`.fixtures`), the xdist scheduler that lets every worker prefetch its
items (:mod:`.scheduling`), recording reports into the run directory (:mod:`.recording`),
scrubbing what pytest prints (:mod:`.redacting`), keeping pytest's reports small
(:mod:`.slimming`), the gates' exit policy (:mod:`.gating`), the hooks users implement
(:mod:`.hookspecs`) and every performance trick that touches the user's process
(:mod:`.tricks`, off with ``LEGALEVAL_NO_TRICKS=1``).

The only package besides ``testing`` that imports pytest; nothing imports ``_pytest``.
The pure packages never import this one.
"""
