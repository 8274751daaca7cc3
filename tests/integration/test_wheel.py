"""The wheel carries the schemas: build it, install it in a temporary venv, load them
from a working directory outside the repository."""

from __future__ import annotations

import json
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

PROBE = """
import json, pathlib, sys
import pytest_legaleval
from pytest_legaleval.validation import load_schema, schema_names
names = schema_names()
loaded = {name: load_schema(name)["$schema"] for name in names}
print(json.dumps({"file": pytest_legaleval.__file__, "schemas": loaded}))
"""


@pytest.mark.slow
def test_wheel_ships_every_schema(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(REPO),
        ],
        check=True,
    )
    (wheel,) = dist.glob("pytest_legaleval-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(purelib),
            str(wheel),
        ],
        check=True,
    )
    # Dependencies come from this environment, listed after the venv's own site-packages.
    outer = [
        p for p in {sysconfig.get_paths()["purelib"], *site.getsitepackages()} if Path(p).is_dir()
    ]
    (purelib / "zz_outer_deps.pth").write_text("\n".join(outer) + "\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    probe = subprocess.run(
        [str(python), "-c", PROBE],
        cwd=outside,
        check=True,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONNOUSERSITE": "1"},
    )
    result = json.loads(probe.stdout)
    assert Path(result["file"]).is_relative_to(purelib), result["file"]
    shipped = sorted(p.stem.removesuffix(".schema") for p in (REPO / "schemas").glob("*.json"))
    assert sorted(result["schemas"]) == shipped
    assert set(result["schemas"].values()) == {"https://json-schema.org/draft/2020-12/schema"}
