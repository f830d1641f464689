"""Read a real vLLM release's source out of its sdist (tarfile + ast; never imported).

Why the sdist: vLLM's wheels are hundreds of MB of CUDA kernels, and ``pip download`` of its
sdist builds the metadata with torch. ``scripts/fetch-vllm-sdists.py`` fetches the
``.tar.gz`` by its index URL (sha256-checked) into the cache the SGLang wheels use; this module
reads only the files the oracle needs from it:

* ``vllm/engine/arg_utils.py``: the ``EngineArgs`` dataclass (each field's annotation is the
  flag's type: ``get_kwargs`` derives the argparse type from it) and the
  ``*.add_argument("--flag", "-alias", ...)`` calls that register the flags;
* the front end's ``FrontendArgs`` / ``BaseFrontendArgs`` dataclasses (``--host``,
  ``--port``; registered generically as ``--{field with dashes}``), in
  ``vllm/entrypoints/openai/cli_args.py`` (0.1x) or ``vllm/entrypoints/common/cli_args.py``;
* ``SpeculativeConfig`` and its ``SpeculativeMethod`` literal (nested literals resolved), in
  ``vllm/config.py`` or ``vllm/config/speculative.py``;
* every ``@router.get/post("/path")`` / ``@app...`` route under ``vllm/entrypoints/``.
"""

from __future__ import annotations

import ast
import os
import tarfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

CACHE = Path(os.environ.get("SPECCONSOLE_WHEEL_CACHE", Path.home() / ".cache/specconsole/wheels"))
VERSIONS_FILE = Path(__file__).with_name("vllm-versions.txt")
_WANTED = ("vllm/engine/arg_utils.py", "vllm/config.py", "vllm/config/speculative.py")


def oracle_versions() -> list[str]:
    env = os.environ.get("ORACLE_VLLM_VERSIONS")
    return (env if env else VERSIONS_FILE.read_text()).split()


def sdist_path(version: str) -> Path | None:
    path = CACHE / f"vllm-{version}.tar.gz"
    return path if path.is_file() else None


@dataclass
class VllmRelease:
    version: str
    files: dict[str, str] = field(default_factory=dict)
    """Path inside the package (``vllm/...``) -> source text."""
    _trees: dict[str, ast.Module | None] = field(default_factory=dict)

    def trees(self, prefix: str) -> dict[str, ast.Module]:
        """The parsed files under ``prefix`` (each parsed once)."""
        out = {}
        for path, text in self.files.items():
            if not path.startswith(prefix):
                continue
            if path not in self._trees:
                try:
                    self._trees[path] = ast.parse(text)
                except SyntaxError:
                    self._trees[path] = None
            tree = self._trees[path]
            if tree is not None:
                out[path] = tree
        return out


@cache
def vllm_release(version: str) -> VllmRelease | None:
    path = sdist_path(version)
    if path is None:
        return None
    rel = VllmRelease(version)
    with tarfile.open(path, "r:gz") as tar:
        for member in tar:
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            if not member.isfile() or not name.endswith(".py"):
                continue
            if name in _WANTED or name.startswith("vllm/entrypoints/"):
                handle = tar.extractfile(member)
                if handle is not None:
                    rel.files[name] = handle.read().decode("utf-8", "replace")
    return rel


def _class(tree: ast.Module, name: str) -> ast.ClassDef | None:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == name:
            return node
    return None


def class_fields(tree: ast.Module, name: str) -> dict[str, str]:
    """``field -> annotation text`` of class ``name`` (and the bases defined in ``tree``)."""
    node = _class(tree, name)
    if node is None:
        return {}
    out: dict[str, str] = {}
    for base in node.bases:
        if isinstance(base, ast.Name):
            out.update(class_fields(tree, base.id))
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            out[stmt.target.id] = ast.unparse(stmt.annotation)
    return out


def engine_fields(rel: VllmRelease) -> dict[str, str]:
    """``EngineArgs``' fields and their annotations."""
    tree = rel.trees("vllm/engine/arg_utils.py").get("vllm/engine/arg_utils.py")
    return class_fields(tree, "EngineArgs") if tree is not None else {}


def frontend_fields(rel: VllmRelease) -> dict[str, str]:
    out: dict[str, str] = {}
    for path, tree in rel.trees("vllm/entrypoints/").items():
        if path.endswith("cli_args.py"):
            out.update(class_fields(tree, "FrontendArgs"))
    return out


def registered_flags(rel: VllmRelease) -> dict[str, str]:
    """Every option word an ``add_argument`` call in ``arg_utils.py`` registers -> its first
    (canonical) word, and each ``FrontendArgs`` field as ``--field-name``."""
    out: dict[str, str] = {}
    tree = rel.trees("vllm/engine/arg_utils.py").get("vllm/engine/arg_utils.py")
    for node in ast.walk(tree) if tree is not None else ():
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "add_argument"
        ):
            words = [
                a.value
                for a in node.args
                if isinstance(a, ast.Constant) and isinstance(a.value, str)
            ]
            words = [w for w in words if w.startswith("-")]
            for word in words:
                out.setdefault(word, words[0])
    for name in frontend_fields(rel):
        flag = "--" + name.replace("_", "-")
        out.setdefault(flag, flag)
    return out


def positional_model_tag(rel: VllmRelease) -> bool:
    """``vllm serve MODEL``: an ``add_argument("model_tag", ...)`` call under entrypoints/."""
    for tree in rel.trees("vllm/entrypoints/").values():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "model_tag"
            ):
                return True
    return False


def _literal_values(node: ast.AST, names: dict[str, ast.AST], depth: int = 0) -> set[str]:
    if depth > 10:
        return set()
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, ast.Name) and node.id in names:
        return _literal_values(names[node.id], names, depth + 1)
    if isinstance(node, ast.Subscript):
        inner = node.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        out: set[str] = set()
        for item in items:
            out |= _literal_values(item, names, depth + 1)
        return out
    return set()


def _speculative_tree(rel: VllmRelease) -> ast.Module | None:
    trees = rel.trees("vllm/config")
    return trees.get("vllm/config/speculative.py") or trees.get("vllm/config.py")


def speculative_methods(rel: VllmRelease) -> set[str]:
    """The values of the ``SpeculativeMethod`` literal (nested literals resolved)."""
    tree = _speculative_tree(rel)
    if tree is None:
        return set()
    names: dict[str, ast.AST] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            if isinstance(target, ast.Name):
                names[target.id] = stmt.value
    root = names.get("SpeculativeMethod")
    return _literal_values(root, names) if root is not None else set()


def speculative_fields(rel: VllmRelease) -> dict[str, str]:
    tree = _speculative_tree(rel)
    return class_fields(tree, "SpeculativeConfig") if tree is not None else {}


def routes(rel: VllmRelease) -> set[str]:
    """Paths of every ``@<router or app>.get/post/put/api_route("/path")`` under entrypoints/."""
    out: set[str] = set()
    for tree in rel.trees("vllm/entrypoints/").values():
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for dec in node.decorator_list:
                if (
                    isinstance(dec, ast.Call)
                    and isinstance(dec.func, ast.Attribute)
                    and dec.func.attr in ("get", "post", "put", "api_route")
                    and dec.args
                    and isinstance(dec.args[0], ast.Constant)
                    and isinstance(dec.args[0].value, str)
                ):
                    out.add(dec.args[0].value)
    return out


@cache
def source_text(version: str, path: str) -> str | None:
    """Any one file of the release (``vllm/v1/core/kv_cache_utils.py``), read from the sdist
    on demand (the simulator's vLLM face quotes files beyond the ones loaded up front)."""
    sdist = sdist_path(version)
    if sdist is None:
        return None
    with tarfile.open(sdist, "r:gz") as tar:
        for member in tar:
            name = member.name.split("/", 1)[1] if "/" in member.name else member.name
            if name == path and member.isfile():
                handle = tar.extractfile(member)
                return None if handle is None else handle.read().decode("utf-8", "replace")
    return None


def string_constants(text: str) -> list[tuple[int, str, bool]]:
    """Every string literal of a module: (line, text, whether it is an f-string), an
    f-string's text with ``{}`` where its values go (implicit concatenation is one
    literal, as the parser joins it)."""
    out: list[tuple[int, str, bool]] = []
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.JoinedStr):
            parts = [
                v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}"
                for v in node.values
            ]
            out.append((node.lineno, "".join(parts), True))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append((node.lineno, node.value, False))
    return out
