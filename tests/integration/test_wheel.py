"""The built wheel works without the checkout: it carries the schemas and the default suite,
and the CI examples' jobs (``examples/ci/*.yml``) run as written against it.

The wheel is built once per module and installed (without its dependencies, which come from
this environment through a ``.pth`` file) into a fresh venv; everything then runs from a
directory outside the repository.
"""

from __future__ import annotations

import json
import os
import re
import site
import subprocess
import sys
import sysconfig
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from pytest_legaleval.testing.mock_openai import MockOpenAIServer

from .conftest import mcq_row, write_jsonl

REPO = Path(__file__).resolve().parents[2]
CI = REPO / "examples" / "ci"

PROBE = """
import json, pathlib, sys
import pytest_legaleval
from pytest_legaleval.validation import load_schema, schema_names
names = schema_names()
loaded = {name: load_schema(name)["$schema"] for name in names}
print(json.dumps({"file": pytest_legaleval.__file__, "schemas": loaded}))
"""

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Installed:
    """The built wheel and the venv it is installed in."""

    wheel: Path
    venv: Path
    purelib: Path

    def env(self, **extra: str) -> dict[str, str]:
        """A clean environment whose ``python`` and ``legaleval`` are the venv's."""
        return {
            "PATH": f"{self.venv / 'bin'}:/usr/bin:/bin",
            "PYTHONNOUSERSITE": "1",
            "HOME": str(self.venv.parent),
            **extra,
        }


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    pip = [sys.executable, "-m", "pip"]
    build = [*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist)]
    subprocess.run([*build, str(REPO)], check=True)
    (wheel,) = dist.glob("pytest_legaleval-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # pip --python installs into the venv, its console scripts (legaleval) included
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", "-q", str(wheel)],
                   check=True)  # fmt: skip
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    # Dependencies come from this environment, listed after the venv's own site-packages.
    outer = [
        p for p in {sysconfig.get_paths()["purelib"], *site.getsitepackages()} if Path(p).is_dir()
    ]
    (purelib / "zz_outer_deps.pth").write_text("\n".join(outer) + "\n")
    yield Installed(wheel, venv, purelib)


def test_wheel_ships_every_schema(installed: Installed, tmp_path: Path) -> None:
    probe = subprocess.run(
        [str(installed.venv / "bin" / "python"), "-c", PROBE],
        cwd=tmp_path,
        check=True,
        capture_output=True,
        text=True,
        env=installed.env(),
    )
    result = json.loads(probe.stdout)
    assert Path(result["file"]).is_relative_to(installed.purelib), result["file"]
    shipped = sorted(p.stem.removesuffix(".schema") for p in (REPO / "schemas").glob("*.json"))
    assert sorted(result["schemas"]) == shipped
    assert set(result["schemas"].values()) == {"https://json-schema.org/draft/2020-12/schema"}


def test_wheel_requires_pytest_asyncio_only_for_its_extra(installed: Installed) -> None:
    with zipfile.ZipFile(installed.wheel) as wheel:
        (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = wheel.read(name).decode()
    requires = re.findall(r"^Requires-Dist: (.+)$", metadata, re.M)
    core = [r for r in requires if "extra ==" not in r]
    assert core and not [r for r in core if r.startswith("pytest-asyncio")], core
    assert "pytest-asyncio>=0.24; extra == 'async'" in requires
    assert any(n.endswith("pytest_legaleval/pytest/default_suite.py") for n in wheel.namelist())


# -- the CI examples, as written ---------------------------------------------------------------


def _github_steps() -> dict[str, str]:
    workflow = yaml.safe_load((CI / "github-actions.yml").read_text(encoding="utf-8"))
    steps = workflow["jobs"]["evaluate"]["steps"]
    return {step.get("name", step.get("run", "")): step.get("run", "") for step in steps}


def _gitlab_job() -> dict[str, list[str]]:
    job = yaml.safe_load((CI / "gitlab-ci.yml").read_text(encoding="utf-8"))["legaleval"]
    return {key: job[key] for key in ("before_script", "script", "after_script")}


def _project(root: Path) -> Path:
    """A project with nothing but its dataset, as in the examples: ``data/lexam.jsonl``."""
    rows = [mcq_row(f"q{i:02d}", dataset="lexam", prompt=f"Question q{i:02d} [ans=B]?")
            for i in range(18)]  # fmt: skip
    rows += [mcq_row(f"w{i}", dataset="lexam", prompt=f"Question w{i} [ans=C]?") for i in range(2)]
    (root / "data").mkdir()
    write_jsonl(root / "data" / "lexam.jsonl", rows)
    return root


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.fixture
def model() -> Iterator[MockOpenAIServer]:
    """Stands in for the examples' model: right on 18 of the 20 questions."""
    with MockOpenAIServer() as server:
        server.add_reply(r"\[ans=B\]", "Answer: B")
        server.add_reply(r"\[ans=C\]", "Answer: A")  # wrong: the gates, not pytest, decide
        yield server


def test_the_github_actions_job_runs_against_the_wheel(
    installed: Installed, model: MockOpenAIServer, tmp_path: Path
) -> None:
    steps = _github_steps()
    assert steps["python -m pip install pytest-legaleval"]  # what the wheel stands in for
    project = _project(tmp_path)
    summary = tmp_path / "summary.md"
    env = installed.env(
        OPENAI_API_KEY="test-key-not-secret",
        OPENAI_BASE_URL=model.base_url,
        RUN_ID="ci-1-1",
        GITHUB_STEP_SUMMARY=str(summary),
    )
    evaluate = _bash(steps["Evaluate with gates"], project, env)
    out = evaluate.stdout
    assert evaluate.returncode == 0, out + evaluate.stderr  # 2 wrong answers; the gates hold
    assert "pytest_legaleval/pytest/default_suite.py::test_record[lexam/w0] - wrong_answer" in out
    assert re.search(r"^2 failed, 18 passed in ", out.splitlines()[-1].strip("= ")), out
    run = project / "legaleval-runs" / "ci-1-1"
    assert (run / "run_manifest.json").is_file() and (project / "junit.xml").is_file()
    # The run wrote the job summary itself: headline, gates, the worst failures.
    text = summary.read_text()
    assert text.startswith("## legaleval: 90.0% passed (95% CI ")
    assert "| passed | pass\\_rate\\_ci\\_low\\>\\=0\\.55 |" in text
    assert "### Worst failures (2 of 2)" in text and "wrong\\_answer" in text
    report = _bash(steps["Report and comparison"], project, env)
    assert report.returncode == 0, report.stderr
    assert (project / "report.html").stat().st_size > 10_000
    # The next pull request: the same job with this run as its baseline, and the comparison.
    env |= {"RUN_ID": "ci-2-1", "BASELINE": str(run)}
    evaluate = _bash(steps["Evaluate with gates"], project, env)
    assert evaluate.returncode == 0, evaluate.stdout + evaluate.stderr
    assert "### Regressions against the baseline" in summary.read_text()
    report = _bash(steps["Report and comparison"], project, env)
    assert report.returncode == 0, report.stderr
    compare = (project / "compare.md").read_text()
    assert "| `pass_rate` | 90.0%" in compare
    # The comment step, with a stand-in for gh: created on the first push, edited after.
    comments = _fake_gh(tmp_path, env)
    for _ in range(2):
        done = _bash(
            steps["Comment the comparison on the pull request"], project, env | {"PR": "7"}
        )
        assert done.returncode == 0, done.stdout + done.stderr
    calls = (comments / "calls").read_text().splitlines()
    assert calls == [
        "pr comment 7 --edit-last --body-file compare.md",
        "pr comment 7 --body-file compare.md",
        "pr comment 7 --edit-last --body-file compare.md",
    ]
    assert (comments / "comment.md").read_text() == compare


FAKE_GH = """#!/bin/bash
# gh's stand-in: logs every call; --edit-last fails until a comment exists.
echo "$*" >> "$GH_FAKE_DIR/calls"
if [[ " $* " == *" --edit-last "* && ! -f "$GH_FAKE_DIR/comment.md" ]]; then
  echo "no comments found for current user" >&2
  exit 1
fi
while [ $# -gt 0 ]; do
  [ "$1" = "--body-file" ] && cp "$2" "$GH_FAKE_DIR/comment.md"
  shift
done
"""


def _fake_gh(root: Path, env: dict[str, str]) -> Path:
    """A ``gh`` on the PATH of ``env`` that records its calls in the returned folder."""
    folder = root / "gh"
    (folder / "bin").mkdir(parents=True)
    script = folder / "bin" / "gh"
    script.write_text(FAKE_GH)
    script.chmod(0o755)
    env["PATH"] = f"{folder / 'bin'}:{env['PATH']}"
    env["GH_FAKE_DIR"] = str(folder)
    return folder


def test_the_gitlab_job_runs_against_the_wheel(
    installed: Installed, model: MockOpenAIServer, tmp_path: Path
) -> None:
    job = _gitlab_job()
    assert job["before_script"][0] == "python -m pip install pytest-legaleval"
    project = _project(tmp_path)
    env = installed.env(
        OPENAI_API_KEY="test-key-not-secret",
        OPENAI_BASE_URL=model.base_url,
        RUN_ID="ci-7-9",
        CI_PIPELINE_SOURCE="push",
    )
    for script in [*job["before_script"][1:], *job["script"]]:
        done = _bash(script, project, env)
        assert done.returncode == 0, done.stdout + done.stderr
    for script in job["after_script"]:
        done = _bash(script, project, env)
        assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "legaleval-runs" / "ci-7-9" / "metrics_summary.json").is_file()
    assert (project / "junit.xml").is_file() and (project / "report.html").is_file()


def test_the_examples_fail_the_job_when_a_gate_fails(installed: Installed, tmp_path: Path) -> None:
    """The same command against a model that is mostly wrong: the gates fail the job."""
    project = _project(tmp_path)
    with MockOpenAIServer() as server:
        server.add_reply(r"Question", "Answer: D")
        env = installed.env(
            OPENAI_API_KEY="test-key-not-secret", OPENAI_BASE_URL=server.base_url, RUN_ID="ci-3-1"
        )
        done = _bash(_github_steps()["Evaluate with gates"], project, env)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "pass_rate_ci_low" in done.stdout
    assert os.path.isdir(project / "legaleval-runs" / "ci-3-1")
