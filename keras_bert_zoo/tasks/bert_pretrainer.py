"""BERT with its two pretraining heads: masked-LM and next-sentence prediction."""

import warnings

import keras
import tensorflow as tf

from keras_bert_zoo.export.masked_lm_signature import masked_lm_outputs
from keras_bert_zoo.export.masked_lm_signature import masked_lm_signatures
from keras_bert_zoo.layers.activations import get_activation
from keras_bert_zoo.layers.masked_lm_head import MaskedLMHead
from keras_bert_zoo.models.bert_backbone import BertBackbone  # noqa: F401 (docstring examples)
from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.presets.preset_io import save_preset
from keras_bert_zoo.tasks.fused_sparse_categorical_crossentropy import FusedSparseCategoricalCrossentropy
from keras_bert_zoo.tasks.task import Task
from keras_bert_zoo.tasks.task import _packed_spec
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertPretrainer(Task):
    """A `BertBackbone` with BERT's masked-LM and next-sentence heads.

    The masked-LM head is keras-hub's `MaskedLMHead` (its tied projection
    as one matmul, `layers.masked_lm_head`): dense + activation + LayerNorm,
    then the decoder tied to the token embedding plus an output bias
    (google-research/bert's `cls/predictions`). The next-sentence head is a
    2-way dense layer on the pooled output (`cls/seq_relationship`; label 0
    = IsNext).

    Compiled by default as `run_pretraining.py` trains: loss = masked-LM
    cross-entropy (`FusedSparseCategoricalCrossentropy`) averaged over the
    real predictions (`mask_weights`) + next-sentence cross-entropy; metrics `masked_lm_accuracy` (weighted)
    and `next_sentence_accuracy`; BERT's AdamW. `fit` takes the batches of
    `kbz.data.pretraining_batches`: `(inputs, labels, sample_weights)`.
    Losses and metrics are logged (progress bar, history, TensorBoard,
    `evaluate`) under `run_pretraining.py`'s names: `masked_lm_loss`,
    `next_sentence_accuracy`, ..., not Keras' `masked_lm_logits_loss`.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: optional `BertPreprocessor`, which `fill_mask` and the
            export tokenize with and `save_to_preset` saves the tokenizer of
            (`from_preset` attaches the preset's). Training takes packed
            batches and does not need it.

    Inputs:
        The backbone's inputs plus `mask_positions`, int32 `[batch, P]`.

    Outputs:
        A dict with `masked_lm_logits` `[batch, P, vocab]` and
        `next_sentence_logits` `[batch, 2]`.

    Examples:
    >>> backbone = BertBackbone(vocabulary_size=30, num_layers=1, num_heads=2,
    ...                         hidden_dim=8, intermediate_dim=16)
    >>> model = BertPretrainer(backbone)
    >>> sorted(model.output)
    ['masked_lm_logits', 'next_sentence_logits']
    """

    needs_preprocessor = False
    # Each was passed to the backbone before the pretrainer was a Task; the pretrainer has no options of its own.
    backbone_kwargs = ("dtype", "dropout", "return_all_layers")
    starts_other_tasks = True
    fresh_heads_warning = ("has no masked-LM / next-sentence head weights; the heads are freshly initialised "
                           "(the masked-LM decoder is still tied to the pretrained word embeddings).")
    input_forms = ("batches of packed inputs with their mask_positions, labels and sample weights, as "
                   "kbz.data.pretraining_batches makes them (a tf.data.Dataset), or such packed inputs as a dict")

    def __init__(self, backbone, preprocessor=None, **kwargs):
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
        self.masked_lm_head = MaskedLMHead(
            token_embedding=backbone.token_embedding,
            intermediate_activation=get_activation(backbone.hidden_activation),
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=initializer,
            dtype=backbone.dtype_policy,
            name="masked_lm_head",
        )
        # In the backbone's dtype policy, as the masked-LM head beside it, rather than `logits_layer`'s float32:
        # pretraining under mixed precision computes as it did when it was measured.
        self.next_sentence_head = keras.layers.Dense(
            2, kernel_initializer=initializer, dtype=backbone.dtype_policy, name="next_sentence_head"
        )

        # === Functional Model ===
        inputs = self.backbone_inputs(backbone)
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        # The last layer runs on [CLS] and the masked tokens alone: nothing else of it reaches a head.
        backbone_outputs = backbone({k: inputs[k] for k in backbone.input}, positions=inputs["mask_positions"])
        outputs = {
            "masked_lm_logits": self.masked_lm_head(backbone_outputs["sequence_output"]),
            "next_sentence_logits": self.next_sentence_head(backbone_outputs["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.compile()

    def default_loss(self):
        return {
            # Averaged over the real predictions only (the weights), as run_pretraining.py does.
            "masked_lm_logits": FusedSparseCategoricalCrossentropy(
                from_logits=True, reduction="mean_with_sample_weight"),
            "next_sentence_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        }

    def compile(self, optimizer="auto", loss="auto", learning_rate=1e-4, total_steps=None, warmup_steps=None,
                weight_decay=0.01, bias_correction=True, **kwargs):
        """Compile for pretraining.

        Args:
            optimizer: `"auto"`: BERT's AdamW (LayerNorm and biases not
                decayed) with linear warm-up and decay over `total_steps`.
            loss: `"auto"`: masked-LM + next-sentence cross-entropy.
            learning_rate: peak rate (paper: 1e-4).
            total_steps: steps of the run (`None`: constant rate).
            warmup_steps: default the paper's 10,000, or 10% of a shorter
                run (`total_steps` under 100,000).
            weight_decay: decoupled weight decay (0.01).
            bias_correction: Adam's bias correction (Keras'); False steps
                as run_pretraining.py's `AdamWeightDecayOptimizer` (see
                `bert_adamw`).
            **kwargs: passed to `keras.Model.compile` (`jit_compile`,
                `steps_per_execution`, ...).
        """
        self._schedule = None
        if isinstance(optimizer, str) and optimizer == "auto":
            if total_steps is not None and warmup_steps is None:
                warmup_steps = min(10_000, int(round(0.1 * total_steps)))
            self._schedule = {"learning_rate": learning_rate, "total_steps": total_steps,
                              "warmup_steps": warmup_steps, "weight_decay": weight_decay}
            if not bias_correction:  # only then: configs saved before it existed compile as they did
                self._schedule["bias_correction"] = False
            # Built here, not by Task.compile: `fit` keeps this schedule rather than re-scheduling it.
            optimizer = bert_adamw(learning_rate, total_steps=total_steps, warmup_steps=warmup_steps,
                                   weight_decay=weight_decay, bias_correction=bias_correction)
        if isinstance(loss, str) and loss == "auto":
            kwargs.setdefault("weighted_metrics", {
                "masked_lm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "next_sentence_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            })
        super().compile(optimizer=optimizer, loss=loss, metrics=kwargs.pop("metrics", None),
                        learning_rate=learning_rate, **kwargs)

    def get_compile_config(self):
        # What `compile_from_config` (Task's) passes back to `compile` on loading.
        if self._schedule is not None:
            return {"auto_optimizer": self._schedule}
        return super().get_compile_config()

    def compile_from_config(self, config):
        if "auto_optimizer" in config:
            return super().compile_from_config(config)
        # Presets saved before the pretrainer recorded its schedule hold Keras' record of the default compile,
        # which __init__ has done; Keras would only warn that it cannot redo it.

    def get_metrics_result(self):
        # Keras prefixes each score with its output's name (`masked_lm_logits_accuracy`); run_pretraining.py
        # and the papers say `masked_lm_accuracy`. Renamed here, every log (progress, history, TensorBoard,
        # evaluate) carries the one name.
        prefixes = {f"{name}_": f"{name.removesuffix('_logits')}_" for name in self.output}
        renamed = {}
        for key, value in super().get_metrics_result().items():
            prefix = next((p for p in prefixes if key.startswith(p)), None)
            renamed[prefixes[prefix] + key[len(prefix):] if prefix else key] = value
        return renamed

    def standardize_examples(self, x, y=None):
        """Pretraining examples come packed (see `input_forms`); raw text is refused, naming them."""
        packed = isinstance(x, dict) or isinstance(x, tf.data.Dataset) and _packed_spec(x.element_spec) is not None
        if not packed:
            raise TypeError(f"{type(self).__name__} takes {self.input_forms}; got {type(x).__name__}.")
        return super().standardize_examples(x, y)

    def task_signatures(self, text_preprocessor):
        """`fill_mask` and `fill_mask_pairs` for the export (see `export_for_serving`)."""
        return masked_lm_signatures(self, text_preprocessor)

    def fill_mask(self, texts, preprocessor=None, top_k=5):
        """The `top_k` likeliest tokens for each `[MASK]` in each text.

        Args:
            texts: strings containing the literal `[MASK]`, or
                `(text_a, text_b)` pairs.
            preprocessor: deprecated: attach it instead
                (`BertPretrainer(backbone, preprocessor=...)`; `from_preset`
                attaches the preset's).
            top_k: how many tokens per mask.

        Returns:
            Per text, per mask: `[(token, probability)]`, likeliest first.

        Examples:
        >>> import keras_bert_zoo as kbz
        >>> tokenizer = kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
        >>> backbone = BertBackbone(vocabulary_size=7, num_layers=1, num_heads=2,
        ...                         hidden_dim=8, intermediate_dim=16)
        >>> model = BertPretrainer(backbone, preprocessor=kbz.BertPreprocessor(tokenizer, 8))
        >>> guesses = model.fill_mask(["a [MASK] b"], top_k=2)
        >>> len(guesses[0]), len(guesses[0][0])
        (1, 2)
        """
        if preprocessor is not None:
            warnings.warn("fill_mask's `preprocessor` argument is deprecated: attach the preprocessor to the model "
                          "(BertPretrainer(backbone, preprocessor=...); from_preset attaches the preset's). It will "
                          "be removed in the next release.", DeprecationWarning, stacklevel=2)
        preprocessor = preprocessor or self.preprocessor
        if preprocessor is None:
            raise ValueError("fill_mask needs a preprocessor: create the model with preprocessor=BertPreprocessor(...) "
                             "or load it with from_preset.")
        texts = list(texts)
        columns = [tf.constant([t[i] for t in texts]) for i in range(len(texts[0]))] \
            if texts and isinstance(texts[0], (tuple, list)) else [tf.constant(texts)]
        outputs = masked_lm_outputs(self, preprocessor, columns, top_k)
        vocabulary = preprocessor.tokenizer.get_vocabulary()
        ids, scores = outputs["top_token_ids"].numpy(), outputs["top_scores"].numpy()
        return [
            [[(vocabulary[i], float(p)) for i, p in zip(ids[row, m], scores[row, m])] for m in range(count)]
            for row, count in enumerate(outputs["mask_count"].numpy())
        ]

    def save_to_preset(self, preset_dir, tokenizer=None):
        """Write the backbone, the tokenizer and both heads as a preset directory.

        Args:
            preset_dir: the directory to write (replaced atomically).
            tokenizer: deprecated: attach a preprocessor instead, whose
                tokenizer is saved.
        """
        if tokenizer is None:
            return super().save_to_preset(preset_dir)
        warnings.warn("save_to_preset's `tokenizer` argument is deprecated: attach a preprocessor to the model "
                      "(BertPretrainer(backbone, preprocessor=...)), whose tokenizer is saved. It will be removed "
                      "in the next release.", DeprecationWarning, stacklevel=2)
        check_tokenizer(tokenizer, "BertPretrainer.save_to_preset")
        save_preset(preset_dir, backbone=self.backbone, tokenizer=tokenizer, task=self)
