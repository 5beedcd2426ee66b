"""Write a task as a TF Serving model version that takes raw text."""

import contextlib
import numbers
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert_zoo.export.batching_parameters import batching_file
from keras_bert_zoo.export.batching_parameters import write_batching_parameters
from keras_bert_zoo.export.embedding_signature import embedding_signature
from keras_bert_zoo.export.serving_signature import ids_signature
from keras_bert_zoo.export.warmup_requests import write_warmup_requests
from keras_bert_zoo.layers.bert_encoder_layer import ENCODER_DEVICES
from keras_bert_zoo.layers.bert_encoder_layer import encoder_device
from keras_bert_zoo.layers.fused_ops import forward_only
from keras_bert_zoo.layers.fused_ops import xla_fusion
from keras_bert_zoo.layers.weight_copies import WeightCopies
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.utils.atomic import atomic_directory
from keras_bert_zoo.utils.atomic import ensure_writable_directory
from keras_bert_zoo.utils.job_record import content_digest
from keras_bert_zoo.utils.job_record import finished_job_record
from keras_bert_zoo.utils.job_record import write_job
from keras_bert_zoo.utils.model_names import own_name

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")


def serving_signatures(model, preprocessor=None):
    """Every signature of `model`'s export; the first is `serving_default`.

    The model's own signatures come from its `task_signatures(text_preprocessor)`
    method (each task declares them, so a subclass exports too); every export
    adds `embed` and `predict_ids`.

    Args:
        model: a task (classifier, token classifier, question answerer), a
            `BertPretrainer` or a `BertBackbone`.
        preprocessor: the `BertPreprocessor` that tokenizes the requests'
            text: needed for a model without one of its own (a backbone, a
            bare pretrainer); given, it is used in place of a pretrainer's
            own. A task that needs its own (`needs_preprocessor`: a
            classifier, tagger or question answerer) refuses another.
    """
    own = getattr(model, "preprocessor", None)
    if preprocessor is not None and own is not None and preprocessor is not own \
            and getattr(model, "needs_preprocessor", False):
        # Such a task's signatures read its own: the one given tokenized `embed` alone, at its length, in silence.
        raise ValueError(f"A {type(model).__name__} is served with the preprocessor it was fine-tuned with: drop "
                         "preprocessor= (it is for a backbone or a pretrainer).")
    backbone = getattr(model, "backbone", model)
    # The caller chose the one given for this export; a pretrainer's own came with it from its preset.
    preprocessor = preprocessor or getattr(model, "preprocessor", None)
    if preprocessor is None:
        raise ValueError(f"Exporting a {type(model).__name__} needs preprocessor= (a BertPreprocessor), "
                         "which tokenizes the requests' text.")
    if not hasattr(backbone, "token_embedding") or not hasattr(preprocessor, "tokenizer"):
        raise TypeError(f"Cannot export {type(model).__name__}: expected a keras_bert_zoo task or BertBackbone.")
    text_preprocessor = (preprocessor if isinstance(preprocessor, BertPreprocessor)
                         else BertPreprocessor(preprocessor.tokenizer, preprocessor.sequence_length))
    ids = np.array([[text_preprocessor.tokenizer.cls_token_id, text_preprocessor.tokenizer.sep_token_id]], "int32")
    example_ids = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}
    own = model.task_signatures(text_preprocessor) if hasattr(model, "task_signatures") else []
    return [*own, embedding_signature(backbone, text_preprocessor),
            ids_signature(model, example_ids)], text_preprocessor.tokenizer


def default_model_name(model):
    """`model.name`, without the count Keras appends to a name it made up: the second `BertClassifier` a process
    builds is `bert_classifier_1`, and its export went to another directory than the server watches. A name the
    user gave is kept whole, `bert_classifier_2` too (see `utils.model_names.own_name`)."""
    return own_name(model)


def check_model_name(model_name):
    """A model name is one plain path component: it names a directory under the export base."""
    # No separators, and no leading '.': not '.', '..', nor a hidden name like the export's temporaries.
    if not isinstance(model_name, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", model_name):
        raise ValueError(f"model_name '{model_name}' must use letters, digits, '_', '.' or '-' only, and not start "
                         "with '.' or '-' (it is one directory under the export base and the name clients request).")
    return model_name


# TF Serving reads version directories' names as int64 and skips any other.
MAX_VERSION = 2**63 - 1


def check_version(version):
    """A version TF Serving loads: a whole number from 1 to `MAX_VERSION`."""
    if isinstance(version, bool) or not isinstance(version, numbers.Integral) or not 1 <= version <= MAX_VERSION:
        raise ValueError(f"version must be a whole number from 1 to {MAX_VERSION} (TF Serving's version "
                         f"directories are int64); got {version!r}.")
    return int(version)


def version_numbers(model_dir):
    """The versions TF Serving would see in `model_dir`."""
    names = os.listdir(model_dir) if os.path.isdir(model_dir) else []
    return [int(name) for name in names if name.isascii() and name.isdigit() and 1 <= int(name) <= MAX_VERSION]


def _next_version(model_dir):
    version = max(version_numbers(model_dir), default=0) + 1
    if version > MAX_VERSION:
        raise ValueError(f"{model_dir} holds version {MAX_VERSION}, the last TF Serving reads: pass version= "
                         "(--version) a free number below it.")
    return version


def check_serving_device(serving_device):
    """The device TF Serving will run an export on: "cpu" or "gpu"."""
    if serving_device not in ENCODER_DEVICES:
        raise ValueError(f"serving_device must be one of {ENCODER_DEVICES} (the device TF Serving runs the export "
                         f"on); got {serving_device!r}.")
    return serving_device


def export_for_serving(model, export_base, version=None, model_name=None, preprocessor=None, overwrite=False,
                       job_args=None, serving_device="cpu"):
    """Export `model` for TensorFlow Serving, raw strings in.

    Writes `export_base/<model_name>/<version>/` (`saved_model.pb`,
    `variables/`, `assets/vocab.txt` and `labels.txt`,
    `assets.extra/tf_serving_warmup_requests`) through a temporary directory
    renamed into place, so a server watching `export_base/<model_name>` never
    sees a half-written version. Weights are stored once, without optimizer
    state; the graph tokenizes in place (clients load it after
    `import tensorflow_text`, as `load_export` does). Under a mixed policy
    (`mixed_bfloat16`, `mixed_float16`) a CPU export stores the encoder's
    kernels and biases in the compute dtype, cast once here instead of on
    every request (see `WeightCopies`); a GPU export keeps them float32.
    Beside the versions,
    `batching_parameters.txt` holds server-side batching settings (see
    `batching_parameters`).

    Args:
        model: a fine-tuned task, or a `BertBackbone` with `preprocessor`.
        export_base: the model base path TF Serving is pointed at (parent).
        version: integer version; default one above the highest present.
        model_name: default `model.name` (see `default_model_name`).
        preprocessor: see `serving_signatures`.
        overwrite: replace an existing version instead of refusing.
        job_args: what the caller was asked (e.g. the command line), recorded
            in the version's `job.json` beside the model's class and weights'
            SHA-256 (TF Serving ignores the file).
        serving_device: "cpu" (default) or "gpu": the device TF Serving runs
            the export on, whichever machine exports it. The encoder's graph
            is shaped for it (see `BertEncoderLayer`): each is correct on the
            other device, only slower there.

    Returns:
        The version directory.

    Examples:
    >>> import tempfile
    >>> import keras_bert_zoo as kbz
    >>> clf = kbz.BertClassifier.from_preset("minilm_l6_h384_en_uncased", num_classes=2, sequence_length=32)
    >>> path = export_for_serving(clf, tempfile.mkdtemp(), model_name="sentiment")
    >>> os.path.basename(path)
    '1'
    """
    model_name = check_model_name(model_name or default_model_name(model))
    check_serving_device(serving_device)
    model_dir = os.path.join(export_base, model_name)
    numbered = version is None
    version = _next_version(model_dir) if numbered else check_version(version)
    if os.path.exists(os.path.join(model_dir, str(version))) and not overwrite:
        raise FileExistsError(f"{os.path.join(model_dir, str(version))} already exists: pass another version (or "
                              "none, for the next number), or overwrite=True to replace it.")
    # Before tracing, which takes ~25 s for a base model; a failed export leaves no empty directory of its own.
    created = _missing_directories(model_dir)
    ensure_writable_directory(model_dir)
    batching_file(model_dir)
    try:
        signatures, tokenizer = serving_signatures(model, preprocessor)  # refuses what cannot be exported
        module, functions = _traced(model, signatures, serving_device)
        while True:
            version_dir = os.path.join(model_dir, str(version))
            try:
                # Without overwrite, a version another export wrote meanwhile is kept (FileExistsError) ...
                with atomic_directory(version_dir, replace=overwrite) as tmp:
                    _write_version(tmp, module, functions, model, model_name, version, signatures, tokenizer,
                                   serving_device, job_args)
                break
            except FileExistsError:
                if not numbered or not os.path.isdir(version_dir):
                    raise
                version = _next_version(model_dir)  # ... and a numbered export takes the next number instead
    except BaseException:
        for directory in created:  # deepest first; only those still empty
            with contextlib.suppress(OSError):
                os.rmdir(directory)
        raise
    write_batching_parameters(model_dir)
    return version_dir


def _missing_directories(path):
    """`path` and its ancestors that do not exist yet, deepest first."""
    missing = []
    path = os.path.abspath(path)
    while not os.path.exists(path) and path != os.path.dirname(path):
        missing.append(path)
        path = os.path.dirname(path)
    return missing


def _traced(model, signatures, serving_device):
    """The signatures' concrete functions, and a module holding the weights they read."""
    # TF Serving runs without XLA's CPU JIT, and never differentiates: the fused ops' written-out gradients would
    # only grow the graph and its loading time.
    with xla_fusion(False), forward_only(), encoder_device(serving_device):
        # Under a mixed policy the encoder's kernels are stored in 16 bits, as every request would cast them.
        copies = WeightCopies(model)
        with copies.reading():
            functions = {s.name: s.concrete_function() for s in signatures}
    functions["serving_default"] = functions[signatures[0].name]
    module = tf.Module()
    # Only the weights the graph reads: no optimizer slots, no second copy.
    module.model_weights = [w.value for w in model.weights if not copies.copied(w)] + copies.variables
    return module, functions


def _write_version(directory, module, functions, model, model_name, version, signatures, tokenizer, serving_device,
                   job_args):
    """A version's files: the SavedModel, its assets, the warm-up requests and the job record."""
    tf.saved_model.save(module, directory, signatures=functions)
    with open(os.path.join(directory, "assets", "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(tokenizer.get_vocabulary()) + "\n")
    labels = getattr(model, "label_names", None)
    if labels:
        with open(os.path.join(directory, "assets", "labels.txt"), "w", encoding="utf-8") as f:
            f.write("\n".join(map(str, labels)) + "\n")
    os.makedirs(os.path.join(directory, "assets.extra"))
    write_warmup_requests(os.path.join(directory, WARMUP_FILE), model_name, signatures)
    write_job(directory, finished_job_record(
        "export", model=type(model).__name__, model_name=model_name, version=version,
        serving_device=serving_device, dtype_policy=model.dtype_policy.name,
        weights_sha256=content_digest([w.numpy() for w in model.weights]),
        signatures=sorted(functions), args=job_args or {},
    ))


def load_export(path):
    """Load an export (a version directory, or the model directory: its
    highest version) with the TF-Text ops registered."""
    import tensorflow_text  # noqa: F401  (registers the tokenizer ops the graph uses)

    if not os.path.exists(os.path.join(path, "saved_model.pb")):
        version = max(version_numbers(path), default=0)
        if version < 1:
            raise FileNotFoundError(f"No SavedModel in {path}: expected saved_model.pb or numbered version "
                                    "directories (export_base/<model_name>/<version>).")
        path = os.path.join(path, str(version))
    return tf.saved_model.load(path)
