"""The wheel is complete: it carries the themes and examples, and its CLI starts.

Builds the wheel from this checkout (no network: hatchling comes from the dev extras),
installs it without dependencies into a temporary virtual environment whose dependency
lookups fall through to the test environment, and runs ``specconsole --version`` and
``--help`` from there — proving the installed package, not the checkout, is what runs.
"""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import specconsole

REPO = Path(specconsole.__file__).resolve().parent.parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--disable-pip-version-check",
            "-q",
            "-w",
            str(out),
            str(REPO),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("specconsole-*.whl")
    return built


def test_wheel_ships_themes_and_examples(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tcss = [n for n in names if n.startswith("specconsole/themes/") and n.endswith(".tcss")]
    repo_tcss = sorted(p.name for p in (REPO / "themes").glob("*.tcss"))
    assert sorted(Path(n).name for n in tcss) == repo_tcss
    examples = {n for n in names if n.startswith("specconsole/examples/")}
    for example in (REPO / "examples").rglob("*.toml"):
        assert f"specconsole/examples/{example.relative_to(REPO / 'examples')}" in examples


def test_installed_wheel_runs_version_and_help(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    # Install the wheel's files (what pip does, minus dependency resolution).
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    # Dependencies come from the test environment; its editable .pth is NOT processed
    # (a path line only appends the folder), so `specconsole` resolves to the wheel's copy.
    test_site = next(p for p in sys.path if p.endswith("site-packages"))
    Path(site, "zz_test_deps.pth").write_text(test_site + "\n")

    where = subprocess.run(
        [
            str(python),
            "-c",
            "import specconsole, specconsole.paths as p; print(specconsole.__file__); "
            "print(p.themes_dir()); print(p.examples_dir())",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.split()
    assert all(path.startswith(site) for path in where), where
    assert list(Path(where[1]).glob("*.tcss"))

    version = subprocess.run(
        [str(python), "-m", "specconsole", "--version"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.stdout.strip() == f"specconsole {specconsole.__version__}"
    help_text = subprocess.run(
        [str(python), "-m", "specconsole", "--help"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout
    assert "usage: specconsole" in help_text
