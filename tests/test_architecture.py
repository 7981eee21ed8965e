"""The shape of the package, checked: layers, import direction, no cycles, no private imports.

Layers, imports going one way only (a module may import its own layer and the ones below)::

    cli, service           7
    api, eval, repeats     6
    io                     5
    engine | index         4   (side by side: neither imports the other)
    methods                3
    text                   2
    core                   1
    _kernels               0   (every numba kernel and LLVM intrinsic, nothing else of neardup)

Every import counts, also one inside a function; imports under ``if TYPE_CHECKING:`` do not
(they never run). No private name (leading underscore) is imported from another subpackage, no
algorithm decides the number of threads itself (``os.cpu_count``), and no numba function lives
outside ``_kernels``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "neardup"

LAYERS = {
    "_kernels": 0,
    "core": 1,
    "text": 2,
    "methods": 3,
    "engine": 4,
    "index": 4,
    "io": 5,
    "api": 6,
    "incremental": 6,
    "repeats": 6,
    "eval": 6,
    "cli": 7,
    "service": 7,
}
PEERS_APART = {frozenset({"engine", "index"})}
THREAD_DECIDERS = {"api.py", "cli", "service"}  # where "all cores" may be resolved
KERNEL_DECORATORS = ("njit", "jit", "intrinsic", "vectorize", "guvectorize", "overload", "structref")


def modules() -> dict[str, Path]:
    """Dotted name (without "neardup.") -> file, for every module of the package."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = modules()


def _is_type_checking(node: ast.If) -> bool:
    return isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"


def imports(name: str) -> list[tuple[str, str | None, int]]:
    """(imported module, imported name or None, line) of every import of module ``name`` that
    runs, resolved to neardup-relative dotted names (imports of other distributions left out)."""
    path = MODULES[name]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit(sub)
                continue
            if isinstance(child, ast.ImportFrom):
                if child.level:
                    base = package[: len(package) - (child.level - 1)] if child.level > 1 else package
                    target = ".".join([*base, *(child.module.split(".") if child.module else [])])
                elif child.module and child.module.split(".")[0] == "neardup":
                    target = child.module[len("neardup.") :] if child.module != "neardup" else ""
                else:
                    continue
                for alias in child.names:
                    sub = f"{target}.{alias.name}" if target else alias.name
                    if sub in MODULES:  # "from . import x" imports module x
                        found.append((sub, None, child.lineno))
                    else:
                        found.append((target, alias.name, child.lineno))
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    if alias.name.split(".")[0] == "neardup":
                        found.append((alias.name[len("neardup.") :], None, child.lineno))
            visit(child)

    visit(tree)
    return found


def layer(name: str) -> tuple[str, int | None]:
    top = name.split(".")[0] if name else ""
    return top, LAYERS.get(top)


def subpackage(name: str) -> str:
    path = MODULES[name]
    parts = name.split(".")
    return name if path.name == "__init__.py" else ".".join(parts[:-1])


def test_every_module_has_a_layer():
    for name in MODULES:
        if name in ("", "__main__"):
            continue
        assert layer(name)[1] is not None, f"neardup.{name} is in no layer; add its package to LAYERS"


@pytest.mark.parametrize("name", [n for n in MODULES if n not in ("", "__main__")])
def test_imports_go_down_the_layers(name):
    top, level = layer(name)
    for target, _, line in imports(name):
        if target == "":
            continue  # the package root (its version), which imports nothing at load
        other, other_level = layer(target)
        assert other_level is not None, f"neardup.{name}:{line} imports unknown neardup.{target}"
        assert other_level <= level, f"neardup.{name}:{line} imports neardup.{target}, a layer above it"
        assert frozenset({top, other}) not in PEERS_APART or top == other, (
            f"neardup.{name}:{line} imports neardup.{target}: {top} and {other} must not depend on each other"
        )


def test_no_import_cycles():
    graph = {name: {t for t, _, _ in imports(name) if t in MODULES and t} for name in MODULES}
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if nxt == node or (nxt in subpackage_parents(node)):
                continue  # a module importing its own package's __init__ is not a cycle of concern
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt) :] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(f"neardup.{m}" for m in cycle))
            if state.get(nxt) is None:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for name in sorted(graph):
        if state.get(name) is None:
            visit(name)


def subpackage_parents(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(len(parts))}


@pytest.mark.parametrize("name", [n for n in MODULES if n not in ("", "__main__")])
def test_no_private_name_imported_across_subpackages(name):
    for target, imported, line in imports(name):
        if imported is None or not imported.startswith("_") or imported.startswith("__"):
            continue
        source = target if target in MODULES else None
        assert source is not None and subpackage(source) == subpackage(name), (
            f"neardup.{name}:{line} imports the private name {imported} from neardup.{target}"
        )


def test_no_algorithm_decides_the_number_of_threads():
    for name, path in MODULES.items():
        if name.split(".")[0] + (".py" if name == "api" else "") in THREAD_DECIDERS or name == "api":
            continue
        assert "cpu_count" not in path.read_text(encoding="utf-8"), (
            f"neardup.{name} reads the number of CPUs; take workers (or core.parallel.Threads) from the caller"
        )


def test_numba_functions_live_in_kernels():
    for name, path in MODULES.items():
        if name.startswith("_kernels"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for deco in getattr(node, "decorator_list", []):
                text = ast.unparse(deco)
                assert not any(k in text for k in KERNEL_DECORATORS), (
                    f"neardup.{name}:{node.lineno} defines a numba function ({text}); kernels live in neardup._kernels"
                )


def test_kernels_import_nothing_else_of_neardup():
    for name in MODULES:
        if name.startswith("_kernels"):
            for target, _, line in imports(name):
                assert target.startswith("_kernels"), f"neardup.{name}:{line} imports neardup.{target}"
