"""The library's defaults and constants, read from its source without importing it.

The CLI passes only the flags a user gave, so each default lives once, in the
library; `--help` shows it by reading the library's source (an import would
start TensorFlow and make `--help` slow), and the checks that run before
TensorFlow loads read the library's constants (file names) the same way.
"""

import ast
import functools
import os

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
UNKNOWN = object()


@functools.lru_cache(maxsize=None)
def _tree(module):
    with open(os.path.join(PACKAGE_DIR, *module.split(".")) + ".py", encoding="utf-8") as f:
        return ast.parse(f.read())


def _find(body, name):
    for node in body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == name:
            return node
    raise LookupError(name)


def library_constant(module, name):
    """The literal value of `name` in `keras_bert_zoo.<module>`, followed through `from keras_bert_zoo... import`."""
    for statement in _tree(module).body:
        if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == name for t in statement.targets):
            return ast.literal_eval(statement.value)
        if isinstance(statement, ast.ImportFrom) and (statement.module or "").startswith("keras_bert_zoo."):
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    return library_constant(statement.module[len("keras_bert_zoo."):], alias.name)
    raise LookupError(f"{module}.{name}")


def library_default(module, qualname, name):
    """The default of `name` in `keras_bert_zoo.<module>.<qualname>`.

    `qualname` is a function, a method (`Class.method`) or a class, whose
    attribute or dataclass field `name` is read (`BertQuestionAnswerer`,
    `default_learning_rate`). Only literal defaults are read.
    """
    node = None
    body = _tree(module).body
    for part in qualname.split("."):
        node = _find(body, part)
        body = node.body
    if isinstance(node, ast.ClassDef):
        for statement in node.body:
            if isinstance(statement, ast.AnnAssign) and getattr(statement.target, "id", None) == name:
                return ast.literal_eval(statement.value)
            if isinstance(statement, ast.Assign) and any(getattr(t, "id", None) == name for t in statement.targets):
                return ast.literal_eval(statement.value)
        raise LookupError(f"{qualname}.{name}")
    args = node.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    for arg, default in pairs:
        if arg.arg == name:
            if isinstance(default, ast.Name):  # a module constant, e.g. layers=DEFAULT_LAYERS
                return library_constant(module, default.id)
            return ast.literal_eval(default)
    raise LookupError(f"{qualname}({name}=...)")


def default_help(text, module, qualname, name):
    """`text` followed by "(default: X)", X read from the library."""
    value = library_default(module, qualname, name)
    if isinstance(value, (list, tuple)):
        value = ",".join(str(v) for v in value)
    return f"{text} (default: {value})".lstrip()


def given(args, *names, **renamed):
    """The flags among `names` (and `renamed`, flag dest -> library argument) that the user gave."""
    out = {}
    for dest, argument in [*((n, n) for n in names), *renamed.items()]:
        value = getattr(args, dest, None)
        if value is not None:
            out[argument] = value
    return out


def backbone_arguments():
    """The named arguments of `BertBackbone` (the keys a --config file may hold)."""
    node = _find(_find(_tree("models.bert_backbone").body, "BertBackbone").body, "__init__")
    return [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs if a.arg != "self"]
