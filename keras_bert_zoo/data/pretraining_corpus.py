"""Plain-text pretraining corpora.

The native layout is google-research/bert's: one sentence per line, a blank
line between documents. Two common others are read too: one document per
line (PubMed abstracts dumps), and WikiText (articles under ` = Title = `
headings, one paragraph per line); their lines are cut into sentences.
Documents never span files.
"""

import re
import warnings

import tensorflow as tf

from keras_bert_zoo.data.pretraining_records import is_pretraining_records
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer
from keras_bert_zoo.utils.path_arguments import path_list
from keras_bert_zoo.utils.progress_bar import progress_bar
from keras_bert_zoo.utils.text_files import utf8_errors_named

_BATCH_LINES = 4096
FORMATS = ("sentences", "documents", "wikitext")
# A sentence ends at . ! or ? followed by space and a capital, digit or quote.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_WIKITEXT_TITLE = re.compile(r"^ ?= [^=].* = ?$")


def split_sentences(text):
    """Cut a paragraph into sentences (a simple rule: `.`, `!`, `?` before a capital)."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def _as_sentence_lines(lines, corpus_format):
    """Any supported layout -> google-research/bert's (sentences, blank between documents)."""
    if corpus_format == "sentences":
        return [line.strip() for line in lines]
    out = []
    for line in lines:
        if corpus_format == "wikitext":
            if _WIKITEXT_TITLE.match(line.rstrip("\r\n")):
                out.append("")  # a new article
                continue
            if line.strip().startswith("= "):
                continue  # a section heading, not text
        out.extend(split_sentences(line))
        if corpus_format == "documents":
            out.append("")
    return out


def _file_lines(text):
    """A file's lines, as google-research/bert reads them (at each newline), but for two things it lost in silence:
    a file with old Mac line endings (a carriage return alone, no newline) is cut at them, where it was one line
    (one sentence, no document break); and a leading byte-order mark is dropped, which hid a WikiText title on the
    first line (the tokenizer drops it anyway)."""
    text = text.removeprefix("\ufeff")
    return text.split("\r") if "\r" in text and "\n" not in text else text.split("\n")


# The share of [UNK] pieces above which a corpus is read with a vocabulary not made for it.
_MOSTLY_UNKNOWN = 0.1


def read_documents(input_files, tokenizer, corpus_format="sentences", progress=False):
    """Tokenize corpus files into documents of sentences of word-piece ids.

    Args:
        input_files: a path (`str` or `pathlib.Path`) or a list of paths (text, UTF-8).
        tokenizer: a `BertTokenizer`.
        corpus_format: `"sentences"` (one per line, blank line between
            documents), `"documents"` (one document per line) or
            `"wikitext"`.
        progress: show a progress bar over files.

    Returns:
        A list of documents; each a list of sentences; each a list of ids.
        Empty lines end documents; lines with no word-pieces are dropped; so
        are empty documents.

    Raises:
        FileNotFoundError: a file is missing.
        IsADirectoryError: a path is a directory.
        ValueError: the corpus holds no text, or a file is pretraining records.
    """
    if corpus_format not in FORMATS:
        raise ValueError(f"corpus_format must be one of {FORMATS}; got '{corpus_format}'.")
    check_tokenizer(tokenizer, "read_documents")
    files = path_list(input_files, "input_files")
    documents = []
    for path in progress_bar(files, progress, desc="tokenizing", unit="file"):
        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(f"Corpus file {path} does not exist.")
        if tf.io.gfile.isdir(path):  # else TensorFlow's FailedPreconditionError "Is a directory", deep in a read
            raise IsADirectoryError(f"{path} is a directory, not a corpus file: pass its files (a list, e.g. "
                                    f"sorted(glob.glob('{path.rstrip('/')}/*.txt'))).")
        if is_pretraining_records(path):  # else its bytes were reported as text in another encoding
            raise ValueError(f"{path} is a TFRecord file of pretraining instances, not corpus text: it is ready "
                             "to train on (keras-bert-zoo pretrain --input_file, or pretrain_from_records).")
        try:
            with utf8_errors_named(path), tf.io.gfile.GFile(path, "r") as f:
                lines = _as_sentence_lines(_file_lines(f.read()), corpus_format)
        except ValueError as e:
            if not path.lower().endswith((".tfrecord", ".tfrecords", ".record")):
                raise
            # Its bytes were reported as text in another encoding, as if the name said nothing.
            raise ValueError(f"{path} is named as TFRecords but holds no pretraining records (those "
                             f"create-pretraining-data writes), nor UTF-8 text: {e}") from None
        # A document boundary after each blank line (and at the end of a file).
        boundaries = {i for i, line in enumerate(lines) if not line}
        text_lines = [i for i, line in enumerate(lines) if line]
        pieces = {}
        for start in range(0, len(text_lines), _BATCH_LINES):
            chunk = text_lines[start : start + _BATCH_LINES]
            ids = tokenizer(tf.constant([lines[i] for i in chunk])).to_list()
            pieces.update(zip(chunk, ids))
        document = []
        for i in range(len(lines) + 1):
            if i == len(lines) or i in boundaries:
                if document:
                    documents.append(document)
                document = []
            elif pieces[i]:
                document.append(pieces[i])
    if not documents:
        raise ValueError(f"No text in {files}: expected one sentence per line, blank lines between documents.")
    _warn_of_unknown_pieces(documents, tokenizer, files)
    return documents


def _warn_of_unknown_pieces(documents, tokenizer, files):
    """Warn where the vocabulary reads much of the corpus as [UNK] (another language's, or a tiny one's): the
    instances were written, and trained on, in silence."""
    unknown_id = tokenizer.token_to_id(tokenizer.unknown_token)
    pieces = sum(len(sentence) for document in documents for sentence in document)
    unknown = sum(sentence.count(unknown_id) for document in documents for sentence in document)
    if unknown > _MOSTLY_UNKNOWN * pieces:
        named = files[0] + (" ..." if len(files) > 1 else "")
        warnings.warn(f"{unknown / pieces:.0%} of the {pieces} word pieces of {named} "
                      f"are {tokenizer.unknown_token} (a vocabulary made for the corpus leaves under 1%): is the "
                      "vocabulary the corpus's language's? A fresh model can learn one (--vocab_from_corpus).",
                      stacklevel=3)
