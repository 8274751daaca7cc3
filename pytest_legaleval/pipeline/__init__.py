"""The run pipeline: a record's way from the dataset to its result, without pytest.

A run is planned (:mod:`.plan`: the settings, the loaded and validated datasets, the
selection, one :class:`~.plan.ItemSpec` per record × model), its items are evaluated
(:mod:`.evaluator`: prompts built, every call submitted to the engine up front, each
answer graded by its grader; :mod:`.grading_plan` grades pre-computed responses without
the engine), each item's :class:`~pytest_legaleval.records.EvalResult` is built once
(:mod:`.results`) and handed to the run directory (``run/recorder.py``). :mod:`.run`'s
``run_evaluation`` drives a whole run this way for the HTTP service; the pytest layer
drives the same pieces through its hooks. Options and their resolution live in
:mod:`.settings`, shared by pytest's options and ``legaleval serve``.

Main names: ``Settings``, ``OPTIONS``, ``RunPlan``, ``ItemSpec``, ``LiveEvaluator``,
``run_evaluation``.

Never imports pytest, the pytest layer, the service or the command line.
"""
