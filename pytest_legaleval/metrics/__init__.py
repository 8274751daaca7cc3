"""Metrics: what a run's results add up to, and whether CI should accept it.

:mod:`.summary` and :mod:`.slices` accumulate results into ``metrics_summary.json`` and
``metrics_by_slice.json`` (counts in one vocabulary — :mod:`.items`, :mod:`.counts` —
Wilson and bootstrap intervals from :mod:`.stats`, cost from :mod:`.prices`);
:mod:`.gates` parses and evaluates ``--gate`` expressions; :mod:`.baseline` pairs two
runs (McNemar, paired bootstrap); :mod:`.compare` renders ``legaleval compare``;
:mod:`.runfiles` reads finished run directories, old and new. The judge audit:
:mod:`.human_labels` reads ``--human-labels``, :mod:`.audit_items` matches them to the
judge's verdicts, :mod:`.audit` computes agreement, κ, α and the PPI++ estimates
(:mod:`.ppi`, :mod:`.rater_agreement`), :mod:`.calibration` and :mod:`.audit_text` present
them, :mod:`.judge_consistency` measures re-judging flips and judge panels.

Never imports pytest, the pipeline, the engine or the service.
"""
