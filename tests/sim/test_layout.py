"""The simulator is laid out like ``engines/``: a package per face, physics below every face,
and no import cycle — counting the imports made inside functions, which a lazy lookup uses.

Why a test beside import-linter's contracts: a face found by ``importlib`` once hid a cycle
(the physics resolved configurations through the faces, the faces import the physics) from
every contract, because a dynamic import is no edge in the graph. This builds the graph with
grimp as the contracts do, deferred (function-level) imports included, and checks the
properties directly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import grimp
import pytest

import specconsole.sim
from specconsole.core.engine.registry import engine_names
from specconsole.sim.facetable import FACES, face_for

SIM = Path(specconsole.sim.__file__).parent


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph(
        "specconsole",
        include_external_packages=False,
        exclude_type_checking_imports=True,
        cache_dir=None,
    )


def _cycles(graph: grimp.ImportGraph) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_cycle_with_deferred_imports_counted(graph: grimp.ImportGraph) -> None:
    # The registry's lazy rows are real edges here: the lookup hides nothing.
    assert graph.direct_import_exists(
        importer="specconsole.sim.facetable", imported="specconsole.sim.faces.vllm.face"
    )
    assert _cycles(graph) == []


def test_the_physics_never_imports_a_face(graph: grimp.ImportGraph) -> None:
    below = ["specconsole.sim.physics", "specconsole.sim.scheduler", "specconsole.sim.box"]
    above = ["specconsole.sim.faces", "specconsole.sim.facetable", "specconsole.sim.forecast"]
    for low in below:
        for high in above:
            chain = graph.find_shortest_chain(importer=low, imported=high, as_packages=True)
            assert chain is None, chain


def test_no_face_imports_another() -> None:
    for face in FACES:
        for other in FACES:
            if face != other:
                importers = _importers_of(f"specconsole.sim.faces.{other}", SIM / "faces" / face)
                assert not importers, (face, other, importers)


def _importers_of(module: str, folder: Path) -> list[str]:
    out = []
    for path in folder.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(module):
                out.append(str(path))
    return out


def test_nothing_in_the_simulator_imports_by_name_at_run_time() -> None:
    dynamic = []
    for path in SIM.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""]
            if any(n == "importlib" or n.startswith("importlib.") for n in names):
                dynamic.append(str(path.relative_to(SIM)))
    # serverlibs only asks whether the optional server libraries are installed (find_spec)
    assert dynamic == ["serverlibs.py"], dynamic


@pytest.mark.parametrize("name", sorted(FACES))
def test_each_face_is_a_package_of_everything_it_imitates(name: str) -> None:
    folder = SIM / "faces" / name
    present = {p.name for p in folder.glob("*.py")}
    assert {"__init__.py", "face.py", "args.py", "server.py", "http.py"} <= present, present
    face = face_for(name)
    assert type(face).__module__ == f"specconsole.sim.faces.{name}.face"
    assert face.engine == name and name in engine_names()  # the engine it reaches
