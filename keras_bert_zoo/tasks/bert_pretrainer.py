"""BERT with its two pretraining heads: masked-LM and next-sentence prediction."""

import keras
import tensorflow as tf
from keras_hub.layers import MaskedLMHead

from keras_bert_zoo.distribution.multi_worker_build import MultiWorkerBuildMixin
from keras_bert_zoo.export.masked_lm_signature import masked_lm_outputs
from keras_bert_zoo.export.masked_lm_signature import masked_lm_signatures
from keras_bert_zoo.layers.activations import get_activation
from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.presets.loader import load_pretrainer
from keras_bert_zoo.presets.preset_io import save_preset


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertPretrainer(MultiWorkerBuildMixin, keras.Model):
    """A `BertBackbone` with BERT's masked-LM and next-sentence heads.

    The masked-LM head is keras-hub's `MaskedLMHead`: dense + activation +
    LayerNorm, then the decoder tied to the token embedding plus an output
    bias (google-research/bert's `cls/predictions`). The next-sentence head is
    a 2-way dense layer on the pooled output (`cls/seq_relationship`;
    label 0 = IsNext).

    Compiled by default as `run_pretraining.py` trains: loss = masked-LM
    cross-entropy averaged over the real predictions (`mask_weights`) +
    next-sentence cross-entropy; metrics `masked_lm_logits_accuracy`
    (weighted) and `next_sentence_logits_accuracy`; BERT's AdamW. `fit` takes the batches of
    `kbz.data.pretraining_batches`: `(inputs, labels, sample_weights)`.

    Args:
        backbone: a `BertBackbone`.

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

    # What `from_preset` and checkpoint conversion build the backbone and tokenizer
    # (`preprocessor_cls.tokenizer_cls`) as; `fill_mask` takes a `preprocessor_cls`.
    backbone_cls = BertBackbone
    preprocessor_cls = BertPreprocessor

    def __init__(self, backbone, **kwargs):
        # === Layers ===
        self.backbone = backbone
        initializer = keras.initializers.TruncatedNormal(stddev=backbone.initializer_range)
        self.masked_lm_head = MaskedLMHead(
            token_embedding=backbone.token_embedding,
            intermediate_activation=get_activation(backbone.hidden_activation),
            layer_norm_epsilon=backbone.layer_norm_epsilon,
            kernel_initializer=initializer,
            dtype=backbone.dtype_policy,
            name="masked_lm_head",
        )
        self.next_sentence_head = keras.layers.Dense(
            2, kernel_initializer=initializer, dtype=backbone.dtype_policy, name="next_sentence_head"
        )

        # === Functional Model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name) for name in backbone.input}
        inputs["mask_positions"] = keras.Input(shape=(None,), dtype="int32", name="mask_positions")
        backbone_outputs = backbone({k: inputs[k] for k in backbone.input})
        outputs = {
            "masked_lm_logits": self.masked_lm_head(
                backbone_outputs["sequence_output"], mask_positions=inputs["mask_positions"]
            ),
            "next_sentence_logits": self.next_sentence_head(backbone_outputs["pooled_output"]),
        }
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.compile()

    def compile(self, optimizer="auto", loss="auto", learning_rate=1e-4, total_steps=None, warmup_steps=None,
                weight_decay=0.01, **kwargs):
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
            **kwargs: passed to `keras.Model.compile` (`jit_compile`,
                `steps_per_execution`, ...).
        """
        if isinstance(optimizer, str) and optimizer == "auto":
            if total_steps is not None and warmup_steps is None:
                warmup_steps = min(10_000, int(round(0.1 * total_steps)))
            optimizer = bert_adamw(learning_rate, total_steps=total_steps, warmup_steps=warmup_steps,
                                   weight_decay=weight_decay)
        if isinstance(loss, str) and loss == "auto":
            loss = {
                # Averaged over the real predictions only (the weights), as run_pretraining.py does.
                "masked_lm_logits": keras.losses.SparseCategoricalCrossentropy(
                    from_logits=True, reduction="mean_with_sample_weight"),
                "next_sentence_logits": keras.losses.SparseCategoricalCrossentropy(from_logits=True),
            }
            kwargs.setdefault("weighted_metrics", {
                "masked_lm_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
                "next_sentence_logits": [keras.metrics.SparseCategoricalAccuracy(name="accuracy")],
            })
        super().compile(optimizer=optimizer, loss=loss, **kwargs)

    def task_signatures(self, text_preprocessor):
        """`fill_mask` and `fill_mask_pairs` for the export (see `export_for_serving`)."""
        return masked_lm_signatures(self, text_preprocessor)

    def fill_mask(self, texts, preprocessor, top_k=5):
        """The `top_k` likeliest tokens for each `[MASK]` in each text.

        Args:
            texts: strings containing the literal `[MASK]`, or
                `(text_a, text_b)` pairs.
            preprocessor: a `BertPreprocessor` (tokenizer and window).

        Returns:
            Per text, per mask: `[(token, probability)]`, likeliest first.

        Examples:
        >>> import keras_bert_zoo as kbz
        >>> tokenizer = kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b"])
        >>> backbone = BertBackbone(vocabulary_size=7, num_layers=1, num_heads=2,
        ...                         hidden_dim=8, intermediate_dim=16)
        >>> guesses = BertPretrainer(backbone).fill_mask(["a [MASK] b"], kbz.BertPreprocessor(tokenizer, 8), top_k=2)
        >>> len(guesses[0]), len(guesses[0][0])
        (1, 2)
        """
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

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "backbone": keras.saving.serialize_keras_object(self.backbone),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["backbone"] = keras.saving.deserialize_keras_object(config["backbone"])
        return cls(**config)

    @classmethod
    def from_preset(cls, preset, load_weights=True, **kwargs):
        """Create the pretrainer of a preset, with its heads' weights when the
        checkpoint has them (fresh heads otherwise, and a warning)."""
        return load_pretrainer(preset, cls=cls, load_weights=load_weights, **kwargs)

    def save_to_preset(self, preset_dir, tokenizer=None):
        """Write the backbone and both heads as a preset directory."""
        save_preset(preset_dir, backbone=self.backbone, tokenizer=tokenizer, task=self)
