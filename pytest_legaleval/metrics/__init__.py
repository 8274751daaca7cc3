"""Metrics: what a run's results add up to, and whether CI should accept it.

:mod:`.summary` and :mod:`.slices` accumulate results into ``metrics_summary.json`` and
``metrics_by_slice.json`` (counts in one vocabulary — :mod:`.items`, :mod:`.counts` —
Wilson and bootstrap intervals from :mod:`.stats`, cost from :mod:`.prices`);
:mod:`.gates` parses and evaluates ``--gate`` expressions; :mod:`.baseline` pairs two
runs (McNemar, paired bootstrap); :mod:`.compare` renders ``legaleval compare``;
:mod:`.runfiles` reads finished run directories, old and new. With ``--epochs``:
:mod:`.epochs` (one verdict per item, pass@k, pass^k, flaky and incomplete items),
:mod:`.clustered` (the run's own interval), :mod:`.cr2` (CR2 standard errors with
Bell–McCaffrey degrees of freedom) and :mod:`.tdist` (Student's t at any degrees of
freedom), :mod:`.paired` (the clustered paired difference the baseline gate decides on),
:mod:`.epoch_summary` (those figures for the summary), :mod:`.power` (the planner of
``legaleval plan``) and :mod:`.run_checks` (the cluster field and the gates against the
records, before any call). :mod:`.benchmarks` computes the official
benchmark figures (``benchmarks`` block) and :mod:`.gate_paths` lets a gate name any number
of the summary by its dotted path. The judge audit: :mod:`.human_labels` reads
``--human-labels``, :mod:`.audit_items` matches them to the judge's verdicts,
:mod:`.audit` computes agreement, κ, α and the PPI++ estimates (:mod:`.ppi`,
:mod:`.rater_agreement`), :mod:`.calibration` and :mod:`.audit_text` present them,
:mod:`.judge_consistency` measures re-judging flips and judge panels,
:mod:`.expert_agreement` the raters' agreement with each other (the judge's ceiling) and
:mod:`.labelled_population` the population a review sample's labels speak for.

Never imports pytest, the pipeline, the engine or the service.
"""
