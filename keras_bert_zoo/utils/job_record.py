"""`job.json`: which job wrote an output directory, so another job cannot silently continue or replace it.

A job is identified by its fingerprint: what decides the result (task,
preset, data files by size and SHA-256, hyper-parameters). Rerunning the
same job resumes from its backup, or, stopped after writing a result whole
(a model, before it was scored), goes on from there; a different job, or any
job over a finished one's results, is refused unless the caller allows
overwriting. A job that keeps its final training state may be extended: the
same job asking for more of an `extendable` item (more steps) trains on from
that state.
"""

import contextlib
import dataclasses
import datetime
import hashlib
import json
import numbers
import os
import shutil
import socket
import sys

import numpy as np

from keras_bert_zoo.utils.atomic import atomic_file
from keras_bert_zoo.utils.atomic import ensure_writable_directory
from keras_bert_zoo.utils.atomic import process_is_alive
from keras_bert_zoo.utils.path_arguments import remote_output_error
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.version import __version__

JOB_FILE = "job.json"


class OutputDirectoryError(ValueError):
    """An output directory belongs to another job, holds a finished result, or is in use."""


def file_fingerprint(path):
    """`{"path", "size", "sha256"}` of a file; the path is absolute, so a moved cwd does not matter."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"path": os.path.abspath(path), "size": os.path.getsize(path), "sha256": digest.hexdigest()}


def content_digest(value):
    """SHA-256 of in-memory training data (nested lists, tuples, dicts, arrays, strings, numbers).

    A `tf.data.Dataset` cannot be read without consuming it: it counts by
    its element spec only.
    """
    digest = hashlib.sha256()
    _feed(digest, value)
    return digest.hexdigest()


def _feed(digest, value):
    if isinstance(value, (list, tuple)):
        digest.update(f"{type(value).__name__}[{len(value)}](".encode())
        for item in value:
            _feed(digest, item)
        digest.update(b")")
    elif isinstance(value, dict):
        digest.update(f"dict[{len(value)}](".encode())
        for key in sorted(value, key=str):
            _feed(digest, str(key))
            _feed(digest, value[key])
        digest.update(b")")
    elif isinstance(value, (str, bytes, numbers.Number, type(None))):
        digest.update(f"{type(value).__name__}:{len(repr(value))}:{value!r}".encode())
    elif hasattr(value, "element_spec"):
        digest.update(f"dataset:{value.element_spec!r}".encode())
    elif dataclasses.is_dataclass(value):  # a reader's result
        _feed(digest, {field.name: getattr(value, field.name) for field in dataclasses.fields(value)})
    else:
        array = np.asarray(value)
        if array.dtype == object and array.ndim == 0:
            raise TypeError(f"Cannot fingerprint training data of type {type(value).__name__}: pass lists, "
                            "numpy arrays, a reader's result or a tf.data.Dataset.")
        if array.dtype == object:
            _feed(digest, array.tolist())
        else:
            digest.update(f"array:{array.dtype.str}:{array.shape}:".encode())
            digest.update(np.ascontiguousarray(array).tobytes())


def _now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _timestamp(text):
    """A record's ISO time as a POSIX timestamp (None where it holds none)."""
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return None


def _versions():
    import keras
    import tensorflow as tf

    return {"keras_bert_zoo": __version__, "keras": keras.__version__, "tensorflow": tf.__version__,
            "python": sys.version.split()[0]}


def read_job(output_dir):
    """The job record of `output_dir`, or None when it has none (or an unreadable one)."""
    try:
        return read_json_object(os.path.join(output_dir, JOB_FILE))
    except (OSError, ValueError):  # read_json_object raises only ValueError for any bytes
        return None


def job_status(output_dir):
    """How the job that wrote `output_dir` stands: its recorded status ("finished", "failed", "interrupted"),
    "running", or "killed" (recorded as running on this host, its process gone: a kill leaves no record); None
    without a record."""
    record = read_job(output_dir)
    if record is None:
        return None
    status = record.get("status")
    if status == "running" and record.get("host") == socket.gethostname() and not process_is_alive(record.get("pid")):
        return "killed"
    return status


def write_job(output_dir, record):
    """Write `record` as `output_dir/job.json`, atomically."""
    with atomic_file(os.path.join(output_dir, JOB_FILE), "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")


def _describe(value):
    if value is None:  # a flag left out was named as JSON's 'null'
        return "not given"
    if isinstance(value, dict) and "sha256" in value:
        return value["path"]
    if isinstance(value, list):
        return ", ".join(_describe(v) for v in value)
    return json.dumps(value)


def _same_content(old, new):
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(_same_content(a, b) for a, b in zip(old, new))
    if isinstance(old, dict) and isinstance(new, dict) and "sha256" in new:
        return (old.get("size"), old.get("sha256")) == (new["size"], new["sha256"])
    return old == new


def fingerprint_difference(old, new, output_dir, added_items=()):
    """A one-line description of the first item where two fingerprints differ, or None. `added_items`: items
    that earlier versions did not record, whatever their value: a record without one was written before it
    counted, and still matches (an interrupted run resumes after an upgrade)."""
    for key in sorted(set(old) | set(new)):
        if key not in old and key in added_items:
            continue
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        if isinstance(after, (dict, list)) and _describe(before) == _describe(after):
            if not _same_content(before, after):
                return (f"{key} differs: {_describe(after)} has changed since {output_dir} was written "
                        "(its size or SHA-256 is not the one recorded)")
            continue
        return f"{key} differs: {output_dir} was written by a job with {key} {_describe(before)} (this one: " \
               f"{_describe(after)})"
    return None


def _extension(job, fingerprint, extendable, output_dir, added_items):
    """`{item: (recorded, asked)}` where `fingerprint` is the recorded job's but for larger numbers of the
    `extendable` items, else None."""
    if not job or not extendable or "fingerprint" not in job:
        return None
    old = job["fingerprint"]
    grown = {}
    for item in extendable:
        before, after = old.get(item), fingerprint.get(item)
        if before == after:
            continue
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (before, after)) or after < before:
            return None
        grown[item] = (before, after)
    same = {k: v for k, v in old.items() if k not in grown}
    rest = {k: v for k, v in fingerprint.items() if k not in grown}
    if not grown or fingerprint_difference(same, rest, output_dir, added_items):
        return None
    return grown


def claim_output_dir(output_dir, command, fingerprint, args=None, owned=(), overwrite=False,
                     overwrite_flag="--overwrite_output_dir", added_items=(), extendable=(), training_state=None):
    """Check that this job may write `output_dir`, then record it there as running (see `_claim`).

    Returns:
        True when the job resumes work of the same job (its backup, or the
        results `written_results` names, or a job it extends), else False.
    """
    return _claim(output_dir, command, fingerprint, args, owned, overwrite, overwrite_flag, added_items,
                  extendable, training_state)[0]


def _claim(output_dir, command, fingerprint, args=None, owned=(), overwrite=False,
           overwrite_flag="--overwrite_output_dir", added_items=(), extendable=(), training_state=None):
    """Check that this job may write `output_dir`, then record it there as running.

    Call this before loading any model: it is where a job learns that the
    directory belongs to someone else.

    Args:
        output_dir: the job's output directory (created if absent).
        command: the command name recorded (e.g. "finetune").
        fingerprint: dict of what decides the result, keyed by flag name.
        args: the full arguments to record (JSON-able dict).
        owned: (finished, in_progress) entry names the job writes, e.g.
            (("model", "metrics.json"), ("backup", "logs")): the first in progress is its backup.
        overwrite: clear the job's entries (and job.json) instead of refusing.
        overwrite_flag: how the caller spells the overwrite option, for messages.
        added_items: fingerprint items earlier versions did not record (see `fingerprint_difference`).
        extendable: fingerprint items (whole numbers: steps) that a rerun may raise: the job recorded, finished
            or not, goes on from its `training_state` to the larger number, its results replaced when it
            finishes. Without that state beside its finished results the rerun is refused, saying how to go on.
        training_state: the in-progress entry (in `owned`) holding the state an extension resumes.

    Returns:
        `(resume, extension)`: resume is True when the job resumes work of the same job (its backup, or the
        results `written_results` names, or a job it extends); extension is `{item: (recorded, asked)}` when
        it extends the job recorded, else None.

    Raises:
        OutputDirectoryError: the directory is a file, holds a finished
            job's results (or results not recorded as written whole), holds
            work of another (or an unknown) job, or a live
            process on this host is writing it.
    """
    finished, in_progress = owned
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise OutputDirectoryError(f"{output_dir} is a file, not a directory: choose another output directory.")
    present = [name for name in (*finished, *in_progress) if os.path.exists(os.path.join(output_dir, name))]
    job = read_job(output_dir)
    if overwrite:
        for name in present + ([JOB_FILE] if job is not None else []):
            path = os.path.join(output_dir, name)
            shutil.rmtree(path) if os.path.isdir(path) else os.remove(path)
        present, job = [], None
    difference = fingerprint_difference(job.get("fingerprint", {}), fingerprint, output_dir,
                                        added_items) if job else None
    extension = _extension(job, fingerprint, extendable, output_dir, added_items) if difference else None
    if extension:
        difference = None
    if job and job.get("command", command) != command:
        difference, extension = f"{output_dir} was written by a {job['command']} job, not {command}", None
    if job and job.get("status") == "running" and job.get("host") == socket.gethostname() \
            and job.get("pid") != os.getpid() and process_is_alive(job.get("pid"), _timestamp(job.get("started"))):
        if difference:
            raise OutputDirectoryError(f"{output_dir} is being written by another running job (pid {job['pid']}; "
                                       f"{difference}): wait for it or choose another output directory.")
        # Two runs of a job write the same backup and step on each other. (A multi-worker cluster's other
        # workers claim nothing: `running_job`'s chief.)
        raise OutputDirectoryError(
            f"{output_dir} is being written by another run of this {command} job (pid {job['pid']}, started "
            f"{job.get('started', '?')}): wait for it to finish, or stop it (a later run resumes from its "
            "backup).")
    resume = False
    if present:
        if job is None or "fingerprint" not in job:
            raise OutputDirectoryError(
                f"{output_dir} holds {present[0]} from an unknown job (no {JOB_FILE}): pass {overwrite_flag} "
                "to replace it, or choose another output directory.")
        if difference:
            raise OutputDirectoryError(f"{difference}; pass {overwrite_flag} to replace its work, or choose "
                                       "another output directory.")
        done = [name for name in finished if name in present]
        if extension:
            _refuse_lost_state(output_dir, command, extension, done, training_state, overwrite_flag)
        elif not (job.get("extends") and job.get("status") != "finished"):
            # (An unfinished extension's results are the extended job's, replaced when it finishes.)
            _refuse_finished(output_dir, command, job, done, overwrite_flag,
                             extendable if _state_kept(output_dir, training_state) else ())
        resume = True
    else:
        extension = None  # nothing of the job recorded is left to go on from
    extends = None
    if extension:
        extends = {"status": job_status(output_dir), "finished": job.get("finished"),
                   **{item: before for item, (before, _) in extension.items()}}
    elif resume:
        extends = job.get("extends")
    ensure_writable_directory(output_dir)  # its error names the directory and the fix ("[Errno 2] ..." did neither)
    write_job(output_dir, {
        "command": command, "args": args or {}, "fingerprint": fingerprint, "versions": _versions(),
        "started": _now(), "status": "running", "resumed": resume, "host": socket.gethostname(),
        "pid": os.getpid(), **({"written": job.get("written", {})} if resume and not extension else {}),
        **({"extends": extends} if extends else {}),
    })
    return resume, extension


def _state_kept(output_dir, training_state):
    path = os.path.join(output_dir, training_state) if training_state else None
    return bool(path and os.path.isdir(path) and os.listdir(path))


def _refuse_lost_state(output_dir, command, extension, done, training_state, overwrite_flag):
    """Refuse to extend a job whose finished results are there without the training state to go on from."""
    if not done or _state_kept(output_dir, training_state):
        return
    item, (before, after) = next(iter(extension.items()))
    raise OutputDirectoryError(
        f"{output_dir} holds a {command} job of {item} {before} whose training state ({training_state}: "
        f"optimizer, step count) was not kept (written by a version that removed it on finishing, or removed "
        f"since), so it cannot go on to {after}: start a new job in another output directory from its "
        f"{done[0]} ({os.path.join(output_dir, done[0])} as the preset; the optimizer and the learning-rate "
        f"schedule start afresh), or pass {overwrite_flag} to train {after} from the start.")


def _refuse_finished(output_dir, command, job, done, overwrite_flag, extendable=()):
    """Refuse a rerun over the finished results `done` unless the job stopped after writing them (each recorded
    by `record_written`) and before finishing: then the rerun does the rest."""
    if not done:
        return
    written = job.get("written", {})
    if job.get("status") == "finished":
        more = "".join(f", a larger {item} to train it on from where it ended" for item in extendable)
        raise OutputDirectoryError(
            f"{output_dir} already holds a finished {command} ({done[0]}, written {job.get('finished')}): pass "
            f"{overwrite_flag} to replace it{more}, or choose another output directory.")
    unrecorded = [name for name in done if name not in written]
    if unrecorded:
        # Written by a version that did not record its results, or killed between writing one and recording it.
        raise OutputDirectoryError(
            f"{output_dir} holds {unrecorded[0]} of a {command} job that did not finish, and its {JOB_FILE} does "
            f"not record {unrecorded[0]} as written whole: pass {overwrite_flag} to run the job again, or choose "
            "another output directory.")


def record_written(output_dir, name):
    """Record in `output_dir/job.json` that the job has written its result `name` whole (atomically), so that a
    rerun of the same job stopped after it goes on from there (see `claim_output_dir`)."""
    record = read_job(output_dir)
    if record is None:
        return
    record.setdefault("written", {})[name] = _now()
    write_job(output_dir, record)


def written_results(output_dir):
    """The results the job in `output_dir` has written whole, as recorded by `record_written` (a resumed job
    carries them over)."""
    return set((read_job(output_dir) or {}).get("written", {}))


def finished_job_record(command, **fields):
    """The `job.json` of a job that writes its output in one atomic step (an export)."""
    return {"command": command, **fields, "versions": _versions(), "host": socket.gethostname(), "pid": os.getpid(),
            "status": "finished", "finished": _now()}


def finish_job(output_dir, status="finished"):
    """Record the end of the job in `output_dir/job.json` ("finished", "failed" or "interrupted")."""
    record = read_job(output_dir)
    if record is None:
        return
    record.update(status=status, finished=_now())
    write_job(output_dir, record)


def _outermost_missing(path):
    """The outermost directory of `path` (it, or a parent) that does not exist yet; None when `path` exists."""
    path, missing = os.path.abspath(path), None
    while not os.path.exists(path):
        path, missing = os.path.dirname(path), path
    return missing


def _remove_created(output_dir, outermost):
    """Remove `output_dir`, then its parents up to `outermost` (those the job made) while they are empty: another
    process may have written into one since."""
    shutil.rmtree(output_dir)
    path = os.path.abspath(output_dir)
    while path != outermost:
        path = os.path.dirname(path)
        try:
            os.rmdir(path)
        except OSError:
            return


@contextlib.contextmanager
def running_job(output_dir, command, fingerprint, args=None, owned=(), overwrite=False,
                overwrite_flag="--overwrite_output_dir", added_items=(), extendable=(), training_state=None,
                chief=True):
    """Claim `output_dir` for a job (see `claim_output_dir`) and record how it ended.

    A job that fails before writing anything leaves no directory behind (nor
    the parents it made: `runs/` of `runs/a`); one that fails later is marked
    "failed" (or "interrupted" on Ctrl-C).

    `chief`: False in the other workers of a multi-worker cluster, which run
    the chief's job: they neither check nor claim nor record the directory
    (the chief does, in the directory they share), and yield False.

    Yields:
        True when the job resumes its own backup.
    """
    remote = remote_output_error(output_dir)
    if remote:
        raise OutputDirectoryError(remote)
    if not chief:
        yield False
        return
    created = _outermost_missing(output_dir)
    resume, extension = _claim(output_dir, command, fingerprint, args, owned, overwrite, overwrite_flag, added_items,
                               extendable, training_state)
    if extension:
        item, (before, after) = next(iter(extension.items()))
        status = read_job(output_dir)["extends"]["status"]
        print(f"Extending the {status} {command} job in {output_dir} from {item} {before} to {after}: " +
              (f"it trains on from its {training_state} (weights, optimizer, step count); its results are "
               "replaced when it finishes." if _state_kept(output_dir, training_state) else
               "it stopped before its first backup, so training starts from the beginning."), file=sys.stderr)
    elif resume:
        written = sorted(written_results(output_dir))
        # A run stopped before its first backup leaves the backup directory empty (and its logs not): "from its
        # backup" there told the user a restart was a resume.
        backed_up = _state_kept(output_dir, training_state or (owned[1][0] if owned and owned[1] else None))
        print(f"Resuming the same {command} job in {output_dir}: " +
              (f"{', '.join(written)} written whole before it stopped, not written again." if written else
               "from its backup." if backed_up else
               "it stopped before its first backup, so training starts from the beginning."), file=sys.stderr)
    try:
        yield resume
    except KeyboardInterrupt:
        finish_job(output_dir, "interrupted")
        raise
    except BaseException:
        if created and os.listdir(output_dir) == [JOB_FILE]:
            _remove_created(output_dir, created)  # failed before writing anything: leave no empty output behind
        else:
            finish_job(output_dir, "failed")
        raise
    finish_job(output_dir)
