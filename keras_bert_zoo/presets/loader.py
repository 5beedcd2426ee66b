"""`from_preset`: resolve a name, directory, `hf://` handle or URL, and load.

Every remote or named preset is converted once into our preset format in
the cache (`$KERAS_BERT_ZOO_CACHE`); local checkpoint directories are read
in place. The caller passes the class to build (`from_preset` its `cls`, a
task its `backbone_cls` and `preprocessor_cls`); a class a saved config
names, and the pretrainer a checkpoint converts to whichever class asked,
are found in Keras' serialization registry. So this module imports no
model, tokenizer or task.
"""

import dataclasses
import hashlib
import importlib.util
import inspect
import os
import re
import warnings

import keras

from keras_bert_zoo.presets import download as dl
from keras_bert_zoo.presets import preset_io
from keras_bert_zoo.presets.converters.checkpoint import Checkpoint
from keras_bert_zoo.presets.converters.checkpoint import config_key
from keras_bert_zoo.presets.converters.checkpoint import TASK_HEAD_BIAS
from keras_bert_zoo.presets.converters.checkpoint_weights import assign_head
from keras_bert_zoo.presets.converters.checkpoint_weights import assign_weights
from keras_bert_zoo.presets.converters.checkpoint_weights import check_head
from keras_bert_zoo.presets.converters.checkpoint_weights import check_sizes
from keras_bert_zoo.presets.converters.checkpoint_weights import checkpoint_sizes
from keras_bert_zoo.presets.converters.checkpoint_weights import fresh_pooler_warning
from keras_bert_zoo.presets.converters.checkpoint_weights import head_fits
from keras_bert_zoo.presets.converters.checkpoint_weights import label_order
from keras_bert_zoo.presets.converters.checkpoint_weights import reorder_head
from keras_bert_zoo.presets.converters.checkpoint_weights import HEADS
from keras_bert_zoo.presets.converters.checkpoint_weights import lacks_pooler
from keras_bert_zoo.presets.converters.checkpoint_weights import pretraining_heads
from keras_bert_zoo.presets.converters.google_checkpoint import is_google_checkpoint_dir
from keras_bert_zoo.presets.converters.google_checkpoint import read_google_checkpoint
from keras_bert_zoo.presets.converters.hf_checkpoint import is_hf_checkpoint_dir
from keras_bert_zoo.presets.converters.hf_checkpoint import read_hf_checkpoint
from keras_bert_zoo.presets.errors import CheckpointError
from keras_bert_zoo.presets.errors import NetworkUnreachableError
from keras_bert_zoo.presets.errors import PresetError
from keras_bert_zoo.presets.errors import PresetNotFoundError
from keras_bert_zoo.presets.errors import load_directory_advice
from keras_bert_zoo.presets.registry import get_preset_spec
from keras_bert_zoo.presets.registry import is_preset_name
from keras_bert_zoo.presets.registry import PRESET_FORMS
from keras_bert_zoo.utils.atomic import ensure_writable_directory
from keras_bert_zoo.utils.atomic import scratch_directory
from keras_bert_zoo.utils.packed_length import packed_length
from keras_bert_zoo.utils.text_files import check_bool_fields
from keras_bert_zoo.utils.text_files import read_json_object
from keras_bert_zoo.utils.vocabulary_file import load_vocabulary

# Bumped whenever the saved weight layout changes, so that presets converted
# by an older version are converted again instead of failing to load (3: a
# fine-tuned checkpoint's task is saved with its head, which 2 left out).
PRESET_CACHE_VERSION = 3

HF_FILES = ("config.json", "vocab.txt")
HF_OPTIONAL_FILES = ("tokenizer_config.json",)
HF_WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
# config.json and tokenizer_config.json hold KBs, vocab.txt a few MB (4 MB for 250k tokens): a hub streaming more
# into one is refused before it fills the disk, or the memory of the JSON reader.
_MAX_HF_TEXT_FILE_BYTES = 64 << 20


@dataclasses.dataclass
class Resolved:
    """A preset located on disk: our saved format, or a checkpoint to convert."""

    saved_dir: str = None
    checkpoint: Checkpoint = None


def read_checkpoint_dir(directory):
    """Read a local HF- or Google-format checkpoint directory."""
    if is_hf_checkpoint_dir(directory):
        return read_hf_checkpoint(directory)
    if is_google_checkpoint_dir(directory):
        return read_google_checkpoint(directory)
    return None


def resolve(preset):
    """Locate `preset` on disk, downloading and converting it if needed."""
    if not isinstance(preset, (str, os.PathLike)):  # os.fspath's message named no argument
        raise TypeError(f"from_preset takes a preset name (kbz.list_presets()), a directory, an hf:// handle or an "
                        f"archive URL; got {type(preset).__name__} {preset!r:.60}.")
    preset = os.fspath(preset)
    if is_preset_name(preset):
        return Resolved(saved_dir=_resolve_named(preset))
    if os.path.isdir(preset):
        if preset_io.is_saved_preset_dir(preset):
            return Resolved(saved_dir=preset)
        checkpoint = read_checkpoint_dir(preset)
        if checkpoint is None:
            raise PresetNotFoundError(
                f"{preset} is a directory but not a preset: expected a saved preset "
                "(config.json + model.weights.h5), an HF checkpoint (config.json + "
                "model.safetensors or pytorch_model.bin + vocab.txt) or a Google "
                f"checkpoint (bert_config.json + bert_model.ckpt.* + vocab.txt).{_preset_inside(preset)}"
            )
        return Resolved(checkpoint=checkpoint)
    if preset.startswith("hf://"):
        hint = _offline_hint(_hf_fix(preset))
        return Resolved(saved_dir=_cached(_hf_cache_name(preset), lambda tmp: _fetch_hf(preset, tmp, hint),
                                          origin=preset))
    if preset.startswith(("http://", "https://")):
        dl.check_no_credentials(preset)
        hint = _offline_hint(_archive_fix(preset))
        return Resolved(saved_dir=_cached(_url_cache_name(preset), lambda tmp: _fetch_archive(preset, tmp, hint),
                                          origin=preset))
    scheme = _scheme(preset)
    if scheme is not None:
        raise PresetNotFoundError(_unsupported_scheme(preset, scheme))
    raise PresetNotFoundError(_not_a_directory(preset))


def _not_a_directory(preset):
    """Why `preset`, neither a name, a directory nor a URL, is none: a file (a `.keras` file, a checkpoint's file), a
    Google checkpoint's prefix (as `--init_checkpoint` names it), or nothing; "No such directory" named files that
    exist."""
    directory = os.path.dirname(preset) or "."
    if preset.endswith(".keras") and os.path.isfile(preset):
        return (f"'{preset}' is a Keras model file, not a preset directory: load it with "
                "keras.models.load_model(path) (with keras_bert_zoo imported).")
    if os.path.isfile(preset) or os.path.isfile(preset + ".index"):
        what = "a file" if os.path.isfile(preset) else "a checkpoint's prefix (its files are prefix.index, ...)"
        return (f"'{preset}' is {what}; from_preset takes the directory that holds a preset's or checkpoint's files: "
                f"from_preset('{directory}').")
    return f"No such directory: '{preset}'."


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+):")
_SCHEMES = ("hf", "http", "https")


def _scheme(preset):
    """The URI scheme `preset` begins with ("s3" of "s3://bucket/x"), or None where it reads as a path: "C:/x" is a
    Windows drive (one letter), "v2:x/y" a relative path (not followed by '/', nor a scheme from_preset reads)."""
    match = _SCHEME.match(preset)
    if match and (preset[match.end():].startswith("/") or match[1].lower() in _SCHEMES):
        return match[1]
    return None


def _unsupported_scheme(preset, scheme):
    """Why `preset` ("s3://b/x", "HF://org/name", "hf:/org/name"), a path that does not exist, is refused."""
    meant = f"{scheme.lower()}://{preset[len(scheme) + 1:].lstrip('/')}"
    suggestion = f" (did you mean '{meant}'?)" if scheme.lower() in _SCHEMES else ""
    why = f"is not written as {scheme}://" if scheme in _SCHEMES else f"has the unsupported scheme '{scheme}:'"
    return f"'{preset}' {why}{suggestion}. from_preset takes {PRESET_FORMS}."


def _preset_inside(directory):
    """Where `directory` holds a preset one level down, the advice to pass that ("" where it holds none): a
    finetune or pretrain --output_dir keeps its model in model/, an unpacked release its checkpoint in a folder of
    its own, and either was refused without a word of where the preset was."""
    try:
        names = sorted(os.listdir(directory))
    except OSError:  # unreadable: the error it advises on stands alone
        return ""
    for name in names:
        inner = os.path.join(directory, name)
        if os.path.isdir(inner) and (preset_io.is_saved_preset_dir(inner) or is_hf_checkpoint_dir(inner)
                                     or is_google_checkpoint_dir(inner)):
            return f" It holds one in {inner}: pass that directory."
    return ""


# --- Cache ---------------------------------------------------------------


# Cache entries, and the files downloaded into scratch, are named after the handle or URL, and their temporaries
# `.tmp-<name>-<pid>@<host>-<random>`: a file name holds 255 bytes, and a long URL failed with "File name too long".
# A longer name keeps its first bytes and ends in a hash of the whole, so names stay apart.
_MAX_CACHE_NAME_BYTES = 150  # the other 105 hold the temporaries' pid, host name (64 at most) and random part


def _bounded_name(name):
    encoded = name.encode()
    if len(encoded) <= _MAX_CACHE_NAME_BYTES:
        return name
    digest = hashlib.sha256(encoded).hexdigest()[:16]
    return encoded[:_MAX_CACHE_NAME_BYTES - len(digest) - 2].decode("utf-8", "ignore") + "--" + digest


# A Hugging Face repository id as the hub allows it: [org/]name, each of letters, digits, '-', '_' and '.', neither
# beginning nor ending with '-' or '.', without '--' or '..' (with them, "a--b/c" and "a/b--c" were one cache name).
_HF_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?"
_HF_REPOSITORY = re.compile(rf"(?:{_HF_PART}/)?{_HF_PART}")


def _hf_repository(handle):
    """The repository id of `handle` ("org/name" of "hf://org/name/"), refused before any download where the hub
    holds no such id ("hf://", "hf://org/name?rev=v1")."""
    repository = handle[len("hf://"):].strip("/")
    if _HF_REPOSITORY.fullmatch(repository) and "--" not in repository and ".." not in repository:
        return repository
    revision = (f" A revision cannot be named: download its files into one directory and "
                f"{load_directory_advice('/path/to/that/dir')}." if any(c in repository for c in "@?#") else "")
    raise PresetNotFoundError(f"'{handle}' is not a Hugging Face handle: write hf://org/name (or hf://name), each part "
                              f"of letters, digits, '-', '_' and '.', without '--' or '..'.{revision}")


def _hf_cache_name(handle):
    name = "hf--" + _hf_repository(handle).replace("/", "--")
    endpoint = dl.hf_endpoint()
    if endpoint != dl.HF_DEFAULT_ENDPOINT:  # a mirror's repository is another's files: cached apart
        name += f"--{hashlib.sha256(endpoint.encode()).hexdigest()[:16]}"
    return _bounded_name(name)


def _archive_file_name(url):
    """The file name an archive URL is downloaded to: its last path segment ("archive" when it has none)."""
    base = os.path.basename(url.split("?")[0])
    if base in (".", ".."):  # joined to a directory, it would name that directory or its parent
        raise PresetNotFoundError(f"{url} does not name an archive: its path ends in '{base}'. Give "
                                  "the URL of a .zip or .tar.gz file.")
    return _bounded_name(base or "archive")


def _url_cache_name(url):
    return _bounded_name(f"url--{hashlib.sha256(url.encode()).hexdigest()[:16]}--{_archive_file_name(url)}")


def cached_preset_dir(name):
    """Where the converted preset `name` lives in the cache."""
    return os.path.join(dl.cache_dir(), f"presets-v{PRESET_CACHE_VERSION}", name)


def _cached(name, fetch, expected_config=None, vocab_sha256=None, metadata=None, origin=None):
    """Return the cached preset `name`, fetching and converting it on a miss.

    `fetch(tmp_dir)` places the checkpoint files in `tmp_dir` and returns
    the directory that holds them. The converted preset appears in the
    cache atomically; a failure leaves no trace there. Errors name the
    checkpoint by `origin` (its URL or handle; by default `name`), not by
    the temporary directory that is gone once they are read.
    """
    target = cached_preset_dir(name)
    if preset_io.is_saved_preset_dir(target):
        return target
    scratch = os.path.join(dl.cache_dir(), "tmp")
    try:
        ensure_writable_directory(scratch)
    except PermissionError as e:  # "[Errno 30] Read-only file system: '/home/...'" named neither cache nor fix
        raise PresetError(f"{e} It is the preset cache, set by $KERAS_BERT_ZOO_CACHE.") from None
    # A killed download (out of memory, kill -9) left its partial files here for good: each scratch directory is
    # removed by the next download once its process is gone.
    with scratch_directory(scratch, name) as tmp:
        checkpoint_dir = fetch(tmp)
        try:
            checkpoint = read_checkpoint_dir(checkpoint_dir)
            if checkpoint is None:
                raise CheckpointError(f"No BERT checkpoint was found in what was downloaded for '{name}'.")
            checkpoint = dataclasses.replace(checkpoint, source=origin or name)
            if expected_config is not None:
                _check_config(checkpoint, expected_config, name)
            if vocab_sha256 and dl.sha256_of(os.path.join(checkpoint_dir, "vocab.txt")) != vocab_sha256:
                raise CheckpointError(
                    f"The vocab.txt obtained for '{name}' is not the released one (sha256 "
                    f"differs from {vocab_sha256})."
                )
            convert_checkpoint(checkpoint, target, metadata=metadata)
        except CheckpointError as e:  # a file's readers name its path, in a directory gone once this returns
            raise type(e)(str(e).replace(checkpoint_dir, origin or name)) from e
    return target


# What a pretrained checkpoint converts to (its pretraining heads, on a cache miss or read in place), whichever
# class asked: `task.json` of every converted preset names it. A fine-tuned one converts to its `TaskHead.task`.
CHECKPOINT_TASK = "keras_bert_zoo>BertPretrainer"


def _registered_task(name=CHECKPOINT_TASK):
    """The task class registered as `name`. The package's names (`kbz.BertBackbone`, ...) and its command line
    register every class before first use (`keras_bert_zoo.load_tensorflow`), as `import keras_hub` does."""
    cls = keras.saving.get_registered_object(name)
    if cls is None:
        raise PresetError(f"Loading a checkpoint builds a {name}, which is not registered yet: import "
                          "keras_bert_zoo.tasks first (the names of `import keras_bert_zoo as kbz` do).")
    return cls


def _head_units(weights):
    """The logits per position of the fine-tuned head in a checkpoint's `weights`."""
    return weights[TASK_HEAD_BIAS].shape[0]


def convert_checkpoint(checkpoint, preset_dir, metadata=None):
    """Convert a `Checkpoint` into a preset directory: a fine-tuned task's with its head, a pretrained BERT's with
    its pretraining heads when both are present.

    The classes are the registered task's: the `TaskHead.task` of a fine-tuned checkpoint, else
    `CHECKPOINT_TASK`'s (`BertPretrainer`): it, its `backbone_cls` and `preprocessor_cls.tokenizer_cls`.

    Args:
        checkpoint: a `Checkpoint`, e.g. from `read_checkpoint_dir`.
        preset_dir: the directory to write (replaced atomically).
        metadata: extra entries for `metadata.json`.
    """
    head = checkpoint.head
    task_cls = _registered_task(head.task if head is not None else CHECKPOINT_TASK)
    weights = checkpoint.weights()
    resolved = Resolved(checkpoint=checkpoint)
    backbone = _build(resolved, lambda config: task_cls.backbone_cls(**config), checkpoint.config,
                      sizes=checkpoint_sizes(weights, checkpoint.source))
    if head is not None:
        arguments = task_cls.head_arguments(head, _head_units(weights))
        preprocessor = _preset_preprocessor(resolved, task_cls, None, backbone.max_sequence_length)
        try:
            task = task_cls(backbone, preprocessor, **arguments)
        except ValueError as e:  # its config's labels (`_build` named them "not a valid BERT config"), no way out
            raise PresetError(_head_arguments_refused(checkpoint.source, head, task_cls, e, arguments,
                                                      in_place=False)) from None
    else:
        # Saved with its heads only if it holds both: a saved head is loaded as trained, without a word, every
        # time after; a checkpoint with one head keeps the backbone here (read in place, its one head loads).
        task = task_cls(backbone) if len(pretraining_heads(weights)) == len(HEADS) else None
        if pretraining_heads(weights) and task is None:
            warnings.warn(f"{checkpoint.source} holds only the {HEADS[pretraining_heads(weights)[0]]} head: the "
                          "preset made from it keeps the backbone alone, and a BertPretrainer from it starts both "
                          "heads fresh.", stacklevel=2)
    # Saved, a fresh pooler would load as trained, without a word, every time after: metadata.json names it, and
    # each load of the preset warns (this one too) where the task uses it.
    assign_weights(backbone, weights, task if head is None else None, source=checkpoint.source,
                   warn_fresh_pooler=False)
    if head is not None:
        assign_head(task.output_layer, weights, checkpoint.source)
    metadata = {**(metadata or {}), CONVERTED_FROM: checkpoint.source, FORMAT: checkpoint.checkpoint_format}
    if lacks_pooler(weights):
        metadata[FRESH_POOLER] = checkpoint.source
    tokenizer = task_cls.preprocessor_cls.tokenizer_cls(checkpoint.vocabulary, lowercase=checkpoint.lowercase)
    preset_io.save_preset(preset_dir, backbone, tokenizer, task=task, metadata=metadata)


# metadata.json's entries naming the checkpoint a converted preset was made from, its format, and the
# checkpoint without a pooler.
CONVERTED_FROM, FORMAT, FRESH_POOLER = "converted_from", "checkpoint_format", "fresh_pooler_from"


def _metadata(saved_dir):
    """A saved preset's `metadata.json` ({} where it has none, or an unreadable one: it is informative)."""
    try:
        return read_json_object(os.path.join(saved_dir, preset_io.METADATA_FILE))
    except (OSError, ValueError):  # read_json_object raises only ValueError for any bytes, nesting included
        return {}


def _from_checkpoint(resolved):
    """Whether a preset is a checkpoint, read in place or converted: the task it holds, fine-tuned elsewhere,
    starts other tasks as well (its BERT loads, its head is left out)."""
    return resolved.checkpoint is not None or CONVERTED_FROM in _metadata(resolved.saved_dir)


def _fine_tuned_elsewhere(resolved, cls):
    """Whether a preset holding a `cls` is a task fine-tuned elsewhere (converted from its checkpoint)."""
    return _from_checkpoint(resolved) and not getattr(cls, "starts_other_tasks", False)


def _warn_head_left_out(source, task_name, head_cls, loaded_as, stacklevel):
    """Warn that the head of `source`, a fine-tuned `task_name` that `head_cls` loads, is not loaded into a
    `loaded_as` (a class)."""
    warnings.warn(f"{source} is a fine-tuned {task_name}: its head is not loaded into a {loaded_as.__name__} "
                  f"({head_cls.__name__}.from_preset loads it). The BERT under it is.", stacklevel=stacklevel + 1)


def _load_saved_weights(model, saved_dir, stacklevel, warn_fresh_pooler=True):
    """Load a saved preset's backbone weights; warn, as its conversion did, where its pooler was saved fresh
    (unless `warn_fresh_pooler` is false: the task does not use it)."""
    preset_io.load_weights_file(model, os.path.join(saved_dir, preset_io.WEIGHTS_FILE))
    metadata = _metadata(saved_dir)
    if metadata.get(FRESH_POOLER) and warn_fresh_pooler:
        warnings.warn(fresh_pooler_warning(f"{saved_dir} was converted from {metadata[FRESH_POOLER]}, which",
                                           metadata.get(FORMAT) if metadata.get(FORMAT) in ("hf", "google") else None),
                      stacklevel=stacklevel)


def _warn_fresh_heads(source, weights, stacklevel=3):
    """Warn, naming it, of a pretraining head that the checkpoint `source` lacks while it holds the other."""
    for prefix in HEADS.keys() - pretraining_heads(weights):
        warnings.warn(f"{source} has no {HEADS[prefix]} head weights ({prefix}*): that head is freshly "
                      "initialised; the other head is loaded.", stacklevel=stacklevel)


# What a preset's download must agree on; the activation may legitimately
# differ between a Google release (tanh GELU) and its HF conversion.
_ARCHITECTURE_KEYS = (
    "vocabulary_size", "num_layers", "num_heads", "hidden_dim",
    "intermediate_dim", "max_sequence_length", "num_segments",
)


def _check_config(checkpoint, expected, name):
    for key in _ARCHITECTURE_KEYS:
        value = expected.get(key)
        if value is not None and checkpoint.config.get(key) != value:
            raise CheckpointError(
                f"The checkpoint downloaded for '{name}' has {key}={checkpoint.config.get(key)}, "
                f"but the preset declares {value}: wrong or corrupt download."
            )


# --- Sources -------------------------------------------------------------


def _hf_base(handle):
    return f"{dl.hf_endpoint()}/{_hf_repository(handle)}/resolve/main"


def _hf_fix(handle):
    """What to do where `handle` cannot be downloaded, in one line."""
    # Repositories of 2019-2020 (BioBERT's, ClinicalBERT's) may hold pytorch_model.bin alone: naming only
    # model.safetensors sent a user after a file that is not there.
    files = f"{', '.join(HF_FILES)} and {HF_WEIGHT_FILES[0]} (or {HF_WEIGHT_FILES[1]})"
    return (f"download {files} from {_hf_base(handle)}/ into one directory and "
            f"{load_directory_advice('/path/to/that/dir')}")


def _archive_fix(url):
    return f"download {url}, unpack it and {load_directory_advice('/path/to/the/unpacked/dir')}"


def _offline_hint(fix):
    return f"To work offline, {fix}."


def _fetch_hf(handle, tmp, hint):
    """Download an HF checkpoint into `tmp`; `hint` ends a download's error."""
    base = _hf_base(handle)
    for name in HF_FILES:
        dl.download(f"{base}/{name}", os.path.join(tmp, name), offline_hint=hint, max_bytes=_MAX_HF_TEXT_FILE_BYTES)
    for name in HF_OPTIONAL_FILES:
        try:
            dl.download(f"{base}/{name}", os.path.join(tmp, name), offline_hint=hint, progress=False,
                        max_bytes=_MAX_HF_TEXT_FILE_BYTES)
        except PresetNotFoundError:
            pass
    for name in HF_WEIGHT_FILES:
        try:
            dl.download(f"{base}/{name}", os.path.join(tmp, name), offline_hint=hint)
            return tmp
        except PresetNotFoundError:
            continue
    raise PresetNotFoundError(f"{handle} has neither model.safetensors nor pytorch_model.bin.")


def _fetch_archive(url, tmp, hint, sha256=None):
    archive = os.path.join(tmp, _archive_file_name(url))
    dl.download(url, archive, sha256=sha256, offline_hint=hint)
    extracted = os.path.join(tmp, "extracted")
    try:
        dl.extract_archive(archive, extracted)
    except CheckpointError as e:  # named by its path in scratch, gone once the error is read
        raise type(e)(str(e).replace(archive, url)) from None
    found = dl.find_checkpoint_dir(extracted, lambda d: is_hf_checkpoint_dir(d) or is_google_checkpoint_dir(d))
    if found is None:
        raise CheckpointError(f"The archive {url} holds no BERT checkpoint (no bert_config.json or "
                              "config.json with weights).")
    return found


def _package_dir(source):
    spec = importlib.util.find_spec(source["package"])
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(list(spec.submodule_search_locations)[0], source.get("path", ""))


def offline_status(name):
    """How the registered preset `name` loads without a network: "cached" (converted already), "installed" (read
    from an installed package and converted at first use) or "no" (a download first)."""
    if preset_io.is_saved_preset_dir(cached_preset_dir(name)):
        return "cached"
    for source in get_preset_spec(name)["sources"]:
        directory = _package_dir(source) if "package" in source else None
        if directory is not None and os.path.isdir(directory):
            return "installed"
    return "no"


def _source_fetcher(source):
    """A `fetch(tmp_dir)` for one entry of a preset's `sources` (None, and the reason, where it cannot be used
    here), and what to do when it fails, in one line. A fetch's own errors hold no advice: the preset's error
    gives each source's once."""
    if "package" in source:
        directory = _package_dir(source)
        fix = f"run `{source['install']}`"
        if directory is None or not os.path.isdir(directory):
            return None, f"the Python package {source['package']} is not installed", fix
        return (lambda tmp: directory), None, fix  # read in place
    if "hf" in source:
        return (lambda tmp: _fetch_hf(source["hf"], tmp, hint="")), None, _hf_fix(source["hf"])
    return ((lambda tmp: _fetch_archive(source["url"], tmp, hint="", sha256=source.get("sha256"))), None,
            _archive_fix(source["url"]))


# Documentation and tests run the README's code as written on a machine
# without the network: this maps every named preset to one that is there.
SUBSTITUTE_PRESET_ENV = "KERAS_BERT_ZOO_SUBSTITUTE_PRESET"


def _substitute(name):
    substitute = os.environ.get(SUBSTITUTE_PRESET_ENV)
    if not substitute or substitute == name:
        return name
    get_preset_spec(substitute)  # a name that is not a preset is refused as such
    warnings.warn(f"${SUBSTITUTE_PRESET_ENV} is set: loading preset '{substitute}' in place of '{name}'.",
                  stacklevel=2)
    return substitute


def _resolve_named(name):
    get_preset_spec(name)  # an unknown name is an error even with a substitute
    name = _substitute(name)
    spec = get_preset_spec(name)
    target = cached_preset_dir(name)
    if preset_io.is_saved_preset_dir(target):
        return target
    failures, fixes = [], []
    for source in spec["sources"]:
        fetch, reason, fix = _source_fetcher(source)
        if fetch is not None:
            try:
                return _cached(
                    name,
                    fetch,
                    expected_config=spec["config"],
                    vocab_sha256=spec["tokenizer"].get("vocab_sha256"),
                    metadata={"preset": name, "source": source},
                )
            # Unreachable, or gone from there (HTTP 404: a moved release): the next source may have it.
            except (NetworkUnreachableError, PresetNotFoundError) as e:
                reason = str(e).strip().rstrip(".")
        failures.append(reason[:1].lower() + reason[1:])
        fixes.append(fix)
    # What failed, on one line; then each way round it, once.
    raise NetworkUnreachableError(f"Could not obtain preset '{name}': {'; '.join(failures)}.\nTo fix: "
                                  + ";\nor ".join(fixes) + ".")


# --- Loading -------------------------------------------------------------


def _config_of(resolved):
    if resolved.checkpoint is not None:
        return dict(resolved.checkpoint.config)
    return preset_io.read_json(resolved.saved_dir, preset_io.CONFIG_FILE, "config")


def load_backbone_config(preset):
    """The `BertBackbone` config of a preset."""
    return _config_of(resolve(preset))


def load_tokenizer(preset, cls, **kwargs):
    """A `cls` (tokenizer class) built from the preset's vocabulary and tokenizer config."""
    return _tokenizer_of(resolve(preset), cls, **kwargs)


def _tokenizer_of(resolved, cls, **kwargs):
    if resolved.checkpoint is not None:
        config = {"vocabulary": resolved.checkpoint.vocabulary, "lowercase": resolved.checkpoint.lowercase}
    else:
        directory = resolved.saved_dir
        config = preset_io.read_json(directory, preset_io.TOKENIZER_FILE, "config")
        check_bool_fields(config, os.path.join(directory, preset_io.TOKENIZER_FILE), ("lowercase", "strip_accents"),
                          PresetError)
        config["vocabulary"] = load_vocabulary(os.path.join(directory, preset_io.VOCABULARY_FILE))
        _check_vocabulary_size(resolved, _config_of(resolved).get("vocabulary_size"))
    config.update(kwargs)
    return cls(**config)


def _source_of(resolved):
    if resolved.checkpoint is not None:
        return resolved.checkpoint.source
    return os.path.join(resolved.saved_dir, preset_io.CONFIG_FILE)


def _check_vocabulary_size(resolved, size):
    """A saved preset's vocabulary must fit its config, checked before an
    embedding of `vocabulary_size` rows is allocated (converted checkpoints
    are checked when read)."""
    if resolved.saved_dir is None:
        return
    if isinstance(size, bool) or not isinstance(size, int):  # "15" would be reported as 15 tokens against 15
        raise PresetError(f"{_source_of(resolved)} says vocabulary_size={size!r}, which is not a whole number. Fix "
                          "vocabulary_size or save the preset again.")
    path = os.path.join(resolved.saved_dir, preset_io.VOCABULARY_FILE)
    if not os.path.isfile(path):
        return  # a backbone-only preset; its tokenizer is refused on load
    count = len(load_vocabulary(path))
    if count != size:
        raise PresetError(
            f"{_source_of(resolved)} says vocabulary_size={size!r} but {path} has {count} tokens: the config "
            "does not belong to this vocabulary. Fix vocabulary_size or save the preset again."
        )


def _weight_sizes(resolved, weights, weights_file=preset_io.WEIGHTS_FILE):
    """The config sizes held by the weights about to be loaded: a checkpoint's `weights`, or a saved preset's
    `weights_file` (its header); for `check_sizes`."""
    if resolved.checkpoint is not None:
        return checkpoint_sizes(weights, resolved.checkpoint.source)
    return preset_io.stored_sizes(os.path.join(resolved.saved_dir, weights_file))


def _check_sizes(resolved, config, sizes, overrides=(), source=None):
    """`check_sizes`, naming a size the caller's argument where `overrides` holds it, else the config's."""
    def says(key):
        if key in overrides:
            return f"from_preset was given {key}"
        if resolved.checkpoint is not None:
            return f"its config says {config_key(key)}"
        return f"{os.path.basename(source or _source_of(resolved))} says {key}"  # in the weights' directory

    check_sizes(config, sizes, says)


def _build(resolved, build, config, overrides=(), sizes=None):
    """`build(config)` with a config error named after where it came from: the
    caller's keyword arguments (`overrides`) or the preset's file. The `sizes`
    the weights to load hold, when given, are compared with the config first."""
    _check_vocabulary_size(resolved, config.get("vocabulary_size"))
    if sizes is not None:
        _check_sizes(resolved, config, sizes, overrides)
    try:
        return build(config)
    except (ValueError, TypeError) as e:
        given = sorted(key for key in overrides if key in str(e))
        source = f"from_preset({given[0]}=...)" if given else _source_of(resolved)
        raise PresetError(f"{source} is not a valid BERT config: {e}") from e


def _build_backbone(resolved, cls, kwargs, sizes=None):
    if resolved.saved_dir is not None:
        # config.json names the class it was saved from: another one's config would be read as `cls`'s.
        path = _source_of(resolved)
        saved_cls = _registered_class(preset_io.read_json(resolved.saved_dir, preset_io.CONFIG_FILE), path)
        if not (issubclass(saved_cls, cls) or issubclass(cls, saved_cls)):
            raise PresetError(f"{path} holds a {saved_cls.__name__}, not a {cls.__name__}: it is not a preset of "
                              "this backbone.")
    config = _config_of(resolved)
    config.update(kwargs)
    return _build(resolved, cls.from_config, config, overrides=kwargs, sizes=sizes)


def load_backbone(preset, cls, load_weights=True, **kwargs):
    """A `cls` (backbone class) built from the preset's config, with its weights."""
    resolved = resolve(preset)
    weights = resolved.checkpoint.weights() if load_weights and resolved.checkpoint is not None else None
    backbone = _build_backbone(resolved, cls, kwargs, _weight_sizes(resolved, weights) if load_weights else None)
    if load_weights:
        if weights is not None:
            assign_weights(backbone, weights, source=resolved.checkpoint.source,
                           checkpoint_format=resolved.checkpoint.checkpoint_format)
        else:
            _load_saved_weights(backbone, resolved.saved_dir, stacklevel=4)
        head_cls = _fine_tuned_head_class(resolved)
        if head_cls is not None:
            _warn_head_left_out(os.fspath(preset), _task_name(resolved, head_cls), head_cls, cls,
                                stacklevel=4)
    return backbone


def _fine_tuned_head_class(resolved):
    """The task class of the fine-tuned head a checkpoint holds, read in place or converted (an hf:// download
    saves its task: warned of only in place, a backbone from it dropped the head in silence); None for a
    pretrained BERT, whose pretrainer starts any task, and for a preset of ours."""
    if resolved.checkpoint is not None:
        head = resolved.checkpoint.head
        return None if head is None else _registered_task(head.task)
    if not _from_checkpoint(resolved):
        return None
    saved_cls = _saved_task(resolved, None)[0]
    return None if saved_cls is None or getattr(saved_cls, "starts_other_tasks", False) else saved_cls


def _has_tokenizer(resolved):
    return resolved.checkpoint is not None or os.path.isfile(os.path.join(resolved.saved_dir, preset_io.TOKENIZER_FILE))


def saved_task_class(preset):
    """The task class a preset holds, found in Keras' serialization registry:
    the class its `task.json` names, or the pretrainer for a checkpoint read
    in place with its pretraining heads; None for a backbone-only preset.

    Raises:
        PresetError: `task.json` names a class that is not registered.
    """
    resolved = resolve(preset)
    # A fine-tuned checkpoint names its task: its weights, which the load that follows reads again (Task.from_preset,
    # predict --model), are read only for a pretrained one's heads.
    checkpoint = resolved.checkpoint
    weights = checkpoint.weights() if checkpoint is not None and checkpoint.head is None else None
    return _saved_task(resolved, weights)[0]


def _saved_task(resolved, weights):
    """`(class, task.json's content)` of the task a preset holds (see `saved_task_class`); `(None, None)` without."""
    if resolved.checkpoint is not None:
        if resolved.checkpoint.head is not None:
            return _registered_task(resolved.checkpoint.head.task), None
        return (_registered_task() if pretraining_heads(weights) else None), None
    path = os.path.join(resolved.saved_dir, preset_io.TASK_CONFIG_FILE)
    if not os.path.isfile(path):
        return None, None
    config = preset_io.read_json(resolved.saved_dir, preset_io.TASK_CONFIG_FILE)
    return _registered_class(config, path), config


def _registered_class(document, path):
    """The class in Keras' registry that a saved object's `document` (read from `path`) names."""
    name = document.get("registered_name") or document.get("class_name")
    saved_cls = keras.saving.get_registered_object(name) if isinstance(name, str) else None
    if not name:
        raise PresetError(f"{path} names no class (it has no 'registered_name' or 'class_name'): the file is "
                          "damaged; save the preset again.")
    if not isinstance(saved_cls, type):
        raise PresetError(f"{path} holds a {name!r}, which is not a registered Keras class: import the module "
                          "that defines it before from_preset.")
    return saved_cls


def _preset_preprocessor(resolved, cls, sequence_length, max_sequence_length):
    """`cls`'s preprocessor on the preset's tokenizer (None when it has none and `cls` can do without)."""
    if not cls.needs_preprocessor and not _has_tokenizer(resolved):
        return None
    tokenizer = _tokenizer_of(resolved, cls.preprocessor_cls.tokenizer_cls)
    length = packed_length(sequence_length, cls.default_sequence_length, max_sequence_length)
    return cls.make_preprocessor(tokenizer, length, max_sequence_length)


def load_task(preset, cls, load_weights=True, sequence_length=None, **kwargs):
    """A task: the one a preset holds when it is a `cls`, else a fresh `cls`
    on the preset's backbone and tokenizer (`cls.backbone_cls`,
    `cls.preprocessor_cls`).

    A preset holding a task whose class `starts_other_tasks` (the pretrainer
    every converted checkpoint with its heads holds) starts any task: another
    class gets a fresh head on its backbone. So does a checkpoint of a task
    fine-tuned elsewhere (an HF `BertForTokenClassification`), read in place
    or converted, with a warning that its head is left out; as its own task,
    it loads its head, or starts it fresh, with a warning, where `kwargs`
    ask for another output layer (`num_classes=3` for a 2-label head). Any
    other saved task loads only as its own class or a base of it.

    Args:
        preset: a preset name, directory, `hf://` handle or URL.
        cls: the class `from_preset` was called on.
        load_weights: load the preset's weights (else random init).
        sequence_length: the preprocessor's packed length.
        **kwargs: those named in `cls.backbone_kwargs` configure the
            backbone; the rest are a fresh task's arguments, or replace the
            saved task's (e.g. a question answerer's `doc_stride`).

    Raises:
        PresetError: the preset holds another task than a `cls`.
    """
    resolved = resolve(preset)
    weights = resolved.checkpoint.weights() if resolved.checkpoint is not None else None
    saved_cls, config = _saved_task(resolved, weights)
    restore = saved_cls is not None and issubclass(saved_cls, cls)
    backbone_keys = (saved_cls if restore else cls).backbone_kwargs  # `Task.from_preset` restores a subclass
    backbone_kwargs = {key: kwargs.pop(key) for key in backbone_keys if key in kwargs}
    starts_others = saved_cls is not None and getattr(saved_cls, "starts_other_tasks", False)
    if saved_cls is not None and not restore and not (starts_others or _from_checkpoint(resolved)):
        raise PresetError(
            f"{preset} holds a saved {saved_cls.__name__}, not a {cls.__name__}: load it with "
            f"{saved_cls.__name__}.from_preset, or start a {cls.__name__} from the preset it was fine-tuned from."
        )
    # A fine-tuned task's head, read in place, that the task asked for loads.
    head = resolved.checkpoint.head if restore and resolved.checkpoint is not None else None
    if saved_cls is not None and not restore and not starts_others and load_weights:
        _warn_head_left_out(preset, _task_name(resolved, saved_cls), saved_cls, cls, stacklevel=3)
    fresh_head = head_refusal = None
    if restore and config is not None:
        try:
            return _restore_task(resolved, saved_cls, config, load_weights, sequence_length, backbone_kwargs, kwargs)
        except _HeadDoesNotFit as e:  # a converted fine-tuned task asked for another output layer
            fresh_head = f"{e} Its head starts fresh; the BERT under it is loaded."
            head_refusal = e.__cause__  # why the saved task did not take the arguments
            restore = False
    task_cls = saved_cls if restore else cls
    sizes = _weight_sizes(resolved, weights) if load_weights else None
    backbone = _build_backbone(resolved, task_cls.backbone_cls, backbone_kwargs, sizes)
    preprocessor = _preset_preprocessor(resolved, task_cls, sequence_length, backbone.max_sequence_length)
    if head is not None:
        task = _head_task(resolved, task_cls, backbone, preprocessor, weights, kwargs, load_weights, preset)
    elif fresh_head is not None:
        task = _fresh_head_task(resolved, preset, task_cls, backbone, preprocessor, kwargs, saved_cls, head_refusal)
        warnings.warn(fresh_head, stacklevel=3)  # once it is made: it warned, then the task failed
    else:
        task = task_cls(backbone=backbone, preprocessor=preprocessor, **kwargs)
    if not load_weights:
        return task
    if weights is not None:
        # A checkpoint read in place holds the pretrainer's heads (one or both) when `restore` without a `head`.
        pretrainer = task if restore and resolved.checkpoint.head is None else None
        assign_weights(backbone, weights, pretrainer, source=resolved.checkpoint.source,
                       warn_fresh_pooler=task_cls.uses_pooler, checkpoint_format=resolved.checkpoint.checkpoint_format)
        if pretrainer is not None:
            _warn_fresh_heads(resolved.checkpoint.source, weights, stacklevel=4)
    else:
        _load_saved_weights(backbone, resolved.saved_dir, stacklevel=4, warn_fresh_pooler=task_cls.uses_pooler)
    if not restore and task_cls.fresh_heads_warning:
        warnings.warn(f"{preset} {task_cls.fresh_heads_warning}", stacklevel=3)
    return task


class _HeadDoesNotFit(Exception):
    """A task fine-tuned elsewhere, converted, given arguments for another output layer than its head's."""


def _task_name(resolved, saved_cls):
    """How messages name a checkpoint's fine-tuned task: its own class name (transformers'), else ours."""
    if resolved.checkpoint is not None and resolved.checkpoint.head is not None:
        return resolved.checkpoint.head.architecture
    return saved_cls.__name__


def _fresh_head_task(resolved, preset, task_cls, backbone, preprocessor, kwargs, head_cls, head_refusal=None):
    """A `task_cls` from the caller's `kwargs` alone, its head fresh: they ask for another output layer than the
    fine-tuned head of `preset` (a `head_cls`'s), or make no task with it (`head_refusal`: why). Where they make
    no task alone either (3 label names for a 2-label head, without num_classes; dropout=2), a PresetError gives
    both reasons and the fix: Python's TypeError (missing 'num_classes') was all the caller got, even of an
    invalid dropout."""
    try:
        return task_cls(backbone=backbone, preprocessor=preprocessor, **kwargs)
    except (TypeError, ValueError) as e:
        given = ", ".join(f"{key}=..." for key in sorted(kwargs))
        with_head = f"not with its head ({head_refusal}), nor " if head_refusal is not None else ""
        raise PresetError(f"{preset} is a fine-tuned {_task_name(resolved, head_cls)}, and from_preset({given}) makes "
                          f"no {task_cls.__name__} of it: {with_head}alone, with a fresh head ({e}). Fix those "
                          "arguments, or leave them out to load the trained head.") from None


def _head_task(resolved, task_cls, backbone, preprocessor, weights, kwargs, load_weights, preset):
    """A `task_cls` whose output layer is the checkpoint's fine-tuned head (loaded, with `load_weights`), the
    caller's `kwargs` replacing the head's arguments (its label names in any order, dropout). Where `kwargs` ask
    for another output layer (`num_classes=3` for a 2-label head, other labels), the task is built from `kwargs`
    alone: its head starts fresh, with a warning."""
    head, source, units = resolved.checkpoint.head, resolved.checkpoint.source, _head_units(weights)
    arguments = task_cls.head_arguments(head, units)
    names = kwargs.get("label_names")
    order = None if names is None else label_order(arguments.get("label_names"), names)
    task_cls.refuse_unknown_arguments(kwargs, from_preset=True)  # a misspelt argument is the caller's, said so
    try:
        task = task_cls(backbone=backbone, preprocessor=preprocessor, **{**arguments, **kwargs})
        fits, head_refusal = head_fits(task.output_layer, weights) and (names is None or order is not None), None
    except ValueError as e:
        head_refusal = e
        if not kwargs.keys() & arguments.keys():
            # The checkpoint's config is at fault only where its own arguments make no task: the caller's
            # doc_stride=0 was blamed on config.json.
            if kwargs and _makes_task(task_cls, backbone, preprocessor, arguments):
                given = ", ".join(f"{key}=..." for key in sorted(kwargs))
                raise PresetError(f"from_preset({given}) is not a valid {task_cls.__name__} config: {e}") from None
            raise PresetError(_head_arguments_refused(source, head, task_cls, e, arguments, in_place=True)) from None
        fits = False  # the head's arguments beside the caller's (3 classes, 2 names): another output layer
    if fits:
        if load_weights:
            assign_head(task.output_layer, weights, source, order)
        return task
    if not kwargs:
        # The task its checkpoint names, made from the checkpoint's own config, cannot hold its head (a SQuAD head
        # of 3 outputs): the checkpoint's fault, refused as its conversion refuses it. It was started fresh, with
        # a warning of arguments that asked for another output layer where none was given.
        check_head(task.output_layer, weights, source)
    given = ", ".join(f"{key}=..." for key in sorted(kwargs))
    task = _fresh_head_task(resolved, preset, task_cls, backbone, preprocessor, kwargs, task_cls, head_refusal)
    if load_weights:
        asked = (f"labels {list(names)}, not its {arguments['label_names']}" if task.output_layer.units == units
                 else f"{task.output_layer.units} output(s)")
        warnings.warn(f"{source} is a fine-tuned {head.architecture} whose head has {units} output(s), and "
                      f"from_preset({given}) asks for a {task_cls.__name__} of {asked}: its head starts fresh; the "
                      "BERT under it is loaded. Leave those arguments out (or give its labels, in any order) to "
                      "load the head.", stacklevel=4)
    return task


def _makes_task(task_cls, backbone, preprocessor, arguments):
    """Whether `task_cls(backbone, preprocessor, **arguments)` is a valid task."""
    try:
        task_cls(backbone=backbone, preprocessor=preprocessor, **arguments)
    except ValueError:
        return False
    return True


def _head_arguments_refused(source, head, task_cls, error, arguments, in_place):
    """Why the checkpoint `source`'s fine-tuned `head` makes no `task_cls` from its config's `arguments` (the
    `error` they raised), and the way out: read `in_place`, from_preset's arguments replace them; a download is
    converted from them before any argument is read, so it is fixed, or given them, as a directory."""
    names = ", ".join(sorted(arguments))
    fix = (f"Fix its config.json (id2label names the labels), or give from_preset the task's {names}." if in_place
           else "Its config.json is at fault (id2label names the labels): download the checkpoint's files into a "
                f"directory and fix it there, or give that directory's from_preset the task's {names}.")
    return f"{source}, a fine-tuned {head.architecture}, does not make a {task_cls.__name__}: {error} {fix}"


def _check_task_tokenizer(resolved, config, path):
    """A saved task's tokenizer is built from task.json: its casing flags must be booleans, as tokenizer.json's,
    and its vocabulary as long as the one the preset's size checks read, vocabulary.txt, or ids would pass the
    embedding. (Tokens are not compared: vocabulary.txt cannot hold every token a tokenizer may, such as a BOM
    or a carriage return.)"""
    if not config["config"].get("preprocessor"):
        return  # saved without a preprocessor: it gets the preset's tokenizer
    field = ("config", "preprocessor", "config", "tokenizer", "config")
    tokenizer = preset_io.json_object_at(config, path, *field)
    check_bool_fields(tokenizer, f"{path} ({'.'.join(field)})", ("lowercase", "strip_accents"), PresetError)
    vocabulary_path = os.path.join(resolved.saved_dir, preset_io.VOCABULARY_FILE)
    if not os.path.isfile(vocabulary_path):
        return
    inline = tokenizer.get("vocabulary")
    saved = load_vocabulary(vocabulary_path)
    if not isinstance(inline, list):
        differs = f"is a {type(inline).__name__}, not the list of {len(saved)} tokens of {vocabulary_path}"
    elif len(inline) != len(saved):
        differs = f"has {len(inline)} tokens, but {vocabulary_path} has {len(saved)}"
    else:
        return
    raise PresetError(f"{path}: '{'.'.join(field)}.vocabulary' {differs}. A saved task holds one vocabulary: the "
                      "preset is damaged; save it again.")


def _head_does_not_fit(resolved, cls, task_kwargs):
    """What the warning says of a converted fine-tuned task whose head the caller's `task_kwargs` do not fit."""
    given = ", ".join(f"{key}=..." for key in sorted(task_kwargs))
    # Named by what it was converted from (the hf:// handle the caller gave), not by the cache directory.
    return (f"{_metadata(resolved.saved_dir)[CONVERTED_FROM]} is a fine-tuned {cls.__name__}, and from_preset({given}) "
            "asks for another output layer than its head's (leave those arguments out to load the head).")


def _short(value, width=60):
    text = repr(value)
    return text if len(text) <= width else text[:width - 5] + " ...]"


def _arguments(task_kwargs):
    return ", ".join(f"{key}={_short(value)}" for key, value in sorted(task_kwargs.items()))


def _new_head_advice(resolved, cls, task_kwargs):
    """The way out for task arguments that do not fit a saved task's head: its own head, or a new one on its BERT."""
    name = cls.__name__
    if task_kwargs.get("label_names") is not None and "num_classes" not in task_kwargs and \
            "num_classes" in inspect.signature(cls.__init__).parameters:  # a classifier needs both
        task_kwargs = {**task_kwargs, "num_classes": len(task_kwargs["label_names"])}
    return (f" A saved task loads with its own head: leave those arguments out. For a new head on its fine-tuned "
            f"BERT: saved = {name}.from_preset({resolved.saved_dir!r}), then {name}(saved.backbone, "
            f"saved.preprocessor, {', '.join(f'{key}={value!r}' for key, value in sorted(task_kwargs.items()))}).")


def _restore_task(resolved, cls, config, load_weights, sequence_length, backbone_kwargs, task_kwargs):
    """The task of `task.json` + `task.weights.h5`, its config updated with `task_kwargs` and its backbone's
    with `backbone_kwargs` (a misspelt name is refused by the task's constructor)."""
    path = os.path.join(resolved.saved_dir, preset_io.TASK_CONFIG_FILE)
    backbone_config = preset_io.json_object_at(config, path, "config", "backbone", "config")
    _check_task_tokenizer(resolved, config, path)
    backbone_config.update(backbone_kwargs)
    cls.refuse_unknown_arguments(task_kwargs, from_preset=True)  # before Keras' deserializing buries it in the config
    saved = dict(config["config"])
    saved_names = saved.get("label_names")
    config["config"].update(task_kwargs)
    _check_vocabulary_size(resolved, backbone_config.get("vocabulary_size"))
    if load_weights:
        _check_sizes(resolved, backbone_config, _weight_sizes(resolved, None, preset_io.TASK_WEIGHTS_FILE),
                     backbone_kwargs, source=path)
    try:
        task = keras.saving.deserialize_keras_object(config)
    except (ValueError, TypeError) as e:
        if task_kwargs and _fine_tuned_elsewhere(resolved, cls):
            raise _HeadDoesNotFit(_head_does_not_fit(resolved, cls, task_kwargs)) from e
        given = sorted(key for key in {**backbone_kwargs, **task_kwargs} if key in str(e))
        source = f"from_preset({given[0]}=...)" if given else path
        raise PresetError(f"{source} is not a valid {cls.__name__} config: {e}"
                          + (_new_head_advice(resolved, cls, task_kwargs) if {"num_classes", "label_names"} & set(given)
                             else "")) from e
    if load_weights:
        try:
            preset_io.load_weights_file(task, os.path.join(resolved.saved_dir, preset_io.TASK_WEIGHTS_FILE))
        except CheckpointError as e:
            if not task_kwargs:
                raise
            if _fine_tuned_elsewhere(resolved, cls):
                raise _HeadDoesNotFit(_head_does_not_fit(resolved, cls, task_kwargs)) from e
            changed = ", ".join(f"{key} from {_short(saved.get(key))} to {_short(value)}"
                                for key, value in sorted(task_kwargs.items()) if saved.get(key) != value)
            raise PresetError(f"from_preset({_arguments(task_kwargs)}) changes the saved {cls.__name__}'s "
                              f"{changed}: the head saved in {preset_io.TASK_WEIGHTS_FILE} does not fit the changed "
                              f"{cls.__name__}." + _new_head_advice(resolved, cls, task_kwargs)) from None
        if task_kwargs.get("label_names") is not None:
            order = label_order(saved_names, task_kwargs["label_names"])
            if order is None and _fine_tuned_elsewhere(resolved, cls):
                raise _HeadDoesNotFit(_head_does_not_fit(resolved, cls, task_kwargs))
            if order is None:
                raise PresetError(f"from_preset(label_names={list(task_kwargs['label_names'])}) names other labels than "
                                  f"the saved {cls.__name__}'s {saved_names} (give its labels, in any order, to "
                                  "reorder its head)." + _new_head_advice(resolved, cls, task_kwargs))
            reorder_head(task.output_layer, order)
    max_sequence_length = task.backbone.max_sequence_length
    if task.preprocessor is None:
        # A pretrainer saved without a preprocessor (as conversion saves it) gets the preset's tokenizer.
        task.preprocessor = _preset_preprocessor(resolved, cls, sequence_length, max_sequence_length)
    elif sequence_length is not None:
        task.preprocessor = cls.make_preprocessor(task.preprocessor.tokenizer, sequence_length, max_sequence_length)
    return task
