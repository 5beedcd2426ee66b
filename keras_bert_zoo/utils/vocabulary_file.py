"""Reading WordPiece vocabularies with ids kept equal to line numbers."""

import os

from keras_bert_zoo.utils.text_files import utf8_errors_named

# tensorflow-text cannot hold an empty token (SciBERT's vocab.txt has one at
# line 30107). It is replaced by a string no text can produce, so every other
# token keeps the id of its line.
EMPTY_TOKEN_PLACEHOLDER = "[empty line {}]"


def load_vocabulary(vocabulary):
    """Return the vocabulary as a list of tokens, index = token id.

    Args:
        vocabulary: a path to a `vocab.txt` (one token per line) or a list of
            strings.

    Returns:
        A list of strings where empty entries are replaced by a placeholder
        that can never match any text.
    """
    if isinstance(vocabulary, (str, os.PathLike)):
        path = os.fspath(vocabulary)
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"Vocabulary file not found: '{path}'. Pass the path of a BERT "
                "`vocab.txt` (one token per line) or a list of tokens."
            )
        with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
            tokens = f.read().split("\n")
        # A trailing newline ends the last line; it is not an extra token.
        if tokens and tokens[-1] == "":
            tokens.pop()
        tokens = [t.rstrip("\r") for t in tokens]
    else:
        tokens = [str(t) for t in vocabulary]
    source = f"{os.fspath(vocabulary)}: " if isinstance(vocabulary, (str, os.PathLike)) else "The vocabulary: "
    if not tokens:
        raise ValueError(f"{source}it holds no token; a vocabulary lists at least the special tokens.")
    first_line = {}
    for line, token in enumerate(tokens, 1):
        # tensorflow-text's WordPiece refuses a repeat and fails on a NUL, naming neither the token nor the file.
        if "\0" in token:
            raise ValueError(f"{source}line {line}: the token {token!r} holds a NUL character, which no text holds "
                             "and WordPiece cannot: the file is not a vocabulary, or is corrupt.")
        if token and first_line.setdefault(token, line) != line:
            raise ValueError(f"{source}the token {token!r} is on line {first_line[token]} and again on line {line}; "
                             "each token must be listed once (a token's id is its line number - 1): remove the "
                             "repeat, or the vocabulary does not belong to this model.")
    return [t if t else EMPTY_TOKEN_PLACEHOLDER.format(i) for i, t in enumerate(tokens)]


def vocabulary_lines(tokens):
    """Inverse of `load_vocabulary`: the lines to write back to a `vocab.txt`."""
    return ["" if t == EMPTY_TOKEN_PLACEHOLDER.format(i) else t for i, t in enumerate(tokens)]


def tokens_with_capitals(tokens):
    """How many tokens hold an upper-case letter, special tokens (`[CLS]`, `[unused0]`) aside: few or none in an
    uncased vocabulary (BERT-Base uncased: 0; SciVocab: 154 of 31,090), thousands in a cased one (BERT-Base
    cased: 8,366 of 28,996)."""
    return sum(1 for t in tokens if not (t.startswith("[") and t.endswith("]")) and t != t.lower())
