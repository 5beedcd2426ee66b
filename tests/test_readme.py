"""Every Python block of README.md runs as written.

Each block runs alone in a fresh interpreter (so it must define every name it
uses), in a directory laid out as the README assumes: `glue/`, `ner/`,
`squad/` and `corpus/` from the shared data. Named presets are mapped to the
offline default with the documented `$KERAS_BERT_ZOO_SUBSTITUTE_PRESET`
switch; a block that talks to `localhost:8500` gets a gRPC PredictionService
backed by the export it names (tests/serving_stub_server.py).
"""

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import shared_path

pytestmark = pytest.mark.subprocess

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")
DATA_DIRS = ("glue", "ner", "squad", "corpus")


def python_blocks():
    """`(first line number, code)` of each ```python block."""
    with open(README, encoding="utf-8") as f:
        text = f.read()
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```$", text, flags=re.S | re.M):
        blocks.append((text[: match.start()].count("\n") + 2, match.group(1)))
    return blocks


BLOCKS = python_blocks()


def test_the_readme_has_python_blocks_to_run():
    assert len(BLOCKS) >= 4


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A working directory with the data where the README says, and one preset cache for all blocks."""
    directory = tmp_path_factory.mktemp("readme")
    for name in DATA_DIRS:
        os.symlink(shared_path(name), directory / name)
    return directory


@pytest.fixture(scope="module")
def readme_env(tmp_path_factory):
    env = dict(os.environ)
    env.update(KERAS_BERT_ZOO_SUBSTITUTE_PRESET="minilm_l6_h384_en_uncased",
               KERAS_BERT_ZOO_CACHE=str(tmp_path_factory.mktemp("readme_cache")),
               PYTHONPATH=ROOT, TF_CPP_MIN_LOG_LEVEL="3")
    return env


@pytest.mark.parametrize("line, code", BLOCKS, ids=[f"README.md:{line}" for line, _ in BLOCKS])
def test_readme_block_runs_as_written(line, code, workdir, readme_env):
    server = None
    if "localhost:8500" in code:
        if not (workdir / "exports" / "qa").exists():  # what the README's server serves, made here if not yet
            subprocess.run([sys.executable, "-c", "import keras_bert_zoo as kbz; kbz.BertQuestionAnswerer.from_preset("
                            "'minilm_l6_h384_en_uncased', sequence_length=64, max_query_length=16).export('exports', model_name='qa')"],
                           cwd=workdir, env=readme_env, check=True, capture_output=True, timeout=900)
        server = subprocess.Popen([sys.executable, "-m", "tests.serving_stub_server", str(workdir / "exports"), "8500"],
                                  cwd=ROOT, env=readme_env, stdout=subprocess.PIPE, text=True)
        assert server.stdout.readline().strip() == "serving", "the stub PredictionService did not start"
    try:
        result = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=readme_env, capture_output=True,
                                text=True, timeout=900)
    finally:
        if server is not None:
            server.kill()
            server.wait()
    assert result.returncode == 0, f"README.md block at line {line} failed:\n{result.stderr[-4000:]}"
