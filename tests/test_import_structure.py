"""The package's imports point one way, down the data flow (issue 11's rule), read from the source."""

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "keras_bert_zoo")


def _modules():
    """{module name: path} for every module of the package."""
    modules = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if name.endswith(".py"):
                relative = os.path.relpath(os.path.join(folder, name), ROOT)[:-3].replace(os.sep, ".")
                modules[relative.removesuffix(".__init__")] = os.path.join(folder, name)
    return modules


def _imports(path, module_level_only):
    """The keras_bert_zoo modules a file imports (`from a.b import c` counts a.b, and a.b.c when a module)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    nodes = tree.body if module_level_only else list(ast.walk(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("keras_bert_zoo"):
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("keras_bert_zoo"))
    return found


def _graph(module_level_only):
    modules = _modules()
    return {name: sorted(_imports(path, module_level_only) & set(modules)) for name, path in modules.items()}


def _cycle(graph):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(node, path):
        state[node] = "open"
        for target in graph.get(node, []):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[node] = "done"
        return None

    for start in graph:
        if start not in state:
            found = visit(start, [start])
            if found:
                return found
    return None


# The layers of README.md's Contributing section, lowest first.
LAYERS = [
    ("utils", "metrics", "version"),
    ("tokenizers", "data", "preprocessing"),
    ("layers", "models", "presets"),
    ("export", "optimization", "distribution"),
    ("tasks",),
    ("training", "cli"),
]


def _layer(module):
    top = module.split(".")[1] if module.count(".") else None
    return next((i for i, names in enumerate(LAYERS) if top in names), None)


def test_module_level_imports_never_reach_a_higher_layer():
    upward = [(module, target) for module, targets in _graph(module_level_only=True).items() for target in targets
              if _layer(module) is not None and _layer(target) is not None and _layer(target) > _layer(module)]
    assert upward == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": ["b"], "b": ["c"], "c": ["a"]}) == ["a", "b", "c", "a"]
    assert _cycle({"a": ["b"], "b": [], "c": ["a", "b"]}) is None


def test_module_level_imports_have_no_cycle():
    graph = _graph(module_level_only=True)
    assert len(graph) > 80  # the walk saw the package
    assert _cycle(graph) is None


def test_export_and_preprocessing_import_no_task():
    """Exports get their signatures from the task (`task_signatures`), so export/ needs no task class;
    preprocessing and layers sit below tasks."""
    graph = _graph(module_level_only=False)
    offenders = {module: [t for t in targets if t.startswith("keras_bert_zoo.tasks")]
                 for module, targets in graph.items()
                 if module.startswith(("keras_bert_zoo.export", "keras_bert_zoo.preprocessing",
                                       "keras_bert_zoo.layers", "keras_bert_zoo.tokenizers", "keras_bert_zoo.metrics"))}
    assert {m: t for m, t in offenders.items() if t} == {}
