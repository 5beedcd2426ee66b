"""The progress bars of every long loop: redrawn in place on a terminal, plain lines now and then in a log file."""

import sys

from tqdm.auto import tqdm
from tqdm.autonotebook import tqdm as console_or_notebook_tqdm  # after tqdm.auto, which imports it quietly
from tqdm.std import tqdm as console_tqdm

# Where stderr is a file (a log, a CI job), tqdm's redraws (a `\r` and the state, ten times a second) would fill
# it: a line when the loop starts, this often and when it ends.
LOG_EVERY_SECONDS = 30
IN_NOTEBOOK = console_or_notebook_tqdm is not console_tqdm  # a widget there: stderr is no terminal but shows it


class _Lines:
    """A stream for tqdm that writes each redraw (`\\r` state, padded) as a line of its own."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        text = text.strip("\r\n ")
        if text:  # not the `\n` after the last state, nor the blank of a bar that does not stay
            self.stream.write(text + "\n")

    def flush(self):
        self.stream.flush()


def progress_bar(iterable=None, enabled=True, **kwargs):
    """`tqdm(iterable, **kwargs)`, shown when `enabled`: in place on a terminal or in a notebook, and where
    stderr is neither, as a plain line at the start, every `LOG_EVERY_SECONDS` and at the end."""
    if not enabled:
        return tqdm(iterable, disable=True, **kwargs)
    if IN_NOTEBOOK or sys.stderr.isatty():
        return tqdm(iterable, **kwargs)
    return tqdm(iterable, file=_Lines(sys.stderr), mininterval=LOG_EVERY_SECONDS, maxinterval=LOG_EVERY_SECONDS,
                **kwargs)


def write_line(text, file=None):
    """`text` on a line of its own, above a progress bar being drawn on a terminal rather than inside it."""
    tqdm.write(text, file=file or sys.stderr)
