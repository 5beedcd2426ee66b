"""Token classification (NER): a tag per word, decoded to entity spans."""

import numbers
import warnings

import keras
import numpy as np
import tensorflow as tf

from keras_bert_zoo.export.token_classifier_signatures import token_classifier_signatures
from keras_bert_zoo.metrics.conlleval import OUTSIDE
from keras_bert_zoo.metrics.conlleval import check_tag_scheme
from keras_bert_zoo.metrics.conlleval import entity_scores
from keras_bert_zoo.metrics.conlleval import extract_chunks
from keras_bert_zoo.metrics.conlleval import is_entity_tag
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.preprocessing.strided_windows import default_doc_stride
from keras_bert_zoo.preprocessing.strided_windows import word_windows
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.preprocessing.token_classification_preprocessor import split_words
from keras_bert_zoo.tasks.class_labels import check_label_names
from keras_bert_zoo.tasks.task import Task
from keras_bert_zoo.tasks.task import checked_batch_size
from keras_bert_zoo.utils.whole_numbers import positive_whole_number
from keras_bert_zoo.tokenizers.text_inputs import check_text
from keras_bert_zoo.tokenizers.text_inputs import check_texts
from keras_bert_zoo.utils.input_pipeline import without_autotune_thread
from keras_bert_zoo.utils.placeholder_labels import unnamed_labels
from keras_bert_zoo.utils.renamed_attributes import renamed_attribute
from keras_bert_zoo.utils.traced_method import traced_method


def check_entity_tags(label_names, reader):
    """Refuse to find entities with tags that name none, before `reader` reads
    them: transformers' placeholders (`LABEL_0`, ...: a checkpoint without
    `id2label`), or any tag conlleval does not read (`conlleval.is_entity_tag`:
    a bare type `PER`, ...). Every such word would read as outside any entity
    and `reader` would find none, in silence.

    A tagger of other tags (bare types, POS tags) is built, trained and
    predicts its tags (`predict_tags`) as any other: only what finds or scores
    entities asks for an entity scheme.

    Args:
        label_names: the tagger's tags; None: not known yet (nothing is checked).
        reader: what finds the entities, for the message (e.g. `"predict_entities"`).

    Raises:
        ValueError: naming the placeholders, or the tags that are no entity
            tags (with the tags conlleval reads), and how to name them.
    """
    if label_names is None:
        return
    if unnamed_labels(label_names):
        raise ValueError(
            f"{reader} finds entities by their tags (O, B-<type>, I-<type>, ...), but this tagger's are "
            f"transformers' placeholders {label_names[0]}..{label_names[-1]} (its checkpoint's config.json has no "
            "id2label), which name no entity. Give its tags in the order of its head's outputs: "
            "BertTokenClassifier.from_preset(..., label_names=['O', 'B-<type>', ...]) (save_to_preset then makes a "
            "--model for the command line), or write them into config.json as id2label. predict_tags gives the "
            "placeholder tags as they are.")
    # A tagger's own names: each bare type given its I- (IO tags), in the order of its outputs.
    renamed = [tag if is_entity_tag(tag) or not isinstance(tag, str) or "-" in tag else f"I-{tag}"
               for tag in label_names]
    if not all(is_entity_tag(tag) for tag in renamed) or len(set(renamed)) < len(renamed):  # "PER" beside "I-PER"
        renamed = ["O", "B-<type>", "I-<type>", "..."]
    check_tag_scheme(label_names, reader, whose="this tagger's tags", fix=(
        "Or rename this tagger's tags in the order of its outputs (its trained weights stay): tagger.label_names = "
        f"{renamed} (save_to_preset then makes a --model for the command line). predict_tags gives its tags as "
        "they are."))


def _without_empty_sentences(sentences, tags):
    """Drop sentences without words (nothing to learn from) with a warning."""
    empty = [i for i, sentence in enumerate(sentences) if not sentence]
    if not empty:
        return sentences, tags
    if len(empty) == len(sentences):
        raise ValueError(f"No sentences: all {len(sentences)} are empty.")
    warnings.warn(f"Skipped {len(empty)} empty sentence(s) (the first is sentence {empty[0]}): "
                  "they have no words to tag.", stacklevel=4)
    keep = [i for i, sentence in enumerate(sentences) if sentence]
    return [sentences[i] for i in keep], [tags[i] for i in keep]


def _without_padding(ds):
    """A Dataset of padded batches (`padded_batch`: words `[batch, max_words]` padded with "", tags padded with
    any id, -100 as Hugging Face pads them) as ragged batches of the words alone and their tags."""
    words = tf.nest.flatten(ds.element_spec)[0]
    if not (isinstance(words, tf.TensorSpec) and words.dtype == tf.string and words.shape.rank == 2):
        return ds

    def unpadded(words, *rest):
        kept = tf.not_equal(words, "")
        return (tf.ragged.boolean_mask(words, kept),) + tuple(
            tf.ragged.boolean_mask(part, kept) if isinstance(part, tf.Tensor) and part.shape.rank == 2 else part
            for part in rest)

    return ds.map(unpadded)


def _warn_of_unread_entity_words(sentences, gold, read):
    """Warn of words in gold entities that have no word-pieces (a lone zero-width space, say): the model cannot
    read them, so they are tagged "O" and their entities can never be matched; the scores said nothing of it."""
    unread = [(s, w) for s, (tags, words_read) in enumerate(zip(gold, read))
              for w, (tag, was_read) in enumerate(zip(tags, words_read)) if tag != OUTSIDE and not was_read]
    if unread:
        s, w = unread[0]
        warnings.warn(f"{len(unread)} word(s) tagged as part of an entity have no word-pieces, so the model cannot "
                      f"read them and tags them O: their entities count as missed (the first: word {w} of sentence "
                      f"{s}, {sentences[s][w]!r:.40}, tagged {gold[s][w]}). Remove such words (zero-width or "
                      "control characters) from the data.", stacklevel=3)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
class BertTokenClassifier(Task):
    """BERT's NER model: dropout + dense on every token vector.

    Word-level IOB/BIO tags are aligned to each word's first word-piece;
    the other pieces are ignored in the loss (sample weight 0). Predictions
    are read off first pieces, decoded to word tags and to entities with
    character offsets. Sentences longer than the window are cut into strided
    windows (run_squad.py's `doc_stride`), for training and prediction alike;
    each word is predicted from the window where it has the most context.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: a `TokenClassificationPreprocessor`.
        label_names: the tag set, e.g. `["O", "B-Disease", "I-Disease"]`.
        dropout: dropout rate before the output layer.
        labels: the old name of `label_names` (deprecated; removed in the
            next release).

    Examples:
    >>> ner = BertTokenClassifier.from_preset(
    ...     "minilm_l6_h384_en_uncased", label_names=["O", "B-Disease", "I-Disease"],
    ...     sequence_length=32)
    >>> ner.predict_tags([["Familial", "hypercholesterolemia", "."]])[0][2] in ner.label_names
    True
    """

    def __init__(self, backbone, preprocessor, label_names=None, dropout=0.1, labels=None, **kwargs):
        if labels is not None:  # presets saved before the rename hold `labels` too
            if label_names is not None:
                raise ValueError("Pass label_names only: labels is its old name.")
            warnings.warn("BertTokenClassifier's `labels` is now `label_names` (as in every task); "
                          "`labels` will be removed in the next release.", DeprecationWarning, stacklevel=2)
            label_names = labels
        label_names = check_label_names(label_names)
        if not label_names or len(set(label_names)) != len(label_names):
            raise ValueError(f"label_names must be a non-empty list of distinct tags; got {label_names}.")
        if len(label_names) < 2:
            # One tag would be predicted everywhere (and Keras reads a one-logit head's labels as squeezed).
            raise ValueError(f"label_names holds one tag {list(label_names)}: a tagger tells entity tags (B-<type>, "
                             "I-<type>) from O; give it every tag of the data.")
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.output_dense = self.logits_layer(backbone, len(label_names))

        # === Functional Model ===
        inputs = self.backbone_inputs(backbone)
        sequence = backbone(inputs)["sequence_output"]
        logits = self.output_dense(self.output_dropout(sequence))
        super().__init__(inputs=inputs, outputs=logits, **kwargs)

        # === Config ===
        self.label_names = list(label_names)
        self.dropout = dropout
        self.compile()

    def __getattr__(self, name):
        return renamed_attribute(self, name, {"labels": "label_names"})

    @property
    def output_layer(self):
        """The dense layer of the tag logits (a fine-tuned checkpoint's head loads into it)."""
        return self.output_dense

    @classmethod
    def head_arguments(cls, head, units):
        return {"label_names": head.names(units), **head.dropout_argument()}

    uses_pooler = False
    takes_pairs = False
    takes_sample_weight = False
    preprocessor_cls = TokenClassificationPreprocessor
    input_forms = (
        "a list of sentences, each a list of words (their tags as y); a tf.data.Dataset of (words, tags), "
        "batched or not; kbz.data.read_conll's result; or packed inputs (a dict of token_ids, segment_ids and "
        "padding_mask, or a Dataset of them)"
    )

    def default_loss(self):
        # Averaged over first pieces only (the sample weights), not over padding.
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="mean_with_sample_weight")

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        kwargs.setdefault("weighted_metrics", [keras.metrics.SparseCategoricalAccuracy(name="accuracy")])
        # Its count of the words it weighed tells `evaluate` that it scored none (kept out of Keras' tracking).
        object.__setattr__(self, "_tag_accuracy", next(
            (metric for metric in kwargs["weighted_metrics"] if isinstance(metric, keras.metrics.SparseCategoricalAccuracy)),
            None) if isinstance(kwargs["weighted_metrics"], (list, tuple)) else None)
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)

    def evaluate(self, *args, **kwargs):
        """`Task.evaluate`, with a warning where no word was scored: every tag
        a Dataset gave was -1, a word not scored, and the accuracy and loss of
        0 say nothing of the model."""
        results = super().evaluate(*args, **kwargs)
        accuracy = getattr(self, "_tag_accuracy", None)
        if accuracy is not None and float(accuracy.count.numpy()) == 0:
            warnings.warn("evaluate scored no word: every tag it was given is -1 (a word not scored), so its "
                          "accuracy and loss of 0 say nothing of the model. Give the words' tags (label names or ids "
                          f"0..{len(self.label_names) - 1}).", stacklevel=2)
        return results

    # --- Data ------------------------------------------------------------

    def tag_ids(self, tags):
        """Tag strings (or tag ids) per sentence -> checked tag ids."""
        index = {t: i for i, t in enumerate(self.label_names)}
        ids = []
        for s, sentence in enumerate(tags):
            if isinstance(sentence, (str, bytes)):  # its characters would be read as tags
                raise TypeError(f"The tags of sentence {s} are one string ({sentence[:40]!r}); give them as a list, "
                                "one tag per word.")
            if not isinstance(sentence, (list, tuple, np.ndarray)):
                raise TypeError(f"The tags of sentence {s} are {type(sentence).__name__}; give a list, one tag per "
                                "word.")
            row = []
            for w, tag in enumerate(sentence):
                tag = tag.decode("utf-8", "replace") if isinstance(tag, bytes) else tag  # as a Dataset's tf.string
                if isinstance(tag, str) and tag in index:
                    row.append(index[tag])
                elif isinstance(tag, numbers.Integral) and not isinstance(tag, bool) and 0 <= tag < len(self.label_names):
                    row.append(int(tag))
                else:
                    raise ValueError(f"Unknown tag(s) [{tag!r}] at sentence {s}, word {w}; the model's labels are "
                                     f"{self.label_names} (or their ids 0..{len(self.label_names) - 1}).")
            ids.append(row)
        return ids

    @staticmethod
    def check_sentences(sentences):
        """Sentences as lists of word strings, checked; returns lists."""
        if isinstance(sentences, tf.data.Dataset):  # its elements would be named as words that are no strings
            raise TypeError("The sentences are a tf.data.Dataset: predict_tags, predict_word_probabilities and "
                            "evaluate_entities take word lists held in Python (fit, evaluate and predict take "
                            "Datasets).")
        if isinstance(sentences, (str, bytes)):  # its characters would be read as one-letter sentences
            raise TypeError(f"Expected a batch of sentences, got one {type(sentences).__name__} ({sentences[:40]!r}): "
                            "give each sentence as a list of words, e.g. [text.split()] for one (predict_entities "
                            "takes raw texts).")
        checked = []
        for s, sentence in enumerate(sentences):
            if isinstance(sentence, (str, bytes)):
                raise TypeError(f"Sentence {s} is a string; give each sentence as a list of words: "
                                "[['Aspirin', 'eases', 'pain']], and one sentence's words as [words] "
                                "(predict_entities takes raw texts).")
            sentence = list(sentence)
            for w, word in enumerate(sentence):
                check_text(word, f"Sentence {s}, word {w}")
            checked.append(sentence)
        return checked

    def preprocess(self, x, y=None, sample_weight=None):
        if sample_weight is not None:  # a Dataset's third item: the tags carry the weights, per word-piece
            raise ValueError("BertTokenClassifier does not take sample weights: give its Dataset (words, tags) "
                             "elements.")
        if y is None:
            inputs = self.preprocessor(x)
            return {k: inputs[k] for k in MODEL_INPUTS}
        inputs, labels, weights = self.preprocessor(x, self._graph_tag_ids(y))
        return {k: inputs[k] for k in MODEL_INPUTS}, labels, weights

    def _graph_tag_ids(self, tags):
        """A batch of tags in the graph (`[batch, words]`, ragged or not: tag
        ids or label names) as int32 ids, checked as batches are read: a
        Dataset's tags never met `tag_ids`."""
        if isinstance(tags, tf.Tensor) and tags.shape.rank == 2:  # sentences of one length come out dense
            tags = tf.RaggedTensor.from_tensor(tags)
        if not isinstance(tags, tf.RaggedTensor):
            return tags  # held in Python: the preprocessor reads them, checked by `tag_ids` already
        flat, count = tags.flat_values, len(self.label_names)
        if flat.dtype == tf.string:
            matches = tf.equal(flat[:, None], tf.constant(self.label_names)[None, :])
            checks = [tf.debugging.assert_equal(tf.reduce_any(matches, -1), True, message=(
                f"A tag is not one of label_names: {', '.join(self.label_names)}."))]
            flat = tf.argmax(tf.cast(matches, tf.int32), -1, output_type=tf.int32)
        elif flat.dtype.is_integer:
            # -1 marks a word not scored (see TokenClassificationPreprocessor): a window's word another one scores.
            checks = [tf.debugging.assert_greater_equal(flat, tf.constant(-1, flat.dtype), message=(
                          f"A tag id is below -1; ids are 0..{count - 1} (-1: a word not scored).")),
                      tf.debugging.assert_less(flat, tf.constant(count, flat.dtype), message=(
                          f"A tag id is {count} or more; ids are 0..{count - 1}, of label_names: "
                          f"{', '.join(self.label_names)}."))]
        else:
            raise TypeError(f"A Dataset's tags are {flat.dtype.name}; give tag ids (integers) or label names.")
        with tf.control_dependencies(checks):
            return tags.with_flat_values(tf.cast(tf.identity(flat), tf.int32))

    def weighed_classes(self):
        return self.label_names, len(self.label_names), {name: i for i, name in enumerate(self.label_names)}

    def checked_tag_ids(self, sentences, tags):
        """Tag ids for checked `sentences`: one tag sequence per sentence and one
        tag per word, each a label name or id."""
        if len(tags) != len(sentences):
            raise ValueError(f"{len(sentences)} sentences but {len(tags)} tag sequences.")
        ids = self.tag_ids(tags)
        for i, (sentence, row) in enumerate(zip(sentences, ids)):
            if len(sentence) != len(row):
                raise ValueError(f"Sentence {i} has {len(sentence)} words but {len(row)} tags.")
        return ids

    def make_dataset(self, x, y=None, batch_size=32, shuffle=False, seed=None, labeled=True, doc_stride=None):
        """`x`: sentences as word lists (or a Dataset of `(words, tags)`,
        tags as ids or label names, which is cut to the window rather than
        strided); `y`: tag lists (strings) or tag-id lists. Over-long
        sentences become strided windows."""
        if isinstance(x, tf.data.Dataset):
            ds = x.ragged_batch(batch_size) if tf.nest.flatten(x.element_spec)[0].shape.rank == 1 else \
                _without_padding(x)
        else:
            x = self.check_sentences(x)
            if not x:
                raise ValueError("No sentences: the input list is empty.")
            if y is not None:
                y = self.checked_tag_ids(x, y)
                x, y = _without_empty_sentences(x, y)
            windows = self.sentence_windows(x, doc_stride)
            if not labeled and len(windows) > len(x):
                # Keras' predict gives a row per window: the rows no longer line up with the sentences.
                warnings.warn(f"predict: {len(windows) - len(x)} more rows than the {len(x)} sentences, as sentences "
                              f"longer than the window ({self.preprocessor.sequence_length} pieces) are read in "
                              "windows, a row each. For one result per sentence and word use predict_tags or "
                              "predict_word_probabilities.", stacklevel=4)
            words = tf.ragged.constant([x[i][a:b] for i, (a, b), _ in windows], dtype=tf.string)
            if y is not None:
                # Each word is scored in one window, the one it is read from (-1: not scored here), as predict_tags
                # reads it: with every window's words, evaluate counted a word of two windows twice.
                tags = tf.ragged.constant([np.where(best, y[i][a:b], -1).tolist() for i, (a, b), best in windows],
                                          dtype=tf.int32)
            examples = (words,) if y is None else (words, tags)
            return self._packed_dataset(examples, len(windows), batch_size, shuffle, seed)
        return without_autotune_thread(ds.map(self._packing_function(), num_parallel_calls=tf.data.AUTOTUNE)
                                       .prefetch(tf.data.AUTOTUNE))

    def sentence_windows(self, sentences, doc_stride=None):
        """Cut sentences into windows that fit the model.

        Returns `[(sentence_index, (first_word, end_word), best)]`, one entry
        per window, where `best` marks the window's words that are read from
        it (their max-context window). A sentence that fits is one window.
        `doc_stride` defaults to half the window.

        Graph twin: `token_classifier_signatures._pack_word_windows`; parity:
        `tests/test_bert_token_classifier.py::test_graph_word_probabilities_match_predict_word_probabilities`.
        """
        budget = self.preprocessor.sequence_length - special_token_count(1)
        doc_stride = (default_doc_stride(budget) if doc_stride is None
                      else positive_whole_number(doc_stride, "doc_stride"))
        flat = [w for s in sentences for w in s]
        counts = self.preprocessor.tokenizer(tf.constant(flat, tf.string)).row_lengths().numpy() if flat else []
        windows, offset = [], 0
        for index, sentence in enumerate(sentences):
            ranges, best = word_windows(counts[offset : offset + len(sentence)], budget, doc_stride)
            offset += len(sentence)
            for window_index, (first, end) in enumerate(ranges):
                windows.append((index, (first, end), best[first:end] == window_index))
        return windows

    # --- Prediction ------------------------------------------------------

    def predict_word_probabilities(self, sentences, batch_size=32, doc_stride=None):
        """Per-word tag probabilities `[words, labels]` for each sentence.

        Long sentences are read through strided windows (`doc_stride`,
        default half the window), each word from its max-context window.
        Words with no word-pieces get uniform probabilities.

        Graph twin: `token_classifier_signatures._word_probabilities`; parity:
        `tests/test_bert_token_classifier.py::test_graph_word_probabilities_match_predict_word_probabilities`.
        """
        return self._read_words(sentences, batch_size, doc_stride)[0]

    def _read_words(self, sentences, batch_size, doc_stride):
        """`predict_word_probabilities`, and per sentence which words the model read (those with pieces)."""
        batch_size = checked_batch_size(batch_size)
        sentences = self.check_sentences(sentences)
        results = [np.full((len(s), len(self.label_names)), 1.0 / len(self.label_names), "float32") for s in sentences]
        read = [np.zeros(len(s), bool) for s in sentences]
        # A window no word is read from changes no result (as in the served signature): it is not run.
        windows = [window for window in self.sentence_windows(sentences, doc_stride) if window[2].any()]
        # The preprocessor traced once, not run op by op (see `Task._packing_function`).
        pack = traced_method(self.preprocessor, "__call__")
        for start in range(0, len(windows), batch_size):
            batch = windows[start : start + batch_size]
            inputs = pack(tf.ragged.constant([sentences[i][a:b] for i, (a, b), _ in batch], dtype=tf.string))
            logits = self.predict_on_batch({k: inputs[k] for k in MODEL_INPUTS})
            probabilities = tf.nn.softmax(logits, axis=-1).numpy()
            word_index = inputs["word_index"].numpy()
            for row, (index, (first, _), best) in enumerate(batch):
                positions = np.flatnonzero(word_index[row] >= 0)
                local = word_index[row, positions]
                keep = best[local]
                results[index][first + local[keep]] = probabilities[row, positions[keep]]
                read[index][first + local[keep]] = True
        return results, read

    def _tags(self, probabilities, read):
        """Each word's likeliest tag; "O" (outside any entity) for a word the model did not read."""
        return [self.label_names[i] if r else OUTSIDE for i, r in zip(probabilities.argmax(-1), read)] \
            if len(probabilities) else []

    def predict_tags(self, sentences, batch_size=32, doc_stride=None):
        """Tag strings for each word of each sentence (word lists). A word
        with no word-pieces (a lone zero-width space, say), which the model
        cannot read, is tagged "O": outside any entity."""
        return [self._tags(p, r) for p, r in zip(*self._read_words(sentences, batch_size, doc_stride))]

    def predict_entities(self, texts, batch_size=32, doc_stride=None):
        """Entities in raw texts: `[{"text", "label", "start", "end", "score"}]`
        per text, with character offsets; `score` is the mean probability
        of the entity's tags.

        Graph twin: `token_classifier_signatures._chunk_spans` (the loop over
        the chunks); parity: `tests/test_bert_token_classifier.py::test_graph_chunks_match_extract_chunks`.

        Raises:
            ValueError: the tags are transformers' placeholders, or not of an
                entity scheme (a bare type `PER`; see `check_entity_tags`).
        """
        check_entity_tags(self.label_names, "predict_entities")
        if not isinstance(texts, (str, bytes)):
            texts = list(texts)
            words = next((i for i, t in enumerate(texts) if isinstance(t, (list, tuple))), None)
            if words is not None:
                raise TypeError(f"Text {words} is a {type(texts[words]).__name__} of words; predict_entities reads "
                                "raw texts (its entities' offsets are characters of them): tag word lists with "
                                "predict_tags, or give ' '.join(words).")
        texts = check_texts(texts, pairs=False)
        split = split_words(texts)
        probabilities, read = self._read_words([[w for w, _, _ in s] for s in split], batch_size, doc_stride)
        results = []
        for text, words, p, r in zip(texts, split, probabilities, read):
            tags = self._tags(p, r)
            entities = []
            for kind, first, last in extract_chunks(tags):
                start, end = words[first][1], words[last - 1][2]
                score = float(p[np.arange(first, last), p[first:last].argmax(-1)].mean())
                entities.append({"text": text[start:end], "label": kind, "start": start, "end": end, "score": score})
            results.append(entities)
        return results

    def evaluate_entities(self, sentences, tags=None, batch_size=32, doc_stride=None):
        """conlleval entity-level precision / recall / F1 on tagged sentences
        (their tags as `fit` takes them: label names or ids), or on a
        reader's result alone: `evaluate_entities(read_conll(path))`.

        Raises:
            ValueError: the tagger's tags are transformers' placeholders, or
                not of an entity scheme (see `check_entity_tags`): checked
                before anything is predicted; or no tags are given.
        """
        check_entity_tags(self.label_names, "evaluate_entities")
        sentences, tags = self.standardize_examples(sentences, tags)
        if tags is None:
            raise ValueError("evaluate_entities needs the tags: pass them, evaluate_entities(sentences, tags), or a "
                             "reader's result alone, evaluate_entities(read_conll(path)).")
        sentences = self.check_sentences(sentences)
        if not sentences:  # scores of nothing would read as an F1 of 0
            raise ValueError("No sentences: the input list is empty.")
        gold = [[self.label_names[i] for i in row] for row in self.checked_tag_ids(sentences, tags)]
        probabilities, read = self._read_words(sentences, batch_size, doc_stride)
        _warn_of_unread_entity_words(sentences, gold, read)
        return entity_scores(gold, [self._tags(p, r) for p, r in zip(probabilities, read)])

    def task_signatures(self, text_preprocessor):
        check_entity_tags(self.label_names, "The served signature entities")
        return token_classifier_signatures(self)

    @classmethod
    def from_config(cls, config):
        if "label_names" in config and "labels" in config:  # a saved config of the old name given new names
            config = {k: v for k, v in config.items() if k != "labels"}
        return super().from_config(config)

    def get_config(self):
        return {
            **super().get_config(),
            "label_names": self.label_names,
            "dropout": self.dropout,
        }
