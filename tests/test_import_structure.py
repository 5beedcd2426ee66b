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
    ("layers",),
    ("presets",),
    ("tokenizers", "data", "preprocessing"),
    ("models",),
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


def _function_level_imports(path):
    """`(line, module)` of each keras_bert_zoo import inside a function, and whether a `# lazy:` comment
    on its line or the line before gives the reason."""
    source = open(path, encoding="utf-8").read()
    lines = source.splitlines()
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
                continue
            if in_function and isinstance(child, (ast.Import, ast.ImportFrom)):
                names = [child.module or ""] if isinstance(child, ast.ImportFrom) else [a.name for a in child.names]
                ours = [n for n in names if n.startswith("keras_bert_zoo")]
                if ours:
                    nearby = lines[child.lineno - 1] + (lines[child.lineno - 2] if child.lineno > 1 else "")
                    found.append((child.lineno, ours[0], "# lazy:" in nearby))
            visit(child, in_function)

    visit(ast.parse(source), False)
    return found


def test_the_function_level_import_finder_reads_reasons(tmp_path):
    path = tmp_path / "m.py"
    path.write_text("import keras_bert_zoo.a\n"
                    "def f():\n"
                    "    from keras_bert_zoo.b import c\n"
                    "    # lazy: a reason\n"
                    "    import keras_bert_zoo.d\n"
                    "    import os\n"
                    "class K:\n"
                    "    def g(self):\n"
                    "        from keras_bert_zoo.e import f  # lazy: another\n")
    assert _function_level_imports(str(path)) == [
        (3, "keras_bert_zoo.b", False), (5, "keras_bert_zoo.d", True), (9, "keras_bert_zoo.e", True)]


def test_function_level_imports_of_the_package_say_why():
    """Imports sit at module level, where the layering test sees them; one inside a function (outside cli/,
    whose commands import their library on use so that `--help` is fast) carries a `# lazy:` reason."""
    unexplained = [f"{os.path.relpath(path, ROOT)}:{line} imports {module}"
                   for name, path in sorted(_modules().items()) if not name.startswith("keras_bert_zoo.cli")
                   for line, module, explained in _function_level_imports(path) if not explained]
    assert unexplained == []


def test_the_only_lazy_import_outside_cli_is_the_roots():
    """The root loads the library on first use (`load_tensorflow`), which fills Keras' serialization registry;
    below it, a class comes from the caller or that registry, never from a lazy import."""
    lazy = [(name, module) for name, path in sorted(_modules().items()) if not name.startswith("keras_bert_zoo.cli")
            for _, module, explained in _function_level_imports(path) if explained]
    assert lazy == [("keras_bert_zoo", "keras_bert_zoo.tasks")]


def test_export_and_preprocessing_import_no_task():
    """Exports get their signatures from the task (`task_signatures`), so export/ needs no task class;
    preprocessing and layers sit below tasks."""
    graph = _graph(module_level_only=False)
    offenders = {module: [t for t in targets if t.startswith("keras_bert_zoo.tasks")]
                 for module, targets in graph.items()
                 if module.startswith(("keras_bert_zoo.export", "keras_bert_zoo.preprocessing",
                                       "keras_bert_zoo.layers", "keras_bert_zoo.tokenizers", "keras_bert_zoo.metrics"))}
    assert {m: t for m, t in offenders.items() if t} == {}
