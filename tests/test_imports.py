"""The package's import graph, read from the source (ast): no cycle, no module reaching into another
module's underscored names, and the layers import downward.

Run it alone with ``python -m pytest -q tests/test_imports.py``; ``-s`` prints the graph's layers.
Every ``import`` counts, at module level or inside a function, so a cycle cannot hide in a lazy import.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "agentsum"

#: What each layer may import besides itself (every layer may import ``agentsum.fields``, a leaf).
LOWER_LAYERS = {
    "agentsum.data": set(),
    "agentsum.models": {"agentsum.data"},
    "agentsum.decoding": {"agentsum.data", "agentsum.models"},
}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def imports(name: str, tree: ast.Module, known: set[str]) -> list[tuple[str, str | None]]:
    """(imported module, imported name or None) for every agentsum import in ``tree``. ``from pkg
    import mod`` counts as importing ``pkg.mod`` when that is a module."""
    package = name if name in known and (PACKAGE.parent / name.replace(".", "/") / "__init__.py").exists() \
        else name.rpartition(".")[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.startswith("agentsum")]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            if not base.startswith("agentsum"):
                continue
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub, None) if sub in known else (base, alias.name))
    return found


def graph() -> tuple[dict[str, set[str]], list[str]]:
    """Module -> the agentsum modules it imports; and every underscored name imported across modules."""
    trees = modules()
    known = set(trees)
    edges: dict[str, set[str]] = {m: set() for m in trees}
    private = []
    for name, tree in trees.items():
        for target, imported in imports(name, tree, known):
            if target not in known:
                raise AssertionError(f"{name} imports {target}, which is not a module of the package")
            if target != name:
                edges[name].add(target)
            if imported is not None and imported.startswith("_") and target != name:
                private.append(f"{name} imports {target}.{imported}")
    return edges, private


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def layers(edges: dict[str, set[str]]) -> list[list[str]]:
    """Modules by depth: layer 0 imports no agentsum module, layer k only modules of layers < k."""
    depth: dict[str, int] = {}

    def of(v: str) -> int:
        if v not in depth:
            depth[v] = 1 + max((of(w) for w in edges[v]), default=-1)
        return depth[v]

    for v in edges:
        of(v)
    return [sorted(v for v in edges if depth[v] == k) for k in range(max(depth.values()) + 1)]


def test_the_import_graph_has_no_cycle():
    edges, _ = graph()
    found = cycles(edges)
    assert not found, "import cycles: " + "; ".join(" <-> ".join(c) for c in found)
    for k, layer in enumerate(layers(edges)):
        print(f"layer {k}: {', '.join(m.removeprefix('agentsum.') or 'agentsum' for m in layer)}")


def test_no_module_imports_another_modules_underscored_names():
    _, private = graph()
    assert not private, "\n".join(private)


def test_data_models_and_decoding_import_only_downward():
    edges, _ = graph()
    wrong = []
    for module, targets in edges.items():
        layer = next((lay for lay in LOWER_LAYERS if module == lay or module.startswith(lay + ".")), None)
        if layer is None:
            continue
        allowed = LOWER_LAYERS[layer] | {layer, "agentsum.fields"}
        wrong += [f"{module} -> {t}" for t in sorted(targets)
                  if not any(t == a or t.startswith(a + ".") for a in allowed)]
    assert not wrong, "\n".join(wrong)


def package_of(module: str) -> str:
    """The node of the package-level graph: a subpackage (``agentsum.data``) or a top-level module."""
    parts = module.split(".")
    if len(parts) > 1 and (PACKAGE / parts[1] / "__init__.py").exists():
        return ".".join(parts[:2])
    return module


def test_packages_form_no_cycle_either():
    """Collapsed to packages (data, models, decoding, training, evaluation, serve, and each top-level
    module), the graph is still acyclic: training validates through evaluation, evaluation never
    reaches back into training."""
    edges, _ = graph()
    packages: dict[str, set[str]] = {}
    for module, targets in edges.items():
        node = package_of(module)
        packages.setdefault(node, set()).update(package_of(t) for t in targets if package_of(t) != node)
    for targets in list(packages.values()):
        for t in targets:
            packages.setdefault(t, set())
    found = cycles(packages)
    assert not found, "package cycles: " + "; ".join(" <-> ".join(c) for c in found)
    assert "agentsum.evaluation" in packages["agentsum.training"]
    assert "agentsum.training" not in packages["agentsum.evaluation"]


def test_models_do_not_import_each_other_and_training_meets_them_through_the_protocol():
    edges, _ = graph()
    concrete = {"agentsum.models.dca", "agentsum.models.transformer_pg"}
    for model in concrete:
        assert not edges[model] & (concrete - {model}), f"{model} imports another model"
    for module, targets in edges.items():
        if module.startswith(("agentsum.training", "agentsum.decoding", "agentsum.evaluation", "agentsum.serve")):
            assert not targets & concrete, f"{module} imports a concrete model: {sorted(targets & concrete)}"


def test_the_checker_sees_cycles_and_private_imports():
    """The functions above on a hand-made graph: they are what the tests rely on."""
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    assert layers({"a": {"b"}, "b": set(), "c": {"a", "b"}}) == [["b"], ["a"], ["c"]]
    assert package_of("agentsum.data.corpus") == "agentsum.data" and package_of("agentsum.data") == "agentsum.data"
    assert package_of("agentsum.checkpoint") == "agentsum.checkpoint" and package_of("agentsum") == "agentsum"
    tree = ast.parse("from agentsum.data.corpus import _helper, Example\nimport agentsum.data.vocab\n"
                     "from agentsum.data import batch\n")
    known = {"agentsum.data", "agentsum.data.corpus", "agentsum.data.vocab", "agentsum.data.batch"}
    assert imports("agentsum.x", tree, known) == [("agentsum.data.corpus", "_helper"),
                                                  ("agentsum.data.corpus", "Example"),
                                                  ("agentsum.data.vocab", None), ("agentsum.data.batch", None)]
