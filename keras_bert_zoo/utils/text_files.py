"""Text files that are not UTF-8: named by file, line and byte, not by Python's codec message."""

import contextlib
import os


def _where(path):
    """`", line L: byte 0xBB (byte C of the line)"` of the first bytes of `path` that are not UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        data.decode("utf-8")
    except UnicodeDecodeError as e:
        newline = b"\n"
        line, column = data.count(newline, 0, e.start) + 1, e.start - data.rfind(newline, 0, e.start)
        return f", line {line}: byte 0x{data[e.start]:02x} (byte {column} of the line)"
    except OSError:
        pass
    return ""


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
        raise ValueError(f"{os.fspath(path)}{_where(path)} is not UTF-8 text: save the file as UTF-8 (from Latin-1: "
                         "iconv -f latin1 -t utf-8).") from None
