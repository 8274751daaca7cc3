"""The pytest layer: what makes a run a pytest session.

``plugin.py`` (the ``pytest11`` entry point) holds the hook functions; they delegate here:
options (:mod:`.options`), the session's typed stash keys (:mod:`.state`), configure-time
checks and SIGTERM (:mod:`.preflight`), the session set-up (:mod:`.session`,
:mod:`.startup`), collection and the built-in suite (:mod:`.collection`,
:mod:`.default_suite`), the ``record`` and ``evaluation`` fixtures (:mod:`.fixtures`), the
live run loop (:mod:`.live`), an item's pytest outcome and its one-line reason
(:mod:`.outcomes`), the result handed from the item to the recorder — as is in one
process, as one JSON string from an xdist worker (:mod:`.carrier`) — and the recorder
itself (:mod:`.recorder_plugin`), Ctrl-C under xdist (:mod:`.interrupt`), the xdist
scheduler that lets every worker prefetch its items (:mod:`.scheduling`,
:mod:`.xdist_hooks`), scrubbing what pytest prints (:mod:`.redacting`), the gates' exit
policy (:mod:`.gating`), the hooks users implement (:mod:`.hookspecs`) and every
performance trick that touches the user's process (:mod:`.tricks`, public APIs only).

The only package besides ``testing`` that imports pytest; nothing imports ``_pytest``.
The pure packages never import this one.
"""
