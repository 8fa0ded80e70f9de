"""The package's shape (issue 56): no import cycle between keras_match's modules, counting every import statement,
the ones inside functions too, and no module over 600 lines."""

import ast
import pathlib

import keras_match

ROOT = pathlib.Path(keras_match.__file__).parent


def _modules():
    modules = {}
    for path in ROOT.rglob("*.py"):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return modules


def _import_graph():
    """`{module: modules it imports}`: importing `a.b.c` counts `a.b.c` and the packages `a.b` above it (Python runs
    their `__init__` first), but not the root package nor a package holding the importer."""
    modules = _modules()

    def known(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for target in targets:
                found = known(target) if target.startswith("keras_match") else None
                # importing a.b.c runs a.b's __init__ first: the packages above the target count too
                while found and found != "keras_match":
                    if found != name and not name.startswith(found + "."):
                        graph[name].add(found)
                    found = found.rpartition(".")[0]
    return graph


def _cycles(graph):
    """The strongly connected groups of more than one module (Tarjan)."""
    index, low, stack, on_stack, groups = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in graph:
        if node not in index:
            visit(node)
    return groups


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_keras_match_has_no_import_cycle():
    graph = _import_graph()
    # the graph is real: the zoo is the families' public face, and presets are loaded through the families
    assert "keras_match.families" in graph["keras_match.zoo"]
    assert "keras_match.families" in graph["keras_match.artifacts.preset_loader"]
    assert _cycles(graph) == []


MAX_LINES = 600
"""Issue 56: no module of keras_match/ over 600 lines."""


def test_no_module_is_over_600_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert len(sizes) > 100 and max(sizes.values()) > 400  # the package is read, and it has large modules
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}
