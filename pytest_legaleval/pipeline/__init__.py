"""The run pipeline: a record's way from the dataset to its result, without pytest.

A run is planned once (:mod:`.plan`: the settings, the loaded and validated datasets, the
selection, one :class:`~.plan.ItemSpec` per record × model, the grading plan), its items
are evaluated by the one item runner (:mod:`.runner`: live, pre-computed and replayed
answers and every epoch on one path; prompts built, calls submitted to the engine up
front, each answer graded by its grader), each item's
:class:`~pytest_legaleval.records.EvalResult` is built once (:mod:`.results`) and handed
to the run directory through the run driver (:mod:`.driver`: ``RunSession`` for a pytest
session's hooks, ``run_evaluation`` for the HTTP service). Options and their resolution
live in :mod:`.settings`, shared by pytest's options and ``legaleval serve``.

Main names: ``Settings``, ``OPTIONS``, ``RunPlan``, ``ItemSpec``, ``ItemRunner``,
``RunSession``, ``run_evaluation``.

Never imports pytest, the pytest layer, the service or the command line.
"""
