"""Token classification (NER): a tag per word, decoded to entity spans."""

import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.metrics.conlleval import entity_scores
from keras_bert_zoo.metrics.conlleval import extract_chunks
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.preprocessing.token_classification_preprocessor import split_words
from keras_bert_zoo.tasks.task import Task

MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertTokenClassifier(Task):
    """BERT's NER model: dropout + dense on every token vector.

    Word-level IOB/BIO tags are aligned to each word's first word-piece;
    the other pieces are ignored in the loss (sample weight 0). Predictions
    are read off first pieces, decoded to word tags and to entities with
    character offsets.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: a `TokenClassificationPreprocessor`.
        labels: the tag set, e.g. `["O", "B-Disease", "I-Disease"]`.
        dropout: dropout rate before the output layer.

    Examples:
    >>> ner = BertTokenClassifier.from_preset(
    ...     "minilm_l6_h384_en_uncased", labels=["O", "B-Disease", "I-Disease"],
    ...     sequence_length=32)
    >>> ner.predict_tags([["Familial", "hypercholesterolemia", "."]])[0][2] in ner.labels
    True
    """

    def __init__(self, backbone, preprocessor, labels, dropout=0.1, **kwargs):
        if not labels or len(set(labels)) != len(labels):
            raise ValueError(f"labels must be a non-empty list of distinct tags; got {labels}.")
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            len(labels),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=backbone.initializer_range),
            dtype="float32",
            name="logits",
        )

        # === Functional Model ===
        inputs = self.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]
        logits = self.output_dense(self.output_dropout(sequence))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.labels = list(labels)
        self.dropout = dropout
        self.compile()

    uses_pooler = False

    @classmethod
    def make_preprocessor(cls, tokenizer, sequence_length, max_sequence_length):
        return TokenClassificationPreprocessor(tokenizer, sequence_length, max_sequence_length)

    def default_loss(self):
        # Averaged over first pieces only (the sample weights), not over padding.
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        kwargs.setdefault("weighted_metrics", [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    # --- Data ------------------------------------------------------------

    def tag_ids(self, tags):
        index = {t: i for i, t in enumerate(self.labels)}
        unknown = sorted({t for sentence in tags for t in sentence} - set(index))
        if unknown:
            raise ValueError(f"Unknown tag(s) {unknown}; the model's labels are {self.labels}.")
        return [[index[t] for t in sentence] for sentence in tags]

    def preprocess(self, x, y=None, sample_weight=None):
        if y is None:
            inputs = self.preprocessor(x)
            return {k: inputs[k] for k in MODEL_INPUTS}
        inputs, labels, weights = self.preprocessor(x, y)
        return {k: inputs[k] for k in MODEL_INPUTS}, labels, weights

    def make_dataset(self, x, y=None, batch_size=32, shuffle=False, seed=None, labeled=True):
        """`x`: sentences as word lists (or a Dataset of `(words, tag_ids)`);
        `y`: tag lists (strings) or tag-id lists."""
        if isinstance(x, dict):
            return x
        if isinstance(x, tf.data.Dataset):
            ds = x.ragged_batch(batch_size) if tf.nest.flatten(x.element_spec)[0].shape.rank == 1 else x
        else:
            if not x:
                raise ValueError("No sentences: the input list is empty.")
            words = tf.ragged.constant([list(s) for s in x], dtype=tf.string)
            if y is not None:
                if len(y) != len(x):
                    raise ValueError(f"{len(x)} sentences but {len(y)} tag sequences.")
                for i, (sentence, tags) in enumerate(zip(x, y)):
                    if len(sentence) != len(tags):
                        raise ValueError(f"Sentence {i} has {len(sentence)} words but {len(tags)} tags.")
                if y and y[0] and isinstance(y[0][0], str):
                    y = self.tag_ids(y)
                ds = tf.data.Dataset.from_tensor_slices((words, tf.ragged.constant(y, dtype=tf.int32)))
            else:
                ds = tf.data.Dataset.from_tensor_slices(words)
            if shuffle:
                ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
            ds = ds.ragged_batch(batch_size)
        return ds.map(self.preprocess, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)

    # --- Prediction ------------------------------------------------------

    def predict_word_probabilities(self, sentences, batch_size=32):
        """Per-word tag probabilities `[words, labels]` for each sentence (words
        beyond the window get uniform probabilities and a warning)."""
        results, cut = [], 0
        for start in range(0, len(sentences), batch_size):
            batch = [list(s) for s in sentences[start : start + batch_size]]
            inputs = self.preprocessor(tf.ragged.constant(batch, dtype=tf.string))
            logits = self.predict_on_batch({k: inputs[k] for k in MODEL_INPUTS})
            probabilities = tf.nn.softmax(logits, axis=-1).numpy()
            word_index = inputs["word_index"].numpy()
            for row, words in enumerate(batch):
                per_word = np.full((len(words), len(self.labels)), 1.0 / len(self.labels), "float32")
                positions = np.flatnonzero(word_index[row] >= 0)
                per_word[word_index[row, positions]] = probabilities[row, positions]
                cut += len(words) - len(positions)
                results.append(per_word)
        if cut:
            warnings.warn(
                f"{cut} words fell outside the {self.preprocessor.sequence_length}-piece window and "
                "were tagged 'O'; raise sequence_length for longer sentences.",
                stacklevel=2,
            )
        return results

    def predict_tags(self, sentences, batch_size=32):
        """Tag strings for each word of each sentence (word lists)."""
        probabilities = self.predict_word_probabilities(sentences, batch_size)
        return [[self.labels[i] for i in p.argmax(-1)] if len(p) else [] for p in probabilities]

    def predict_entities(self, texts, batch_size=32):
        """Entities in raw texts: `[{"text", "label", "start", "end", "score"}]`
        per text, with character offsets; `score` is the mean probability
        of the entity's tags."""
        split = [split_words(text) for text in texts]
        probabilities = self.predict_word_probabilities([[w for w, _, _ in s] for s in split], batch_size)
        results = []
        for text, words, p in zip(texts, split, probabilities):
            tags = [self.labels[i] for i in p.argmax(-1)] if len(p) else []
            entities = []
            for kind, first, last in extract_chunks(tags):
                start, end = words[first][1], words[last - 1][2]
                score = float(p[np.arange(first, last), p[first:last].argmax(-1)].mean())
                entities.append({"text": text[start:end], "label": kind, "start": start, "end": end, "score": score})
            results.append(entities)
        return results

    def evaluate_entities(self, sentences, tags, batch_size=32):
        """conlleval entity-level precision / recall / F1 on tagged sentences."""
        return entity_scores(tags, self.predict_tags(sentences, batch_size))

    def get_config(self):
        return {
            **super().get_config(),
            "labels": self.labels,
            "dropout": self.dropout,
        }
