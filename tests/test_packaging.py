"""setup.cfg lists every package (it cannot `find:` them, see the comment there)."""

import configparser
import os

ROOT = os.path.join(os.path.dirname(__file__), os.pardir)


def test_every_subpackage_is_listed():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    listed = set(config["options"]["packages"].split())
    found = {"keras_bert_zoo.preset_files"}
    for directory, _, files in os.walk(os.path.join(ROOT, "keras_bert_zoo")):
        if "__init__.py" in files:
            found.add(os.path.relpath(directory, ROOT).replace(os.sep, "."))
    assert listed == found


def test_no_torch_dependency():
    config = configparser.ConfigParser()
    config.read(os.path.join(ROOT, "setup.cfg"))
    requirements = config["options"]["install_requires"]
    assert "torch" not in requirements and "safetensors" in requirements
