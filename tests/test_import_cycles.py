"""dpfim's modules import each other without a cycle (module-level imports), and the accountants
have one table whose names are the CLI's choices."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import dpfim
from dpfim import choices
from dpfim.accountants import ACCOUNTANTS, get_accountant
from dpfim.errors import ParameterError

ROOT = Path(dpfim.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(tree: ast.Module, module: str, is_package: bool) -> set[str]:
    """The dpfim modules a module imports when it is imported: its module-level statements
    (inside try/if too, but not under `if TYPE_CHECKING:`), never function bodies."""
    found: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If):
            if not _is_type_checking(node):
                stack.extend(node.body)
            stack.extend(node.orelse)
        elif isinstance(node, ast.Try):
            stack.extend([*node.body, *node.orelse, *node.finalbody])
            for handler in node.handlers:
                stack.extend(handler.body)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)  # `from dpfim import tight`
    return found


def import_graph() -> dict[str, set[str]]:
    """dpfim module -> the dpfim modules it imports at module level."""
    files = {_module_name(p): p for p in ROOT.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = _top_level_imports(tree, name, path.name == "__init__.py")
        # a module's own packages are imported before it (and are then being initialised):
        # `from dpfim.readers import recordkey` inside dpfim/readers/ is an edge to recordkey
        ancestors = {name.rsplit(".", i)[0] for i in range(1, name.count(".") + 1)}
        graph[name] = {m for m in imported if m in files and m != name and m not in ancestors}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_dpfim_has_no_module_level_import_cycle() -> None:
    assert find_cycle(import_graph()) is None


def test_accounting_does_not_import_tight_and_tight_not_the_table() -> None:
    graph = import_graph()
    assert "dpfim.tight" not in graph["dpfim.accounting"]
    assert "dpfim.accountants" not in graph["dpfim.tight"]
    assert {"dpfim.accounting", "dpfim.tight"} <= graph["dpfim.accountants"]


def test_accounting_imports_neither_tight_nor_the_table_even_lazily() -> None:
    tree = ast.parse((ROOT / "accounting.py").read_text(encoding="utf-8"))
    names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
            names.update(f"{node.module}.{a.name}" for a in node.names)
    assert not names & {"dpfim.tight", "dpfim.accountants"}


def test_the_ledger_store_knows_no_budgets_and_the_budgets_no_runs() -> None:
    """dpfim/ledger/: store <- budgets <- runs (docs/architecture.md), never back."""
    graph = import_graph()
    assert not {"dpfim.ledger.budgets", "dpfim.ledger.runs"} & graph["dpfim.ledger.store"]
    assert "dpfim.ledger.runs" not in graph["dpfim.ledger.budgets"]
    assert "dpfim.ledger.store" in graph["dpfim.ledger.budgets"]


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycle(graph) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set()}) is None


def test_the_accountants_table_is_the_cli_choices() -> None:
    assert tuple(ACCOUNTANTS) == choices.ACCOUNTANTS
    assert all(get_accountant(name).name == name for name in choices.ACCOUNTANTS)
    with pytest.raises(ParameterError, match=r"^--accountant must be basic or tight, got 'x'$"):
        get_accountant("x")
