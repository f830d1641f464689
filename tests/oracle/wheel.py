"""Read a real SGLang release's source out of its wheel (zipfile + ast; never imported).

Why: the oracle tests check our engine knowledge (flags, speculative rules, HTTP routes, log
lines) against what the release itself says. Importing sglang would pull in torch; reading the
source with :mod:`ast` needs nothing. Wheels are fetched by ``scripts/fetch-engine-wheels.sh``
into a cache outside the repository.

Two ways SGLang declares its flags, both read here:

* up to ~0.5.2x: ``parser.add_argument("--flag", type=int, choices=[...], action=...)`` calls
  in ``sglang/srt/server_args.py``;
* newer: dataclass fields ``name: A[Optional[int], "help"] = None`` (``A`` = ``Annotated``,
  optionally ``Arg(choices=..., aliases=[...], cli_name=..., no_cli=True)``) in
  ``sglang/srt/server_args.py`` (0.5.1x) or ``sglang/srt/arg_groups/fields/*.py``
  (0.5.2x), registered by ``add_cli_args_from_dataclass``.
"""

from __future__ import annotations

import ast
import os
import zipfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

CACHE = Path(os.environ.get("SPECCONSOLE_WHEEL_CACHE", Path.home() / ".cache/specconsole/wheels"))
VERSIONS_FILE = Path(__file__).with_name("sglang-versions.txt")


def oracle_versions() -> list[str]:
    env = os.environ.get("ORACLE_SGLANG_VERSIONS")
    text = env if env else VERSIONS_FILE.read_text()
    return text.split()


def wheel_path(version: str) -> Path | None:
    found = sorted(CACHE.glob(f"sglang-{version}-*.whl"))
    return found[0] if found else None


@dataclass
class Flag:
    """One command-line flag as the release declares it."""

    name: str
    kind: str
    """``int``, ``float``, ``str``, ``bool`` (a store_true switch) or ``other``."""
    choices: tuple[str, ...] | None = None
    deprecated: bool = False


@dataclass
class Release:
    version: str
    files: dict[str, str] = field(default_factory=dict)

    def source(self, path: str) -> str:
        return self.files.get(path, "")

    def sources(self, prefix: str) -> dict[str, str]:
        return {p: s for p, s in self.files.items() if p.startswith(prefix)}


@cache
def release(version: str) -> Release | None:
    path = wheel_path(version)
    if path is None:
        return None
    rel = Release(version)
    with zipfile.ZipFile(path) as zf:
        for name in zf.namelist():
            if name.startswith("sglang/srt/") and name.endswith(".py"):
                rel.files[name] = zf.read(name).decode("utf-8", "replace")
    return rel


def _const(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError):
        return None


def _kind_of_type(node: ast.AST | None) -> str:
    if isinstance(node, ast.Name):
        return node.id if node.id in ("int", "float", "str", "bool") else "other"
    return "other"


def _from_add_argument(call: ast.Call, constants: dict[str, object]) -> list[Flag]:
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    names = [n for n in names if n.startswith("--")]
    if not names:
        return []
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    action = kw.get("action")
    action_text = ast.unparse(action) if action is not None else ""
    kind = _kind_of_type(kw.get("type"))
    if "store_true" in action_text or "StoreTrue" in action_text or "store_false" in action_text:
        kind = "bool"
    elif kind == "other" and "type" not in kw and "StoreConst" not in action_text:
        kind = "str"
    choices = _choices(kw.get("choices"), constants)
    deprecated = "Deprecated" in action_text
    return [Flag(n, kind, choices, deprecated) for n in names]


def _choices(node: ast.AST | None, constants: dict[str, object]) -> tuple[str, ...] | None:
    if node is None:
        return None
    value = _const(node)
    if value is None and isinstance(node, ast.Name):
        value = constants.get(node.id)
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def _annotation_kind(node: ast.AST) -> tuple[str, ast.AST | None]:
    """(kind, the Arg(...) call if any) of ``A[Optional[int], "help"]``."""
    if not isinstance(node, ast.Subscript):
        return "other", None
    parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    if not parts:
        return "other", None
    typ = parts[0]
    arg_call = next(
        (p for p in parts[1:] if isinstance(p, ast.Call) and ast.unparse(p.func) == "Arg"), None
    )
    text = ast.unparse(typ)
    for name in ("bool", "int", "float", "str"):
        if text in (name, f"Optional[{name}]", f"{name} | None"):
            return name, arg_call
    if text.startswith(("Literal[", "Optional[Literal[")):
        return "str", arg_call
    return "other", arg_call


def _from_dataclass_field(stmt: ast.AnnAssign, constants: dict[str, object]) -> list[Flag]:
    if not isinstance(stmt.target, ast.Name):
        return []
    kind, arg_call = _annotation_kind(stmt.annotation)
    if not isinstance(stmt.annotation, ast.Subscript) or ast.unparse(stmt.annotation.value) not in (
        "A",
        "Annotated",
    ):
        return []
    name = "--" + stmt.target.id.replace("_", "-")
    choices = None
    aliases: list[str] = []
    if arg_call is not None:
        kw = {k.arg: k.value for k in arg_call.keywords if k.arg}
        if _const(kw["no_cli"]) is True if "no_cli" in kw else False:
            return []
        if "cli_name" in kw and isinstance(_const(kw["cli_name"]), str):
            name = str(_const(kw["cli_name"]))
        if "aliases" in kw and isinstance(_const(kw["aliases"]), list):
            aliases = [str(a) for a in _const(kw["aliases"])]  # type: ignore[union-attr]
        choices = _choices(kw.get("choices"), constants)
        if "action" in kw and "store_true" in ast.unparse(kw["action"]).lower():
            kind = "bool"
    return [Flag(n, kind, choices) for n in [name, *aliases]]


@cache
def flags(version: str) -> dict[str, Flag]:
    """Every command-line flag release ``version`` declares (name -> Flag)."""
    rel = release(version)
    assert rel is not None
    out: dict[str, Flag] = {}
    paths = ["sglang/srt/server_args.py", *sorted(rel.sources("sglang/srt/arg_groups/"))]
    for path in paths:
        text = rel.source(path)
        if not text:
            continue
        tree = ast.parse(text)
        constants: dict[str, object] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
                if isinstance(target, ast.Name):
                    constants[target.id] = _const(node.value)
        for node in ast.walk(tree):
            found: list[Flag] = []
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "add_argument"
            ):
                found = _from_add_argument(node, constants)
            elif isinstance(node, ast.AnnAssign):
                found = _from_dataclass_field(node, constants)
            for flag in found:
                out.setdefault(flag.name, flag)
    return out


def has_release(version: str) -> bool:
    return wheel_path(version) is not None
