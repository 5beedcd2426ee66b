"""Downloads into the cache: verified, and atomic (no half-written files)."""

import gzip
import hashlib
import http.client
import os
import shutil
import stat
import struct
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
import zipfile
import zlib

from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import NetworkUnreachableError
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.presets.errors import PresetNotFoundError
from keras_bert_zoo.utils.atomic import atomic_file
from keras_bert_zoo.utils.progress_bar import progress_bar
from keras_bert_zoo.utils.text_files import untrusted_repr

_CHUNK = 1 << 20
# A reachable host connects (TLS included) in well under a second.
CONNECT_TIMEOUT = 10.0
# Once connected, a server silent this long (for the headers or between
# chunks) has stalled. `$KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT` overrides it.
READ_TIMEOUT = 30.0
# The most one download, or an archive's extracted files, may hold: BERT-Large's zip is 1.3 GB, so a server
# sending more streams garbage, or forever, into the cache's disk. `$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES` overrides it.
MAX_DOWNLOAD_BYTES = 20 * 10**9


def cache_dir():
    """`$KERAS_BERT_ZOO_CACHE`, or `~/.cache/keras_bert_zoo`."""
    return os.environ.get("KERAS_BERT_ZOO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "keras_bert_zoo")


HF_DEFAULT_ENDPOINT = "https://huggingface.co"


def hf_endpoint():
    """The Hugging Face hub base URL (`$HF_ENDPOINT`, as `huggingface_hub` reads it)."""
    endpoint = os.environ.get("HF_ENDPOINT", HF_DEFAULT_ENDPOINT).rstrip("/")
    parts = urllib.parse.urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.netloc:  # "huggingface.co" failed as an unknown URL type
        raise PresetError(f"$HF_ENDPOINT={redact_url(os.environ['HF_ENDPOINT'])!r} is not the http(s):// URL of a "
                          f"hub, such as {HF_DEFAULT_ENDPOINT}.")
    check_no_credentials(endpoint, "$HF_ENDPOINT=")
    return endpoint


def check_no_credentials(url, what=""):
    """Refuse `url` (named after `what`) where it holds a user name or token, and maybe a password, before its
    host: urllib sends none of them (it reads `user:pw@host` as the host's name and fails as if offline), so such
    a URL never downloads, and only repeats them in its errors."""
    shown = redact_url(url)
    if shown != url:
        raise PresetError(f"{what}{shown} holds credentials before its host ('***@'), which are never sent: "
                          "download the file with them yourself (curl -u USER URL -O), unpack it and call "
                          "from_preset('/path/to/the/unpacked/dir').")


def redact_url(url):
    """`url` as a message shows it: what it holds before its host (a user, a token, a password) becomes `***`
    ("https://***@host/m.zip"), so that no error repeats it (a redirect's target may hold them)."""
    scheme, sep, rest = url.partition("://")
    end = min([i for i in map(rest.find, "/?#") if i >= 0], default=len(rest))
    _, at, host = rest[:end].rpartition("@")
    return f"{scheme}://***@{host}{rest[end:]}" if sep and at else url


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


_LONGEST_TIMEOUT = 10**6  # 11 days: "wait for ever", within what a socket takes


def download_timeouts():
    """`(connect, read)` seconds; `$KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT` sets the read one and caps the other."""
    value = os.environ.get("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT")
    if not value:
        return CONNECT_TIMEOUT, READ_TIMEOUT
    try:
        read = float(value)
    except ValueError:
        read = 0.0
    if not 0 < read <= _LONGEST_TIMEOUT:  # also refuses nan, and inf (a socket's timeout overflows)
        raise PresetError(f"$KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT={untrusted_repr(value)} is not a number of seconds above "
                          f"0 (at most {_LONGEST_TIMEOUT:,}).")
    return min(CONNECT_TIMEOUT, read), read


def max_download_bytes():
    """The most one download or extracted archive may hold: `$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES`, or 20 GB."""
    value = os.environ.get("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES")
    if not value:
        return MAX_DOWNLOAD_BYTES
    digits = value.strip()
    # 30 digits: far beyond any disk, and within int()'s 4,300-digit limit
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 30 and int(digits) > 0):
        raise PresetError(f"$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES={untrusted_repr(value)} is not a whole number of bytes "
                          "above 0.")
    return int(value)


class _ReadTimeout:
    """For urllib's HTTP(S) handlers: connect (and shake hands) under the
    request's connect timeout, then wait at most `read_timeout` per read."""

    read_timeout = READ_TIMEOUT

    def do_open(self, http_class, req, **kwargs):
        read_timeout = self.read_timeout

        class Connection(http_class):
            def connect(self):
                super().connect()
                self.sock.settimeout(read_timeout)

        return super().do_open(Connection, req, **kwargs)


class _HTTPHandler(_ReadTimeout, urllib.request.HTTPHandler):
    pass


class _HTTPSHandler(_ReadTimeout, urllib.request.HTTPSHandler):
    pass


class _RefusedRedirect(Exception):
    """A redirect `_RedirectHandler` does not follow, to `target` (download() names the URL asked for)."""

    def __init__(self, target, downgrade):
        super().__init__(target)
        self.target, self.downgrade = target, downgrade


class _RedirectHandler(urllib.request.HTTPRedirectHandler):
    """Follows redirects to http(s) alone, never from https down to http: urllib follows one to ftp:// (its
    FTPHandler fetches the file, unencrypted and outside these checks' timeouts), and to http:// from https, where
    anyone on the way can replace the checkpoint."""

    def http_error_302(self, req, fp, code, msg, headers):
        target = headers.get("location") or headers.get("uri")
        if target is not None:
            target = urllib.parse.urljoin(req.full_url, target.strip())
            scheme = urllib.parse.urlsplit(target).scheme.lower()
            downgrade = scheme == "http" and req.type == "https"
            if scheme not in ("http", "https") or downgrade:
                fp.close()
                raise _RefusedRedirect(target, downgrade)
        return super().http_error_302(req, fp, code, msg, headers)

    http_error_301 = http_error_303 = http_error_307 = http_error_308 = http_error_302


def _open(url, connect_timeout, read_timeout):
    handlers = [_HTTPHandler(), _HTTPSHandler()]
    for handler in handlers:
        handler.read_timeout = read_timeout
    return urllib.request.build_opener(*handlers, _RedirectHandler()).open(url, timeout=connect_timeout)


def _network_error(url, error, connect_timeout, read_timeout, hint):
    """The NetworkUnreachableError for `error`, saying what timed out and after how long."""
    reason = getattr(error, "reason", error)
    if isinstance(error, TimeoutError):  # raised bare by a read, after the connection was made
        what = f"{url} timed out: the server sent nothing for {read_timeout:g} s"
    elif isinstance(reason, TimeoutError):  # urllib wraps a connect timeout in URLError
        what = f"Connecting to {url} timed out after {connect_timeout:g} s"
    else:
        return NetworkUnreachableError(
            f"Cannot reach {url} ({reason}): the network or the host is unreachable. {hint}"
        )
    return NetworkUnreachableError(f"{what}. Set $KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT to wait longer. {hint}")


def _content_length(response):
    """The body's size the server promises, or None where it gives none or a malformed one ("ten", "-1"): as
    http.client, which then reads to the connection's end, takes it (a checksum or the archive's checks still
    catch a short body)."""
    value = (response.headers.get("Content-Length") or "").strip()
    # Over 30 digits is no size (and int() refuses over 4,300, which a server may send).
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 30 else None


def _too_large(url, max_bytes, overall):
    """The refusal of `url` for its size: over its own `max_bytes`, or over `max_download_bytes()` (`overall`)."""
    if overall:
        return CheckpointError(f"{url} is over {max_bytes} bytes, beyond any checkpoint (BERT-Large's is 1.3 GB): the "
                               "server is broken or hostile; it is refused. Nothing was saved. Set "
                               "$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES to allow a larger download.")
    return CheckpointError(f"{url} is over {max_bytes} bytes, far beyond the file it should be: the server is broken "
                           "or hostile; it is refused. Nothing was saved.")


def download(url, destination, sha256=None, offline_hint="", progress=True, max_bytes=None):
    """Download `url` to `destination` atomically, checking size and sha256.

    Args:
        url: http(s) URL.
        destination: final file path; written only when complete and verified.
        sha256: expected hex digest, if known.
        offline_hint: what to do without network (appended to errors).
        max_bytes: the most the file may hold, if bounded tighter than
            `max_download_bytes()`, which bounds every download: a server
            that promises or sends more is refused.

    Raises:
        NetworkUnreachableError: the host cannot be reached, or is silent
            longer than `download_timeouts()` allow.
        PresetNotFoundError: the server answered 404, or `url` is malformed.
        CheckpointError: the download was cut short, is over `max_bytes`
            (or `max_download_bytes()`), or the checksum differs.
    """
    timeouts = download_timeouts()
    overall = max_download_bytes()
    limit = overall if max_bytes is None else min(max_bytes, overall)
    check_no_credentials(url)
    try:
        response = _open(url, *timeouts)
    except _RefusedRedirect as e:
        target = redact_url(e.target)
        why = ("from https to plain http, where anyone on the way could alter the file" if e.downgrade else
               f"a '{urllib.parse.urlsplit(target).scheme}:' URL, where only http(s) is downloaded")
        raise NetworkUnreachableError(f"{url} redirects to {target}, {why}: it is refused. Ask its host for the "
                                      f"file's https URL. {offline_hint}") from None
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise PresetNotFoundError(f"{url} does not exist (HTTP 404).") from e
        raise NetworkUnreachableError(f"Downloading {url} failed: HTTP {e.code} {e.reason}. {offline_hint}") from e
    except (urllib.error.URLError, OSError) as e:
        raise _network_error(url, e, *timeouts, offline_hint) from e
    except (http.client.InvalidURL, ValueError) as e:  # a space, a non-ASCII path, "host:abc", "http://[::1"
        raise PresetNotFoundError(f"{url} is not a valid URL ({e}): check its host and port, and percent-encode "
                                  "spaces and non-ASCII characters.") from e
    expected = _content_length(response)
    received = 0
    digest = hashlib.sha256()
    with response, atomic_file(destination) as f, progress_bar(
        None, progress, total=expected, unit="B", unit_scale=True, desc=os.path.basename(destination), leave=False
    ) as bar:
        if (expected or 0) > limit:
            raise _too_large(url, limit, limit == overall)
        try:
            for chunk in iter(lambda: response.read(_CHUNK), b""):
                f.write(chunk)
                digest.update(chunk)
                received += len(chunk)
                bar.update(len(chunk))
                if received > limit:  # an endless body, without a Content-Length
                    raise _too_large(url, limit, limit == overall)
        except TimeoutError as e:
            raise _network_error(url, e, *timeouts, offline_hint) from e
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


# Checkpoint archives hold a handful of files; 10,000 is far beyond any release.
_MAX_MEMBERS = 10_000
# Weights barely compress (released zips inflate about 1.1x; a vocabulary 3x),
# so 8x the archive is generous for a real checkpoint and refuses a zip bomb,
# which inflates 1000x. Small archives may always inflate to 64 MiB.
_MAX_INFLATION = 8
_SMALL_ARCHIVE_BYTES = 64 << 20
# Longer names fail to extract with "File name too long" (NAME_MAX and PATH_MAX of Linux file systems).
_NAME_MAX_BYTES, _PATH_MAX_BYTES = 255, 4095


# What zipfile can inflate; it raises a NotImplementedError for any other method.
_ZIP_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


def check_zip_member(archive, info):
    """zipfile raises a RuntimeError for an encrypted member and a NotImplementedError for a compression it
    lacks: refuse both from the zip directory, before reading."""
    if info.flag_bits & 0x1:
        raise CheckpointError(f"{archive}: its member {info.filename} is encrypted; no checkpoint is. It is "
                              "corrupt or crafted; it is refused.")
    if info.compress_type not in _ZIP_METHODS:
        raise CheckpointError(f"{archive}: its member {info.filename} uses zip compression method "
                              f"{info.compress_type}, which cannot be read (stored, deflate, bzip2 and lzma can). It is "
                              "corrupt or crafted; it is refused.")


def _zip_entries(archive, z):
    for info in z.infolist():
        check_zip_member(archive, info)
        kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the archiver recorded no Unix mode
        yield info.filename, kind in (0, stat.S_IFREG, stat.S_IFDIR), info.file_size


# zipfile reads and parses a zip's whole central directory, as long as its end record declares, before one entry
# can be checked: a few MB of directory make a million ZipInfo objects. 10,000 entries, each name with its extra
# fields under 1 KiB, fill 10 MB.
_MAX_ZIP_DIRECTORY_BYTES = _MAX_MEMBERS << 10
# The end records, as zipfile reads them: end of central directory (22 bytes, then a comment of up to 64 KiB), and
# the zip64 locator (20 bytes) and zip64 end record (56) just before it.
_ZIP_END = struct.Struct("<4s4H2LH")
_ZIP64_LOCATOR = struct.Struct("<4sLQL")
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")


def _read_at(f, offset, size):
    """`size` bytes at `offset` of `f`, or None where the file does not hold them."""
    if offset < 0:
        return None
    f.seek(offset)
    data = f.read(size)
    return data if len(data) == size else None


def _zip_directory(archive):
    """`(entries, bytes)` of the central directory the end of zip `archive` declares, zip64's where it has one,
    read where zipfile reads them (None where it holds no end record)."""
    with open(archive, "rb") as f:
        size = f.seek(0, os.SEEK_END)
        start = max(0, size - _ZIP_END.size - 0xFFFF)
        tail = _read_at(f, start, size - start)
        found = tail.rfind(b"PK\x05\x06")
        record = tail[found:found + _ZIP_END.size] if found >= 0 else b""
        if len(record) != _ZIP_END.size:
            return None
        *_, on_disk, total, directory, _, _ = _ZIP_END.unpack(record)
        end = start + found
        locator = _read_at(f, end - _ZIP64_LOCATOR.size, _ZIP64_LOCATOR.size)
        if locator is not None and _ZIP64_LOCATOR.unpack(locator)[0] == b"PK\x06\x07":
            record64 = _read_at(f, end - _ZIP64_LOCATOR.size - _ZIP64_END.size, _ZIP64_END.size)
            if record64 is not None and _ZIP64_END.unpack(record64)[0] == b"PK\x06\x06":
                *_, on_disk, total, directory, _ = _ZIP64_END.unpack(record64)
    return max(on_disk, total), directory


def check_zip_directory(archive):
    """Refuse, before zipfile reads it, a central directory declared beyond what a checkpoint needs."""
    entries, directory = _zip_directory(archive) or (0, 0)
    if entries > _MAX_MEMBERS:
        raise CheckpointError(f"{archive} holds more than {_MAX_MEMBERS} entries by its zip directory's count "
                              f"({entries}), far beyond a checkpoint: it is corrupt or crafted; refusing it.")
    if directory > _MAX_ZIP_DIRECTORY_BYTES:
        raise CheckpointError(f"{archive} declares a zip directory of {directory} bytes, over the "
                              f"{_MAX_ZIP_DIRECTORY_BYTES} that {_MAX_MEMBERS} entries of a checkpoint fill: it is "
                              "corrupt or crafted; it is refused.")


def _tar_entries(t):
    for member in t:  # lazily: a refused archive is not read to its end
        yield member.name, member.isfile() or member.isdir(), member.size


def _too_long(path):
    """Whether the file `path` cannot be made: a part of it over NAME_MAX bytes, or the whole over PATH_MAX."""
    encoded = os.fsencode(path)
    return len(encoded) > _PATH_MAX_BYTES or max(map(len, encoded.split(os.fsencode(os.sep)))) > _NAME_MAX_BYTES


def _check_entries(archive, root, entries):
    """Refuse, before anything is written, any entry that would land outside
    `root`, is a link or device, repeats a name, or pushes the count or the
    inflated total beyond what a checkpoint needs."""
    overall = max_download_bytes()
    budget = max(_MAX_INFLATION * os.path.getsize(archive), _SMALL_ARCHIVE_BYTES)
    seen, total = set(), 0
    for count, (name, regular, size) in enumerate(entries, 1):
        target = os.path.realpath(os.path.join(root, name))
        if os.path.isabs(name) or not (target.startswith(root + os.sep) or target == root):
            raise CheckpointError(f"{archive} contains an unsafe path '{name}'; refusing to extract it.")
        if not regular:
            raise CheckpointError(f"{archive} contains a link or device '{name}'; refusing it.")
        if _too_long(target):
            raise CheckpointError(f"{archive} contains a path longer than a file system holds ('{name[:80]}...'); "
                                  "no checkpoint's is. It is corrupt or crafted; it is refused.")
        if target in seen:
            raise CheckpointError(f"{archive} contains '{name}' twice; refusing it.")
        seen.add(target)
        if count > _MAX_MEMBERS:
            raise CheckpointError(
                f"{archive} holds more than {_MAX_MEMBERS} entries, far beyond a checkpoint; refusing it."
            )
        total += size
        if total > overall:
            raise CheckpointError(f"{archive} inflates to more than {overall} bytes, beyond any checkpoint "
                                  "(BERT-Large's is 1.3 GB); refusing it. Set $KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES to "
                                  "allow a larger one.")
        if total > budget:
            raise CheckpointError(
                f"{archive} inflates to more than {budget} bytes, over {_MAX_INFLATION}x its size: it is a "
                "zip bomb, not a checkpoint; refusing it."
            )


# A tar ends in two zero blocks, padded to its record: 10 KiB as tar and tarfile write it, rarely over 1 MiB. Zeros
# beyond this are no end but a gzip stream crafted to inflate (1000x) for as long as it is read.
_MAX_TAR_END_BYTES = 4 << 20


def _check_tar_end(archive, t):
    """tarfile takes the first header it cannot parse for the end of the archive and stops there, unread (a
    flipped bit extracted half a checkpoint): what follows the last member must be the zero blocks that end
    a tar. Reading it to the end also checks a gzip stream's CRC."""
    t.fileobj.seek(t.offset)
    read = 0
    for chunk in iter(lambda: t.fileobj.read(_CHUNK), b""):
        if chunk.count(0) != len(chunk):
            raise CheckpointError(f"{archive} is a corrupt archive: a member's header at byte {t.offset} of its "
                                  "tar stream cannot be read. Download it again.")
        read += len(chunk)
        if read > _MAX_TAR_END_BYTES:
            raise CheckpointError(f"{archive} goes on for more than {_MAX_TAR_END_BYTES} bytes of zeros after its "
                                  "last member, where a tar ends in a few blocks: it is corrupt or crafted; it is "
                                  "refused.")


def extract_archive(archive, directory):
    """Extract a .zip / .tar.gz / .tgz archive into `directory`, which must not exist yet.

    Every entry is checked first (see `_check_entries`), and the archive is
    unpacked beside `directory` and renamed into place, so a refused or
    broken archive leaves nothing behind.
    """
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".extract-", dir=parent)
    root = os.path.realpath(tmp)
    try:
        if zipfile.is_zipfile(archive):
            check_zip_directory(archive)
            with zipfile.ZipFile(archive) as z:
                _check_entries(archive, root, _zip_entries(archive, z))
                z.extractall(root)
        elif tarfile.is_tarfile(archive):
            with tarfile.open(archive) as t:
                _check_entries(archive, root, _tar_entries(t))
                t.extractall(root, filter="data")
                _check_tar_end(archive, t)
        else:
            raise CheckpointError(f"{archive} is neither a zip nor a tar archive.")
        os.rename(tmp, directory)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise CheckpointError(f"{archive} is a corrupt or truncated archive ({e}).") from e
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # already gone once renamed into place


def find_checkpoint_dir(directory, is_checkpoint_dir):
    """The first directory under `directory` (itself included) that holds a checkpoint."""
    for current, dirs, _ in os.walk(directory):
        dirs.sort()
        if is_checkpoint_dir(current):
            return current
    return None
