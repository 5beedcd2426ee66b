"""Base class of the fine-tuning tasks: Keras models that take raw text."""

import contextlib
import difflib
import inspect
import math
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.data.parallel_examples import LabelledExamples
from keras_bert_zoo.data.parallel_examples import ParallelExamples
from keras_bert_zoo.distribution.chief import chiefs_seed
from keras_bert_zoo.distribution.multi_worker_build import MultiWorkerBuildMixin
from keras_bert_zoo.export.export_for_serving import export_for_serving
from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.optimization.bert_adamw import restart_bert_adamw
from keras_bert_zoo.optimization.fused_adamw import FusedAdamW
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.presets.loader import load_task
from keras_bert_zoo.presets.loader import saved_task_class
from keras_bert_zoo.presets.preset_io import refuse_quantized
from keras_bert_zoo.presets.preset_io import save_preset
from keras_bert_zoo.tasks.class_labels import ambiguous_number
from keras_bert_zoo.tasks.class_labels import misnumbered_class
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.tokenizers.text_inputs import text_columns
from keras_bert_zoo.utils.epoch_orders import EpochOrders
from keras_bert_zoo.utils.garbage_collection import one_garbage_collection
from keras_bert_zoo.utils.input_pipeline import without_autotune_thread
from keras_bert_zoo.utils.model_names import note_name
from keras_bert_zoo.utils.model_names import own_name
from keras_bert_zoo.utils.traced_method import traced_method
from keras_bert_zoo.utils.whole_numbers import positive_whole_number

# `Task.from_preset`'s own arguments, beside the task's (named when a misspelt one is refused).
FROM_PRESET_ARGUMENTS = ("load_weights", "sequence_length")
# In-memory examples are packed this many at a time (the ragged word-pieces of a chunk are transient).
_PACKING_CHUNK = 4096


def _is_text_batch(x):
    if isinstance(x, np.ndarray):
        return x.ndim in (1, 2)
    return isinstance(x, (list, tuple)) and not (len(x) and isinstance(x[0], dict))


def _is_column_pair(x):
    """Keras' form of two text inputs: a tuple of two columns `(texts_a, texts_b)`.

    A list of `(text_a, text_b)` tuples is a list of pairs, and a tuple of
    strings a batch of single texts; only a tuple of exactly two sequences is
    read as columns (so `(["a", "b"], ["c", "d"])` is the pairs a/c and b/d).
    """
    return isinstance(x, tuple) and len(x) == 2 and all(isinstance(c, (list, tuple, np.ndarray)) for c in x)


def _packed_spec(element_spec):
    """The packed-inputs part of a Dataset's elements (`x` or `(x, y[, w])`), or None for raw examples."""
    first = element_spec[0] if isinstance(element_spec, tuple) and element_spec else element_spec
    return first if isinstance(first, dict) else None


def _only_text(spec):
    return all(t.dtype == tf.string for t in tf.nest.flatten(spec))


def _two_strings(spec):
    """Whether a Dataset's elements are two strings side by side: `(text_a, text_b)` or `(text, label_name)`."""
    return isinstance(spec, tuple) and len(spec) == 2 and all(
        isinstance(t, tf.TensorSpec) and t.dtype == tf.string for t in spec)


def _rows_are_pairs(x):
    """Whether in-memory examples are `(text_a, text_b)` pairs: by their first row (a list of tuples, an object
    array of them, an `[n, 2]` array); None for what is neither pairs nor single texts (an `[n, 3]` array)."""
    if isinstance(x, np.ndarray) and x.ndim == 2:
        return True if x.shape[1] == 2 else None
    if len(x) == 0 or isinstance(x[0], dict):
        return None
    return isinstance(x[0], (tuple, list))


def _text_rows_as_columns(ds):
    """A Dataset whose examples are rows of a 2-D string tensor (`[batch, 2]`: `(text_a, text_b)` pairs, as an
    `[n, 2]` array is; `[batch, 1]`: single texts), alone or before labels, with those rows as columns."""
    spec = ds.element_spec
    labeled = isinstance(spec, tuple)
    rows = spec[0] if labeled and spec else spec
    if not (isinstance(rows, tf.TensorSpec) and rows.dtype == tf.string and rows.shape.rank == 2):
        return ds
    width = rows.shape[1]
    if width not in (1, 2):
        raise ValueError(f"A Dataset's texts of shape {rows.shape} are rows of {width or 'unknown'} columns; a row "
                         "is one text ([batch, 1]) or a (text_a, text_b) pair ([batch, 2]), of a static width "
                         "(tf.ensure_shape) - or give the texts as a vector, or the pair as a tuple of two.")

    def columns(x):
        return (x[:, 0], x[:, 1]) if width == 2 else x[:, 0]

    if labeled:
        return ds.map(lambda x, *rest: (columns(x),) + rest)
    return ds.map(lambda x: (columns(x),))


def _weighed_by_class(weights):
    """A map over `(x, y[, w])` batches that multiplies each label's weight (a token's, for NER) by its class's."""
    table = tf.constant(weights, tf.float32)

    def weighed(x, y, w=None):
        by_class = tf.gather(table, tf.cast(y, tf.int32))
        return x, y, by_class if w is None else tf.cast(w, tf.float32) * by_class

    return weighed


def _warn_per_replica_clipping(model):
    """Warn that `model`'s optimizer, not the library's, clips each replica's gradient apart.

    Keras clips in each replica, before the gradients are summed, so under
    several replicas in sync a clipping optimizer steps differently from one
    device on the same global batch; `FusedAdamW` (`bert_adamw`) sums first.
    """
    replicas = model.distribute_strategy.num_replicas_in_sync
    # A loss-scaling wrapper (mixed_float16) clips through the optimizer it wraps.
    optimizer = getattr(model.optimizer, "inner_optimizer", model.optimizer)
    if replicas < 2 or optimizer is None or isinstance(optimizer, FusedAdamW):
        return
    clipping = [f"{name}={getattr(optimizer, name)}" for name in ("clipnorm", "global_clipnorm", "clipvalue")
                if getattr(optimizer, name, None)]
    if not clipping:
        return
    # Past the tasks' own `compile` overrides, each of which calls this one, to the code that compiled.
    frame, stacklevel = inspect.currentframe().f_back.f_back, 3
    while frame.f_code.co_name == "compile" and frame.f_locals.get("self") is model:
        frame, stacklevel = frame.f_back, stacklevel + 1
    warnings.warn(
        f"compile: {type(optimizer).__name__}({', '.join(clipping)}) clips each of the {replicas} replicas' "
        f"gradients apart, before {type(model.distribute_strategy).__name__} sums them (Keras' optimizers do), "
        "so training differs from one device on the same global batch. Compile with the library's optimizer, "
        "which sums the replicas' gradients before clipping: optimizer=\"auto\" or kbz.bert_adamw(...) (a "
        "kbz.FusedAdamW), or give this optimizer no clipping.", stacklevel=stacklevel)


def _example_count(x):
    """How many examples in-memory inputs hold (None for a Dataset)."""
    if isinstance(x, tf.data.Dataset):
        return None
    if isinstance(x, dict):
        return len(next(iter(x.values()))) if x else 0
    return len(x)


def checked_batch_size(batch_size):
    """`batch_size`, 32 for None (as in Keras); refused before any data is read unless a positive whole number."""
    return 32 if batch_size is None else positive_whole_number(batch_size, "batch_size")


def _checked_sample_weight(sample_weight, count):
    """One finite, non-negative float32 weight per example, or a ValueError naming the first bad one."""
    try:
        weights = np.asarray(sample_weight, "float32")
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers, one per example; got {sample_weight!r:.80}.") from None
    if weights.shape != (count,):
        raise ValueError(f"sample_weight must hold one number per example: {count} examples, but its shape is "
                         f"{weights.shape}.")
    bad = np.flatnonzero(~np.isfinite(weights) | (weights < 0))
    if len(bad):
        raise ValueError(f"sample_weight {bad[0]} is {weights[bad[0]]}; weights must be finite and non-negative.")
    return weights


def _pack_in_chunks(function, examples, count):
    """`function(*examples)` on in-memory examples, `_PACKING_CHUNK` rows at
    a time, the results concatenated.

    Args:
        function: a traced preprocessing function (see `traced_method`).
        examples: its arguments: tensors (ragged or not) or arrays of
            `count` rows.
        count: how many rows (at least one).

    Returns:
        `function`'s output structure, each tensor holding all `count` rows.
    """
    parts = [function(*tf.nest.map_structure(lambda t: t[start : start + _PACKING_CHUNK], examples))
             for start in range(0, count, _PACKING_CHUNK)]
    return parts[0] if len(parts) == 1 else tf.nest.map_structure(lambda *p: tf.concat(p, 0), *parts)


def _rows_dataset(packed, count, batch_size, shuffle=False, seed=None):
    """Batches of the `count` rows of `packed` (a structure of tensors or arrays), in order, shuffled on
    each pass (`shuffle=True`), or in the order of each of `fit`'s epochs (`shuffle`: `EpochOrders`)."""
    # Tensors, so that the map function captures them by reference: a numpy array would be copied into the
    # function as a constant (and refused beyond 2 GB).
    packed = tf.nest.map_structure(tf.convert_to_tensor, packed)
    # Row numbers are shuffled and batched, then gathered: a shuffle buffer of the rows would hold a second
    # copy of them all.
    if isinstance(shuffle, EpochOrders):  # fit's
        ds = shuffle.batched_rows(count, batch_size)
    else:
        ds = tf.data.Dataset.range(count)
        if shuffle:
            ds = ds.shuffle(count, seed=seed, reshuffle_each_iteration=True)
        ds = ds.batch(batch_size)
    ds = ds.map(lambda rows: tf.nest.map_structure(lambda t: tf.gather(t, rows), packed))
    return without_autotune_thread(ds.prefetch(tf.data.AUTOTUNE))


def _packed_rows(packed, batch_size, labels=None, sample_weight=None):
    """Packed arrays (with their labels and weights, when given) as `evaluate` and `predict` hand them to
    Keras: batches in order, from a pipeline of the library's own (see `without_autotune_thread`)."""
    def arrays(part):  # a list of labels is one array; dicts and tuples are structures
        if isinstance(part, (dict, tuple)):
            return tf.nest.map_structure(np.asarray, part)
        return np.asarray(part)

    if sample_weight is not None and labels is None:
        raise ValueError("sample_weight needs labels (y) to weigh.")
    parts = tuple(arrays(part) for part in (packed, labels, sample_weight) if part is not None)
    counts = {len(leaf) for leaf in tf.nest.flatten(parts)}
    if len(counts) > 1:
        raise ValueError(f"The packed inputs, labels and sample weights hold different numbers of rows "
                         f"({', '.join(map(str, sorted(counts)))}): give one of each per example.")
    return _rows_dataset(parts if len(parts) > 1 else parts[0], counts.pop(), batch_size)


@contextlib.contextmanager
def _after_reading(data):
    """A context in which a step's ops wait for its batch `data`.

    Keras (3.15, TensorFlow backend) runs the step once more after a `Dataset` of unknown length ends (records
    read from files, a `filter`; one step per call, `steps_per_execution=1`): the step's ops that do not read
    the batch ran before the end-of-data error stopped it, and stayed. `fit` counted an optimizer step more
    per epoch (its learning-rate schedule and AdamW's weight decay with it), and `evaluate`, counting a batch
    of the static size with no loss, reported `n / (n + 1)` of the mean loss. Waiting for the batch, that
    step runs nothing.
    """
    def free_of_the_batch(next_creator, **kwargs):
        # Variables made in the first step's trace (metrics') are lifted out of it, which XLA requires: their
        # initial values cannot wait for a batch.
        with tf.control_dependencies(None):
            return next_creator(**kwargs)

    with tf.variable_creator_scope(free_of_the_batch), tf.control_dependencies(
            [t for t in tf.nest.flatten(data, expand_composites=True) if t is not None]):
        yield


@contextlib.contextmanager
def _reading_to_the_end(steps):
    """Without Keras' "Your input ran out of data; interrupting training" where no `steps` were asked for: Keras
    says it whenever a Dataset of unknown length (from a generator, a file, `filter`) ends, which is how its length
    is learnt (and validation data always end)."""
    with warnings.catch_warnings():
        # Shown again inside a `fit` that hid it, where its validation is asked for steps.
        warnings.filterwarnings("ignore" if steps is None else "default", message="Your input ran out of data",
                                category=UserWarning)
        yield


def _resumed_epoch(fit_kwargs):
    """The epoch a `fit` starts at, known before it starts: the count of epochs done in the backup of a callback
    that says it (`AtomicBackupAndRestore.completed_epochs`), else `initial_epoch`. (Keras' own BackupAndRestore
    says it only inside `fit`: its resumed epochs read the first epochs' orders again.)"""
    for callback in fit_kwargs.get("callbacks") or ():
        completed = getattr(callback, "completed_epochs", None)
        if completed is not None and completed():
            return completed()
    return fit_kwargs.get("initial_epoch", 0)


def _slice(examples, part):
    """`examples[part]` for a list, an array or a reader's result."""
    if isinstance(examples, ParallelExamples):
        return examples._take(range(len(examples))[part])
    return examples[part]


def _group_boundary(examples, cut, fraction):
    """The cut nearest to `cut` that leaves each of `examples`' split groups (a QA context's questions) on one
    side, as `examples.split` does: a question held out on a paragraph trained on is scored on answers learnt."""
    if isinstance(examples, ParallelExamples):
        groups = list(examples.split_groups())
    elif all(isinstance(example, dict) and "context" in example for example in examples):
        groups = [example["context"] for example in examples]
    else:
        return cut
    last = {group: index for index, group in enumerate(groups)}
    # A cut at b splits no group where every group before b ends before b.
    reach, boundaries = -1, []
    for index, group in enumerate(groups[:-1]):
        reach = max(reach, last[group])
        if reach == index:
            boundaries.append(index + 1)
    if not boundaries:
        raise ValueError(f"validation_split={fraction}: all {len(groups)} examples ask about one context, which "
                         "is held out whole or not at all: pass validation_data=... with other contexts.")
    return min(boundaries, key=lambda boundary: (abs(boundary - cut), -boundary))


@contextlib.contextmanager
def _validation_data_errors():
    """Errors in `fit`'s `validation_data` start by naming it: they read as if about `x` and `y`, which were
    fine ("No labels: pass y" for validation texts without labels, "Example 0's label is 7" for the first of its
    labels).
    A subclass (a reader's error naming its file and line) passes as it is."""
    try:
        yield
    except (ValueError, TypeError) as e:
        if type(e) not in (ValueError, TypeError):
            raise
        raise type(e)(f"validation_data: {e}") from None


def _validation_xy(data):
    """`validation_data` -> `(x, y)`: Keras' `(x, y)` tuple (or `[x, y]` list),
    or examples that hold their labels (a Dataset, a reader's result, QA dicts)."""
    if isinstance(data, tuple) or (isinstance(data, list) and len(data) == 2 and not isinstance(data[0], dict)):
        if len(data) != 2:
            raise ValueError(
                f"validation_data as a tuple must be (x, y); got {len(data)} items (sample weights are not "
                "supported). Or pass a tf.data.Dataset of (x, y), or a reader's result."
            )
        return tuple(data)
    return data, None


class Task(MultiWorkerBuildMixin, keras.Model):
    """A functional Keras model over `BertBackbone` inputs plus the
    preprocessing that turns raw examples into those inputs.

    `fit`, `evaluate` and `predict` accept, as `x` (with labels `y` as a
    list or numpy array where `x` does not hold them):
    - Python lists (or 1-D numpy arrays of str / bytes / object) of texts;
    - text pairs, as a list of `(text_a, text_b)` tuples (or an `[n, 2]`
      array) or, as Keras takes two inputs, a tuple of two columns
      `(texts_a, texts_b)`;
    - a `tf.data.Dataset` of `(text, label)` / `((text_a, text_b), label)`,
      batched or not (an unbatched one is batched with `batch_size`);
    - a reader's result (`kbz.data.read_glue`, `read_csv`, `read_jsonl`,
      `read_conll`), which holds the labels;
    - already packed inputs: a dict with `token_ids`, ... (and labels `y`),
      or a Dataset of them, such as one `make_dataset` built.
    `validation_data` takes the same forms, as a tuple `(x, y)` or on its own
    when it holds its labels; `validation_split` holds out the last fraction
    of in-memory examples, before shuffling, as Keras does.

    Any other form (a set, a generator, a dict of other keys) is refused up
    front, naming the forms (`input_forms`). Python inputs are checked before
    any graph work: a non-string text is named by its index (`check_texts`),
    labels by `prepare_labels`, packed dicts must hold exactly the backbone's
    inputs. An empty list predicts an empty result; training or evaluating
    on one is refused.

    If the task was compiled with the default optimizer ("auto"), `fit`
    re-creates it as BERT's AdamW with 10% linear warm-up and linear decay
    over exactly the steps it is about to run.
    """

    # What `fit`, `evaluate` and `predict` take, for the message that refuses anything else.
    input_forms = (
        "a list (or 1-D numpy array) of texts; a list of (text_a, text_b) pairs, or a tuple of two columns "
        "(texts_a, texts_b); a tf.data.Dataset of (text, label) or ((text_a, text_b), label), batched or not; "
        "a reader's result (kbz.data.read_glue / read_csv / read_jsonl); or packed inputs (a dict of "
        "token_ids, segment_ids and padding_mask, or a Dataset of them)"
    )
    # Whether an example may be a (text_a, text_b) pair, so that a tuple of two columns means pairs.
    takes_pairs = True
    # Whether `fit` / `evaluate` weigh in-memory examples by a `sample_weight` (one number per example).
    takes_sample_weight = True
    default_learning_rate = 5e-5
    # run_classifier.py's max_seq_length; QA overrides it (384).
    default_sequence_length = 128
    # Heads on token vectors leave the backbone's pooler without gradients.
    uses_pooler = True
    # What `from_preset` builds a fresh task of (the tokenizer: `preprocessor_cls.tokenizer_cls`).
    backbone_cls = BertBackbone
    preprocessor_cls = BertPreprocessor
    # Whether the task needs a preprocessor (a pretrainer trains on packed batches without one).
    needs_preprocessor = True
    # `from_preset` keyword arguments that configure the backbone; the rest are the task's.
    backbone_kwargs = ("dtype",)
    # Whether a preset holding this task starts other tasks (fresh heads on its backbone) rather than
    # being refused by their `from_preset`: true of the pretrainer, whose backbone every task starts from.
    starts_other_tasks = False
    # Said (after the preset's name) when `from_preset` starts this task's heads fresh; None: silently.
    fresh_heads_warning = None

    def __init__(self, inputs, outputs, **kwargs):
        # Keras' functional model ignores any keyword it does not know: a misspelt argument changed nothing.
        type(self).refuse_unknown_arguments(kwargs)
        if self.preprocessor is None:
            if self.needs_preprocessor:
                raise ValueError(f"{type(self).__name__} needs a preprocessor (a {self.preprocessor_cls.__name__}).")
        else:
            self._check_preprocessor_fits_backbone()
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        note_name(self, kwargs.get("name"))
        # A Functional model takes the global policy, not its layers': `dtype_policy` says the backbone's, as
        # keras-hub's tasks do (`from_preset(..., dtype="bfloat16")` is a bfloat16 model).
        self.dtype_policy = self.backbone.dtype_policy

    @classmethod
    def head_arguments(cls, head, units):
        """The arguments that give this task the output layer of a checkpoint's fine-tuned head, one the task's
        `output_layer` can load (QA's two span logits need none).

        Args:
            head: the checkpoint's `TaskHead` (its label names, problem type, dropout).
            units: the head's logits per position.

        Returns:
            A dict of constructor arguments.
        """
        return {}

    @classmethod
    def refuse_unknown_arguments(cls, names, from_preset=False):
        """A TypeError naming those of `names` that no constructor from the
        class's up to Task's takes, nor Keras' layer (nor, `from_preset`,
        `from_preset`'s own arguments and the backbone's it passes on), each
        with the closest name taken."""
        takes = list(dict.fromkeys((*FROM_PRESET_ARGUMENTS, *cls.backbone_kwargs))) if from_preset else []
        for klass in (*cls.__mro__[:cls.__mro__.index(Task)], keras.layers.Layer):
            if "__init__" in vars(klass):
                takes += [p for p in inspect.signature(vars(klass)["__init__"]).parameters
                          if p not in ("self", "args", "kwargs", *takes)]
        unknown = sorted(set(names) - set(takes))
        if unknown:
            # A misspelt name (seq_length, run_classifier.py's max_seq_length) was listed beside every name taken,
            # and from_preset's own were not among them.
            hints = "".join(f" ({name!r}: did you mean {close[0]!r}?)" for name in unknown
                            for close in [difflib.get_close_matches(name, takes, n=1)] if close)
            raise TypeError(f"{cls.__name__}{'.from_preset' if from_preset else ''} got unexpected keyword "
                            f"argument(s) {unknown}{hints}; it takes {takes}.")

    def _check_preprocessor_fits_backbone(self):
        """Ids or positions beyond the backbone's tables fail only inside the
        graph (and read garbage on GPU): refuse them when the task is built."""
        tokenizer, length = self.preprocessor.tokenizer, self.preprocessor.sequence_length
        if length > self.backbone.max_sequence_length:
            raise ValueError(
                f"The preprocessor packs sequence_length={length} tokens but the backbone has "
                f"{self.backbone.max_sequence_length} positions; use sequence_length <= "
                f"{self.backbone.max_sequence_length}."
            )
        if tokenizer.vocabulary_size() > self.backbone.vocabulary_size:
            raise ValueError(
                f"The tokenizer has {tokenizer.vocabulary_size()} tokens but the backbone embeds only "
                f"{self.backbone.vocabulary_size}; they do not belong together (use the preset's vocabulary)."
            )

    @staticmethod
    def logits_layer(backbone, units, name="logits"):
        """The dense output layer of a head: the backbone's truncated-normal
        initializer, and float32 logits (also under mixed precision, so that
        the loss and softmax stay exact).

        Args:
            backbone: the `BertBackbone` the head sits on.
            units: number of logits per position.
            name: the layer's name (its weights' path in saved presets).

        Returns:
            A `keras.layers.Dense`.

        Examples:
        >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2,
        ...                         hidden_dim=8, intermediate_dim=16, dtype="mixed_bfloat16")
        >>> Task.logits_layer(backbone, 3).dtype_policy.compute_dtype
        'float32'
        """
        return keras.layers.Dense(
            units,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=backbone.initializer_range),
            dtype="float32",
            name=name,
        )

    @classmethod
    def make_preprocessor(cls, tokenizer, sequence_length, max_sequence_length):
        """The preprocessing layer this task takes (a `preprocessor_cls`), for `from_preset`."""
        return cls.preprocessor_cls(tokenizer, sequence_length=sequence_length, max_sequence_length=max_sequence_length)

    # --- Compilation -----------------------------------------------------

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return []

    def compile(self, optimizer="auto", loss="auto", metrics="auto", learning_rate=None, total_steps=None,
                **kwargs):
        """Compile with BERT's defaults unless given.

        Args:
            optimizer: `"auto"` for `bert_adamw`.
            loss: `"auto"` for the task's loss.
            metrics: `"auto"` for the task's metrics.
            learning_rate: peak learning rate for the `"auto"` optimizer.
            total_steps: `None` (default): each `fit` call starts the
                `"auto"` optimizer afresh, its warm-up + decay spread over
                the steps that call runs. A number: one schedule of that
                many steps, which `fit` calls continue one after another.
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`,
                `steps_per_execution`).
        """
        self._auto_optimizer = isinstance(optimizer, str) and optimizer == "auto"
        self._learning_rate = learning_rate or getattr(self, "_learning_rate", None) or self.default_learning_rate
        self._total_steps = total_steps if self._auto_optimizer else None
        self._fit_schedules = self._auto_optimizer and total_steps is None
        # Kept out of Keras' attribute tracking: metric objects found in an attribute join `model.metrics`
        # and log once more under their bare names (a pretrainer's `accuracy` repeated one of its two).
        object.__setattr__(self, "_compile_args", {"loss": loss, "metrics": metrics, **kwargs})
        if self._auto_optimizer:
            optimizer = bert_adamw(self._learning_rate, total_steps=total_steps)
        super().compile(
            optimizer=optimizer,
            loss=self.default_loss() if isinstance(loss, str) and loss == "auto" else loss,
            metrics=self.default_metrics() if isinstance(metrics, str) and metrics == "auto" else metrics,
            **kwargs,
        )
        _warn_per_replica_clipping(self)

    def get_compile_config(self):
        if getattr(self, "_auto_optimizer", False):
            return {"auto_optimizer": {"learning_rate": self._learning_rate, "total_steps": self._total_steps,
                                       "fit_schedules": self._fit_schedules}}
        return super().get_compile_config()

    def compile_from_config(self, config):
        if "auto_optimizer" not in config:
            return super().compile_from_config(config)
        config = dict(config["auto_optimizer"])
        # Saved before it was recorded: every fit scheduled its own steps.
        fit_schedules = config.pop("fit_schedules", True)
        with self.distribute_strategy.scope():
            self.compile(**config)
            self._fit_schedules = self._auto_optimizer and fit_schedules
            # Built now, so that a saved optimizer state can load into it.
            self.optimizer.build(self.trainable_variables)

    def _schedule_optimizer(self, total_steps):
        """Start the "auto" optimizer afresh over `total_steps` (None: at a constant rate)."""
        with self.distribute_strategy.scope():
            # After the first fit, the schedule restarts in place: compiling again
            # would make Keras trace the train step again on every call.
            if total_steps is not None and restart_bert_adamw(self.optimizer, total_steps):
                self._total_steps = total_steps
                return
            self.compile("auto", learning_rate=self._learning_rate, total_steps=total_steps, **self._compile_args)
            self._fit_schedules = True
            # Built here, not inside the first train step: variables created
            # while tracing make tf.function trace the whole step twice.
            self.optimizer.build(self.trainable_variables)

    def _schedule_for_fit(self, data, batch_size, epochs, kwargs, validation_split):
        """Give the "auto" optimizer the steps this `fit` call runs."""
        if kwargs.get("steps_per_epoch"):
            steps = kwargs["steps_per_epoch"]
        elif isinstance(data, dict):  # Keras' split keeps floor(n * (1 - split)) examples for training
            steps = math.ceil(math.floor(_example_count(data) * (1 - validation_split)) / batch_size)
        else:
            steps = int(data.cardinality())
        runs = epochs - kwargs.get("initial_epoch", 0)
        if runs <= 0:  # Keras runs no step
            return
        if steps < 0:  # a Dataset of unknown or infinite length
            warnings.warn(
                "fit cannot spread BERT's warm-up and decay over a Dataset of unknown length (after `filter`, or "
                f"`repeat` without `steps_per_epoch`): it trains at the constant rate {self._learning_rate}. "
                "Pass steps_per_epoch=..., give the Dataset its length with "
                "`ds.apply(tf.data.experimental.assert_cardinality(n))`, or compile(total_steps=...).",
                stacklevel=3)
            self._schedule_optimizer(None)
        elif steps > 0:
            self._schedule_optimizer(steps * runs)

    # --- Data ------------------------------------------------------------

    def prepare_labels(self, y):
        """Check labels given as a list or array before any graph work; return
        what the model trains on. Tasks with class labels override this."""
        return y

    def check_dataset_labels(self, spec):
        """Refuse a Dataset's labels by their `spec` (a `tf.TensorSpec` or a structure of them) before the Dataset
        is traced, where what they are already says they cannot be read."""

    def packed_dataset_labels(self, y):
        """The labels of a Dataset of packed inputs, in the graph, as the loss takes them (packed dicts' go through
        `prepare_labels`): tasks with class labels check them (and read names) here."""
        return y

    def takes_pairs_now(self):
        """Whether an example may be a `(text_a, text_b)` pair now: a task that
        records the form it was trained on (`BertClassifier`) narrows
        `takes_pairs`."""
        return self.takes_pairs

    def takes_text_labels(self, labeled=True):
        """Whether a Dataset's second string may be a label: where labels are wanted (`labeled`: `fit`,
        `evaluate`), a task whose labels may be text (a tagger's tags; a classifier's names, or ids as text);
        in `predict`, which drops it, a task whose labels are names."""
        return True

    def weighed_classes(self):
        """`(label names or None, class count, {text: class id})` of the classes `fit`'s `class_weight` weighs,
        the last reading its keys given as text as the task reads labels as text; None for a task whose labels
        are no classes (it refuses `class_weight`)."""
        return None

    def class_weights(self, class_weight):
        """Keras' `class_weight` ({class id or label name: weight}) as one weight per class, checked before any
        graph work; a class left out weighs 1.0, as Keras means it (it failed mid-fit on a class above the
        largest key given)."""
        classes = self.weighed_classes()
        if classes is None:
            raise ValueError(f"{type(self).__name__}'s labels are no classes, so class_weight does not apply; "
                             "weigh examples with sample_weight.")
        if not isinstance(class_weight, dict):
            raise TypeError(f"class_weight must be a dict {{class: weight}}; got {type(class_weight).__name__}.")
        names, count, text_index = classes
        weights = [1.0] * count
        for key, weight in class_weight.items():
            if not isinstance(key, str) and misnumbered_class(names):
                raise ambiguous_number(f"class_weight's key {key!r}", names, "{'1': 2.0}")
            index = text_index.get(key, key) if isinstance(key, str) else key
            if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < count:
                raise ValueError(f"class_weight names {key!r}, which is no class of this model: give class ids "
                                 f"0..{count - 1}" + (f" or label names {names}" if names else "") + ".")
            if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) \
                    or not math.isfinite(weight) or weight < 0:
                raise ValueError(f"class_weight[{key!r}] is {weight!r}; a weight is a finite number >= 0.")
            weights[int(index)] = float(weight)
        return weights

    def holds_labels(self, element_spec, labeled):
        """Whether a Dataset's elements are `(x, y[, w])` rather than examples alone.

        A nested first part, or a later part that is not text (a label, a
        weight), makes `(x, y[, w])`. Two strings are a text and its label
        as text where labels are wanted (`fit`, `evaluate`: as Keras reads
        any tuple) and `takes_text_labels`; in `predict`, only where pairs
        are not taken now (a classifier fine-tuned on single texts) and
        `takes_text_labels(labeled=False)`.
        Otherwise they are a `(text_a, text_b)` pair.
        """
        if not isinstance(element_spec, tuple) or len(element_spec) < 2:
            return False
        if isinstance(element_spec[0], tuple) or not _only_text(element_spec[1:]):
            return True
        if not _two_strings(element_spec):
            return labeled  # three strings or more: as Keras reads them
        return self.takes_text_labels(labeled) and (labeled or not self.takes_pairs_now())

    def examples_are_pairs(self, x, labeled=False):
        """Whether standardized examples (see `standardize_examples`) are
        `(text_a, text_b)` pairs: True, False for single texts, None where
        that cannot be told (packed inputs, an empty list, other examples);
        `labeled` as in `holds_labels`."""
        if not isinstance(x, tf.data.Dataset):
            return None if isinstance(x, dict) else _rows_are_pairs(x)
        spec = x.element_spec
        if _packed_spec(spec) is not None:
            return None
        spec = spec[0] if self.holds_labels(spec, labeled) else spec
        if isinstance(spec, tuple) and len(spec) == 1:  # (text,): one text, as make_dataset reads it
            spec = spec[0]
        if isinstance(spec, tf.TensorSpec):
            return False if spec.dtype == tf.string else None
        return True if _two_strings(spec) else None

    def training_starts(self):
        """Called by `fit` once its data are prepared and checked, before the
        first step: what a task records of its training data (`BertClassifier`:
        pairs or single texts) changes only then, not on a refused `fit`."""

    def check_example_form(self, x, labeled=True):
        """Refuse standardized examples of another form than the task was
        trained on, before any graph work (`labeled` as in `holds_labels`);
        tasks that record one override this (`BertClassifier`: pairs or
        single texts)."""

    def _check_packed_inputs(self, x):
        expected = sorted(self.input)
        unknown = sorted(set(x) - set(expected))
        missing = sorted(set(expected) - set(x))
        if unknown or missing:
            raise ValueError(
                f"Packed inputs must have exactly the keys {expected}; "
                + (f"unknown: {unknown}. " if unknown else "")
                + (f"missing: {missing}. " if missing else "")
                + f"Or pass raw examples for the task to pack: {self.input_forms}."
            )

    def preprocess(self, x, y=None, sample_weight=None):
        """Turn a batch of raw examples (and labels) into model inputs."""
        return keras.utils.pack_x_y_sample_weight(self.preprocessor(x), y, sample_weight)

    def standardize_examples(self, x, y=None):
        """Bring any accepted input form to the few that `make_dataset` takes.

        Args:
            x: examples in one of the forms of `input_forms`.
            y: their labels, unless `x` holds them (a Dataset, a reader's result).

        Returns:
            `(x, y)`: `x` a list (or array) of examples, a `tf.data.Dataset`
            or a dict of packed inputs; `y` the labels or None.

        Raises:
            TypeError: `x` is none of the accepted forms (the message lists them).
            ValueError: labels given beside a reader's result, two text
                columns of different lengths, or a dict of other keys than
                the backbone's inputs.

        Examples:
        >>> from keras_bert_zoo.tasks.bert_classifier import BertClassifier
        >>> clf = BertClassifier.from_preset("minilm_l6_h384_en_uncased", num_classes=2,
        ...                                  sequence_length=16)
        >>> clf.standardize_examples((["a", "b"], ["c", "d"]), [0, 1])  # two columns
        ([('a', 'c'), ('b', 'd')], [0, 1])
        """
        if isinstance(x, LabelledExamples):
            if y is not None:
                raise ValueError(f"The {type(x).__name__} hold their labels; pass them without y.")
            x, y = x
        if isinstance(x, dict):
            self._check_packed_inputs(x)
            return x, y
        if isinstance(x, tf.data.Dataset):
            if y is not None:  # dropped in silence: the Dataset's own labels, or none, were trained on
                raise ValueError("A tf.data.Dataset carries its own labels, as in Keras: give it (x, y) elements, "
                                 "e.g. tf.data.Dataset.from_tensor_slices((texts, labels)), and pass no y.")
            return (_text_rows_as_columns(x) if self.takes_pairs else x), y
        if self.takes_pairs and _is_column_pair(x):
            if len(x[0]) != len(x[1]):
                raise ValueError(f"The two text columns (texts_a, texts_b) hold {len(x[0])} and {len(x[1])} texts; "
                                 "they must be of the same length.")
            x = list(zip(*x))
        if not _is_text_batch(x):
            one = ": one text is a list of one, [text]" if isinstance(x, (str, bytes)) else ""
            raise TypeError(f"{type(self).__name__} takes {self.input_forms}; got {type(x).__name__}{one}.")
        return x, y

    def make_dataset(self, x, y=None, batch_size=32, shuffle=False, seed=None, labeled=True, sample_weight=None):
        """Build the preprocessed, batched `tf.data.Dataset` of raw examples.

        `x`: a list of examples or a Dataset (see `standardize_examples` for
        the other forms). `labeled=False` (prediction): each element of a
        Dataset `x` is an example, even when it is a `(text_a, text_b)` tuple.
        `sample_weight`: one non-negative number per example of a list.
        """
        if isinstance(x, tf.data.Dataset):
            ds = x
            if labeled and self.holds_labels(ds.element_spec, labeled):
                self.check_dataset_labels(ds.element_spec[1])  # before the map traces
            first = tf.nest.flatten(ds.element_spec)[0]
            if first.shape.rank == 0:
                ds = ds.batch(batch_size)
            if not labeled:
                if self.holds_labels(ds.element_spec, labeled):
                    ds = ds.map(lambda x, *labels: x)  # as Keras' predict, which ignores y
                ds = ds.map(lambda *example: (example if len(example) > 1 else example[0],))
        else:
            x = check_texts(x)
            if not x:
                raise ValueError("No examples: the input list is empty.")
            if y is not None:
                if len(y) != len(x):
                    raise ValueError(f"{len(x)} examples but {len(y)} labels.")
                y = np.asarray(self.prepare_labels(y))
            columns = text_columns(x)
            # Packed by a traced function, in which the preprocessor cannot warn of the texts it cuts.
            self.preprocessor.warn_if_truncating(columns)
            # A 1-tuple, so that a pair of texts is one argument of `preprocess`.
            examples = (columns,) if y is None else (columns, y)
            if sample_weight is not None and y is not None:
                examples += (_checked_sample_weight(sample_weight, len(x)),)
            return self._packed_dataset(examples, len(x), batch_size, shuffle, seed)
        return without_autotune_thread(ds.map(self._packing_function(), num_parallel_calls=tf.data.AUTOTUNE)
                                       .prefetch(tf.data.AUTOTUNE))

    def _packing_function(self):
        """`preprocess` as a `tf.function` traced for each input structure
        (once for its first batch size, once more for any other), kept for
        this task and its preprocessor.

        `fit`, `evaluate` and `predict` pack with it. Mapping `preprocess`
        itself over each call's new `tf.data` pipeline traced the
        preprocessor again every time (keras-hub's packer and tf-text's
        trimmer make ~2,000 graph ops for a pair): 2-5 s per call on a 2-core
        CPU, whatever the data's size.
        """
        return traced_method(self, "preprocess", depends_on=self.preprocessor)

    def _packed_dataset(self, examples, count, batch_size, shuffle=False, seed=None):
        """In-memory examples -> a batched `tf.data.Dataset` of model inputs,
        packed once, up front, by `_packing_function`.

        A `Dataset` of raw examples instantiates its map function for each
        new pipeline (1.4-1.7 s for sentence pairs, before any example is
        read); packed tensors need none, and packing is quick (67,349 SST-2
        sentences at length 128: 0.5 s, 103 MB of ids). Data too large to
        hold packed belongs in a `tf.data.Dataset`, packed as it streams.
        Label checks run here, so a bad label fails before training starts.

        Args:
            examples: `preprocess`'s arguments: tensors (ragged or not) or
                arrays of `count` rows.
            count: how many examples.
            batch_size: examples per batch (the last may hold fewer).
            shuffle, seed: shuffle the examples on each pass (`fit`).

        Returns:
            A `tf.data.Dataset` of `preprocess`'s outputs, batched.
        """
        return _rows_dataset(_pack_in_chunks(self._packing_function(), examples, count), count, batch_size,
                             shuffle, seed)

    def _check_sample_weight_taken(self, x, sample_weight):
        """Refuse a `sample_weight` beside raw examples that cannot take one."""
        if sample_weight is None:
            return
        if not self.takes_sample_weight:
            raise ValueError(f"{type(self).__name__} does not take sample_weight with raw examples: each becomes "
                             "several windows or weighted tokens. Leave it out (or weigh packed inputs' rows).")
        if isinstance(x, tf.data.Dataset):
            raise ValueError("A tf.data.Dataset carries its own sample weights, as in Keras: give it "
                             "(x, y, sample_weight) elements instead of passing sample_weight.")

    def _keras_inputs(self, x, y=None, batch_size=32, shuffle=False, labeled=True, sample_weight=None,
                      labels_from="y (one per example)"):
        """Any accepted input -> what `keras.Model`'s fit/evaluate/predict take:
        `(preprocessed batched Dataset, None)` or `(packed dict, labels)`.
        `labels_from`: where the error of missing labels says to give them.

        Packed inputs pass as they are: this is also how the validation data
        `fit` prepared comes back, when Keras' `fit` calls `evaluate` on it.
        """
        batch_size = checked_batch_size(batch_size)
        x, y = self.standardize_examples(x, y)
        if labeled and isinstance(x, tf.data.Dataset) and _packed_spec(x.element_spec) is None \
                and not self.holds_labels(x.element_spec, labeled):
            raise ValueError(f"The Dataset holds texts but no labels (its elements: {x.element_spec}); fit and "
                             "evaluate take a Dataset of (text, label) or ((text_a, text_b), label)"
                             + ("" if self.takes_text_labels() else ", labels as numbers") + ".")
        self.check_example_form(x, labeled)
        if isinstance(x, dict):
            return x, None if y is None else self.prepare_labels(y)
        self._check_sample_weight_taken(x, sample_weight)
        if isinstance(x, tf.data.Dataset) and _packed_spec(x.element_spec) is not None:
            packed = _packed_spec(x.element_spec)
            self._check_packed_inputs(packed)
            if labeled and isinstance(x.element_spec, tuple) and len(x.element_spec) > 1:
                self.check_dataset_labels(x.element_spec[1])  # before the map traces
                x = x.map(lambda inputs, y, *weights: (inputs, self.packed_dataset_labels(y), *weights))
            return without_autotune_thread(x.batch(batch_size) if packed["token_ids"].shape.rank == 1 else x), None
        if labeled and y is None and not isinstance(x, tf.data.Dataset):
            raise ValueError(f"No labels: pass {labels_from}, or a Dataset of (x, y) or a reader's result.")
        weights = {} if sample_weight is None else {"sample_weight": sample_weight}  # tasks without it
        return self.make_dataset(x, y if labeled else None, batch_size=batch_size, shuffle=shuffle,
                                 labeled=labeled, **weights), None

    # --- Keras API -------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=32, epochs=1, validation_data=None, shuffle=True,
            validation_split=0.0, **kwargs):
        """Train on examples in any form the class docstring lists.

        Args:
            x, y: training examples and their labels (see `input_forms`).
            validation_data: labelled examples to score after every epoch:
                `(x, y)`, or on their own when they hold their labels.
            shuffle: read in-memory examples in an order of each epoch's
                own, drawn from a seed (TensorFlow's, which
                `tf.random.set_seed` fixes; the chief's in a cluster) and the
                epoch's number (`EpochOrders`): resumed from the backup of an
                `AtomicBackupAndRestore` callback (`kbz.finetune`'s), a run
                reads the epochs that an uninterrupted one reads next (after a
                plain Keras `BackupAndRestore`, the first epochs' orders
                again). Keras shuffles packed arrays itself; a Dataset is
                read as it comes.
            validation_split: hold out this last fraction of in-memory
                examples (before shuffling) as validation data, the
                cut moved to keep a QA context's questions on one side;
                not possible for a `tf.data.Dataset`.
            **kwargs: as `keras.Model.fit`; `sample_weight` weighs
                in-memory examples (one number each) where the task
                `takes_sample_weight` (a Dataset carries its own).

        Returns:
            The Keras `History` (with `val_*` entries given validation data).
        """
        batch_size = checked_batch_size(batch_size)
        class_weight = kwargs.pop("class_weight", None)
        weights = None if class_weight is None else self.class_weights(class_weight)
        x, y = self.standardize_examples(x, y)
        sample_weight = kwargs.pop("sample_weight", None)
        given_validation = validation_data is not None
        if validation_split and validation_data is None and not isinstance(x, dict):  # Keras splits packed arrays
            if sample_weight is not None:
                raise ValueError("sample_weight with validation_split is not supported (validation data are not "
                                 "weighed): pass validation_data=(x, y) instead.")
            x, y, validation_data = self._split_off(x, y, validation_split)
            validation_split = 0.0
        steps_asked = kwargs.get("steps_per_epoch")
        orders = None
        if shuffle and not isinstance(x, (dict, tf.data.Dataset)):  # Keras shuffles arrays; a Dataset, nobody
            # Drawn by TensorFlow, which tf.random.set_seed seeds (keras.utils.set_random_seed too), as the
            # Dataset.shuffle it replaces; one seed for all workers of a cluster.
            seed = chiefs_seed(self.distribute_strategy, int(tf.random.uniform((), 0, 2**31 - 1, tf.int64)))
            orders = EpochOrders(seed, first_epoch=_resumed_epoch(kwargs), epochs=epochs)
        data, labels = self._keras_inputs(x, y, batch_size=batch_size, shuffle=orders or shuffle,
                                          sample_weight=sample_weight)
        if orders is not None and not isinstance(data, dict) and not steps_asked:
            # Keras reads the epochs' batches from one iterator, a pass each.
            kwargs["steps_per_epoch"] = int(data.cardinality()) // orders.passes
        if isinstance(data, dict) and sample_weight is not None:
            kwargs["sample_weight"] = sample_weight  # Keras weighs packed arrays itself
        if weights is not None:
            if isinstance(data, dict):
                kwargs["class_weight"] = dict(enumerate(weights))  # Keras', each class given
            else:
                # Into the batches' sample weights, which Keras refuses beside class_weight (NER's are its masks).
                data = data.map(_weighed_by_class(weights))
        # Keras batches validation data by validation_batch_size (batch_size where None); it ignores it for the
        # Dataset prepared here, so it is applied here (it was ignored in silence, and packed arrays beside a
        # Dataset were batched by 32).
        validation_batch_size = kwargs.pop("validation_batch_size", None)
        if validation_batch_size is not None:
            validation_batch_size = positive_whole_number(validation_batch_size, "validation_batch_size")
        if validation_data is not None:
            val_x, val_y = _validation_xy(validation_data)
            # Named in errors where the user gave it (validation_split's part is of x and y).
            with _validation_data_errors() if given_validation else contextlib.nullcontext():
                val_data, val_labels = self._keras_inputs(val_x, val_y, labels_from="(x, y)",
                                                          batch_size=validation_batch_size or batch_size)
            validation_data = val_data if val_labels is None else (val_data, val_labels)
        if getattr(self, "_fit_schedules", False):
            # Keras ignores validation_split when given validation_data.
            self._schedule_for_fit(data, batch_size, epochs, kwargs,
                                   validation_split if validation_data is None else 0.0)
        self.training_starts()
        with warnings.catch_warnings(), _reading_to_the_end(steps_asked):
            if not self.uses_pooler:
                warnings.filterwarnings("ignore", message=r"Gradients do not exist for variables \['pooled_dense")
            # Packed arrays of validation data are batched by Keras.
            kwargs["validation_batch_size"] = validation_batch_size or batch_size
            if isinstance(data, dict):
                return super().fit(data, labels, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
                                   validation_split=validation_split, shuffle=shuffle, **kwargs)
            # Shuffling happened in make_dataset (Keras cannot shuffle a Dataset).
            return super().fit(data, epochs=epochs, validation_data=validation_data, shuffle=False, **kwargs)

    def _split_off(self, x, y, fraction):
        """Keras' `validation_split` for examples held in memory: `(x, y, (x_held, y_held))`."""
        if isinstance(x, tf.data.Dataset):
            raise ValueError("validation_split cannot split a tf.data.Dataset (as in Keras): pass "
                             "validation_data=..., or split a reader's result: train, dev = examples.split(0.1).")
        if y is not None and len(y) != len(x):
            raise ValueError(f"{len(x)} examples but {len(y)} labels.")
        if y is not None:
            self.prepare_labels(y)  # checked whole: an error counts a label from y's start, not the held-out part's
        if not 0 < fraction < 1:
            raise ValueError(f"validation_split must be between 0 and 1; got {fraction}.")
        cut = math.ceil(len(x) * (1 - fraction))  # Keras' rounding
        if cut == len(x):
            raise ValueError(f"validation_split={fraction} of {len(x)} examples holds out none of them.")
        cut = _group_boundary(x, cut, fraction)
        head, tail = slice(None, cut), slice(cut, None)
        if y is None:  # QA examples hold their answers
            return _slice(x, head), None, (_slice(x, tail), None)
        return _slice(x, head), _slice(y, head), (_slice(x, tail), _slice(y, tail))

    def evaluate(self, x=None, y=None, batch_size=32, sample_weight=None, **kwargs):
        if kwargs.get("_use_cached_eval_dataset"):
            # Keras' fit scoring the validation data fit prepared, through its own cached iterator: the labels are
            # class ids already, which label names that are numbers would refuse (`class_labels.misnumbered_class`).
            with _reading_to_the_end(kwargs.get("steps")):
                return super().evaluate(**kwargs)
        data, labels = self._keras_inputs(x, y, batch_size=batch_size, sample_weight=sample_weight)
        if isinstance(data, dict):
            if labels is None:
                raise ValueError("No labels: pass y (one per example) to evaluate packed inputs.")
            data = _packed_rows(data, checked_batch_size(batch_size), labels, sample_weight)
        with _reading_to_the_end(kwargs.get("steps")):
            return super().evaluate(data, **kwargs)

    def predict(self, x, batch_size=32, **kwargs):
        x, _ = self.standardize_examples(x)  # a reader's labels are not needed
        if _example_count(x) == 0:
            # Keras cannot predict without a batch; the model maps an empty
            # batch to outputs of the right structure and width.
            length = self.preprocessor.sequence_length
            return self.predict_on_batch({name: np.zeros((0, length), "int32") for name in self.backbone.input})
        data, _ = self._keras_inputs(x, batch_size=batch_size, labeled=False)
        kwargs.setdefault("verbose", 0)
        if isinstance(data, dict):  # packed arrays, batched in order as Keras would
            data = _packed_rows(data, checked_batch_size(batch_size))
        with _reading_to_the_end(kwargs.get("steps")):
            return super().predict(data, **kwargs)

    def train_step(self, data):
        """Keras' train step, every op of it run after its batch is read (see `_after_reading`)."""
        with _after_reading(data):
            return super().train_step(data)

    def test_step(self, data):
        """Keras' test step, every op of it run after its batch is read (see `_after_reading`)."""
        with _after_reading(data):
            return super().test_step(data)

    def quantize(self, mode=None, config=None, filters=None, **kwargs):
        """Keras' `Model.quantize` (e.g. `"int8"`) on the backbone and heads.

        By default only the layers Keras can quantize (dense, einsum-dense
        and embedding layers) outside the preprocessor, whose weightless
        layers a graph-mode call leaves unbuilt (they would refuse), and
        without a warning for each layer Keras cannot quantize (dropout,
        LayerNorm...). `filters` given: Keras' own rules.
        """
        if filters is None:
            preprocessing = {id(layer) for layer in self.preprocessor._flatten_layers()} if self.preprocessor else set()
            quantizable = (keras.layers.Dense, keras.layers.EinsumDense, keras.layers.Embedding)

            def filters(layer):
                return isinstance(layer, quantizable) and id(layer) not in preprocessing

        with one_garbage_collection():  # Keras collected garbage once per kernel it replaced: 10 s for MiniLM
            super().quantize(mode, config=config, filters=filters, **kwargs)

    def make_predict_function(self, force=False):
        """Keras' predict step, traced once for batches of any size and length.

        Keras traces it again for each new batch shape (a call's last partial
        batch, the next call's other size, QA's varying window counts), and
        TensorFlow then warns of retracing. One trace on a `[None, None]`
        signature serves them all; a traced-up-front function is not counted
        as retracing either.
        """
        if self.predict_function is not None and not force:
            return self.predict_function
        super().make_predict_function(force=force)
        if not self.run_eagerly and self.steps_per_execution == 1:
            # Keras calls it with a list of one batch of inputs.
            signature = keras.tree.map_structure(lambda t: tf.TensorSpec([None] * len(t.shape), t.dtype), self.input)
            self.predict_function.get_concrete_function([signature])
        return self.predict_function

    # --- Serialization ---------------------------------------------------

    @staticmethod
    def backbone_inputs(backbone):
        """Symbolic inputs matching the backbone's, for a task's functional graph."""
        return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in backbone.input}

    def get_config(self):
        return {
            "name": own_name(self),
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
            "preprocessor": keras.layers.serialize(self.preprocessor) if self.preprocessor is not None else None,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("backbone", "preprocessor"):
            if config.get(key) is not None:  # a pretrainer may have none (and, saved by earlier versions, no key)
                config[key] = keras.layers.deserialize(config[key])
        return cls(**config)

    # --- Serving ---------------------------------------------------------

    def task_signatures(self, text_preprocessor):
        """The serving signatures this task adds to `embed` and `predict_ids`
        (`export` writes them); the first is `serving_default`."""
        return []

    def export(self, export_base, version=None, model_name=None, overwrite=False, serving_device="cpu"):
        """Export for TensorFlow Serving with raw-text signatures (see
        `kbz.export.export_for_serving`, `serving_device` included); returns
        the version directory.

        This replaces `keras.Model.export`, whose SavedModel takes packed ids.
        """
        return export_for_serving(self, export_base, version=version, model_name=model_name, overwrite=overwrite,
                                  serving_device=serving_device)

    # --- Presets ---------------------------------------------------------

    def save(self, filepath, overwrite=True, zipped=None, **kwargs):
        """Keras' `save`, refusing a quantized model (see `refuse_quantized`), which it wrote unloadable."""
        refuse_quantized(self, saved_as="a .keras file of this task")
        super().save(filepath, overwrite=overwrite, zipped=zipped, **kwargs)

    def save_to_preset(self, preset_dir):
        """Write the backbone, the preprocessor's tokenizer and this task
        (config + weights) as a preset directory, which `from_preset` loads
        back whole.

        Args:
            preset_dir: the directory to write, atomically: new, empty, or a
                saved preset (replaced as a whole); one holding anything
                else is refused, as is the current directory or one holding
                it. Through a symbolic link the link's target is written.
        """
        tokenizer = self.preprocessor.tokenizer if self.preprocessor is not None else None
        save_preset(preset_dir, backbone=self.backbone, tokenizer=tokenizer, task=self)

    @classmethod
    def from_preset(cls, preset, load_weights=True, sequence_length=None, **kwargs):
        """Create a task from a preset.

        A preset holding a saved task (written by `save_to_preset`, e.g.
        after fine-tuning) comes back whole, as the class it was saved from
        (found in Keras' serialization registry), provided that is `cls` or
        a subclass: `Task.from_preset` returns any saved task. So does a
        task fine-tuned elsewhere (a transformers
        `BertForTokenClassification`, ...; run_classifier.py's or
        run_squad.py's checkpoint), with its trained head. Any other preset
        provides the backbone and tokenizer and the task's head starts fresh
        with `**kwargs` (e.g. `num_classes=2`); so does a preset that holds
        pretraining heads (a converted checkpoint), unless `cls` is the
        pretrainer, which gets them, and a task fine-tuned elsewhere loaded
        as another task (its head is left out, with a warning).

        Args:
            preset: a preset name, a directory (saved preset, HF or Google
                checkpoint), an `hf://` handle or an archive URL.
            load_weights: load the preset's weights (else random init).
            sequence_length: the preprocessor's packed length, at most the
                backbone's positions (default: `default_sequence_length`,
                cut to the positions; see `utils.packed_length`).
            **kwargs: the task's arguments (for a saved task, they replace
                its saved ones, e.g. a question answerer's `doc_stride`;
                its `label_names` in another order reorder its outputs);
                those in `backbone_kwargs` (e.g. `dtype`) configure the
                backbone.

        Returns:
            A `cls` (or a subclass).

        Raises:
            PresetError: the preset holds a task that is not a `cls`, or
                (`Task.from_preset`) no task at all.
            TypeError: an argument the task (or a saved task) does not
                take, named with the closest one it takes.

        Examples:
        >>> import tempfile
        >>> import keras_bert_zoo as kbz
        >>> clf = kbz.BertClassifier.from_preset("minilm_l6_h384_en_uncased", num_classes=2,
        ...                                      sequence_length=16)
        >>> path = tempfile.mkdtemp()
        >>> clf.save_to_preset(path)
        >>> type(kbz.Task.from_preset(path)).__name__
        'BertClassifier'
        """
        if cls is Task and saved_task_class(preset) is None:
            tasks = sorted(task.__name__ for task in Task.__subclasses__())
            raise PresetError(f"{preset} holds a backbone but no saved task: call the from_preset of the task "
                              f"to start, one of {', '.join(tasks)} (e.g. BertClassifier.from_preset({preset!r}, "
                              "num_classes=2)).")
        if cls is not Task:  # Task's is the saved class's, found by the loader
            cls.refuse_unknown_arguments(kwargs, from_preset=True)
        return load_task(preset, cls, load_weights=load_weights, sequence_length=sequence_length, **kwargs)
