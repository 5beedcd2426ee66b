"""CSV / TSV files with named columns."""

import contextlib
import csv
import re
import warnings

from keras_bert_zoo.data.classification_examples import ExampleBuilder
from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.glue import GLUE_TASKS
from keras_bert_zoo.utils.text_files import utf8_errors_named


def read_csv(path, text_column, label_column, text_b_column=None, label_names=None, delimiter=None,
             regression=False, on_error="raise", multi_label=False):
    """Read a CSV (or TSV) with a header into `ClassificationExamples`.

    A tab-separated file is read as google-research/bert's run_classifier.py
    reads one: every character is the text's, quotes too. Comma-separated
    fields may be quoted (`"work, play"`).

    Args:
        path: the file.
        text_column / text_b_column / label_column: header names.
        label_names: the labels in id order; default: sorted labels found.
        delimiter: default tab for `.tsv`, `,` for `.csv`; for another
            extension (`.txt`), tab when the header line holds one, else `,`.
        regression: parse labels as numbers.
        multi_label: a label field holds any number of names, separated by
            commas ("sports,politics"; empty: none); labels are multi-hot rows.
        on_error: `"raise"` (naming file and line) or `"skip"`.
    """
    builder = ExampleBuilder(path, label_names, regression=regression, on_error=on_error, multi_label=multi_label)
    with utf8_errors_named(path), _long_fields(), open(path, encoding="utf-8-sig", newline="") as f:
        delimiter = delimiter or _delimiter(path, f.readline())
        f.seek(0)
        tabs = delimiter == "\t"
        # Quotes in a TSV are text (run_classifier.py: quotechar=None): a text opening with '"' swallowed the rows
        # after it up to the next quote.
        lines = _Lines(f)
        reader = csv.DictReader(lines, delimiter=delimiter, quoting=csv.QUOTE_NONE if tabs else csv.QUOTE_MINIMAL)
        try:
            header = reader.fieldnames
        except csv.Error as e:
            raise DataFormatError(f"{path}, line 1: " + _unparsed(e, delimiter)) from None
        if not header:
            raise DataFormatError(f"{path} is empty: a header line naming its columns, then one example per line.")
        wanted = [c for c in (text_column, text_b_column, label_column) if c]
        missing = [c for c in wanted if c not in reader.fieldnames]
        if missing:
            raise DataFormatError(
                f"{path}, line 1: no column(s) {missing} in the header {reader.fieldnames}. "
                + _header_hint(reader.fieldnames, delimiter) + _glue_hint(reader.fieldnames)
            )
        # DictReader keeps the last of columns of one name: a second 'text' column was read in silence.
        repeated = [c for c in dict.fromkeys(wanted) if header.count(c) > 1]
        if repeated:
            fields = [i + 1 for i, name in enumerate(header) if name == repeated[0]]
            raise DataFormatError(f"{path}, line 1: the header names {len(fields)} columns {repeated[0]!r} (fields "
                                  f"{', '.join(map(str, fields))}): which to read is no more than a guess. Rename "
                                  "all but one.")
        csv_quoted = None  # the first line whose field looks quoted by a CSV writer
        for row in _rows(reader, builder, delimiter):
            fields = [v for v in row.values() if isinstance(v, str)]
            if tabs and csv_quoted is None and any(_CSV_QUOTED.fullmatch(v) for v in fields):
                csv_quoted = reader.line_num
            # A quoted field may hold line breaks: the row's first line is the last one's less those (less the last
            # line's own, where a quote left open ran to the end of the file).
            first_line = reader.line_num - sum(v.count("\n") for v in fields + list(row.get(None) or ())) + lines.ended
            spans_lines = not tabs and first_line < reader.line_num
            # DictReader files surplus fields under None and fills missing ones with None.
            if None in row or None in row.values():
                found = len(row) - 1 + len(row[None]) if None in row else sum(v is not None for v in row.values())
                if spans_lines:  # a quote left open took in the lines after it: named where it opened
                    builder.fail(first_line, _unclosed_quote(first_line, reader.line_num, lines.ended,
                                                             f"{found} fields but the header has {len(header)}"))
                    continue
                # A quote opened and not closed in its field: a CSV writer's, around a tab or a line break.
                opened = tabs and any(_CSV_OPENED.fullmatch(v) for v in fields)
                quoted = opened or csv_quoted is not None
                builder.fail(reader.line_num, f"{found} fields but the header has {len(reader.fieldnames)}. "
                             + ("Does a text hold a tab?" + (" A field looks quoted by a CSV writer." + _CSV_QUOTING
                                                               if quoted else "")
                                if tabs else "Quote fields that hold the delimiter."))
                continue
            if spans_lines and "\n" in row[label_column]:  # a text may hold line breaks; a label never does
                builder.fail(first_line, _unclosed_quote(first_line, reader.line_num, lines.ended,
                                                         f"the label {label_column!r} holds line breaks"))
                continue
            texts = (row[text_column],) + ((row[text_b_column],) if text_b_column else ())
            builder.add(reader.line_num, texts, row[label_column])
    if csv_quoted is not None:
        warnings.warn(f"{path}, line {csv_quoted}: a field looks quoted by a CSV writer." + _CSV_QUOTING, stacklevel=2)
    return builder.build()


# csv's default limit, 131,072 characters, refused a long document (valid input) with a bare csv.Error. A field
# fits in a C long on every platform; one longer is refused by its line.
_LONGEST_FIELD = 2**31 - 1


@contextlib.contextmanager
def _long_fields():
    """Inside, csv reads fields up to `_LONGEST_FIELD` characters (its limit is global: restored after)."""
    previous = csv.field_size_limit(_LONGEST_FIELD)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def _rows(reader, builder, delimiter):
    """The rows of `reader`; one csv cannot parse is a bad row of `builder`, named by its line."""
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            # The DictReader's own line_num counts the lines of rows read whole: the csv reader's, this one's.
            builder.fail(reader.reader.line_num, _unparsed(e, delimiter))
            continue
        yield row


class _Lines:
    """A file's lines, noting whether the csv reader asked for one past the last (`ended`): a quote left open
    runs a row to the end of the file."""

    def __init__(self, f):
        self._f, self.ended = f, False

    def __iter__(self):
        return self

    def __next__(self):
        try:
            return next(self._f)
        except StopIteration:
            self.ended = True
            raise


def _unclosed_quote(first_line, last_line, ended, found):
    """The message of a row that lines `first_line` to `last_line` make one (`ended`: it ran to the end of the
    file), where `found` shows it is no row."""
    closed = "is never closed" if ended else f"is closed only on line {last_line}"
    return (f"a quote opened on this line {closed}, so lines {first_line}-{last_line} read as one row, and {found}. "
            "Close the quote (a quote inside a quoted field is written twice: \"\").")


def _unparsed(error, delimiter):
    """The message of a line csv cannot parse (`error`: its csv.Error)."""
    separator = "tab" if delimiter == "\t" else repr(delimiter)
    return f"not readable as {separator}-separated fields ({error})."


# A field a CSV writer quoted (pandas' to_csv(sep="\t"), csv.writer): whole, with its quotes doubled (a text
# quoted whole is no sign: MRPC has them); and one it opened, to close it past a tab or a line break.
_CSV_QUOTED = re.compile(r'"(?:[^"]|"")*""(?:[^"]|"")*"')
_CSV_OPENED = re.compile(r'"(?:[^"]|"")*')


_CSV_QUOTING = (" Quotes in a tab-separated file are text, as run_classifier.py reads TSVs, so a CSV writer's "
                "quoting stays in the texts: write the file without it (pandas: to_csv(sep='\\t', "
                "quoting=csv.QUOTE_NONE)), or as a .csv.")


def _delimiter(path, header_line):
    """The delimiter of a file by its extension; by its header line where the extension does not say."""
    if path.endswith((".tsv", ".csv")):
        return "\t" if path.endswith(".tsv") else ","
    return "\t" if "\t" in header_line else ","


def _header_hint(header, delimiter):
    """What to do about a header without the named columns: name them, unless it is not one the flags can name
    (one field holding another separator, as Excel's ';'; a data row, in a file without a header)."""
    separator = "a tab" if delimiter == "\t" else repr(delimiter)
    others = [c for c in ";|\t," if c != delimiter and c in header[0]]
    if len(header) == 1 and others:
        return (f"The header is one field: the file is read as separated by {separator}, but the header holds "
                f"{others[0]!r}. Save it separated by {separator}.")
    return ("Name the columns with text_column / text_b_column / label_column; a file without a header needs one: "
            "a first line naming its columns (text, label).")


def _glue_hint(header):
    """A header that is a GLUE task's is read by `read_glue`: say so."""
    tasks = [name for name, task in GLUE_TASKS.items()
             if task.header and {task.text_a, task.label} <= set(header)]
    if not tasks:
        return ""
    return (f" The header is GLUE's ({' or '.join(tasks)}): read it with read_glue "
            f"(command line: --glue_task {tasks[0]}).")
