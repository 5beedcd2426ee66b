"""Text and JSON files from users: a file that is not UTF-8 is named by file, line and byte, and one that is no
JSON Python can read by file, never by Python's codec or parser message; values read from them are shown bounded."""

import contextlib
import json
import os
import reprlib
import sys


# Files that are text in another encoding, or not text at all, by their first bytes: what to do about each.
_KNOWN_STARTS = (
    ((b"\xff\xfe", b"\xfe\xff"), "it is UTF-16 (it starts with UTF-16's byte-order mark, as Excel's 'Unicode Text' "
                                   "does): save it as UTF-8 (iconv -f utf-16 -t utf-8)"),
    ((b"\x1f\x8b",), "it is gzip-compressed: decompress it first (gunzip)"),
    ((b"PK\x03\x04",), "it is a zip archive: unzip it first"),
)
_OTHER = "save the file as UTF-8 (from Latin-1: iconv -f latin1 -t utf-8)"


def _where(path):
    """`(", line L: byte 0xBB (byte C of the line)", advice)` for the first bytes of `path` that are not UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        newline = b"\n"
        line, column = data.count(newline, 0, e.start) + 1, e.start - data.rfind(newline, 0, e.start)
        advice = next((advice for starts, advice in _KNOWN_STARTS if data.startswith(starts)), _OTHER)
        return f", line {line}: byte 0x{data[e.start]:02x} (byte {column} of the line)", advice
    except OSError:
        pass
    return "", _OTHER


@contextlib.contextmanager
def utf8_errors_named(path):
    """Inside, a `UnicodeDecodeError` reading `path` becomes a `ValueError` naming the file, the line and the byte.

    Examples:
    >>> import tempfile
    >>> path = tempfile.mkstemp(suffix=".txt")[1]
    >>> _ = open(path, "wb").write(b"caf\\xc3\\xa9\\nna\\xefve\\n")
    >>> with utf8_errors_named(path):
    ...     open(path, encoding="utf-8").read()
    Traceback (most recent call last):
    ...
    ValueError: ...txt, line 2: byte 0xef (byte 3 of the line) is not UTF-8 text: save the file as UTF-8 (from Latin-1: iconv -f latin1 -t utf-8).
    """
    try:
        yield
    except UnicodeDecodeError:
        where, advice = _where(path)
        raise ValueError(f"{os.fspath(path)}{where} is not UTF-8 text: {advice}.") from None


class _UntrustedRepr(reprlib.Repr):
    """reprlib's bounded repr, which also cuts bytes before showing them (reprlib shows them whole, then cuts the
    text), and shows an integer too long for `repr` (over 4,300 digits) by its size."""

    repr_bytes = repr_bytearray = reprlib.Repr.repr_str

    def repr_int(self, x, level):
        try:
            return super().repr_int(x, level)
        except ValueError:
            return f"<an integer of {x.bit_length()} bits>"


_untrusted_repr = _UntrustedRepr()
_untrusted_repr.maxstring = _untrusted_repr.maxother = 60
_untrusted_repr.maxlevel = 3  # with at most 6 items a level shown, at most 216 values


def untrusted_repr(value):
    """`repr(value)` cut to a line, for a value read from an untrusted file: a file's nested lists or pickled
    objects could make the full repr gigabytes long (a list holding one list twice, 60 levels deep), or fail.

    Examples:
    >>> untrusted_repr([[[[[[[[1]]]]]]]])
    '[[[[...]]]]'
    >>> untrusted_repr(10 ** 5000)
    '<an integer of 16610 bits>'
    >>> untrusted_repr(b"ab" * 10 ** 6)
    "b'ababababababababababababab...abababababababababababababab'"
    """
    return _untrusted_repr.repr(value)


def check_bool_fields(document, path, keys, error=ValueError):
    """Refuse a field of `keys` that `document` (read from `path`) holds as anything but true or false: a
    string such as "no", or 0, would otherwise be read as a truth value."""
    for key in keys:
        if key in document and not isinstance(document[key], bool):
            raise error(f"{os.fspath(path)}: '{key}' is {untrusted_repr(document[key])}, not true or false.")


class _TooManyDigits(ValueError):
    pass


def _bounded_int(digits):
    # int() refuses more digits than sys.get_int_max_str_digits() with advice to raise that limit, which is no
    # fix for a file: such a number is refused here, named by its length.
    if len(digits.lstrip("-")) > sys.get_int_max_str_digits():
        raise _TooManyDigits(f"an integer of {len(digits.lstrip('-'))} digits, more than any field holds")
    return int(digits)


def loads_json(data, source, error=ValueError):
    """`json.loads(data)` (a str, or UTF-8 bytes), whatever `data` holds raising only `error` naming `source`:
    invalid JSON, arrays or objects nested deeper than Python recurses, or an integer too long to convert."""
    try:
        return json.loads(data, parse_int=_bounded_int)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise error(f"{source} is not valid JSON ({e}).") from e
    except _TooManyDigits as e:
        raise error(f"{source} holds {e}: it is corrupt or crafted.") from None
    except RecursionError:
        raise error(f"{source} nests JSON arrays or objects deeper than Python reads (about "
                    f"{sys.getrecursionlimit()} levels), far beyond any config: it is corrupt or crafted.") from None


def read_json_object(path, error=ValueError):
    """The JSON object (a dict) in the file `path`. A file that is not UTF-8, not JSON, or holds another JSON
    value (a list) raises `error`, naming the file: the one check every JSON file of a preset or checkpoint
    passes before a field is read from it."""
    try:
        with utf8_errors_named(path), open(path, encoding="utf-8") as f:
            text = f.read()
    except ValueError as e:  # not UTF-8, named by utf8_errors_named
        raise error(str(e)) from e
    document = loads_json(text, os.fspath(path), error)
    if not isinstance(document, dict):
        raise error(f"{os.fspath(path)} holds a JSON {type(document).__name__}, not an object of named fields.")
    return document
