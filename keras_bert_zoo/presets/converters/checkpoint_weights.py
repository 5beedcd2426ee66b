"""Load weights named as in google-research/bert into our Keras models.

Every converter (Google TF1 checkpoints, HF safetensors / PyTorch files)
first maps its weights to Google's variable names and orientation; this
module is the single place that knows how those names land on Keras
variables.
"""

import re
import warnings

import numpy as np

from keras_bert_zoo.presets.converters.checkpoint import TASK_HEAD_BIAS
from keras_bert_zoo.presets.converters.checkpoint import TASK_HEAD_KERNEL
from keras_bert_zoo.presets.converters.checkpoint import is_float_dtype
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.utils.placeholder_labels import unnamed_labels

# Checkpoint entries that hold no model weight: optimizer slots, step
# counters, HF buffers, and the MLM decoder matrix that is tied to the
# word embedding.
_IGNORED_SUFFIXES = ("/adam_m", "/adam_v", "global_step", "position_ids", "cls/predictions/decoder/kernel")
POOLER = "bert/pooler/dense/"


def lacks_pooler(weights):
    """Whether `weights` were saved by a model that does not use the pooler (HF's BertForMaskedLM,
    BertForTokenClassification, BertForQuestionAnswering): its pooler starts fresh, as HF's loader starts it."""
    return not any(name.startswith(POOLER) for name in weights)


def fresh_pooler_warning(source, checkpoint_format=None):
    """The warning for `source` without a pooler, saying why for its `checkpoint_format`: "hf", "google" (a TF
    `bert_model.ckpt`, which was told HF saved it), or None where the caller does not know (said for both)."""
    why = {
        "hf": "(bert.pooler.dense.*), as HF saves BertForMaskedLM (run_mlm.py's domain pretraining) and fine-tuned "
              "token-classification or question-answering models",
        "google": f"({POOLER}*), which google-research/bert's modeling.py builds and saves for every model: this "
                  "TF checkpoint was written by other code (such as HF's "
                  "convert_bert_pytorch_checkpoint_to_original_tf.py from a BertForMaskedLM, token-classification "
                  "or question-answering model)",
        None: f"({POOLER}*), as HF saves BertForMaskedLM (run_mlm.py's domain pretraining) and fine-tuned "
              "token-classification or question-answering models, and TF checkpoints converted from them "
              "(google-research/bert's own hold one)",
    }
    if checkpoint_format not in why:
        raise ValueError(f"checkpoint_format must be 'hf', 'google' or None; got {checkpoint_format!r}.")
    return (f"{source} has no pooler weights {why[checkpoint_format]}: the pooler is freshly initialised. The sequence "
            "output is the checkpoint's; `pooled_output` (a BertClassifier's input) is untrained until fine-tuned.")


def _dense(layer, prefix, kernel_shape=None, bias_shape=None):
    """(name, variable, checkpoint shape) triples for a dense layer."""
    return [
        (f"{prefix}/kernel", layer.kernel, kernel_shape),
        (f"{prefix}/bias", layer.bias, bias_shape),
    ]


def _layer_norm(layer, prefix):
    return [(f"{prefix}/gamma", layer.gamma, None), (f"{prefix}/beta", layer.beta, None)]


def variable_map(backbone, pretrainer=None, heads=()):
    """List `(google_name, keras_variable, checkpoint_shape_or_None)` triples.

    A checkpoint shape is the one the checkpoint must hold, reshaped to the
    variable's (attention projections are stored per head in Keras); `"T"`
    means transposed. `heads`: which of the pretrainer's `HEADS` to list.
    """
    emb = backbone.embeddings
    triples = [
        ("bert/embeddings/word_embeddings", emb.token_embedding.embeddings, None),
        ("bert/embeddings/position_embeddings", emb.position_embedding.position_embeddings, None),
        ("bert/embeddings/token_type_embeddings", emb.segment_embedding.embeddings, None),
    ] + _layer_norm(emb.layer_norm, "bert/embeddings/LayerNorm")
    hidden = backbone.hidden_dim
    for i, layer in enumerate(backbone.transformer_layers):
        p = f"bert/encoder/layer_{i}"
        attention = layer._self_attention_layer
        for name, dense in (("query", attention._query_dense), ("key", attention._key_dense), ("value", attention._value_dense)):
            triples += _dense(dense, f"{p}/attention/self/{name}", (hidden, hidden), (hidden,))
        triples += _dense(attention._output_dense, f"{p}/attention/output/dense", (hidden, hidden))
        triples += _layer_norm(layer._self_attention_layer_norm, f"{p}/attention/output/LayerNorm")
        triples += _dense(layer._feedforward_intermediate_dense, f"{p}/intermediate/dense")
        triples += _dense(layer._feedforward_output_dense, f"{p}/output/dense")
        triples += _layer_norm(layer._feedforward_layer_norm, f"{p}/output/LayerNorm")
    triples += _dense(backbone.pooled_dense, POOLER.rstrip("/"))
    if pretrainer is not None and MASKED_LM in heads:
        mlm = pretrainer.masked_lm_head
        triples += _dense(mlm._intermediate_dense, "cls/predictions/transform/dense")
        triples += _layer_norm(mlm._intermediate_layer_norm, "cls/predictions/transform/LayerNorm")
        triples.append(("cls/predictions/output_bias", mlm._bias, None))
    if pretrainer is not None and NEXT_SENTENCE in heads:
        nsp = pretrainer.next_sentence_head
        triples.append(("cls/seq_relationship/output_weights", nsp.kernel, "T"))
        triples.append(("cls/seq_relationship/output_bias", nsp.bias, None))
    return triples


# The config sizes that weights' shapes hold: (BertBackbone argument, Google checkpoint name, end of the Keras
# weights file's array name, axis). One table serves checkpoints and saved presets alike.
SHAPED_SIZES = (
    ("vocabulary_size", "bert/embeddings/word_embeddings",
     "bert_embedding/token_and_position_embedding/token_embedding/vars/0", 0),
    ("hidden_dim", "bert/embeddings/word_embeddings",
     "bert_embedding/token_and_position_embedding/token_embedding/vars/0", 1),
    ("max_sequence_length", "bert/embeddings/position_embeddings", "bert_embedding/position_embedding/vars/0", 0),
    ("num_segments", "bert/embeddings/token_type_embeddings", "bert_embedding/segment_embedding/vars/0", 0),
    ("intermediate_dim", "bert/encoder/layer_0/intermediate/dense/kernel",
     "bert_encoder_layer/_feedforward_intermediate_dense/vars/0", 1),
)
_ENCODER_LAYER = re.compile(r"bert/encoder/layer_(\d+)/")


def check_sizes(config, found, says):
    """Refuse a config whose sizes the weights contradict, before a model is built from it: built first, a size
    alone allocates (2e9 positions: out of memory) or builds (3000 layers: minutes, then a RecursionError)
    before any weight's shape is compared.

    Args:
        config: `BertBackbone` arguments.
        found: {argument: (what holds it, e.g. "DIR holds 'NAME' of shape S", the size held)}.
        says: who gives an argument, for the message ("its config says max_position_embeddings").
    """
    for key, (what, size) in found.items():
        value = config.get(key)
        # A value that is no size at all (0, "15") is left to the backbone's own check, which says what it must be.
        if isinstance(value, int) and not isinstance(value, bool) and value > 0 and value != size:
            if size is None:
                raise CheckpointError(f"{what}, which {says(key)}={value!r} needs: the weights are incomplete, or "
                                      "not BERT's.")
            raise CheckpointError(f"{what}, but {says(key)}={value!r}. The config does not belong to these "
                                  "weights: use the one saved with them.")


def sizes_found(source, shapes, encoder_layers, expected):
    """`found` for `check_sizes`: `shapes` {argument: (array name, shape, axis)} and the number of encoder
    layers that the weights of `source` hold. An `expected` {argument: array name} missing from `shapes` holds
    no size (None): the config's is refused before a model of that size is built, not after."""
    found = {"num_layers": (f"{source} holds weights for {encoder_layers} encoder layers", encoder_layers)}
    found.update({key: (f"{source} holds '{name}' of shape {shape}", shape[axis] if len(shape) > axis else None)
                  for key, (name, shape, axis) in shapes.items()})
    for key, name in expected.items():
        found.setdefault(key, (f"{source} has no '{name}'", None))
    return found


def checkpoint_sizes(weights, source):
    """The config sizes that Google-named `weights` of `source` hold, for `check_sizes`.

    Raises:
        CheckpointError: `weights` hold no BERT weight by name at all (a TF2 Model Garden or Keras checkpoint),
            which the sizes would report as "0 encoder layers ... the config does not belong to these weights".
    """
    if weights and not any(name.startswith("bert/") for name in weights):
        raise CheckpointError(f"{source} holds no weight under google-research/bert's names (bert/embeddings/..., "
                              f"bert/encoder/layer_0/...; its first is '{min(weights)}'): it is not a checkpoint of "
                              "google-research/bert's modeling.py or HF's BERT, the two formats read here (a TF2 "
                              "Model Garden or Keras checkpoint is neither).")
    shapes = {key: (name, np.shape(weights[name]), axis) for key, name, _, axis in SHAPED_SIZES if name in weights}
    return sizes_found(source, shapes, len({m.group(1) for m in map(_ENCODER_LAYER.match, weights) if m}),
                       {key: name for key, name, _, _ in SHAPED_SIZES})


# An HF masked-LM decoder weight that differs from the word embeddings (tie_word_embeddings: false), kept apart.
UNTIED_DECODER = "cls/predictions/decoder_weight"

# The pretraining heads, by the prefix of their Google names, and what each is called.
MASKED_LM, NEXT_SENTENCE = "cls/predictions/", "cls/seq_relationship/"
HEADS = {MASKED_LM: "masked-LM", NEXT_SENTENCE: "next-sentence"}
HEAD_PREFIXES = tuple(HEADS)


def pretraining_heads(weights):
    """The prefixes of the `HEADS` a checkpoint holds weights for (one head, without the other, loads too)."""
    return [p for p in HEADS if any(name.startswith(p) for name in weights)]


TASK_HEAD = (TASK_HEAD_KERNEL, TASK_HEAD_BIAS)


def head_fits(layer, weights):
    """Whether the dense `layer` (a task's output layer) has the shape of the fine-tuned head in `weights`."""
    return tuple(layer.kernel.shape) == np.shape(weights[TASK_HEAD_KERNEL])


def label_order(saved, given):
    """The output of a head with labels `saved` that each of the `given` label names is, in their order: given
    in another order, a head's labels keep their meaning (a tag set read from data comes sorted, id2label in the
    order of training), where they once took the names in the order given, in silence.

    Args:
        saved: the head's label names; None, transformers' `LABEL_0`, ..., or names that repeat: it has none
            of its own that tell its outputs apart, and `given` name them in order.
        given: the label names asked for.

    Returns:
        A list of output indices, or None where `given` names other labels than the head's (another task's).
    """
    if unnamed_labels(saved) or len(set(saved)) != len(saved):
        return list(range(len(given)))
    try:
        same = len(given) == len(saved) and set(given) == set(saved)
    except TypeError:  # an unhashable name: no label of the head's
        return None
    return [list(saved).index(name) for name in given] if same else None


def reorder_head(layer, order):
    """Put the outputs of the dense `layer` (a task's output layer) in `order` (see `label_order`)."""
    if order != list(range(len(order))):
        layer.kernel.assign(np.asarray(layer.kernel)[:, order])
        layer.bias.assign(np.asarray(layer.bias)[order])


def check_head(layer, weights, source):
    """Refuse the fine-tuned head in `weights` where the dense `layer` (a task's output layer) cannot hold it.

    Raises:
        CheckpointError: the shapes differ (see `head_fits`).
    """
    if not head_fits(layer, weights):
        raise CheckpointError(f"The fine-tuned head of {source} has shape {np.shape(weights[TASK_HEAD_KERNEL])} "
                              f"but the task's output layer {tuple(layer.kernel.shape)}: the head is not this "
                              "model's.")


def assign_head(layer, weights, source, order=None):
    """Load the fine-tuned head in `weights` (`TASK_HEAD`) into the dense `layer`, a task's output layer, its
    outputs in `order` (see `label_order`; None: as stored).

    Raises:
        CheckpointError: the shapes differ (see `head_fits`).
    """
    check_head(layer, weights, source)
    layer.kernel.assign(weights[TASK_HEAD_KERNEL].astype(layer.kernel.dtype))
    layer.bias.assign(weights[TASK_HEAD_BIAS].astype(layer.bias.dtype))
    if order is not None:
        reorder_head(layer, order)


def assign_weights(backbone, weights, pretrainer=None, source="checkpoint", warn_fresh_pooler=True,
                   checkpoint_format=None):
    """Copy Google-named arrays into the models, checking every shape.

    Args:
        backbone: a built `BertBackbone`.
        weights: dict of Google variable name -> numpy array.
        pretrainer: optional `BertPretrainer` whose heads the checkpoint holds
            are loaded too (one it lacks keeps its initialization).
        source: the file or directory the weights came from (for errors).
        warn_fresh_pooler: warn where `weights` lack the pooler (a conversion warns as its preset loads).
        checkpoint_format: "hf" or "google", which that warning says why for (see `fresh_pooler_warning`).

    Raises:
        CheckpointError: naming the first missing, mis-shaped or unexpected
            variable.
    """
    if pretrainer is not None and UNTIED_DECODER in weights:
        raise CheckpointError(f"{source} holds a masked-LM decoder untied from the word embeddings (config.json's "
                              "tie_word_embeddings: false). BertPretrainer's decoder is the embeddings, as BERT's: "
                              "load the checkpoint as a backbone or a task, which do not use the decoder.")
    used = set()
    pending = []
    fresh_pooler = lacks_pooler(weights)
    if fresh_pooler and NEXT_SENTENCE in pretraining_heads(weights):
        # Every model that saves this head saves the pooler it reads: the head would load as trained on a random one.
        raise CheckpointError(f"{source} holds the next-sentence head ({NEXT_SENTENCE}*) but no pooler weights "
                              f"({POOLER}*), the head's input; BertForPreTraining and google-research/bert save "
                              "both. The checkpoint is truncated or corrupt: download or export it again.")
    for name, variable, target in variable_map(backbone, pretrainer, pretraining_heads(weights)):
        if fresh_pooler and name.startswith(POOLER):
            continue
        if name not in weights:
            raise CheckpointError(
                f"{source} has no variable '{name}' (the model expects shape "
                f"{tuple(variable.shape)}). The checkpoint does not match this "
                "architecture: check num_layers and the config file."
            )
        value = np.asarray(weights[name])
        if not is_float_dtype(value.dtype):  # integers or bools are no trained weights: no silent cast
            raise CheckpointError(f"Variable '{name}' in {source} holds {value.dtype} values; BERT's weights are "
                                  "floats. The checkpoint is corrupt, or not BERT's.")
        if target == "T":
            value = value.T
        elif target is not None:
            # The same number of elements in another shape (a flattened kernel) is not this weight.
            if value.shape != target:
                raise CheckpointError(
                    f"Variable '{name}' in {source} has shape {value.shape}, but the "
                    f"config implies {target}. The checkpoint does not match its config."
                )
            value = value.reshape(variable.shape)
        if tuple(value.shape) != tuple(variable.shape):
            raise CheckpointError(
                f"Variable '{name}' in {source} has shape {tuple(value.shape)}, but the "
                f"model built from the config expects {tuple(variable.shape)}. The "
                "checkpoint does not match its config (or the vocabulary size differs)."
            )
        pending.append((variable, value))
        used.add(name)
    unexpected = sorted(
        n
        for n in weights
        if n not in used
        and not n.endswith(_IGNORED_SUFFIXES)
        and not (pretrainer is None and n.startswith(HEAD_PREFIXES))
        and n not in TASK_HEAD  # a task's output layer: `head_fits` and `assign_head` load it
    )
    if unexpected:
        raise CheckpointError(
            f"{source} holds variable '{unexpected[0]}' that the architecture in its "
            f"config has no place for ({len(unexpected)} such variables). The "
            "checkpoint does not match the config (e.g. more layers than "
            "num_hidden_layers)."
        )
    if fresh_pooler and warn_fresh_pooler:
        warnings.warn(fresh_pooler_warning(source, checkpoint_format), stacklevel=3)
    # Assign only once everything has been checked: no half-loaded model.
    for variable, value in pending:
        variable.assign(value.astype(variable.dtype))
