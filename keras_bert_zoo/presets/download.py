"""Downloads into the cache: verified, and atomic (no half-written files)."""

import hashlib
import os
import tarfile
import urllib.error
import urllib.request
import zipfile

from tqdm.auto import tqdm

from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import NetworkUnreachableError
from keras_bert_zoo.presets.errors import PresetNotFoundError
from keras_bert_zoo.utils.atomic import atomic_file

_CHUNK = 1 << 20


def cache_dir():
    """`$KERAS_BERT_ZOO_CACHE`, or `~/.cache/keras_bert_zoo`."""
    return os.environ.get("KERAS_BERT_ZOO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "keras_bert_zoo")


def hf_endpoint():
    """The Hugging Face hub base URL (`$HF_ENDPOINT`, as `huggingface_hub` reads it)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url, destination, sha256=None, offline_hint="", progress=True):
    """Download `url` to `destination` atomically, checking size and sha256.

    Args:
        url: http(s) URL.
        destination: final file path; written only when complete and verified.
        sha256: expected hex digest, if known.
        offline_hint: what to do without network (appended to errors).

    Raises:
        NetworkUnreachableError: the host cannot be reached.
        PresetNotFoundError: the server answered 404.
        CheckpointError: the download was cut short or the checksum differs.
    """
    try:
        response = urllib.request.urlopen(url, timeout=60)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise PresetNotFoundError(f"{url} does not exist (HTTP 404).") from e
        raise NetworkUnreachableError(f"Downloading {url} failed: HTTP {e.code} {e.reason}. {offline_hint}") from e
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise NetworkUnreachableError(
            f"Cannot reach {url} ({reason}): the network or the host is unreachable. {offline_hint}"
        ) from e
    expected = response.headers.get("Content-Length")
    expected = int(expected) if expected else None
    received = 0
    digest = hashlib.sha256()
    with response, atomic_file(destination) as f, tqdm(
        total=expected, unit="B", unit_scale=True, desc=os.path.basename(destination), disable=not progress, leave=False
    ) as bar:
        try:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                f.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                bar.update(len(chunk))
        except (OSError, urllib.error.URLError) as e:
            raise NetworkUnreachableError(f"The download of {url} was interrupted ({e}). {offline_hint}") from e
        if expected is not None and received != expected:
            raise CheckpointError(
                f"The download of {url} was cut short ({received} of {expected} bytes). Try again."
            )
        if sha256:
            actual = digest.hexdigest()
            if actual != sha256:
                raise CheckpointError(
                    f"{url} has sha256 {actual}, expected {sha256}: the file is corrupt "
                    "or not the released one. Nothing was saved."
                )
    return destination


def extract_archive(archive, directory):
    """Extract a .zip / .tar.gz / .tgz archive, refusing paths outside `directory`."""
    root = os.path.realpath(directory)

    def check(name):
        target = os.path.realpath(os.path.join(root, name))
        if not target.startswith(root + os.sep) and target != root:
            raise CheckpointError(f"{archive} contains an unsafe path '{name}'; refusing to extract it.")

    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as z:
                for name in z.namelist():
                    check(name)
                z.extractall(root)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                for member in t.getmembers():
                    check(member.name)
                    if not (member.isfile() or member.isdir()):
                        raise CheckpointError(f"{archive} contains a link or device '{member.name}'; refusing it.")
                t.extractall(root, filter="data")
        else:
            raise CheckpointError(f"{archive} is neither a zip nor a tar archive.")
    except (zipfile.BadZipFile, tarfile.TarError, EOFError) as e:
        raise CheckpointError(f"{archive} is a corrupt or truncated archive ({e}).") from e


def find_checkpoint_dir(directory, is_checkpoint_dir):
    """The first directory under `directory` (itself included) that holds a checkpoint."""
    for current, dirs, _ in os.walk(directory):
        dirs.sort()
        if is_checkpoint_dir(current):
            return current
    return None
