"""Issue 41, MED/LOW: corrupt or tampered run directories are refused before anything.

Before: one bad line of a ``--baseline`` (broken UTF-8, deep nesting, a non-object line, a
400-digit score, ``epoch: -5``) crashed pytest with an internal error (exit 3) — in the
last two cases after every model call was paid — and ``report``, ``compare``, ``audit``,
``merge`` and ``plan`` with tracebacks; ``merge`` accepted a shard edited after sealing and
copied planted keys in clear. Now every reader goes through ``metrics._rundir_check``: a
usage error (exit 4 under pytest, 2 for ``legaleval``) naming the file, before any call.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_legaleval.cli import main
from pytest_legaleval.testing.mock_openai import MockOpenAIServer

SUITE = "def test_record(record, evaluation):\n    evaluation.check()\n"
PLANTED = "sk-proj-PLANTEDcanary0123456789abcdef"


def _rows(ids: range) -> list[dict[str, object]]:
    return [
        {
            "schema_version": "legal_eval_v1", "id": f"q{i:03d}", "dataset": "t",
            "task_type": "mcq", "prompt": f"Question q{i:03d}?",
            "choices": [{"id": c, "text": c} for c in "AB"], "correct_choice_ids": ["B"],
        }
        for i in ids
    ]  # fmt: skip


def _session(where: Path, *extra: str) -> Path:
    """A finished, sealed run of the four-record dataset in ``where`` (from responses)."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "test_suite.py").write_text(SUITE, encoding="utf-8")
    data = where / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(range(4))), encoding="utf-8")
    answers = where / "answers.jsonl"
    answers.write_text(
        "".join(json.dumps({"record_id": f"q{i:03d}", "response": "Answer: B"}) + "\n"
                for i in range(4)),
        encoding="utf-8",
    )  # fmt: skip
    before = set((where / "runs").iterdir()) if (where / "runs").is_dir() else set()
    args = ["--dataset", str(data), "--responses", str(answers), "--run-dir", "runs",
            "-p", "no:cacheprovider", "-q", *extra]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args], cwd=where, capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stdout[-2000:]
    (run,) = [p for p in (where / "runs").iterdir() if p.is_dir() and p not in before]
    return run


@pytest.fixture(scope="module")
def sealed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _session(tmp_path_factory.mktemp("sealed"))


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("shards")  # one folder: the shards share the dataset
    return _session(base, "--shard", "1/2"), _session(base, "--shard", "2/2")


def _copy(run: Path, to: Path) -> Path:
    target = to / run.name
    shutil.copytree(run, target)
    for path in [target, *target.iterdir()]:
        path.chmod(path.stat().st_mode | stat.S_IWUSR)
    return target


def _reseal(run: Path) -> None:
    """Rewrite SHA256SUMS as the writer would: the line check, not the checksum, must catch."""
    names = sorted(p.name for p in run.iterdir() if p.is_file() and p.name != "SHA256SUMS")
    sums = "".join(f"{hashlib.sha256((run / n).read_bytes()).hexdigest()}  {n}\n" for n in names)
    (run / "SHA256SUMS").write_text(sums, encoding="utf-8")


def _append(name: str, raw: bytes) -> Callable[[Path], None]:
    def corrupt(run: Path) -> None:
        with (run / name).open("ab") as handle:
            handle.write(raw)
        _reseal(run)

    return corrupt


def _first_line(change: Callable[[dict[str, object]], None]) -> Callable[[Path], None]:
    def corrupt(run: Path) -> None:
        path = run / "predictions.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()
        row = json.loads(lines[0])
        change(row)
        lines[0] = json.dumps(row)
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        _reseal(run)

    return corrupt


def _raw_score(run: Path) -> None:
    path = run / "predictions.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"score":1.0', '"score":' + "9" * 400, 1)
    assert "9" * 400 in lines[0]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    _reseal(run)


def _tamper(run: Path) -> None:  # an edit after sealing: SHA256SUMS is left as it was
    path = run / "predictions.jsonl"
    path.write_text(path.read_text(encoding="utf-8").replace('"passed":true', '"passed":false'))


def _plant(run: Path) -> None:  # a file the checksums do not list
    (run / "regressions.jsonl").write_text('{"record_id": "q000"}\n', encoding="utf-8")


CORRUPTIONS: dict[str, tuple[Callable[[Path], None], str]] = {
    "broken-utf8": (_append("predictions.jsonl", b'{"record_id": "\xff\xfe"}\n'), "not UTF-8"),
    "deep-nesting": (_append("predictions.jsonl", b"[" * 100_000 + b"]" * 100_000 + b"\n"),
                     "nested"),
    "not-an-object": (_append("failures.jsonl", b"[1, 2, 3]\n"), "not a JSON object"),
    "overflow": (_append("attempt_logs.jsonl", b'{"latency_ms": 1e999}\n'), "out of range"),
    "huge-score": (_raw_score, "out of range"),
    "negative-epoch": (_first_line(lambda r: r.update(epoch=-5)), "epoch must be"),
    "score-string": (_first_line(lambda r: r.update(score="1.0")), "score must be a number"),
    "bad-manifest": (_append("run_manifest.json", b"\x00garbage"), "run_manifest.json"),
    "tampered": (_tamper, "does not match SHA256SUMS"),
    "unlisted-file": (_plant, "not listed in SHA256SUMS"),
}  # fmt: skip


@pytest.fixture(params=sorted(CORRUPTIONS))
def corrupt_run(request: pytest.FixtureRequest, sealed: Path, tmp_path: Path) -> Iterator[Path]:
    corrupt, message = CORRUPTIONS[request.param]
    run = _copy(sealed, tmp_path)
    corrupt(run)
    request.node.expected_message = message
    yield run


def _expected(request: pytest.FixtureRequest) -> str:
    return str(request.node.expected_message)


@pytest.mark.parametrize(
    "command",
    [
        lambda run, tmp: ["report", str(run), "--out", str(tmp / "r.html")],
        lambda run, tmp: ["compare", str(run), str(run)],
        lambda run, tmp: ["audit", str(run)],
        lambda run, tmp: ["merge", str(run), str(run), "--out", str(tmp / "merged")],
        lambda run, tmp: ["plan", "--dataset", str(run.parent / "d.jsonl"),
                          "--baseline", str(run)],
    ],
    ids=["report", "compare", "audit", "merge", "plan"],
)  # fmt: skip
def test_every_command_refuses_a_corrupt_run_with_a_usage_error(
    corrupt_run: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
    command: Callable[[Path, Path], list[str]],
) -> None:
    shutil.copy(Path(request.getfixturevalue("sealed")).parent.parent / "d.jsonl", tmp_path)
    assert main(command(corrupt_run, tmp_path)) == 2
    err = capsys.readouterr().err
    assert _expected(request) in err and "Traceback" not in err
    assert str(corrupt_run) in err  # the file is named
    assert not (tmp_path / "merged").exists()


def test_a_corrupt_baseline_is_a_usage_error_before_any_call(
    corrupt_run: Path, pytester: pytest.Pytester, request: pytest.FixtureRequest
) -> None:
    pytester.makepyfile(test_suite=SUITE)
    data = pytester.path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _rows(range(4))), encoding="utf-8")
    with MockOpenAIServer() as server:
        server.add_reply("Question", "Answer: B")
        result = pytester.runpytest(
            "--dataset", str(data), "--model", "openai/m", "--base-url", server.base_url,
            "--baseline", str(corrupt_run), "--run-dir", "runs", "--no-cache",
        )  # fmt: skip
        assert server.stats()["requests"] == 0  # nothing paid for
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and _expected(request) in text


def test_a_sealed_run_reads_and_merge_redacts_what_it_copies(
    shards: tuple[Path, Path], tmp_path: Path
) -> None:
    a, b = (_copy(s, tmp_path / n) for n, s in (("a", shards[0]), ("b", shards[1])))
    for run in (a, b):  # keys planted in a shard's lines, sealed again so they are "valid"
        path = run / "predictions.jsonl"
        rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]
        for row in rows:
            row["explanation"] = f"the key was {PLANTED}"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        _reseal(run)
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "merged")]) == 0
    merged = tmp_path / "merged"
    assert (merged / "SHA256SUMS").is_file()
    for path in merged.iterdir():
        assert PLANTED not in path.read_text(encoding="utf-8"), path


def test_merge_refuses_a_shard_edited_after_sealing(
    shards: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = (_copy(s, tmp_path / n) for n, s in (("a", shards[0]), ("b", shards[1])))
    _tamper(a)  # a wrong answer made a pass, SHA256SUMS untouched
    assert main(["merge", str(a), str(b), "--out", str(tmp_path / "merged")]) == 2
    assert "predictions.jsonl: does not match SHA256SUMS" in capsys.readouterr().err
    assert not (tmp_path / "merged").exists()


# A NaN line is read as null with its NonFiniteWarning (older runs stay readable): expected
# here, hundreds of times, so not shown.
@pytest.mark.filterwarnings("ignore::pytest_legaleval.errors.NonFiniteWarning")
@settings(settings.get_profile("adversarial"))
@given(
    line=st.one_of(
        st.binary(max_size=200),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
            lambda inner: (
                st.lists(inner, max_size=4)
                | st.dictionaries(
                    st.sampled_from(["record_id", "epoch", "score", "passed", "model", "x"]),
                    inner,
                    max_size=5,
                )
            ),
            max_leaves=30,
        ).map(lambda v: json.dumps(v, allow_nan=True).encode()),
    )
)
def test_any_line_is_read_or_refused_never_a_crash(line: bytes) -> None:
    import tempfile

    from pytest_legaleval.metrics._rundir_check import RunDirectoryError
    from pytest_legaleval.metrics._runfiles import item_rows, load_run

    with tempfile.TemporaryDirectory() as folder:
        run = Path(folder)
        (run / "run_manifest.json").write_text('{"run_id": "r"}', encoding="utf-8")
        good = {"record_id": "a", "model": "m", "passed": True, "score": 1.0, "item_id": "i"}
        (run / "predictions.jsonl").write_bytes(json.dumps(good).encode() + b"\n" + line + b"\n")
        try:
            loaded = load_run(run)
        except RunDirectoryError as exc:
            assert str(run) in str(exc)
            return
        item_rows(loaded)  # what was accepted, the readers can use
