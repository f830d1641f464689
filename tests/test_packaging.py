"""The wheel is complete: it carries the themes and examples, and its CLI starts; the
simulator's HTTP server is an extra a plain install does not pull.

Builds the wheel from this checkout (no network: hatchling comes from the dev extras),
installs it without dependencies into a temporary virtual environment whose dependency
lookups fall through to the test environment, and runs ``specconsole --version`` and
``--help`` from there — proving the installed package, not the checkout, is what runs. The
wheel's own metadata says what ``pip install specconsole`` installs; a second environment
whose dependencies are the test environment's *less* starlette and uvicorn is a plain install,
and there ``demo`` and ``sim`` name the fix while the model still predicts.
"""

from __future__ import annotations

import ast
import email
import re
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


TEST_SITE = Path(next(p for p in sys.path if p.endswith("site-packages")))
"""The test environment's packages: the installed wheel's dependencies."""


def _installed(wheel: Path, env_dir: Path, deps: Path) -> tuple[Path, str]:
    """A virtual environment holding the wheel's files (what pip does, minus dependency
    resolution) whose dependencies come from ``deps``; its python and its site folder. The
    folder's own ``.pth`` files are NOT processed (a path line only appends it), so the test
    environment's editable install is not seen: ``specconsole`` is the wheel's copy."""
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    Path(site, "zz_test_deps.pth").write_text(f"{deps}\n")
    return python, site


def test_wheel_ships_themes_and_examples(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    tcss = [n for n in names if n.startswith("specconsole/themes/") and n.endswith(".tcss")]
    repo_tcss = sorted(p.name for p in (REPO / "themes").glob("*.tcss"))
    assert sorted(Path(n).name for n in tcss) == repo_tcss
    examples = {n for n in names if n.startswith("specconsole/examples/")}
    for example in (REPO / "examples").rglob("*.toml"):
        assert f"specconsole/examples/{example.relative_to(REPO / 'examples')}" in examples


def test_installed_wheel_runs_version_and_help(wheel: Path, tmp_path: Path) -> None:
    python, site = _installed(wheel, tmp_path / "venv", TEST_SITE)

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


SERVER_LIBRARIES = {"starlette", "uvicorn"}
"""The simulator's HTTP server: the ``sim`` extra."""


def _requirements(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        (name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(archive.read(name))
    return meta.get_all("Requires-Dist") or []


def _name(requirement: str) -> str:
    match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
    assert match, requirement
    return match.group(0).lower().replace("_", "-")


def test_a_plain_install_does_not_pull_the_simulators_server(wheel: Path) -> None:
    requires = _requirements(wheel)
    plain = {_name(r) for r in requires if "extra ==" not in r}
    sim = {_name(r) for r in requires if re.search(r"extra\s*==\s*['\"]sim['\"]", r)}
    assert plain and not plain & SERVER_LIBRARIES, plain
    assert sim == SERVER_LIBRARIES, requires
    # ...and nothing outside the simulator's server imports them, at any depth of a function.
    importers = set()
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if not name.endswith(".py"):
                continue
            for node in ast.walk(ast.parse(archive.read(name))):
                mods = []
                if isinstance(node, ast.Import):
                    mods = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    mods = [node.module]
                if any(m.split(".")[0] in SERVER_LIBRARIES for m in mods):
                    importers.add(name)
    assert importers and all(n.startswith("specconsole/sim/") for n in importers), importers


def _plain_install(wheel: Path, tmp_path: Path) -> Path:
    """A virtual environment with the wheel whose dependencies are the test environment's
    but for the simulator's server libraries: what ``pip install specconsole`` gives."""
    deps = tmp_path / "deps-without-sim"
    deps.mkdir()
    for entry in TEST_SITE.iterdir():
        if entry.name.lower().split("-")[0].split(".")[0] not in SERVER_LIBRARIES:
            (deps / entry.name).symlink_to(entry)
    return _installed(wheel, tmp_path / "plain", deps)[0]


def test_without_the_extra_demo_and_sim_name_the_fix(wheel: Path, tmp_path: Path) -> None:
    python = _plain_install(wheel, tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), *args], capture_output=True, text=True, timeout=120, cwd=tmp_path
        )

    absent = run("-c", "import starlette")
    assert absent.returncode != 0 and "ModuleNotFoundError" in absent.stderr
    for argv in (
        ("-m", "specconsole", "demo"),
        ("-m", "specconsole", "sim", "--model-path", "m"),
        ("-m", "specconsole.sim", "--model-path", "m"),
    ):
        done = run(*argv)
        assert done.returncode == 1, (argv, done.stdout, done.stderr)
        assert "pip install 'specconsole[sim]'" in done.stderr, (argv, done.stderr)
        assert "starlette and uvicorn" in done.stderr and "Traceback" not in done.stderr
    predicted = run("-m", "specconsole", "sim", "predict", "--calibration")
    assert predicted.returncode == 0, predicted.stderr
    assert re.search(r"^steps 3 +\d+", predicted.stdout, re.M), predicted.stdout
