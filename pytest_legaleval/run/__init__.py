"""The run directory: written once, by one writer, and never by pytest.

:class:`~.recorder.RunRecorder` opens ``<run-dir>/<run_id>/`` once the dataset is
accepted, appends each item's lines as results arrive and finalizes the run (metrics,
manifest, ``SHA256SUMS``, read-only files); :mod:`.artifacts` says what each line holds,
:mod:`.manifest` the run manifest, :mod:`.directory` how files are written (exclusive
create, atomic JSON, flushed JSONL), :mod:`.redaction` what is scrubbed from everything
written, :mod:`.claim` the run-id claim, :mod:`.merge` the joining of shards,
:mod:`.verify` the checks of a finished directory, :mod:`.console` the summary table.

Never imports pytest, the pipeline or the service: it is fed plain results.
"""
