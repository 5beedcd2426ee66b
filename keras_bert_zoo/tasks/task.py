"""Base class of the fine-tuning tasks: Keras models that take raw text."""

import math
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.training.multi_worker_build import MultiWorkerBuildMixin


def _is_text_batch(x):
    if isinstance(x, np.ndarray):
        return x.ndim in (1, 2)
    return isinstance(x, (list, tuple)) and not (len(x) and isinstance(x[0], dict))


def _example_count(x):
    """How many examples a list / array / packed dict holds (None for a Dataset)."""
    if isinstance(x, dict):
        return len(next(iter(x.values()))) if x else 0
    if _is_text_batch(x):
        return len(x)
    return None


class Task(MultiWorkerBuildMixin, keras.Model):
    """A functional Keras model over `BertBackbone` inputs plus the
    preprocessing that turns raw examples into those inputs.

    `fit`, `evaluate` and `predict` accept:
    - a `tf.data.Dataset` of `(examples, labels)` (batched or not), where an
      example is a string or a `(text_a, text_b)` tuple of strings;
    - Python lists (or numpy arrays) of examples (and labels);
    - already packed inputs (a dict with `token_ids`, ...).

    Python inputs are checked before any graph work: a non-string text is
    named by its index (`check_texts`), labels by `prepare_labels`, packed
    dicts must hold exactly the backbone's inputs. An empty list predicts an
    empty result; training or evaluating on one is refused.

    If the task was compiled with the default optimizer ("auto"), `fit`
    re-creates it as BERT's AdamW with 10% linear warm-up and linear decay
    over exactly the steps it is about to run.
    """

    default_learning_rate = 5e-5
    # run_classifier.py's max_seq_length; QA overrides it (384).
    default_sequence_length = 128
    # Heads on token vectors leave the backbone's pooler without gradients.
    uses_pooler = True

    def __init__(self, inputs, outputs, **kwargs):
        self._check_preprocessor_fits_backbone()
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

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

    @classmethod
    def make_preprocessor(cls, tokenizer, sequence_length, max_sequence_length):
        """The preprocessing layer this task takes, for `from_preset`."""
        from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor

        return BertPreprocessor(tokenizer, sequence_length=sequence_length, max_sequence_length=max_sequence_length)

    # --- Compilation -----------------------------------------------------

    def default_loss(self):
        raise NotImplementedError

    def default_metrics(self):
        return []

    def compile(self, optimizer="auto", loss="auto", metrics="auto", learning_rate=None, total_steps=None,
                **kwargs):
        """Compile with BERT's defaults unless given.

        Args:
            optimizer: `"auto"` for `bert_adamw` (re-scheduled by `fit`).
            loss: `"auto"` for the task's loss.
            metrics: `"auto"` for the task's metrics.
            learning_rate: peak learning rate for the `"auto"` optimizer.
            total_steps: steps of the `"auto"` optimizer's warm-up + decay
                schedule (set by `fit`).
            **kwargs: passed to `keras.Model.compile` (e.g. `jit_compile`,
                `steps_per_execution`).
        """
        self._auto_optimizer = isinstance(optimizer, str) and optimizer == "auto"
        self._learning_rate = learning_rate or getattr(self, "_learning_rate", None) or self.default_learning_rate
        self._total_steps = total_steps if self._auto_optimizer else None
        self._compile_args = {"loss": loss, "metrics": metrics, **kwargs}
        if self._auto_optimizer:
            optimizer = bert_adamw(self._learning_rate, total_steps=total_steps)
        super().compile(
            optimizer=optimizer,
            loss=self.default_loss() if isinstance(loss, str) and loss == "auto" else loss,
            metrics=self.default_metrics() if isinstance(metrics, str) and metrics == "auto" else metrics,
            **kwargs,
        )

    def get_compile_config(self):
        if getattr(self, "_auto_optimizer", False):
            return {"auto_optimizer": {"learning_rate": self._learning_rate, "total_steps": self._total_steps}}
        return super().get_compile_config()

    def compile_from_config(self, config):
        if "auto_optimizer" not in config:
            return super().compile_from_config(config)
        with self.distribute_strategy.scope():
            self.compile(**config["auto_optimizer"])
            # Built now, so that a saved optimizer state can load into it.
            self.optimizer.build(self.trainable_variables)

    def _schedule_optimizer(self, total_steps):
        args = dict(self._compile_args)
        with self.distribute_strategy.scope():
            self.compile("auto", learning_rate=self._learning_rate, total_steps=total_steps, **args)

    # --- Data ------------------------------------------------------------

    def prepare_labels(self, y):
        """Check labels given as a list or array before any graph work; return
        what the model trains on. Tasks with class labels override this."""
        return y

    def _check_packed_inputs(self, x):
        expected = sorted(self.backbone.input)
        unknown = sorted(set(x) - set(expected))
        missing = sorted(set(expected) - set(x))
        if unknown or missing:
            raise ValueError(
                f"Packed inputs must have exactly the keys {expected}; "
                + (f"unknown: {unknown}. " if unknown else "")
                + (f"missing: {missing}. " if missing else "")
                + "Pass raw texts to let the task pack them."
            )

    def preprocess(self, x, y=None, sample_weight=None):
        """Turn a batch of raw examples (and labels) into model inputs."""
        return keras.utils.pack_x_y_sample_weight(self.preprocessor(x), y, sample_weight)

    @staticmethod
    def _columns(examples):
        """A list of strings or pairs -> a tensor or a tuple of tensors."""
        if examples and isinstance(examples[0], (tuple, list)):
            return tuple(tf.constant([e[i] for e in examples]) for i in range(len(examples[0])))
        return tf.constant(list(examples))

    def make_dataset(self, x, y=None, batch_size=32, shuffle=False, seed=None, labeled=True):
        """Build the preprocessed, batched `tf.data.Dataset` fed to Keras.

        `labeled=False` (prediction): each element of a Dataset `x` is an
        example, even when it is a `(text_a, text_b)` tuple.
        """
        if isinstance(x, tf.data.Dataset):
            ds = x
            first = tf.nest.flatten(ds.element_spec)[0]
            if first.shape.rank == 0:
                ds = ds.batch(batch_size)
            if not labeled:
                ds = ds.map(lambda *example: (example if len(example) > 1 else example[0],))
        elif isinstance(x, dict):
            self._check_packed_inputs(x)
            return x  # already packed inputs
        else:
            if not _is_text_batch(x):
                raise TypeError(
                    "Pass a tf.data.Dataset, a list of texts / (text_a, text_b) pairs, "
                    f"or a dict of packed inputs; got {type(x).__name__}."
                )
            x = check_texts(x)
            if not x:
                raise ValueError("No examples: the input list is empty.")
            if y is not None:
                if len(y) != len(x):
                    raise ValueError(f"{len(x)} examples but {len(y)} labels.")
                y = np.asarray(self.prepare_labels(y))
            columns = self._columns(x)
            # A 1-tuple, so that map() passes a pair of texts as one argument.
            ds = tf.data.Dataset.from_tensor_slices((columns,) if y is None else (columns, y))
            if shuffle:
                ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
            ds = ds.batch(batch_size)
        ds = ds.map(self.preprocess, num_parallel_calls=tf.data.AUTOTUNE)
        return ds.prefetch(tf.data.AUTOTUNE)

    # --- Keras API -------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=32, epochs=1, validation_data=None, shuffle=True, **kwargs):
        if isinstance(x, dict) and y is not None:
            y = self.prepare_labels(y)
        ds = self.make_dataset(x, y, batch_size=batch_size, shuffle=shuffle)
        if validation_data is not None:
            if isinstance(validation_data, tuple) and len(validation_data) == 2 and not isinstance(validation_data[0], str):
                validation_data = self.make_dataset(*validation_data, batch_size=batch_size)
            else:
                validation_data = self.make_dataset(validation_data, batch_size=batch_size)
        if getattr(self, "_auto_optimizer", False):
            if isinstance(ds, dict):
                steps = math.ceil(len(next(iter(ds.values()))) / batch_size)
            else:
                steps = kwargs.get("steps_per_epoch") or int(ds.cardinality())
            if steps > 0:
                self._schedule_optimizer(steps * (epochs - kwargs.get("initial_epoch", 0)))
        with warnings.catch_warnings():
            if not self.uses_pooler:
                warnings.filterwarnings("ignore", message=r"Gradients do not exist for variables \['pooled_dense")
            if isinstance(ds, dict):
                return super().fit(ds, y, batch_size=batch_size, epochs=epochs, validation_data=validation_data,
                                   shuffle=shuffle, **kwargs)
            # Shuffling happened in make_dataset (Keras cannot shuffle a Dataset).
            return super().fit(ds, epochs=epochs, validation_data=validation_data, shuffle=False, **kwargs)

    def evaluate(self, x=None, y=None, batch_size=32, **kwargs):
        if isinstance(x, dict) and y is not None:
            y = self.prepare_labels(y)
        ds = self.make_dataset(x, y, batch_size=batch_size)
        if isinstance(ds, dict):
            return super().evaluate(ds, y, batch_size=batch_size, **kwargs)
        return super().evaluate(ds, **kwargs)

    def predict(self, x, batch_size=32, **kwargs):
        if _example_count(x) == 0:
            # Keras cannot predict without a batch; the model maps an empty
            # batch to outputs of the right structure and width.
            length = self.preprocessor.sequence_length
            return self.predict_on_batch({name: np.zeros((0, length), "int32") for name in self.backbone.input})
        ds = self.make_dataset(x, batch_size=batch_size, labeled=False)
        kwargs.setdefault("verbose", 0)
        return super().predict(ds, **kwargs)

    # --- Serialization ---------------------------------------------------

    @staticmethod
    def backbone_inputs(backbone):
        """Symbolic inputs matching the backbone's, for a task's functional graph."""
        return {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in backbone.input}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.layers.serialize(self.backbone),
            "preprocessor": keras.layers.serialize(self.preprocessor),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("backbone", "preprocessor"):
            config[key] = keras.layers.deserialize(config[key])
        return cls(**config)

    # --- Serving ---------------------------------------------------------

    def export(self, export_base, version=None, model_name=None, overwrite=False):
        """Export for TensorFlow Serving with raw-text signatures (see
        `kbz.export.export_for_serving`); returns the version directory.

        This replaces `keras.Model.export`, whose SavedModel takes packed ids.
        """
        from keras_bert_zoo.export.export_for_serving import export_for_serving

        return export_for_serving(self, export_base, version=version, model_name=model_name, overwrite=overwrite)

    # --- Presets ---------------------------------------------------------

    def save_to_preset(self, preset_dir):
        """Write backbone, tokenizer and this task (config + weights)."""
        from keras_bert_zoo.presets.preset_io import save_preset

        save_preset(preset_dir, backbone=self.backbone, tokenizer=self.preprocessor.tokenizer, task=self)

    @classmethod
    def from_preset(cls, preset, load_weights=True, sequence_length=None, **kwargs):
        """Create the task from a preset.

        A preset saved from this task type (e.g. after fine-tuning) comes
        back whole; any other preset provides the backbone and tokenizer and
        the task head starts fresh with `**kwargs` (e.g. `num_classes=2`).
        """
        from keras_bert_zoo.presets.loader import load_task

        return load_task(preset, cls, load_weights=load_weights, sequence_length=sequence_length, **kwargs)
