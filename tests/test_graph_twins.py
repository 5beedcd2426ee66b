"""Each TF-graph function of the exports and the numpy code it mirrors name each other and the test that pins
them together (`Numpy twin: ...; parity: ...` and `Graph twin: ...; parity: ...` in their docstrings), read
from the source."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, "keras_bert_zoo")
MARKER = re.compile(r"\b(Numpy|Graph) twins?: (.*?); parity:(.*?)\.(?:\s*$|\n)", re.DOTALL)


def _functions():
    """{dotted name (module path + qualname): docstring} of every function and method of the package."""
    found = {}
    for folder, _, files in os.walk(PACKAGE):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
            for node in ast.parse(open(path, encoding="utf-8").read()).body:
                members = node.body if isinstance(node, ast.ClassDef) else [node]
                prefix = f"{module}.{node.name}." if isinstance(node, ast.ClassDef) else f"{module}."
                for member in members:
                    if isinstance(member, ast.FunctionDef):
                        found[prefix + member.name] = ast.get_docstring(member) or ""
    return found


def _resolve(reference, functions):
    matches = [name for name in functions if name == reference or name.endswith("." + reference)]
    assert len(matches) == 1, f"`{reference}` names {matches or 'no function'}"
    return matches[0]


def _twins():
    """{function: (its kind, the functions it names as twins, the tests it names)}."""
    functions = _functions()
    twins = {}
    for name, docstring in functions.items():
        marker = MARKER.search(docstring)
        if marker:
            kind = "graph" if marker.group(1) == "Numpy" else "numpy"
            listed = re.sub(r"\([^)]*\)", "", marker.group(2))  # a parenthesis says which part is mirrored
            named = [_resolve(ref, functions) for ref in re.findall(r"`([\w.]+)`", listed)]
            twins[name] = (kind, named, re.findall(r"`([^`]+::\w+)`", marker.group(3)))
    return twins


def test_twins_name_each_other():
    twins = _twins()
    assert sum(kind == "graph" for kind, _, _ in twins.values()) >= 10  # the walk found the exports' twins
    for name, (kind, named, _) in twins.items():
        assert named, name
        for other in named:
            assert other in twins, f"{other} does not name its twin {name}"
            other_kind, other_named, _ = twins[other]
            assert other_kind != kind and name in other_named, f"{other} does not name its twin {name}"


def test_the_parity_tests_named_exist():
    for name, (_, _, tests) in _twins().items():
        assert tests, f"{name} names no parity test"
        for test in tests:
            path, function = test.split("::")
            tree = ast.parse(open(os.path.join(ROOT, path), encoding="utf-8").read())
            assert function in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}, test
