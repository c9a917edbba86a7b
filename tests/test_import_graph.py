"""The import rule of docs/architecture.md: core's ground imports nothing above it, each wing only the ground and
the wings below it, core nothing outside core, and no module of the package takes part in an import cycle (lazy
imports inside functions count; imports for type checking only do not)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "rag_integration"
WINGS = ("documents", "text", "ranking", "indexes", "remote", "contract")
"""core's wings, bottom first: a wing may import the ground and the wings before it in this tuple."""


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in PACKAGE.rglob("*.py")}


def runtime_imports(path: Path) -> set[str]:
    """The package modules ``path`` imports at run time, anywhere in the file except ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    type_only = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for statement in block.body
        for node in ast.walk(statement)
    }
    package = module_name(path) if path.name == "__init__.py" else module_name(path).rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else [])
                )
            # ``from package import module`` depends on that module; ``from module import name`` on the module
            submodules = {f"{base}.{alias.name}" for alias in node.names} & MODULES.keys()
            found.update(submodules or {base})
    return {name for name in found if name.split(".")[0] == "rag_integration"}


GRAPH = {
    name: {target for target in runtime_imports(path) if target in MODULES and target != name}
    for name, path in MODULES.items()
}


def layer(name: str) -> int | None:
    """0 for core's ground, 1.. for its wings in order; None outside core."""
    parts = name.split(".")
    if parts[:2] != ["rag_integration", "core"]:
        return None
    if len(parts) == 2 or (len(parts) == 3 and parts[2] not in WINGS):
        return 0
    return 1 + WINGS.index(parts[2])


def test_core_has_the_documented_wings_and_a_small_ground() -> None:
    core = PACKAGE / "core"
    assert sorted(path.name for path in core.iterdir() if path.is_dir() and (path / "__init__.py").exists()) == sorted(
        WINGS
    )
    assert len([path for path in core.glob("*.py")]) <= 8
    for wing in WINGS:
        docstring = ast.get_docstring(ast.parse((core / wing / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and "\n" not in docstring.strip(), f"core/{wing}/__init__.py needs a one-line docstring"


def test_each_core_module_imports_only_its_ground_and_the_wings_below() -> None:
    wrong = []
    for name, targets in sorted(GRAPH.items()):
        own = layer(name)
        if own is None:
            continue
        for target in sorted(targets):
            other = layer(target)
            if other is None or other > own or (own == 0 and other != 0):
                wrong.append(f"{name} -> {target}")
    assert not wrong, "imports against the wing order:\n" + "\n".join(wrong)


def test_no_module_of_the_package_is_in_an_import_cycle() -> None:
    """Tarjan-free check: a module is in a cycle when it can reach itself."""
    in_cycle = []
    for start in sorted(GRAPH):
        seen: set[str] = set()
        pending = list(GRAPH[start])
        while pending:
            current = pending.pop()
            if current == start:
                in_cycle.append(start)
                break
            if current not in seen:
                seen.add(current)
                pending.extend(GRAPH.get(current, ()))
    assert not in_cycle, in_cycle


def test_the_graph_sees_lazy_imports() -> None:
    """The check above would be empty if the parser missed imports inside functions."""
    assert "rag_integration.core.contract.feature_group" in GRAPH["rag_integration.core.contract.queries"]
    assert any(len(targets) > 3 for targets in GRAPH.values())


def test_the_command_line_imports_only_the_application_and_the_console() -> None:
    """The CLI parses, calls ``rag_integration.application`` and prints: the application's work never hides in it."""
    cli = {name for name in MODULES if name == "rag_integration.cli" or name.startswith("rag_integration.cli.")}
    assert cli, "no CLI package found"
    allowed = ("rag_integration.cli", "rag_integration.application", "rag_integration.console")
    wrong = [
        f"{name} -> {target}"
        for name in sorted(cli)
        for target in sorted(GRAPH[name])
        if not any(target == root or target.startswith(root + ".") for root in allowed)
    ]
    assert not wrong, "the CLI reaches past the application layer:\n" + "\n".join(wrong)
    for name in cli:
        source = MODULES[name].read_text(encoding="utf-8")
        assert "mloda" not in {alias.split(".")[0] for alias in imported_roots(source)}, f"{name} imports mloda"
        assert source.count("\n") <= 300, f"{name} has {source.count(chr(10))} lines: split it"


def imported_roots(source: str) -> set[str]:
    """Every module name ``source`` imports (absolute imports), wherever the import stands."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module)
    return names


def test_features_run_through_mloda_in_one_module() -> None:
    """``mlodaAPI.run_all`` is called by ``core.contract.run`` only; everyone else asks it (``run_features``)."""
    calling = sorted(
        name
        for name, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "run_all"
    )
    assert calling == ["rag_integration.core.contract.run"]
