"""The Examples in every public docstring run and print what they claim."""

import doctest
import importlib
import pkgutil

import pytest

import keras_bert_zoo

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(keras_bert_zoo.__path__, "keras_bert_zoo.") if not m.ispkg
)


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
