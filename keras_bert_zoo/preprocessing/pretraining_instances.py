"""Masked-LM + next-sentence instances as google-research/bert's
`create_pretraining_data.py` defines them, on word-piece ids.

Each document is cut into chunks of about `max_seq_length - 3` pieces (a
shorter random target with probability `short_seq_prob`); a chunk splits at a
random sentence boundary into segment A and B, and with probability 0.5 (or
when the chunk is one sentence) B is replaced by text from a random other
document (label 1, "random next"; 0 = IsNext) and the unused sentences go back
to the document. The forced one-sentence cases put label 1 above half (52%
of WikiText-2's instances, 58-59% of PubMed abstracts'): that share, not 50%,
is what always guessing "random" scores on held-out pairs. Pairs over the budget lose pieces from the longer segment,
at its front or back at random. Then `masked_lm_prob` of the pieces (at most
`max_predictions_per_seq`, at least one; never `[CLS]`/`[SEP]`) are chosen,
by whole words with `do_whole_word_mask`; of those, 80% become `[MASK]`, 10% a
random vocabulary id, 10% stay. The same seed gives the same instances.
"""

import dataclasses
import random
import warnings

import numpy as np

from keras_bert_zoo.preprocessing.model_inputs import MASK_POSITIONS
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.preprocessing.special_tokens import shortest_sequence_length
from keras_bert_zoo.preprocessing.special_tokens import special_token_count
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer
from keras_bert_zoo.utils.packed_length import packed_length
from keras_bert_zoo.utils.progress_bar import progress_bar

FEATURES = (*MODEL_INPUTS, MASK_POSITIONS, "mask_ids", "mask_weights",
            "next_sentence_label")


@dataclasses.dataclass
class PretrainingDataConfig:
    """google-research/bert's flags for `create_pretraining_data.py`."""

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    do_whole_word_mask: bool = False
    random_seed: int = 12345

    def __post_init__(self):
        self._check_types()
        if self.max_seq_length < shortest_sequence_length(2):
            raise ValueError(f"max_seq_length must be at least {shortest_sequence_length(2)} ([CLS] a [SEP] b [SEP]); "
                             f"got {self.max_seq_length}.")
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1); got {self.masked_lm_prob}.")
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise ValueError(f"short_seq_prob must be in [0, 1]; got {self.short_seq_prob}.")
        if self.max_predictions_per_seq < 1 or self.dupe_factor < 1:
            raise ValueError("max_predictions_per_seq and dupe_factor must be at least 1.")
        self._check_max_predictions()

    def _check_types(self):
        """Each field of the type google-research/bert's flag has, as a Python value (numpy's too).

        Else a float count (`max_predictions_per_seq=max_seq_length * 0.15`) failed later in numpy with "'float'
        object cannot be interpreted as an integer", a string with "'<' not supported", naming no field; a
        `do_whole_word_mask` of "false" masked whole words, and a `random_seed` of None drew other instances each
        run.
        """
        for name in ("max_seq_length", "max_predictions_per_seq", "dupe_factor", "random_seed"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"PretrainingDataConfig's {name} must be a whole number (an int); got {value!r}"
                                + (f": pass {int(value)}." if isinstance(value, float) and value.is_integer() else
                                   f": pass round({value!r})." if isinstance(value, float) else "."))
            setattr(self, name, int(value))
        for name in ("masked_lm_prob", "short_seq_prob"):
            value = getattr(self, name)
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError(f"PretrainingDataConfig's {name} must be a number (a float); got {value!r}.")
            setattr(self, name, float(value))
        if not isinstance(self.do_whole_word_mask, (bool, np.bool_)):
            raise TypeError("PretrainingDataConfig's do_whole_word_mask must be True or False; got "
                            f"{self.do_whole_word_mask!r}.")
        self.do_whole_word_mask = bool(self.do_whole_word_mask)

    def _check_max_predictions(self):
        """Warn where max_predictions_per_seq is far from max_seq_length * masked_lm_prob, as google-research/bert's
        README says to set it (its script says nothing): below, it caps the masking rate; above, it only pads."""
        full = max(1, round(self.max_seq_length * self.masked_lm_prob))  # the most a full instance masks
        value = self.max_predictions_per_seq
        if value < 0.8 * full:
            effect = (f"a full instance gets {value} masks ({value / self.max_seq_length:.1%} of its pieces, not "
                      f"{self.masked_lm_prob:.0%})")
        elif value > 1.5 * full:
            effect = (f"the masks are those of {full}, but every instance carries {value} predictions, the rest "
                      f"padding ({value / full:.1f}x the masked-LM work)")
        else:
            return
        warnings.warn(f"max_predictions_per_seq {value} is far from max_seq_length {self.max_seq_length} x "
                      f"masked_lm_prob {self.masked_lm_prob} = {full}: {effect}. Set max_predictions_per_seq to "
                      f"{full} (google-research/bert: about max_seq_length * masked_lm_prob).")

    @classmethod
    def for_positions(cls, max_sequence_length, **kwargs):
        """The config of instances for a model of `max_sequence_length` positions, from the arguments given.

        A `max_seq_length` not given is the default cut to the positions (`utils.packed_length`), so that a model
        with fewer (a small checkpoint's 16) is not refused for a length nobody asked for. A `max_seq_length`
        given is kept. Where the length or `masked_lm_prob` is not the default (128, 0.15), a
        `max_predictions_per_seq` not given follows them, about `max_seq_length * masked_lm_prob`, as
        google-research/bert's README sets it (20 of 128): at 64, 20 predictions would be twice the masks an
        instance gets, the rest padding.

        Args:
            max_sequence_length: the model's positions; None: not known (the defaults stand).
            **kwargs: `PretrainingDataConfig` fields given.

        Examples:
        >>> config = PretrainingDataConfig.for_positions(16)
        >>> config.max_seq_length, config.max_predictions_per_seq
        (16, 2)
        >>> PretrainingDataConfig.for_positions(512).max_seq_length
        128
        >>> PretrainingDataConfig.for_positions(512, max_seq_length=64).max_predictions_per_seq
        10
        """
        fields = cls.__dataclass_fields__
        unknown = sorted(set(kwargs) - set(fields))
        if unknown:  # Python's "unexpected keyword argument" named the key, not the fields there are
            raise TypeError(f"PretrainingDataConfig has no field {', '.join(map(repr, unknown))}; its fields: "
                            f"{', '.join(fields)}.")
        default = fields["max_seq_length"].default
        length = packed_length(kwargs.get("max_seq_length"), default, max_sequence_length)
        probability = kwargs.get("masked_lm_prob", fields["masked_lm_prob"].default)
        kwargs["max_seq_length"] = length
        if (length, probability) != (default, fields["masked_lm_prob"].default):
            kwargs.setdefault("max_predictions_per_seq", max(1, round(length * probability)))
        return cls(**kwargs)


class _Vocabulary:
    """What masking needs to know about the vocabulary."""

    def __init__(self, tokenizer):
        tokens = tokenizer.get_vocabulary()
        self.size = len(tokens)
        self.cls_id, self.sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
        self.pad_id, self.mask_id = tokenizer.pad_token_id, tokenizer.mask_token_id
        self.continues_word = np.array([t.startswith("##") for t in tokens])


def _truncate_pair(tokens_a, tokens_b, budget, rng):
    """Cut the longer segment, one piece at a time, from its front or back.

    The original's rule and random draws, but the cuts are counted and made once: deleting a list's first item
    piece by piece took quadratic time on a long line (a minute for one of 200,000 words, the progress bar still).
    """
    cuts = [[0, 0], [0, 0]]  # pieces cut from the front / back of a, of b
    lengths = [len(tokens_a), len(tokens_b)]
    while sum(lengths) > budget:
        longer = 0 if lengths[0] > lengths[1] else 1
        cuts[longer][0 if rng.random() < 0.5 else 1] += 1
        lengths[longer] -= 1
    for tokens, (front, back) in zip((tokens_a, tokens_b), cuts):
        tokens[:] = tokens[front : len(tokens) - back]


def mask_tokens(tokens, vocabulary, config, rng):
    """Choose and corrupt masked-LM positions of one packed instance.

    Returns:
        `(corrupted_tokens, positions, original_ids)`, positions ascending.
    """
    candidates = []
    for index, token in enumerate(tokens):
        if token in (vocabulary.cls_id, vocabulary.sep_id):
            continue
        if config.do_whole_word_mask and candidates and vocabulary.continues_word[token]:
            candidates[-1].append(index)
        else:
            candidates.append([index])
    rng.shuffle(candidates)
    budget = min(config.max_predictions_per_seq, max(1, int(round(len(tokens) * config.masked_lm_prob))))
    output = list(tokens)
    chosen = []
    for word in candidates:
        if len(chosen) >= budget:
            break
        if len(chosen) + len(word) > budget:
            continue  # a whole word that no longer fits is skipped, never split
        for index in word:
            if rng.random() < 0.8:
                output[index] = vocabulary.mask_id
            elif rng.random() >= 0.5:
                output[index] = rng.randint(0, vocabulary.size - 1)
            chosen.append(index)
    chosen.sort()
    return output, chosen, [tokens[i] for i in chosen]


def instances_from_document(documents, document_index, vocabulary, config, rng):
    """The instances of one document (one pass of `dupe_factor`)."""
    document = documents[document_index]
    budget = config.max_seq_length - special_token_count(2)
    target = rng.randint(2, budget) if rng.random() < config.short_seq_prob else budget
    instances = []
    chunk, chunk_length, i = [], 0, 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i])
        if i == len(document) - 1 or chunk_length >= target:
            a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
            tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
            tokens_b = []
            random_next = len(chunk) == 1 or rng.random() < 0.5
            if random_next:
                other = document_index
                for _ in range(10):  # the original gives up after 10 draws
                    other = rng.randint(0, len(documents) - 1)
                    if other != document_index:
                        break
                source = documents[other]
                for sentence in source[rng.randint(0, len(source) - 1):]:
                    tokens_b.extend(sentence)
                    if len(tokens_b) >= target - len(tokens_a):
                        break
                i -= len(chunk) - a_end  # unused sentences are read again
            else:
                tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
            _truncate_pair(tokens_a, tokens_b, budget, rng)
            if tokens_a and tokens_b:
                tokens = [vocabulary.cls_id, *tokens_a, vocabulary.sep_id, *tokens_b, vocabulary.sep_id]
                segments = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                corrupted, positions, labels = mask_tokens(tokens, vocabulary, config, rng)
                instances.append((corrupted, segments, positions, labels, int(random_next)))
            chunk, chunk_length = [], 0
        i += 1
    return instances


def create_pretraining_instances(documents, tokenizer, config=None, progress=False):
    """All instances of a tokenized corpus, as fixed-shape int32 arrays.

    Args:
        documents: from `read_documents` (lists of sentences of ids).
        tokenizer: the `BertTokenizer` the ids come from.
        config: a `PretrainingDataConfig` (google-research/bert's flags).
        progress: show a progress bar.

    Returns:
        A dict of int32 numpy arrays: `token_ids`, `segment_ids`,
        `padding_mask` `[n, max_seq_length]`; `mask_positions`, `mask_ids`,
        `mask_weights` `[n, max_predictions_per_seq]` (weight 0 on padding);
        `next_sentence_label` `[n]` (0 = IsNext, 1 = random).
    """
    config = config or PretrainingDataConfig()
    vocabulary = _Vocabulary(check_tokenizer(tokenizer, "create_pretraining_instances"))
    rng = random.Random(config.random_seed)
    documents = list(documents)
    _check_documents(documents, vocabulary.size)
    documents = [d for d in documents if d]
    rng.shuffle(documents)
    instances = []
    total = config.dupe_factor * len(documents)
    # One tick per document per dupe_factor pass: the total is passes x documents, not documents.
    description = f"instances ({config.dupe_factor} passes x {len(documents)} documents)"
    with progress_bar(None, progress, total=total, desc=description, unit=" doc-pass") as bar:
        for _ in range(config.dupe_factor):
            for index in range(len(documents)):
                instances.extend(instances_from_document(documents, index, vocabulary, config, rng))
                bar.update()
    _check_next_sentence_labels(len(documents), [instance[-1] for instance in instances], config)
    rng.shuffle(instances)
    return pack_instances(instances, config, vocabulary.pad_id)


def _check_documents(documents, vocabulary_size):
    """Refuse documents that are not lists of sentences of ids of the tokenizer's vocabulary.

    Text (not tokenized) failed with "invalid literal for int() with base 10: 'a'"; ids of another tokenizer (a
    larger vocabulary) were written in silence, to fail in training or train other pieces' embeddings, and with
    `do_whole_word_mask` failed with an IndexError.
    """
    for index, document in enumerate(documents):
        if isinstance(document, (str, bytes)) or not isinstance(document, (list, tuple)):
            raise TypeError(f"Document {index} is a {type(document).__name__}, not a list of sentences of token ids: "
                            "tokenize the corpus first, read_documents(files, tokenizer).")
        for sentence in document:
            if isinstance(sentence, (str, bytes)) or not all(
                    isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in sentence[:1]):
                raise TypeError(f"Document {index} holds {type(sentence).__name__} {str(sentence)[:40]!r}, not a "
                                "sentence of token ids (a list of ints): tokenize the corpus first, "
                                "read_documents(files, tokenizer).")
            if len(sentence) and not 0 <= min(sentence) <= max(sentence) < vocabulary_size:
                outside = next(i for i in sentence if not 0 <= i < vocabulary_size)
                raise ValueError(f"Document {index} holds token id {int(outside)}, outside the tokenizer's "
                                 f"vocabulary of {vocabulary_size} tokens: the documents were tokenized with "
                                 "another vocabulary. Pass the tokenizer that made them (read_documents' one).")


# Random B in about 60-68% of the instances is usual (a one-sentence chunk always takes one); far above it, next
# sentence prediction has almost no IsNext pair to learn from.
_MOSTLY_RANDOM = 0.9
_CORPUS_FORMAT_ADVICE = ("A blank line ends a document (one sentence per line); for one document per line (a PubMed "
                         "abstracts dump) pass corpus_format='documents' (--corpus_format documents), which cuts "
                         "each line into sentences.")


def _check_next_sentence_labels(document_count, labels, config):
    """Warn where the corpus's layout makes the next-sentence labels meaningless: google-research/bert's
    algorithm (matched here) says nothing, and a user finds out only from a useless NSP head."""
    if document_count < 2:
        warnings.warn(f"The corpus holds {document_count} document: every random segment B "
                      "(next_sentence_label 1) is drawn from that same document, so the next-sentence labels "
                      f"are wrong. {_CORPUS_FORMAT_ADVICE}")
    elif len(labels) >= 20 and np.mean(labels) > _MOSTLY_RANDOM:
        warnings.warn(f"{np.mean(labels):.0%} of the instances have a random segment B (next_sentence_label 1; "
                      "about 60-68% is usual): a chunk of one sentence always takes a random B, and most chunks are one "
                      f"line (a line of max_seq_length - 3 = {config.max_seq_length - special_token_count(2)} "
                      f"pieces or more fills a chunk alone; so does a document of one line). Each line is read as "
                      f"one sentence. {_CORPUS_FORMAT_ADVICE}")


def pack_instances(instances, config, pad_id=0):
    """`(tokens, segments, positions, labels, next_label)` tuples -> padded arrays."""
    n, length, predictions = len(instances), config.max_seq_length, config.max_predictions_per_seq
    arrays = {
        "token_ids": np.full((n, length), pad_id, "int32"),
        "segment_ids": np.zeros((n, length), "int32"),
        "padding_mask": np.zeros((n, length), "int32"),
        "mask_positions": np.zeros((n, predictions), "int32"),
        "mask_ids": np.zeros((n, predictions), "int32"),
        "mask_weights": np.zeros((n, predictions), "int32"),
        "next_sentence_label": np.zeros((n,), "int32"),
    }
    for row, (tokens, segments, positions, labels, next_label) in enumerate(instances):
        arrays["token_ids"][row, : len(tokens)] = tokens
        arrays["segment_ids"][row, : len(segments)] = segments
        arrays["padding_mask"][row, : len(tokens)] = 1
        arrays["mask_positions"][row, : len(positions)] = positions
        arrays["mask_ids"][row, : len(labels)] = labels
        arrays["mask_weights"][row, : len(labels)] = 1
        arrays["next_sentence_label"][row] = next_label
    return arrays
