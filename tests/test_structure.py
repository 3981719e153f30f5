"""The shape of the package, checked from its source with `ast` (nothing is imported): the
module import graph has no cycle, no module is over 600 lines, and the C and OpenCL emitters
build their text without regular expressions (STYLE.md 13: small pieces, one pass per file)
and walk the typed loop tree rather than isl's AST nodes.

An edge A -> B is any `import` or `from ... import` in A that names B, at module level or in a
function: a function-level import is still a dependency, only a later one. `from . import x`
is an edge to the submodule x when x is a module, else to the package. Importing a.b.c is an
edge to a.b.c only, not to its parent packages, whose `__init__` every import runs anyway."""

from __future__ import annotations

import ast
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "polydyn"
MAX_LINES = 600


# modules whose text is built without `re`; see test_emitters_use_no_regex
NO_REGEX = ("polydyn.codegen_c.", "polydyn.codegen_ocl.", "polydyn.astgen")


def module_files() -> dict[str, Path]:
    """Module name -> file, for every module of the package (`__init__` names the package)."""
    found = {}
    for path in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _base(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` starts from."""
    if not node.level:
        return node.module or ""
    parts = module.split(".")
    package = parts if is_package else parts[:-1]
    package = package[: len(package) - (node.level - 1)]
    return ".".join([*package, node.module] if node.module else package)


def imports_of(module: str, path: Path, modules: set[str]) -> set[str]:
    """The package's modules that `module` imports anywhere in its body."""
    targets = set()
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _base(module, is_package, node)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                targets.add(sub if sub in modules else base)
    return {t for t in targets if t in modules and t != module}


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {name: imports_of(name, path, set(files)) for name, path in files.items()}


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components of more than one module, each sorted, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for succ in successors:
                if succ not in index:
                    index[succ] = low[succ] = len(index)
                    stack.append(succ)
                    on_stack.add(succ)
                    work.append((succ, iter(sorted(graph[succ]))))
                    advanced = True
                    break
                if succ in on_stack:
                    low[node] = min(low[node], index[succ])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def _cycle_in(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """One shortest cycle through the component's first module, as a path that ends where
    it starts."""
    members = set(component)
    start = component[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for succ in sorted(graph[node] & members):
                if succ == start:
                    return [*paths[node], start]
                if succ not in paths:
                    paths[succ] = [*paths[node], succ]
                    following.append(succ)
        frontier = following
    raise AssertionError(f"no cycle in component {component}")


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return [_cycle_in(graph, c) for c in _strongly_connected(graph)]


def test_checker_finds_cycles_and_resolves_relative_imports():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c", "a"]]
    modules = set(module_files())
    node = ast.parse("from . import ir\nfrom .ir import Scop\nfrom .. import errors").body
    base = [_base("polydyn.scop.deps", False, n) for n in node]
    assert base == ["polydyn.scop", "polydyn.scop.ir", "polydyn"]
    assert _base("polydyn.scop", True, node[0]) == "polydyn.scop"
    assert "polydyn.scop.ir" in modules and "polydyn" in modules


def test_no_import_cycles():
    found = cycles(import_graph())
    assert not found, "import cycles (break them by moving the shared code down):\n" + "\n".join(
        " -> ".join(cycle) for cycle in found)


def test_no_module_over_600_lines():
    long = {name: n for name, path in module_files().items()
            if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines (split them along a seam): {long}"


def regex_users() -> list[str]:
    files = module_files()
    return sorted(name for name in import_graph_external(files, "re")
                  if name.startswith(NO_REGEX))


def import_graph_external(files: dict[str, Path], target: str) -> set[str]:
    """The modules that import the (outside) module `target` anywhere."""
    users = set()
    for name, path in files.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (isinstance(node, ast.Import) and any(a.name == target for a in node.names)) or (
                    isinstance(node, ast.ImportFrom) and not node.level
                    and node.module == target):
                users.add(name)
    return users


def test_emitters_use_no_regex():
    users = regex_users()
    assert not users, f"modules that still use `re`: {users}"


# isl's AST node API: the printers and the OpenCL mapping walk the typed loop tree
# (polydyn/lowering/tree.py), which alone reads isl's AST nodes
AST_NODE_API = {"for_get_body", "for_get_init", "for_get_cond", "for_get_inc",
                "for_get_iterator", "for_is_degenerate", "block_get_children",
                "if_get_then_node", "if_get_else_node", "if_has_else_node", "if_get_cond",
                "mark_get_node", "mark_get_id", "user_get_expr", "get_annotation"}


def test_code_generators_walk_the_typed_tree():
    files = module_files()
    found = sorted(f"{name}: {node.attr}" for name, path in files.items()
                   if name.startswith(("polydyn.codegen_c.", "polydyn.codegen_ocl."))
                   for node in ast.walk(ast.parse(path.read_text(), str(path)))
                   if isinstance(node, ast.Attribute) and node.attr in AST_NODE_API)
    assert not found, f"isl AST nodes read outside lowering/tree.py: {found}"
