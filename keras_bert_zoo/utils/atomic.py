"""Atomic writes: a reader never sees a half-written file or directory.

Temporaries sit beside their target, named `.tmp-<target>-<pid>@<host>-<random>`
(and `.old-...` for a directory being replaced), so the next write into the
same directory can tell which ones a killed process left behind and remove them.
"""

import contextlib
import errno
import os
import re
import shutil
import socket
import tempfile
import time

# A temporary whose writer cannot be checked (another host) is stale after this long.
STALE_AFTER_SECONDS = 24 * 3600
# The random part may carry a suffix a writer needs (`atomic_path(..., suffix=".weights.h5")`).
_TEMPORARY = re.compile(r"\.(?:tmp|old)-.*-(?P<pid>\d+)@(?P<host>[^/]+)-[A-Za-z0-9_]+(?:\.[A-Za-z0-9_.]+)?")


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def current_directory():
    """The current directory, or None where it no longer exists (deleted or moved away while the process ran)."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        return None


def resolved_path(path):
    """`path` made absolute with its symbolic links followed: a write through a link reaches the link's target,
    and the link stays (an atomic rename onto the link itself would replace it with a directory and leave the
    target as it was). A relative path where the current directory is gone is a FileNotFoundError that says so."""
    if not os.path.isabs(path) and current_directory() is None:
        raise FileNotFoundError(f"{path} is relative to the current directory, which no longer exists (deleted or "
                                "moved): change to an existing directory, or give an absolute path.")
    return os.path.realpath(path)


def _linux_process(pid):
    """`(state, start time as a POSIX timestamp)` of a process, from /proc; None where /proc does not say."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            stat = f.read()
        with open("/proc/stat", encoding="ascii") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        fields = stat[stat.rindex(")") + 2:].split()  # after the command's name, which may hold spaces
        return fields[0], boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, StopIteration, ValueError, IndexError):
        return None


def process_is_alive(pid, started_by=None):
    """Whether a process with this id runs on this host: not one that has exited and waits to be reaped (a
    zombie), nor, given `started_by` (a POSIX timestamp), one that started after it (a later process given a
    dead one's id), where /proc tells."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, under another user
    found = _linux_process(pid)
    if found is None:
        return True
    state, start = found
    # A few seconds' slack: /proc's boot time is in whole seconds, a job's start time too.
    return state != "Z" and (started_by is None or start <= started_by + 5)


def _prefix(kind, final_path):
    return f".{kind}-{os.path.basename(final_path)}-{os.getpid()}@{socket.gethostname()}-"


def is_temporary(path):
    """Whether `path` is named as this module's temporaries are (a write in progress, or a killed writer's): a
    reader of a directory's files (TensorFlow's glob matches dot-files) leaves it out."""
    return _TEMPORARY.fullmatch(os.path.basename(path)) is not None


def remove_stale_temporaries(directory):
    """Remove temporaries in `directory` left by killed writers.

    Only names this module makes are considered: one whose writer was on this
    host and is gone, or one from another host older than `STALE_AFTER_SECONDS`.

    Returns:
        The removed paths.
    """
    removed = []
    try:
        names = os.listdir(directory)
    except OSError:
        return removed
    host = socket.gethostname()
    for name in names:
        match = _TEMPORARY.fullmatch(name)
        if not match:
            continue
        path = os.path.join(directory, name)
        stale = False
        if match["host"] == host:
            stale = not process_is_alive(int(match["pid"]))
        else:
            with contextlib.suppress(OSError):
                stale = time.time() - os.lstat(path).st_mtime > STALE_AFTER_SECONDS
        if stale:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.remove(path)
            removed.append(path)
    return removed


def ensure_writable_directory(path):
    """Create `path` if needed and check that files can be made in it, before any long work.

    Raises:
        PermissionError: `path` cannot be created or written (a one-line
            reason: permissions, read-only file system, a file in the way).
    """
    try:
        os.makedirs(path, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=_prefix("tmp", "probe"), dir=path)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise PermissionError(f"Cannot write in {path} ({e.strerror or e}): choose a writable directory.") from None


def check_file_can_be_written(path):
    """Check, creating nothing, that the file `path` can be written: its directory exists or can be made, and a
    file can be created in it. For a check before long work (a path under a file failed only when written).

    Raises:
        PermissionError: a one-line reason (a file in the way, permissions, read-only file system).
    """
    directory = os.path.dirname(os.path.abspath(path))
    existing = directory
    while not os.path.lexists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise PermissionError(f"{existing} is a file, so the directory {directory} cannot be made: choose another "
                              "path.")
    try:
        fd, probe = tempfile.mkstemp(prefix=_prefix("tmp", "probe"), dir=existing)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise PermissionError(f"Cannot write in {existing} ({e.strerror or e}): choose a writable directory.") from None


@contextlib.contextmanager
def atomic_directory(final_path, replace=True):
    """Yield a temporary directory that replaces `final_path` on success.

    The temporary directory sits beside `final_path` (same file system), so
    the final `os.replace` is atomic. On any exception it is removed and
    `final_path` is left as it was. Temporaries of killed earlier writers in
    the same parent are removed first.

    Args:
        final_path: the directory to write; through a symbolic link, the
            link's target (see `resolved_path`).
        replace: whether an existing `final_path` is replaced. False: one
            that appeared meanwhile (another writer's) is kept, and
            `FileExistsError` raised.
    """
    final_path = resolved_path(final_path)
    parent = os.path.dirname(final_path)
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(parent)
    tmp = tempfile.mkdtemp(prefix=_prefix("tmp", final_path), dir=parent)
    os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it private
    try:
        yield tmp
        if not replace:
            _rename_without_replacing(tmp, final_path)
        elif os.path.isdir(final_path):
            # os.replace cannot overwrite a non-empty directory: move the old
            # one aside first, then drop it once the new one is in place.
            old = tempfile.mkdtemp(prefix=_prefix("old", final_path), dir=parent)
            os.replace(final_path, os.path.join(old, "x"))
            os.replace(tmp, final_path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final_path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _rename_without_replacing(source, target):
    # rename(2) replaces an empty directory but fails on a non-empty one: a writer's finished directory is never
    # lost, and an empty one (no writer's) is taken.
    if os.path.lexists(target) and not os.path.isdir(target):
        raise FileExistsError(f"{target} exists.")
    try:
        os.rename(source, target)
    except OSError as e:
        if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise FileExistsError(f"{target} was written by another process while this one ran: that one is kept, "
                                  "this one is not written.") from None
        raise


@contextlib.contextmanager
def atomic_file(final_path, mode="wb"):
    """Yield a file object whose content replaces `final_path` on success."""
    with atomic_path(final_path) as tmp, open(tmp, mode) as f:
        yield f


@contextlib.contextmanager
def atomic_path(final_path, suffix=""):
    """Yield a temporary path whose file replaces `final_path` on success.

    For writers that take a path, not a file object (Keras' `.weights.h5`
    saving): `suffix` ends the temporary's name, as such a writer may demand.
    Through a symbolic link the link's target is replaced (see `resolved_path`).
    """
    final_path = resolved_path(final_path)
    parent = os.path.dirname(final_path)
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(parent)
    fd, tmp = tempfile.mkstemp(prefix=_prefix("tmp", final_path), suffix=suffix, dir=parent)
    os.close(fd)
    os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes it private
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final_path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


@contextlib.contextmanager
def scratch_directory(parent, name):
    """Yield a temporary directory in `parent` for work that is not renamed into place (a download being
    converted), removed on exit. Named as this module's temporaries, one that a killed process left is removed
    by the next use of `parent`."""
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(parent)
    with tempfile.TemporaryDirectory(prefix=_prefix("tmp", name), dir=parent) as tmp:
        yield tmp
