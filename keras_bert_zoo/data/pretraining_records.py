"""Pretraining instances as sharded TFRecord files, and the TPU-ready input pipeline.

Records are `tf.train.Example`s with int64 features `token_ids`,
`segment_ids`, `padding_mask` (`max_seq_length` each), `mask_positions`,
`mask_ids`, `mask_weights` (`max_predictions_per_seq` each) and
`next_sentence_label` (0 = IsNext), and, when the writer is given the
tokenizer, which vocabulary and casing made the ids (`vocabulary_sha256`,
`lowercase`; a reader that does not ask for them ignores them). The reader
also takes google-research/bert's create_pretraining_data.py records
(`input_ids`, `input_mask`, `masked_lm_weights` as floats, ...: `GOOGLE_NAMES`),
so corpora prepared for the original run_pretraining.py train here as they
are. It reads them back with fixed shapes and int32 types, batches with
`drop_remainder=True`, and runs on the host, so it can feed a TPU.
"""

import contextlib
import hashlib
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert_zoo.preprocessing.model_inputs import MASK_POSITIONS
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.preprocessing.pretraining_instances import FEATURES
from keras_bert_zoo.tokenizers.tokenizer_argument import check_tokenizer
from keras_bert_zoo.utils.atomic import atomic_path
from keras_bert_zoo.utils.atomic import is_temporary
from keras_bert_zoo.utils.path_arguments import path_list
from keras_bert_zoo.utils.progress_bar import progress_bar


def shard_paths(output_file, num_shards):
    """`OUT.tfrecord` -> `OUT-00000-of-00004.tfrecord`, ... (one shard: the name itself)."""
    if num_shards == 1:
        return [output_file]
    root, extension = os.path.splitext(output_file)
    return [f"{root}-{i:05d}-of-{num_shards:05d}{extension}" for i in range(num_shards)]


def other_shard_counts(output_file, num_shards):
    """Files named as `output_file`'s shards of another count than `num_shards` (`OUT-0000i-of-0000M`, or
    `output_file` itself beside shards): perhaps an earlier run's, which a glob of `OUT-*` reads with the new
    shards. Named, not removed: nothing says which tool wrote them.

    Returns:
        Their paths, sorted.
    """
    root, extension = os.path.splitext(output_file)
    shard = re.compile(re.escape(os.path.basename(root)) + r"-\d{5,}-of-(\d{5,})" + re.escape(extension))
    directory = os.path.dirname(output_file)
    found = [os.path.join(directory, name) for name in os.listdir(directory or ".")
             if (match := shard.fullmatch(name)) and int(match[1]) != num_shards]
    if num_shards != 1 and os.path.isfile(output_file):
        found.append(output_file)
    return sorted(found)


def vocabulary_fingerprint(tokenizer):
    """`{"vocabulary_sha256": ..., "lowercase": ...}`: what a record's ids mean.

    Records hold ids only; a model whose vocabulary has the same size but other tokens (another cased
    vocabulary, a domain one) would train on them in silence, each id naming another piece.
    """
    tokens = "\n".join(tokenizer.get_vocabulary()).encode("utf-8")
    return {"vocabulary_sha256": hashlib.sha256(tokens).hexdigest()[:16], "lowercase": int(tokenizer.lowercase)}


def _fingerprint_features(tokenizer):
    if tokenizer is None:
        return {}
    fingerprint = vocabulary_fingerprint(tokenizer)
    return {"vocabulary_sha256": tf.train.Feature(bytes_list=tf.train.BytesList(
                value=[fingerprint["vocabulary_sha256"].encode("ascii")])),
            "lowercase": tf.train.Feature(int64_list=tf.train.Int64List(value=[fingerprint["lowercase"]]))}


def write_pretraining_records(instances, output_files, progress=False, tokenizer=None):
    """Write instance arrays round-robin over `output_files`.

    Each shard is written under a temporary name beside it (`utils.atomic`'s, so a killed writer's is removed by
    the next write and globs skip it) and renamed when complete; on any error no shard is left behind.

    Args:
        instances: the dict of arrays from `create_pretraining_instances`.
        output_files: a path or a list of shard paths.
        progress: show a progress bar.
        tokenizer: the tokenizer that made the instances. Its vocabulary's digest and casing go into every
            record, so that `pretrain` refuses them for a model of another vocabulary (without it, only ids
            past the model's vocabulary are caught).

    Returns:
        The number of records written.
    """
    check_tokenizer(tokenizer, "write_pretraining_records", required=False)
    files = path_list(output_files, "output_files")
    count = len(instances["token_ids"])
    fingerprint = _fingerprint_features(tokenizer)
    writers = []
    with contextlib.ExitStack() as shards:
        try:
            for path in files:
                writers.append(tf.io.TFRecordWriter(shards.enter_context(atomic_path(path))))
            for row in progress_bar(range(count), progress, desc="writing", unit="instance"):
                features = {
                    name: tf.train.Feature(int64_list=tf.train.Int64List(value=np.atleast_1d(instances[name][row])))
                    for name in FEATURES
                }
                features.update(fingerprint)
                example = tf.train.Example(features=tf.train.Features(feature=features))
                writers[row % len(writers)].write(example.SerializeToString())
        finally:
            for writer in writers:
                writer.close()  # before each shard is renamed into place (or removed, after an error)
    return count


# google-research/bert's feature names (create_pretraining_data.py's write_instance_to_example_files) -> ours.
GOOGLE_NAMES = {"input_ids": "token_ids", "segment_ids": "segment_ids", "input_mask": "padding_mask",
                "masked_lm_positions": "mask_positions", "masked_lm_ids": "mask_ids",
                "masked_lm_weights": "mask_weights", "next_sentence_labels": "next_sentence_label"}
OUR_NAMES = {name: name for name in FEATURES}


def _feature_spec(max_seq_length, max_predictions_per_seq, names):
    """`{stored name: (length, dtype)}` of a record: what the parser reads and a bad record is checked against."""
    lengths = {"next_sentence_label": 1, "mask_positions": max_predictions_per_seq, "mask_ids": max_predictions_per_seq,
               "mask_weights": max_predictions_per_seq}
    # Google's masked_lm_weights are floats (1.0 / 0.0); every other feature, and all of ours, int64.
    return {stored: (lengths.get(name, max_seq_length), tf.float32 if stored == "masked_lm_weights" else tf.int64)
            for stored, name in names.items()}


def _parse_fn(max_seq_length, max_predictions_per_seq, vocabulary_size, names=OUR_NAMES):
    spec = {stored: tf.io.FixedLenFeature([length], dtype)
            for stored, (length, dtype) in _feature_spec(max_seq_length, max_predictions_per_seq, names).items()}

    def parse(record):
        parsed = tf.io.parse_single_example(record, spec)
        example = {name: parsed[stored] for stored, name in names.items()}
        if vocabulary_size is not None:
            # An id past the embeddings fails deep in a training step on a CPU and reads garbage on a GPU or TPU.
            ids = tf.concat([example["token_ids"], example["mask_ids"]], 0)
            in_range = tf.reduce_all((ids >= 0) & (ids < vocabulary_size))
            message = (f"{OUT_OF_VOCABULARY} ({vocabulary_size} tokens): they were written with another vocabulary. "
                       "Write them with the vocabulary of the model (create-pretraining-data --preset or "
                       "--vocab_file).")
            with tf.control_dependencies([tf.debugging.Assert(in_range, [message])]):
                example = {name: tf.identity(value) for name, value in example.items()}
        features = {name: tf.cast(value, tf.int32) for name, value in example.items()}
        features["next_sentence_label"] = features["next_sentence_label"][0]
        return features

    return parse


# No apostrophes: TensorFlow escapes them in the error it raises.
OUT_OF_VOCABULARY = "The pretraining records hold token ids outside the vocabulary of the model"


def read_pretraining_records(input_files, max_seq_length=None, max_predictions_per_seq=None, vocabulary_size=None,
                             shuffle_files=False, seed=None):
    """A `tf.data.Dataset` of feature dicts (int32, fixed shapes) from TFRecord
    files (a path, a glob, or a list of them), shards read interleaved.

    `max_seq_length` / `max_predictions_per_seq` are the records' shapes, named
    as the `PretrainingDataConfig` (create_pretraining_data.py's flags) that
    wrote them, read from the files unless given. With `vocabulary_size`, a
    record holding an id outside `[0, vocabulary_size)` stops the dataset
    with an error that says so.
    Records of google-research/bert's create_pretraining_data.py are read
    too (their first record tells them apart), under the same names.

    Args:
        input_files: a path, a glob (comma-separated globs) or a list of them.
        max_seq_length / max_predictions_per_seq: the records' shapes; None
            (default): read from the first record of each file. Given, they
            are checked against the files.
        vocabulary_size: refuse ids outside `[0, vocabulary_size)`.
        shuffle_files: read the files in a new random order on each pass,
            as run_pretraining.py does for training: a corpus written by
            several `create-pretraining-data` runs (one per slice) then
            mixes its runs from the first batch. False (evaluation): in
            sorted order, the same records on each pass.
        seed: the files' shuffle's seed (the same order for the same seed).

    Raises:
        FileNotFoundError: no file matches.
        ValueError: a given shape is not the records' (naming both), the
            files differ in shape or format, or none holds a record.

    Examples:
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/records.tfrecord"
    >>> zeros = lambda *shape: np.zeros(shape, "int32")
    >>> write_pretraining_records({"token_ids": zeros(4, 8), "segment_ids": zeros(4, 8),
    ...     "padding_mask": zeros(4, 8), "mask_positions": zeros(4, 2), "mask_ids": zeros(4, 2),
    ...     "mask_weights": zeros(4, 2), "next_sentence_label": zeros(4)}, path)
    4
    >>> records = read_pretraining_records(path, shuffle_files=True, seed=1)
    >>> records.element_spec["token_ids"].shape.as_list(), records.element_spec["mask_ids"].shape.as_list()
    ([8], [2])
    """
    # A string is comma-separated globs, as record_files (pretrain_from_records, --input_file) reads it: taken as
    # one path, "a.tfrecord,b.tfrecord" matched no file.
    patterns = input_files.split(",") if isinstance(input_files, str) else path_list(input_files, "input_files")
    files = record_files(patterns)
    if not files:
        raise FileNotFoundError(f"No pretraining records match {patterns}; write them with "
                                "`keras-bert-zoo create-pretraining-data`.")
    # Parsed at other lengths than written, a record fails with TensorFlow's "Can't parse serialized Example".
    max_seq_length, max_predictions_per_seq, names = _record_format(files, max_seq_length, max_predictions_per_seq)
    ds = tf.data.Dataset.from_tensor_slices(files)
    if shuffle_files:
        # Sorted, one run's files all come before the next run's: the 8 files interleaved and the instances'
        # shuffle buffer (pretraining_batches) then trained on one slice of the corpus after another.
        # tf.distribute's auto-sharding by FILE gives each worker its files before this shuffle (TensorFlow
        # 2.21 puts the shard right after the file names), so workers read disjoint files whatever their
        # seeds; sharding by DATA (fewer files than workers) needs the same order on every worker: a seed.
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(len(files), 8),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=True)
    return ds.map(_parse_fn(max_seq_length, max_predictions_per_seq, vocabulary_size, names),
                  num_parallel_calls=tf.data.AUTOTUNE)


# What TensorFlow raises on a record it cannot read: a file cut short or damaged (DataLossError), a record of
# other lengths or features, or bytes that are no tf.train.Example (InvalidArgumentError; UnicodeDecodeError where
# its message quotes those bytes). None names the file.
_READ_ERRORS = (tf.errors.DataLossError, tf.errors.InvalidArgumentError, UnicodeDecodeError)
_REWRITE = "write the records again with `keras-bert-zoo create-pretraining-data` (or leave the file out)"


@contextlib.contextmanager
def record_errors_named(files):
    """Inside, TensorFlow's error on a record of `files` that `read_pretraining_records` cannot use becomes a
    `ValueError` naming the file, the record and the fix (TensorFlow's names a graph node, at best).

    A record outside the vocabulary is named by its check's message. Any other read error sends the files to
    `_find_bad_record`, which reads them again, in order, to the first bad record: only on failure, since the
    training pipeline interleaves the files and cannot say which one a record came from. An error that no record
    explains (raised by the model, say) is raised as it is.
    """
    try:
        yield
    except _READ_ERRORS as e:
        found = re.search(rf"\[({re.escape(OUT_OF_VOCABULARY)}[^\]]*)\]", getattr(e, "message", ""))
        if found:
            raise ValueError(f"{', '.join(files[:3])}{' ...' if len(files) > 3 else ''}: {found.group(1)}") from None
        bad = _find_bad_record(files)
        if bad is None:
            raise
        path, index, problem = bad
        raise ValueError(f"{path}: record {index} (counting from 0) {problem}: {_REWRITE}.") from None


def check_first_records(records, files, count=1000):
    """Read the first `count` records of `read_pretraining_records(...)`, so that a record its checks refuse is
    named before any model loads, not steps into training.

    Raises:
        ValueError: naming the file and what is wrong (see `record_errors_named`).
    """
    with record_errors_named(files):
        for _ in records.take(count):
            pass


def _find_bad_record(files):
    """`(path, index, problem)` of the first record of `files` (in order) that `read_pretraining_records` cannot
    read with the format and lengths of their first records: cut short, no tf.train.Example, a feature missing or
    of another length or type. None when every record reads.

    Raises:
        ValueError: a file's first record already differs (see `record_shapes`).
    """
    spec = _feature_spec(*_record_format(files))
    for path in files:
        index = 0
        try:
            for record in tf.data.TFRecordDataset(path):
                problem = _record_problem(record.numpy(), spec)
                if problem:
                    return path, index, problem
                index += 1
        except tf.errors.DataLossError:
            return path, index, "is cut short or damaged (its length or checksum fails: a copy or a write that " \
                                "did not finish)"
    return None


def _example_features(record):
    """The features of the serialized tf.train.Example `record`; None when its bytes are no Example."""
    try:
        return tf.train.Example.FromString(record).features.feature
    except Exception as e:  # protobuf's DecodeError is no ValueError in every version
        if type(e).__name__ != "DecodeError":
            raise
        return None


def _record_problem(record, spec):
    """What makes the serialized `record` unreadable by the parser of `spec` (see `_feature_spec`); None if
    nothing."""
    features = _example_features(record)
    if features is None:
        return "is not a tf.train.Example"
    missing = [name for name in spec if name not in features]
    if missing:
        return f"lacks {', '.join(missing)}"
    for name, (length, dtype) in spec.items():
        kind = "float_list" if dtype == tf.float32 else "int64_list"
        found = features[name].WhichOneof("kind")
        if found != kind:
            return f"holds {name} as {found or 'an empty feature'}, not {kind}"
        count = len(getattr(features[name], kind).value)
        if count != length:
            return f"holds {count} {name} values where the first record of the files holds {length}"
    return None


def record_files(input_files):
    """The files of comma-separated globs (a string) or a list of paths/globs, sorted.

    Directories are left out: `dir/*` matches subdirectories too, which a reader would fail on. So are the
    temporaries of writes in progress or killed (TensorFlow's glob, unlike a shell's, matches dot-files).
    """
    patterns = input_files.split(",") if isinstance(input_files, str) else path_list(input_files, "input_files")
    return sorted({f for pattern in patterns for f in tf.io.gfile.glob(str(pattern))
                   if not is_temporary(f) and not tf.io.gfile.isdir(f)})


def is_empty_file(path):
    """Whether `path` holds no bytes: neither records nor text can be told from it."""
    return tf.io.gfile.stat(path).length == 0


def is_pretraining_records(path):
    """True when `path` is a TFRecord file (what `create-pretraining-data` writes), whatever its records hold:
    one that holds no tf.train.Example is named by `record_shapes`, not taken for text. False for a text corpus
    or an empty file. Read by content, not by name: a text file fails TFRecord's length checksum on its first
    bytes."""
    try:
        return any(True for _ in tf.data.TFRecordDataset(path).take(1))  # none: an empty file (`is_empty_file`)
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError):
        return False


def _first_record(path):
    """`(features, names)` of the first record of `path`: its features and `OUR_NAMES` or `GOOGLE_NAMES`;
    `(None, None)` when it holds none."""
    try:
        first = [record.numpy() for record in tf.data.TFRecordDataset(path).take(1)]
    except tf.errors.DataLossError:
        raise ValueError(f"{path}: its first record is cut short or damaged: {_REWRITE}.") from None
    for record in first:
        features = _example_features(record)
        if features is None:
            raise ValueError(f"{path}: its first record is not a tf.train.Example: {_REWRITE}.")
        for names in (OUR_NAMES, GOOGLE_NAMES):
            if all(name in features for name in names):
                return features, names
        missing = [name for name in FEATURES if name not in features]
        raise ValueError(f"{path} is not a file of pretraining instances: its records lack "
                         f"{', '.join(missing)}, and are no google-research/bert records either (write them with "
                         "`keras-bert-zoo create-pretraining-data`).")
    return None, None


def _first_features(path):
    """The features of the first record of `path`; None when it holds none."""
    return _first_record(path)[0]


def _shapes_of(path):
    """`(max_seq_length, max_predictions_per_seq, names)` of the first record of `path`; None when it holds
    none."""
    features, names = _first_record(path)
    if features is None:
        return None
    stored = {name: key for key, name in names.items()}
    return (len(features[stored["token_ids"]].int64_list.value), len(features[stored["mask_ids"]].int64_list.value),
            names)


def check_record_vocabulary(input_files, tokenizer, casing_given=False):
    """Refuse records written with another vocabulary or casing than `tokenizer`'s.

    `casing_given`: the tokenizer's casing is the caller's to choose (pretrain's --do_lower_case with its
    --vocab_file), not a preset's: the fix of another casing is to give the records' one.

    The first record of every file is read. Records that do not name their vocabulary (written without
    `write_pretraining_records(..., tokenizer=...)`, before records named it, or by google-research/bert) pass:
    only their ids' range can be checked, by `read_pretraining_records(..., vocabulary_size=...)`.

    Raises:
        ValueError: naming the first file written with another vocabulary or casing, and the fix.
    """
    expected = vocabulary_fingerprint(check_tokenizer(tokenizer, "check_record_vocabulary"))
    for path in record_files(input_files):
        features = _first_features(path)
        if features is None or not {"vocabulary_sha256", "lowercase"} & set(features):
            continue
        digests = list(features["vocabulary_sha256"].bytes_list.value) if "vocabulary_sha256" in features else []
        casing = list(features["lowercase"].int64_list.value) if "lowercase" in features else []
        # The writer puts both, a digest of 16 hex digits and 0 or 1: anything else (one alone, empty, another
        # type) was refused as another vocabulary, or as "lower-cased but the tokenizer is lower-cased".
        if len(digests) != 1 or not re.fullmatch(rb"[0-9a-f]{16}", digests[0]) or casing not in ([0], [1]):
            raise ValueError(f"{path} holds malformed vocabulary tags (vocabulary_sha256 "
                             f"{[d[:24] for d in digests]}, lowercase {casing[:4]}; write_pretraining_records writes "
                             "16 hex digits and 0 or 1): write the records again with create-pretraining-data.")
        digest, lowercase = digests[0].decode("ascii"), casing[0]
        if digest != expected["vocabulary_sha256"]:
            raise ValueError(f"{path} was written with another vocabulary (sha256 {digest}...) than the model's "
                             f"({expected['vocabulary_sha256']}...): its ids would train other pieces' embeddings. "
                             "Write the records again with the model's vocabulary (create-pretraining-data "
                             "--preset, or --vocab_file with the vocabulary the model was made with).")
        if lowercase != expected["lowercase"]:
            cased = lambda flag: "lower-cased" if flag else "cased"  # noqa: E731
            flag = lambda flag: "--do_lower_case" if flag else "--nodo_lower_case"  # noqa: E731
            # Rewriting a cased vocabulary's records lower-cased loses its capitals: a casing given is the one to fix.
            fix = (f"pass pretrain {flag(lowercase)} (lowercase={bool(lowercase)}), the records' casing"
                   if casing_given else f"write the records again with {flag(expected['lowercase'])} (or the "
                   "model's --preset)")
            raise ValueError(f"{path} was written {cased(lowercase)} but the model's tokenizer is "
                             f"{cased(expected['lowercase'])}: {fix}.")


def record_shapes(input_files, max_seq_length=None, max_predictions_per_seq=None):
    """`(max_seq_length, max_predictions_per_seq)` of the records of `input_files`.

    The first record of every file is read: files written with other lengths fail a training step's parsing
    only when their records come up, with TensorFlow's error naming no file. Files with no records (shards
    beyond the instances) are skipped.

    Args:
        input_files: comma-separated globs (a string) or a list of paths/globs.
        max_seq_length / max_predictions_per_seq: shapes a caller was given, to check against the records'
            (None: not checked).

    Raises:
        FileNotFoundError: no file matches.
        ValueError: a first record is not a pretraining instance, files differ in shape, no file holds a
            record, or a given shape is not the records'.
    """
    files = record_files(input_files)
    if not files:
        raise FileNotFoundError(f"No pretraining records match '{input_files}'; write them with "
                                "`keras-bert-zoo create-pretraining-data`.")
    return _record_format(files, max_seq_length, max_predictions_per_seq)[:2]


def _record_format(files, max_seq_length=None, max_predictions_per_seq=None):
    """`(max_seq_length, max_predictions_per_seq, names)` of the records of `files` (see `record_shapes`)."""
    shapes = {path: shape for path in files if (shape := _shapes_of(path)) is not None}
    if not shapes:
        raise ValueError(f"{files[0]}{' ...' if len(files) > 1 else ''} holds no records.")
    (first, (*shape, names)), *others = shapes.items()
    for path, (*other, other_names) in others:
        if other_names != names:
            tool = {id(GOOGLE_NAMES): "google-research/bert's", id(OUR_NAMES): "keras-bert-zoo's"}
            raise ValueError(f"{path} holds {tool[id(other_names)]} records but {first} {tool[id(names)]}: one run "
                             "reads one format (write the records again with one tool, or leave the odd files out).")
        if other != shape:
            raise ValueError(f"{path} was written with max_seq_length {other[0]}, max_predictions_per_seq "
                             f"{other[1]}, but {first} with {shape[0]}, {shape[1]}: records of one run must have "
                             "one shape (write them again with the same flags, or leave the odd files out).")
    for name, given, found in (("max_seq_length", max_seq_length, shape[0]),
                               ("max_predictions_per_seq", max_predictions_per_seq, shape[1])):
        if given is not None and given != found:
            raise ValueError(f"{name} {given} does not match the records ({first} was written with {name} "
                             f"{found}): pass {found}, or leave it out to read it from the records.")
    return shape[0], shape[1], names


def dynamic_masking(tokenizer, masked_lm_prob=0.15, max_predictions_per_seq=20):
    """A batch map that draws fresh masks (RoBERTa's dynamic masking).

    The stored masks are undone and keras-hub's `MaskedLMMaskGenerator`
    picks `masked_lm_prob` of the pieces again (never `[CLS]`, `[SEP]`,
    padding), 80% `[MASK]` / 10% random / 10% unchanged, so each epoch sees
    new masks. Pairs and next-sentence labels stay as created.
    """
    from keras_hub.layers import MaskedLMMaskGenerator

    check_tokenizer(tokenizer, "dynamic_masking")
    generator = MaskedLMMaskGenerator(
        vocabulary_size=tokenizer.vocabulary_size(),
        mask_selection_rate=masked_lm_prob,
        mask_token_id=tokenizer.mask_token_id,
        mask_selection_length=max_predictions_per_seq,
        unselectable_token_ids=[tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id],
    )

    def remask(features):
        positions = tf.cast(features["mask_positions"], tf.int32)
        rows = tf.broadcast_to(tf.range(tf.shape(positions)[0])[:, None], tf.shape(positions))
        real = features["mask_weights"] > 0
        indices = tf.stack([tf.boolean_mask(rows, real), tf.boolean_mask(positions, real)], axis=1)
        original = tf.tensor_scatter_nd_update(features["token_ids"], indices, tf.boolean_mask(features["mask_ids"], real))
        masked = generator(original)
        return {
            **features,
            "token_ids": tf.cast(masked["token_ids"], tf.int32),
            "mask_positions": tf.cast(masked["mask_positions"], tf.int32),
            "mask_ids": tf.cast(masked["mask_ids"], tf.int32),
            "mask_weights": tf.cast(masked["mask_weights"], tf.int32),
        }

    return remask


def pretraining_batches(features, batch_size, shuffle_buffer=None, seed=None, repeat=False, remask=None):
    """Batch feature dicts into `(inputs, labels, sample_weights)` for
    `BertPretrainer.fit`, with `drop_remainder=True` (static shapes for TPU).

    Args:
        features: a Dataset of feature dicts (`read_pretraining_records`) or
            the dict of arrays from `create_pretraining_instances`.
        batch_size: global batch size.
        shuffle_buffer: shuffle instances (reshuffled every epoch).
        seed: the shuffle's seed.
        repeat: repeat forever (give `fit` its `steps_per_epoch`).
        remask: `dynamic_masking(...)` for fresh masks every epoch; `None`
            keeps the static masks of the instances (`dupe_factor`).
    """
    ds = features if isinstance(features, tf.data.Dataset) else tf.data.Dataset.from_tensor_slices(features)
    if shuffle_buffer:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    return _model_batches(ds.batch(batch_size, drop_remainder=True), remask)


def pretraining_batches_by_pass(instances, batch_size, seed, first_step=0, remask=None):
    """The batches of in-memory `instances` for `BertPretrainer.fit`, pass after pass without end, from step
    `first_step` on.

    Pass p takes the instances in an order drawn from `(seed, p)` alone (a stateless shuffle), cut into
    `count // batch_size` batches (the rest dropped, as an epoch drops it). So any process draws the same
    batches at every step, and a run resumed at step N starts at the pass N falls in, skipping only that pass's
    batches before it. (`pretraining_batches`' reshuffle each pass draws from a state that a new process starts
    afresh: a run resumed at pass 2 took pass 1's order again.)

    Args:
        instances: the dict of arrays from `create_pretraining_instances`.
        batch_size: global batch size.
        seed: the orders' seed (an int).
        first_step: the step (a batch of the passes, from 0) to start at.
        remask: as in `pretraining_batches`.
    """
    count = len(instances["token_ids"])
    per_pass = count // batch_size
    if not per_pass:
        raise ValueError(f"{count} instances make no batch of {batch_size}.")
    first_pass, skip = divmod(first_step, per_pass)
    columns = {name: tf.constant(np.asarray(values)) for name, values in instances.items()}

    def one_pass(index):
        order = tf.random.experimental.stateless_shuffle(
            tf.range(count, dtype=tf.int64), seed=tf.stack([tf.constant(seed, tf.int64), index]))
        return tf.data.Dataset.from_tensor_slices(order).batch(batch_size, drop_remainder=True)

    rows = tf.data.Dataset.range(first_pass, np.iinfo(np.int64).max).flat_map(one_pass).skip(skip)
    batches = rows.map(lambda rows: {name: tf.gather(column, rows) for name, column in columns.items()})
    return _model_batches(batches, remask)


def _model_batches(batches, remask):
    """Batched feature dicts -> the pretrainer's inputs, masks redrawn first with `remask`, prefetched."""
    if remask is not None:
        batches = batches.map(remask, num_parallel_calls=tf.data.AUTOTUNE)
    return batches.map(split_features, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)


def split_features(features):
    """Feature dict -> the pretrainer's `(inputs, labels, sample_weights)`."""
    inputs = {name: features[name] for name in (*MODEL_INPUTS, MASK_POSITIONS)}
    labels = {"masked_lm_logits": features["mask_ids"], "next_sentence_logits": features["next_sentence_label"]}
    weights = {"masked_lm_logits": tf.cast(features["mask_weights"], tf.float32),
               "next_sentence_logits": tf.ones_like(features["next_sentence_label"], tf.float32)}
    return inputs, labels, weights
