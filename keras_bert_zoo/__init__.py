"""keras_bert_zoo: the BERT family for Keras 3 and TensorFlow.

Text flows one way: `BertTokenizer` -> `BertPreprocessor` -> `BertBackbone`
-> task heads. Every model and tokenizer has `from_preset`.

The names below load on first use, so `import keras_bert_zoo` (and the
command line's `--help`) does not start TensorFlow.
"""

import contextlib
import importlib
import importlib.abc
import importlib.util
import os
import platform
import sys

from keras_bert_zoo.presets.registry import DEFAULT_PRESET
from keras_bert_zoo.version import __version__

# TensorFlow's C++ start-up chatter ("oneDNN custom operations are on", "failed
# call to cuInit" on a machine without a GPU ...) is noise for users of a model
# zoo. A TF_CPP_MIN_LOG_LEVEL the user set is kept; Python warnings still show.
QUIET_LOG_LEVEL = "3"
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", QUIET_LOG_LEVEL)
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
# TensorFlow runs its oneDNN kernels by default only on x86 CPUs with AVX-512
# VNNI/BF16, AVX-VNNI or AMX; on the others it runs Eigen's, which left batches
# of BERT slower (2-core AVX2 EPYC, float32: Base inference at 32x128 6.3 -> 7.3
# sequences/s with oneDNN, MiniLM's training step 12.1 -> 14.0; single
# sentences ran 0.82-0.84x as fast). TensorFlow reads it once, when it loads
# (import keras_bert_zoo first); child processes inherit it. A value you set,
# TF_ENABLE_ONEDNN_OPTS=0 included, is kept.
if platform.machine().lower() in ("x86_64", "amd64"):
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

_EXPORTS = {
    "BertBackbone": "keras_bert_zoo.models.bert_backbone",
    "BertClassifier": "keras_bert_zoo.tasks.bert_classifier",
    "BertEmbedding": "keras_bert_zoo.layers.bert_embedding",
    "BertPreprocessor": "keras_bert_zoo.preprocessing.bert_preprocessor",
    "BertPretrainer": "keras_bert_zoo.tasks.bert_pretrainer",
    "BertQuestionAnswerer": "keras_bert_zoo.tasks.bert_question_answerer",
    "BertTokenClassifier": "keras_bert_zoo.tasks.bert_token_classifier",
    "BertTokenizer": "keras_bert_zoo.tokenizers.bert_tokenizer",
    "CheckpointError": "keras_bert_zoo.presets.errors",
    "FusedAdamW": "keras_bert_zoo.optimization.fused_adamw",
    "FusedSparseCategoricalCrossentropy": "keras_bert_zoo.tasks.fused_sparse_categorical_crossentropy",
    "NetworkUnreachableError": "keras_bert_zoo.presets.errors",
    "PresetError": "keras_bert_zoo.presets.errors",
    "PresetNotFoundError": "keras_bert_zoo.presets.errors",
    "PretrainingDataConfig": "keras_bert_zoo.preprocessing.pretraining_instances",
    "Task": "keras_bert_zoo.tasks.task",
    "TruncationWarning": "keras_bert_zoo.preprocessing.truncation_warning",
    "UnsafeCheckpointError": "keras_bert_zoo.presets.errors",
    "bert_adamw": "keras_bert_zoo.optimization.bert_adamw",
    "convert_checkpoint": "keras_bert_zoo.presets.loader",
    "create_pretraining_instances": "keras_bert_zoo.preprocessing.pretraining_instances",
    "encode_texts": "keras_bert_zoo.tasks.sentence_embedding",
    "finetune": "keras_bert_zoo.training.finetune",
    "gelu_tanh": "keras_bert_zoo.layers.activations",
    "learn_vocabulary": "keras_bert_zoo.tokenizers.vocabulary_learner",
    "list_presets": "keras_bert_zoo.presets.registry",
    "pretrain": "keras_bert_zoo.training.pretrain",
    "pretrain_from_records": "keras_bert_zoo.training.pretrain",
}
# Subpackages reachable as attributes: kbz.data.read_glue, kbz.distribution.get_strategy, kbz.export.load_export.
_SUBPACKAGES = ("data", "distribution", "export", "metrics")

__all__ = sorted([*_EXPORTS, "DEFAULT_PRESET", "__version__"])


@contextlib.contextmanager
def quiet_start():
    """Hide what TensorFlow's libraries print to stderr while they load.

    Some of it ("oneDNN custom operations are on", "Could not find cuda
    drivers") is written before TF_CPP_MIN_LOG_LEVEL is read, so the
    variable alone cannot hide it. Only while TensorFlow first loads, and
    only when the log level is the quiet one (a level the user set, such as
    TF_CPP_MIN_LOG_LEVEL=0, shows everything).
    """
    if "tensorflow" in sys.modules:
        yield
    else:
        with _quiet_stderr():
            yield


@contextlib.contextmanager
def _quiet_stderr():
    if os.environ.get("TF_CPP_MIN_LOG_LEVEL") != QUIET_LOG_LEVEL:
        yield
        return
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (embedded interpreters, some notebooks)
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _QuietTensorFlowImport(importlib.abc.MetaPathFinder):
    """A user's own `import tensorflow` after `import keras_bert_zoo` (as in
    the README's snippets) loads quietly too: its first load runs with
    stderr hidden, as `quiet_start` does."""

    def find_spec(self, name, path=None, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # one load: later lookups go to the real finders
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            exec_module = spec.loader.exec_module

            def quiet_exec_module(module):
                with _quiet_stderr():
                    exec_module(module)

            spec.loader.exec_module = quiet_exec_module
        return spec


if "tensorflow" not in sys.modules:
    sys.meta_path.insert(0, _QuietTensorFlowImport())


def load_tensorflow():
    """Import TensorFlow (and TF-Text's ops) quietly (see `quiet_start`),
    then the library: every model, tokenizer and task is then in Keras'
    serialization registry, as after `import keras_hub`, where the preset
    loader finds the classes a preset names or a checkpoint converts to."""
    with quiet_start():
        import tensorflow  # noqa: F401
        import tensorflow_text  # noqa: F401
    # lazy: the root loads the library on first use, so that `import keras_bert_zoo` and `--help` are fast
    import keras_bert_zoo.tasks  # noqa: F401


def __getattr__(name):
    if name in _SUBPACKAGES:
        load_tensorflow()
        return importlib.import_module(f"keras_bert_zoo.{name}")
    if name in _EXPORTS:
        load_tensorflow()
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'keras_bert_zoo' has no attribute '{name}'")


def __dir__():
    return sorted([*globals(), *_EXPORTS, *_SUBPACKAGES])
