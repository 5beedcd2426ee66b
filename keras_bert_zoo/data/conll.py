"""CoNLL-style token/tag files: one token per line, blank line between sentences."""

import dataclasses
import warnings

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.parallel_examples import LabelledExamples
from keras_bert_zoo.metrics.conlleval import chunk_ending_schemes
from keras_bert_zoo.metrics.conlleval import entity_tag_help
from keras_bert_zoo.metrics.conlleval import is_entity_tag
from keras_bert_zoo.utils.text_files import utf8_errors_named
from keras_bert_zoo.utils.text_files import untrusted_repr


@dataclasses.dataclass
class TaggedSentences(LabelledExamples):
    """Word-level tagged sentences for `BertTokenClassifier`: pass them whole
    to its `fit` / `evaluate`, or unpack them: `sentences, tags = read_conll(path)`.

    Attributes:
        words: a list of sentences, each a list of words.
        tags: the same shape, tag strings of an entity scheme (BIO/IOB, IO,
            IOBES, BILOU: `metrics.conlleval.is_entity_tag`).
        label_names: all tags, "O" first, then sorted.
        source: the file they came from.
    """

    words: list
    tags: list
    label_names: list
    source: str = ""

    _PARALLEL = ("words", "tags")


def _split(line, layout):
    return line.split("\t") if layout == "tab" else line.split()


def read_conll(path, word_column=0, tag_column=-1, label_names=None):
    """Read a CoNLL / two-column BIO file.

    The file's first token line (not blank, not `-DOCSTART-`) fixes its
    layout: tab-separated if it holds a tab (BioBERT's `token<TAB>tag`
    TSVs), else space-separated (SciERC's `token POS O tag`), and the number
    of columns. Every token line must follow that layout; `-DOCSTART-` lines
    are skipped.

    Args:
        path: the file.
        word_column / tag_column: column positions.
        label_names: the allowed tags; by default every tag found.

    Returns:
        `TaggedSentences`: `ner.fit(read_conll(path))`, or
        `sentences, tags = read_conll(path)`.

    Raises:
        DataFormatError: naming file and line: a line whose columns differ
            from the first token line's, an empty word or tag, a word or tag
            column the layout lacks (or both the same), a tag that is not an
            entity tag (a POS tag: the wrong column; a type without a
            prefix, `PER` for `I-PER`), or an unknown tag.
    """
    words, tags, sentence_words, sentence_tags = [], [], [], []
    lines, sentence_lines = [], []  # the line of each tag, for a warning naming one
    layout = None  # ("tab" | "space", column count, line number that set it)
    with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
        for number, line in enumerate(f, start=1):
            # Trailing tabs (tools and spreadsheets leave them) make an empty last column, which no word or tag
            # is: the default tag_column=-1 read an empty tag and the file was refused.
            line = line.rstrip("\r\n").rstrip("\t")
            if not line.strip():
                if sentence_words:
                    words.append(sentence_words)
                    tags.append(sentence_tags)
                    lines.append(sentence_lines)
                sentence_words, sentence_tags, sentence_lines = [], [], []
                continue
            if line.split()[0] == "-DOCSTART-":
                continue
            if layout is None:
                separator = "tab" if "\t" in line else "space"
                layout = (separator, len(_split(line, separator)), number)
                if layout[1] < 2:
                    raise DataFormatError(f"{path}:{number}: expected a token and a tag, found {untrusted_repr(line)}.")
                for name, column in (("word_column", word_column), ("tag_column", tag_column)):
                    if not -layout[1] <= column < layout[1]:
                        raise DataFormatError(
                            f"{path}:{number}: {name}={column} is not among the {layout[1]} "
                            f"{separator}-separated column(s) of the first token line {untrusted_repr(line)}."
                        )
                if word_column % layout[1] == tag_column % layout[1]:
                    raise DataFormatError(f"{path}:{number}: word_column={word_column} and tag_column={tag_column} "
                                          f"are the same of the {layout[1]} columns of {untrusted_repr(line)}.")
            separator, count, first = layout
            fields = _split(line, separator)
            if separator == "space" and "\t" in line:  # its count may match: "expected 2 columns, found 2"
                raise DataFormatError(
                    f"{path}:{number}: holds a tab, but line {first} separates its {count} columns by spaces: "
                    f"{untrusted_repr(line)}. Separate every line's columns alike (tabs, or spaces)."
                )
            if len(fields) != count:
                raise DataFormatError(
                    f"{path}:{number}: expected {count} {separator}-separated columns (as on line {first}), "
                    f"found {len(fields)}: {untrusted_repr(line)}. Fix the line (a word never holds a "
                    f"{'tab' if separator == 'tab' else 'space or tab'})."
                )
            word, tag = fields[word_column].strip(), fields[tag_column].strip()
            if not word or not tag or " " in word or " " in tag:
                raise DataFormatError(
                    f"{path}:{number}: expected one word and one tag, found word {untrusted_repr(word)} and tag "
                    f"{untrusted_repr(tag)} (one token per line, without spaces)."
                )
            if not is_entity_tag(tag):
                # A POS tag (the wrong column) and a bare type ("PER") alike: entity F1 would be 0, in silence.
                raise DataFormatError(
                    f"{path}:{number}: {untrusted_repr(tag)} is not an entity tag: is tag_column={tag_column} the "
                    f"column of the tags in {untrusted_repr(line)}? {entity_tag_help(tag)}"
                )
            if label_names is not None and tag not in label_names:
                raise DataFormatError(f"{path}:{number}: unknown tag '{tag}'; expected one of {list(label_names)}.")
            sentence_words.append(word)
            sentence_tags.append(tag)
            sentence_lines.append(number)
    if sentence_words:
        words.append(sentence_words)
        tags.append(sentence_tags)
        lines.append(sentence_lines)
    if not words:
        raise DataFormatError(f"{path}: no sentences found.")
    _warn_if_schemes_mixed(path, tags, lines)
    if label_names is None:
        found = {t for sentence in tags for t in sentence}
        label_names = ["O"] + sorted(found - {"O"})
    return TaggedSentences(words, tags, list(label_names), path)


def _warn_if_schemes_mixed(path, tags, lines):
    """Warn, naming a line of each, where the file's entities end by the rules of two tag schemes (BIO's B- / I-
    and IOBES' E- / S-, or BILOU's L- / U-): files of two schemes joined. conlleval reads each tag by its prefix, so
    the file is read and scored as it is; but a tagger trained on it learns two tags for one thing."""
    endings = {}  # scheme -> (line, tag) of the first entity ending by its rule
    for sentence_tags, sentence_lines in zip(tags, lines):
        for scheme, position in chunk_ending_schemes(sentence_tags).items():
            endings.setdefault(scheme, (sentence_lines[position], sentence_tags[position]))
    if len(endings) < 2:
        return
    (first, (line, tag)), (second, (other_line, other_tag)) = sorted(endings.items(), key=lambda item: item[1])[:2]
    warnings.warn(
        f"{path}:{line}: an entity ends at {untrusted_repr(tag)}, as {first} tags end one, but at line {other_line} "
        f"one ends at {untrusted_repr(other_tag)}, as {second} tags do: the file mixes tag schemes (files of two "
        "schemes joined?). conlleval reads each tag by its prefix, so it is scored as it is, but a tagger trained on "
        "it learns two tags for one thing (a one-word entity as B-X and as S-X). Write it in one scheme: in IOBES, an "
        "entity's last word is E-X and a one-word entity S-X (BILOU: L-X, U-X); in BIO, they are I-X and B-X.",
        stacklevel=3)
