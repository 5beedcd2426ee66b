"""Files of one text per line, as `predict`, `encode` and `extract-features` read them."""

import contextlib
import sys

from keras_bert_zoo.utils.text_files import utf8_errors_named


def read_text_lines(path, flag):
    """The lines of `path` (`-`: standard input), each one text.

    Lines end at `\n` (a `\r` before it goes too), as an editor numbers
    them: `str.splitlines` would also cut at form feeds or U+2028 inside a
    text. An empty line is refused by its number: dropped, it would shift
    every output row after it against the input line it answers. Empty
    lines at the end shift nothing and are left out.

    Raises:
        ValueError: an empty (or blank) line before the last text, or no
            text at all.
    """
    stream = sys.stdin if path == "-" else open(path, encoding="utf-8-sig", newline="")
    with utf8_errors_named(path) if path != "-" else contextlib.nullcontext(), stream:
        lines = [line.removesuffix("\r") for line in stream.read().split("\n")]
    while lines and not lines[-1].strip():
        lines.pop()
    if not lines:
        # An empty output, exit status 0, would read as every text answered.
        raise ValueError(f"{flag} {path} holds no text: give one text per line.")
    empty = [number for number, line in enumerate(lines, 1) if not line.strip()]
    if empty:
        raise ValueError(f"{flag} {path}: line {empty[0]} is empty ({len(empty)} empty lines in all). Each line is "
                         "one text and each output row answers one line: remove the empty lines.")
    return lines
