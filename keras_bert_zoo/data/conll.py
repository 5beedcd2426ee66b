"""CoNLL-style token/tag files: one token per line, blank line between sentences."""

import dataclasses

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.parallel_examples import ParallelExamples


@dataclasses.dataclass
class TaggedSentences(ParallelExamples):
    """Word-level tagged sentences for `BertTokenClassifier`.

    Attributes:
        words: a list of sentences, each a list of words.
        tags: the same shape, tag strings (IOB/BIO).
        label_names: all tags, "O" first, then sorted.
        source: the file they came from.
    """

    words: list
    tags: list
    label_names: list
    source: str = ""

    _PARALLEL = ("words", "tags")


def read_conll(path, word_column=0, tag_column=-1, label_names=None):
    """Read a CoNLL / two-column BIO file.

    Columns are split on tabs or spaces; `-DOCSTART-` lines are skipped.
    Works for the BioBERT NER TSVs (`token<TAB>tag`) and SciERC's
    space-separated `token POS O tag`.

    Args:
        path: the file.
        word_column / tag_column: column positions.
        label_names: the allowed tags; by default every tag found.

    Raises:
        DataFormatError: a line without the tag column, or an unknown tag,
            naming file and line.
    """
    needed = max(word_column + 1, tag_column + 1 if tag_column >= 0 else -tag_column, 2)
    words, tags, sentence_words, sentence_tags = [], [], [], []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, start=1):
            fields = line.split()
            if not fields:
                if sentence_words:
                    words.append(sentence_words)
                    tags.append(sentence_tags)
                sentence_words, sentence_tags = [], []
                continue
            if fields[0] == "-DOCSTART-":
                continue
            if len(fields) < needed:
                raise DataFormatError(f"{path}, line {number}: expected a token and a tag, found {fields}.")
            tag = fields[tag_column]
            if label_names is not None and tag not in label_names:
                raise DataFormatError(f"{path}, line {number}: unknown tag '{tag}'; expected one of {list(label_names)}.")
            sentence_words.append(fields[word_column])
            sentence_tags.append(tag)
    if sentence_words:
        words.append(sentence_words)
        tags.append(sentence_tags)
    if not words:
        raise DataFormatError(f"{path}: no sentences found.")
    if label_names is None:
        found = {t for sentence in tags for t in sentence}
        label_names = ["O"] + sorted(found - {"O"})
    return TaggedSentences(words, tags, list(label_names), path)
