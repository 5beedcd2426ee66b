"""Atomic writes: a reader never sees a half-written file or directory."""

import contextlib
import os
import shutil
import tempfile


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_directory(final_path):
    """Yield a temporary directory that replaces `final_path` on success.

    The temporary directory sits beside `final_path` (same file system), so
    the final `os.replace` is atomic. On any exception it is removed and
    `final_path` is left as it was.
    """
    final_path = os.path.abspath(final_path)
    parent = os.path.dirname(final_path)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".tmp-" + os.path.basename(final_path) + "-", dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private
    try:
        yield tmp
        if os.path.isdir(final_path):
            # os.replace cannot overwrite a non-empty directory: move the old
            # one aside first, then drop it once the new one is in place.
            old = tempfile.mkdtemp(prefix=".old-", dir=parent)
            os.replace(final_path, os.path.join(old, "x"))
            os.replace(tmp, final_path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


@contextlib.contextmanager
def atomic_file(final_path, mode="wb"):
    """Yield a file object whose content replaces `final_path` on success."""
    final_path = os.path.abspath(final_path)
    parent = os.path.dirname(final_path)
    os.makedirs(parent, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-" + os.path.basename(final_path) + "-", dir=parent)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, final_path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
