"""Dataclasses' generated methods are compiled once and reused by later starts, with classes
identical to compiled ones (``specconsole.startup.generated_code``).

Why: reusing them takes 100 ms or more off every start, but a cache that handed a class the
wrong method, broke on a damaged or unwritable file, or grew without end would be far worse
than the compile it saves. Each later start is a real new interpreter here.
"""

from __future__ import annotations

import dataclasses
import json
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from specconsole import cli
from specconsole.startup import cache_generated_code, generated_code, stop_caching

CLASS_SOURCE = """
from __future__ import annotations
import dataclasses

@dataclasses.dataclass(frozen=True, slots=True)
class Trial:
    steps: int
    label: str = "base"
    levels: tuple[int, ...] = dataclasses.field(default_factory=tuple)
    note: str | None = dataclasses.field(default=None, compare=False, kw_only=True)

@dataclasses.dataclass(order=True)
class Level:
    concurrency: int
    tok_s: float = 0.0
"""

METHODS = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__")

START = """
import json, sys
from pathlib import Path
from specconsole.startup import cache_generated_code
cache = cache_generated_code(Path(sys.argv[1]))
import specconsole.core.machine.state  # the console's record types
print(json.dumps({"hits": cache.hits, "compiled": cache.compiled}))
"""


@pytest.fixture(autouse=True)
def no_cache_before_or_after() -> Iterator[None]:
    stop_caching()  # one an earlier in-process ``cli.main`` installed in this worker
    yield
    stop_caching()


def build(name: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": name}
    sys.modules[name] = type(sys)(name)  # dataclasses look the module's globals up
    sys.modules[name].__dict__.update(namespace)
    try:
        exec(compile(CLASS_SOURCE, f"<{name}>", "exec"), sys.modules[name].__dict__)
        return dict(sys.modules[name].__dict__)
    finally:
        del sys.modules[name]


def code_of(cls: type, method: str) -> tuple[object, ...]:
    code = getattr(cls, method).__code__
    return (code.co_code, code.co_consts, code.co_names, code.co_varnames, code.co_filename)


def start(directory: Path) -> dict[str, int]:
    result = subprocess.run(
        [sys.executable, "-c", START, str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert result.stderr == ""
    return json.loads(result.stdout)


def test_classes_from_the_cache_are_the_classes_python_compiles(tmp_path: Path) -> None:
    compiled_here = build("plain")
    first = cache_generated_code(tmp_path)
    assert first is not None
    missed = build("first_start")
    stop_caching()  # saved
    second = cache_generated_code(tmp_path)
    assert second is not None
    reused = build("later_start")
    assert first.compiled > 0
    assert second.compiled == 0 and second.hits == first.hits + first.compiled
    for classes in (missed, reused):
        for name in ("Trial", "Level"):
            for method in METHODS:
                if getattr(vars(compiled_here[name]).get(method), "__code__", None):
                    expected = code_of(compiled_here[name], method)
                    assert code_of(classes[name], method) == expected, (name, method)
    trial = reused["Trial"]
    a, b = trial(3, levels=(1, 4)), trial(3, levels=(1, 4), note="other")
    assert a == b and hash(a) == hash(b)
    assert repr(a) == "Trial(steps=3, label='base', levels=(1, 4), note=None)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.steps = 4  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'steps'"):
        trial()
    level = reused["Level"]
    assert level(1, 2.0) < level(4)


def test_a_later_start_compiles_nothing_and_the_file_is_private(tmp_path: Path) -> None:
    first = start(tmp_path)
    later = start(tmp_path)
    assert first["compiled"] > 200
    assert later == {"hits": first["hits"] + first["compiled"], "compiled": 0}
    (cache,) = tmp_path.iterdir()
    assert cache.name.startswith(f"dataclass-methods.{sys.implementation.cache_tag}-")
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


def test_the_folder_is_made_private_when_missing(tmp_path: Path) -> None:
    folder = tmp_path / "home" / "cache"
    start(folder)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_a_damaged_file_is_ignored_and_replaced(tmp_path: Path) -> None:
    first = start(tmp_path)
    (cache,) = tmp_path.iterdir()
    cache.write_bytes(b"\xe3not marshal data")
    again = start(tmp_path)
    assert again == first
    assert start(tmp_path)["compiled"] == 0  # rewritten whole


def test_an_entry_that_is_not_code_is_compiled_again(tmp_path: Path) -> None:
    import marshal

    first = start(tmp_path)
    (cache,) = tmp_path.iterdir()
    entries = marshal.loads(cache.read_bytes())
    entries = {text: marshal.dumps("not code") for text in entries}
    cache.write_bytes(marshal.dumps(entries))
    assert start(tmp_path) == first  # as many compiled as in a first start


def test_a_folder_that_cannot_be_written_leaves_the_start_as_it_was(tmp_path: Path) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    first = start(blocked / "cache")  # its parent is a file: nothing can be made there
    assert first["compiled"] > 200
    assert start(blocked / "cache") == first  # compiles again, no error


def test_the_file_starts_again_from_what_one_process_used_past_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = start(tmp_path)["compiled"]  # a file of some 1,300 entries
    monkeypatch.setattr(generated_code, "MAX_ENTRIES", 3)
    cache = cache_generated_code(tmp_path)
    assert cache is not None
    build("bounded")
    used = cache.compiled
    assert used > 3
    stop_caching()
    import marshal

    (file,) = tmp_path.iterdir()
    assert before > 200
    assert len(marshal.loads(file.read_bytes())) == used


def test_only_the_command_line_entry_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert "exec" not in vars(dataclasses)  # importing specconsole leaves dataclasses alone
    monkeypatch.setenv("SPECCONSOLE_HOME", str(tmp_path))
    with pytest.raises(SystemExit):
        cli.main(["--version"])
    assert "exec" in vars(dataclasses)
    stop_caching()
    assert "exec" not in vars(dataclasses)


def test_a_folder_that_is_not_absolute_is_never_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cache_generated_code(Path("~/.cache/specconsole")) is None
    build("relative")
    stop_caching()
    assert list(tmp_path.iterdir()) == []


def test_nothing_else_is_replaced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def theirs(*args: object) -> None:
        raise AssertionError("not called here")

    monkeypatch.setattr(dataclasses, "exec", theirs, raising=False)
    assert cache_generated_code(tmp_path) is None
    stop_caching()
    assert vars(dataclasses)["exec"] is theirs
    assert list(tmp_path.iterdir()) == []
