"""Learning a WordPiece vocabulary from a corpus, as SciBERT built SciVocab."""

import warnings

import tensorflow as tf

from keras_bert_zoo.utils.path_arguments import path_list

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
# tensorflow-text's learner: pieces are kept when seen at least MIN_COUNT times (its
# lower_thresh), and it may return up to SLACK_RATIO fewer tokens than asked.
MIN_COUNT = 10
SLACK_RATIO = 0.05


def learn_vocabulary(input_files, vocabulary_size, lowercase=True, special_tokens=SPECIAL_TOKENS,
                     max_lines=None):
    """Learn a WordPiece vocabulary with tensorflow-text's learner.

    Args:
        input_files: corpus file(s), one text per line.
        vocabulary_size: target size (the learner may return slightly fewer).
        lowercase: lower-case and strip accents first (an uncased vocabulary).
        special_tokens: placed first, with BERT's ids ([PAD] = 0 ... [MASK] = 4).
        max_lines: learn from at most this many lines.

    Returns:
        The vocabulary as a list of tokens (index = id), ready for
        `BertTokenizer(vocabulary, lowercase=lowercase)`.

    Examples:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "corpus.txt")
    >>> _ = open(path, "w").write("the cat sat on the mat\\nthe dog sat\\n" * 20)
    >>> vocabulary = learn_vocabulary(path, 40)
    >>> vocabulary[:5], "the" in vocabulary
    (['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]'], True)
    """
    from tensorflow_text.tools.wordpiece_vocab import bert_vocab_from_dataset

    files = path_list(input_files, "input_files")
    missing = [f for f in files if not tf.io.gfile.exists(f)]
    if missing:
        raise FileNotFoundError(f"Corpus file(s) not found: {missing}.")
    if vocabulary_size <= len(special_tokens):
        raise ValueError(f"vocabulary_size={vocabulary_size} leaves no room beyond the {len(special_tokens)} "
                         "special tokens.")
    lines = tf.data.TextLineDataset(files).filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0)
    if max_lines:
        lines = lines.take(max_lines)
    vocabulary = bert_vocab_from_dataset.bert_vocab_from_dataset(
        lines.batch(1024).prefetch(2),
        vocab_size=vocabulary_size,
        reserved_tokens=list(special_tokens),
        bert_tokenizer_params={"lower_case": lowercase},
        learn_params={"lower_thresh": MIN_COUNT, "slack_ratio": SLACK_RATIO},
    )
    if len(vocabulary) <= len(special_tokens):
        raise ValueError(f"No vocabulary could be learned from {files}: the corpus has no text.")
    if len(vocabulary) < (1 - SLACK_RATIO) * vocabulary_size:
        warnings.warn(
            f"learned a vocabulary of {len(vocabulary)} tokens, not the {vocabulary_size} asked for: the corpus "
            f"is too small. The WordPiece learner keeps only the characters and the pieces seen at least "
            f"{MIN_COUNT} times, and this corpus has no more; use more text for a larger vocabulary.",
            stacklevel=2)
    return vocabulary
