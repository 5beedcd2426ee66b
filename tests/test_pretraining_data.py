"""Pretraining instances: google-research/bert's masking and NSP semantics, records, CLI."""

import hashlib
import os
import re
import warnings

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data.pretraining_corpus import read_documents
from keras_bert_zoo.data.pretraining_corpus import split_sentences
from keras_bert_zoo.data.pretraining_records import pretraining_batches
from keras_bert_zoo.data.pretraining_records import read_pretraining_records
from keras_bert_zoo.data.pretraining_records import shard_paths
from keras_bert_zoo.data.pretraining_records import write_pretraining_records
from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances
from tests.conftest import shared_path


@pytest.fixture(scope="module")
def tokenizer(default_preset_dir):
    return kbz.BertTokenizer.from_preset(default_preset_dir)


@pytest.fixture(scope="module")
def wikitext(tokenizer):
    return read_documents(shared_path("corpus", "wikitext-2", "valid.txt"), tokenizer, corpus_format="wikitext")


def _originals(instances):
    """The uncorrupted token ids: masked positions get their labels back."""
    tokens = instances["token_ids"].copy()
    rows, columns = np.nonzero(instances["mask_weights"])
    tokens[rows, instances["mask_positions"][rows, columns]] = instances["mask_ids"][rows, columns]
    return tokens


def test_masking_statistics_follow_bert(tokenizer, wikitext):
    config = PretrainingDataConfig(dupe_factor=2, random_seed=1)
    instances = create_pretraining_instances(wikitext, tokenizer, config)
    assert len(instances["token_ids"]) > 4000
    weights = instances["mask_weights"] > 0
    lengths = instances["padding_mask"].sum(1)
    # round(15% of the length), at least 1, at most max_predictions_per_seq, per instance.
    expected = np.minimum(20, np.maximum(1, np.round(lengths * 0.15)))
    assert (weights.sum(1) == expected).all()
    assert abs(weights.sum() / lengths.sum() - 0.15) < 0.005
    shown = np.take_along_axis(instances["token_ids"], instances["mask_positions"], 1)[weights]
    labels = instances["mask_ids"][weights]
    as_mask = np.mean(shown == tokenizer.mask_token_id)
    unchanged = np.mean(shown == labels)
    random_token = 1.0 - as_mask - unchanged
    assert abs(as_mask - 0.8) < 0.01 and abs(unchanged - 0.1) < 0.01 and abs(random_token - 0.1) < 0.01
    # Outside the chosen positions nothing changed; positions ascend, inside the text.
    originals = _originals(instances)
    assert (np.diff(np.where(weights, instances["mask_positions"], 10**6 + np.arange(20)), axis=1) > 0).all()
    assert (instances["mask_positions"][weights] < np.repeat(lengths, weights.sum(1))).all()
    assert (originals[:, 0] == tokenizer.cls_token_id).all()


def test_no_special_token_is_ever_masked(tokenizer, wikitext):
    instances = create_pretraining_instances(wikitext[:20], tokenizer, PretrainingDataConfig(dupe_factor=3))
    labels = instances["mask_ids"][instances["mask_weights"] > 0]
    special = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
    assert not special & set(labels.tolist())


def test_pairs_and_next_sentence_labels(tokenizer, wikitext):
    instances = create_pretraining_instances(wikitext, tokenizer, PretrainingDataConfig(dupe_factor=1, random_seed=3))
    assert abs(instances["next_sentence_label"].mean() - 0.5) < 0.06
    originals = _originals(instances)
    stream = " ".join(" ".join(map(str, sentence)) for document in wikitext for sentence in document)
    checked = 0
    for row in np.flatnonzero(instances["next_sentence_label"] == 0)[:600]:
        length = instances["padding_mask"][row].sum()
        tokens, segments = originals[row, :length], instances["segment_ids"][row, :length]
        separators = np.flatnonzero(tokens == tokenizer.sep_token_id)
        assert separators[-1] == length - 1 and segments[separators[0]] == 0 and segments[separators[0] + 1] == 1
        if length < 128:  # not truncated: A then B is running text of one document
            text = " ".join(map(str, np.concatenate([tokens[1 : separators[0]], tokens[separators[0] + 1 : -1]])))
            assert text in stream
            checked += 1
    assert checked > 20


def test_whole_word_masking_never_splits_a_word(tokenizer, wikitext):
    continues = np.array([t.startswith("##") for t in tokenizer.get_vocabulary()])
    instances = create_pretraining_instances(wikitext[:30], tokenizer,
                                             PretrainingDataConfig(dupe_factor=2, do_whole_word_mask=True))
    originals = _originals(instances)
    split_words = 0
    for row in range(len(originals)):
        masked = set(instances["mask_positions"][row][instances["mask_weights"][row] > 0].tolist())
        length = instances["padding_mask"][row].sum()
        for position in masked:
            if position + 1 < length and continues[originals[row, position + 1]]:
                split_words += position + 1 not in masked
            # (A segment may start mid-word after truncation: that fragment is its own unit.)
            starts_segment = originals[row, position - 1] in (tokenizer.cls_token_id, tokenizer.sep_token_id)
            if continues[originals[row, position]] and not starts_segment:
                split_words += position - 1 not in masked
    assert split_words == 0
    assert continues[instances["mask_ids"][instances["mask_weights"] > 0]].any()  # multi-piece words were masked


def test_same_seed_same_instances(tokenizer, wikitext):
    make = lambda seed: create_pretraining_instances(wikitext[:10], tokenizer,  # noqa: E731
                                                      PretrainingDataConfig(dupe_factor=2, random_seed=seed))
    first, again, other = make(7), make(7), make(8)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    assert not np.array_equal(first["token_ids"], other["token_ids"])


def test_pairs_are_cut_as_google_cuts_them_draw_for_draw():
    """create_pretraining_data.py's truncate_seq_pair, written here as Google wrote it (one piece at a time,
    `del trunc_tokens[0]` or `pop()`), against ours, which counts the cuts and slices once: deleting a list's
    front piece by piece took quadratic time (20 s or more for one line of 400,000 pieces)."""
    import random

    from keras_bert_zoo.preprocessing.pretraining_instances import _truncate_pair

    def google_truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
        while len(tokens_a) + len(tokens_b) > max_num_tokens:
            trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
            if rng.random() < 0.5:
                del trunc_tokens[0]
            else:
                trunc_tokens.pop()

    draws = random.Random(0)
    for _ in range(300):
        a, b = list(range(draws.randrange(60))), list(range(100, 100 + draws.randrange(60)))
        budget, seed = draws.randrange(1, 70), draws.randrange(1 << 30)
        ours_a, ours_b, ours_rng = list(a), list(b), random.Random(seed)
        google_a, google_b, google_rng = list(a), list(b), random.Random(seed)
        _truncate_pair(ours_a, ours_b, budget, ours_rng)
        google_truncate_seq_pair(google_a, google_b, budget, google_rng)
        assert (ours_a, ours_b, ours_rng.random()) == (google_a, google_b, google_rng.random())


def test_a_very_long_line_is_cut_to_one_run_of_its_pieces(tokenizer):
    # One sentence of 400,000 pieces (a document not split into sentences) becomes instances of a run of it each.
    # Ids of the vocabulary (1000 ... 29,999, again and again): each piece's successor is the next id, modulo.
    line = [1000 + i % 29_000 for i in range(400_000)]
    documents = [[line], [[500, 501, 502]], [[600, 601]]]
    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)
    instances = create_pretraining_instances(documents, tokenizer, config)
    originals = _originals(instances)
    assert any(1000 <= i < 30_000 for row in originals for i in row)
    for row in range(len(originals)):
        ids = originals[row][instances["padding_mask"][row] == 1]
        segment = [i for i in ids if 1000 <= i < 30_000]
        # the line's pieces kept are one run of it, as the front / back cuts leave them
        assert all((b - a) % 29_000 == 1 for a, b in zip(segment, segment[1:]))


def test_sharded_records_read_back_with_fixed_int32_shapes(tokenizer, wikitext, tmp_path):
    config = PretrainingDataConfig(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1)
    instances = create_pretraining_instances(wikitext[:8], tokenizer, config)
    paths = shard_paths(str(tmp_path / "out.tfrecord"), 3)
    assert [p.split("/")[-1] for p in paths] == [f"out-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert write_pretraining_records(instances, paths) == len(instances["token_ids"])
    records = list(read_pretraining_records(str(tmp_path / "out-*"), 64, 10).as_numpy_iterator())
    assert len(records) == len(instances["token_ids"])
    key = lambda r: tuple(r["token_ids"])  # noqa: E731
    by_tokens = {key(r): r for r in records}
    for row in range(len(records)):
        record = by_tokens[tuple(instances["token_ids"][row])]
        for name in instances:
            np.testing.assert_array_equal(record[name], instances[name][row])
    batches = pretraining_batches(read_pretraining_records(paths, 64, 10), batch_size=4)
    inputs, labels, weights = batches.element_spec
    assert all(spec.shape.as_list() == [4, 64] and spec.dtype == tf.int32
               for name, spec in inputs.items() if name != "mask_positions")
    assert inputs["mask_positions"].shape.as_list() == [4, 10] and labels["next_sentence_logits"].shape == [4]
    assert sum(1 for _ in batches) == len(records) // 4  # drop_remainder


def test_failed_write_leaves_no_shard(tokenizer, wikitext, tmp_path):
    instances = create_pretraining_instances(wikitext[:2], tokenizer, PretrainingDataConfig(dupe_factor=1))
    broken = dict(instances, mask_ids=instances["mask_ids"][:1])  # IndexError after the first record
    with pytest.raises(IndexError):
        write_pretraining_records(broken, [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")])
    assert list(tmp_path.iterdir()) == []


def test_corpus_layouts(tokenizer, tmp_path):
    assert split_sentences("It rose 3.5 fold. Then it fell! Why? \"Nobody\" knows.") == [
        "It rose 3.5 fold.", "Then it fell!", "Why?", "\"Nobody\" knows."]
    (tmp_path / "a.txt").write_text("one two.\nthree.\n\n\nfour five.\n")
    documents = read_documents(str(tmp_path / "a.txt"), tokenizer)
    assert [[tokenizer.id_to_token(i) for s in d for i in s] for d in documents] == [
        ["one", "two", ".", "three", "."], ["four", "five", "."]]
    (tmp_path / "b.txt").write_text("One. Two.\nThree.\n")
    assert [len(d) for d in read_documents(str(tmp_path / "b.txt"), tokenizer, corpus_format="documents")] == [2, 1]
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="No text in"):
        read_documents(str(tmp_path / "empty.txt"), tokenizer)


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
@pytest.mark.parametrize("bom", ["", "\ufeff"])
def test_a_corpus_reads_the_same_whatever_its_line_endings_and_byte_order_mark(tokenizer, tmp_path, newline, bom):
    # Old Mac line endings (a carriage return alone) read as one line: one sentence, no document break. A BOM hid
    # the WikiText title of the first line, and carriage returns every title, so articles ran into each other.
    sentences = ["one two.", "three.", "", "four five."]
    (tmp_path / "a.txt").write_bytes((bom + newline.join(sentences) + newline).encode("utf-8"))
    documents = read_documents(tmp_path / "a.txt", tokenizer)
    assert [[tokenizer.id_to_token(i) for s in d for i in s] for d in documents] == [
        ["one", "two", ".", "three", "."], ["four", "five", "."]]
    articles = [" = One = ", "", " One two . Three . ", " = Two = ", " Four five . "]
    (tmp_path / "w.txt").write_bytes((bom + newline.join(articles) + newline).encode("utf-8"))
    documents = read_documents(tmp_path / "w.txt", tokenizer, corpus_format="wikitext")
    assert [[tokenizer.id_to_token(i) for s in d for i in s] for d in documents] == [
        ["one", "two", ".", "three", "."], ["four", "five", "."]]


def test_pathlib_paths_are_taken_by_the_corpus_reader_and_the_records_writer_and_reader(tokenizer, tmp_path):
    # A pathlib.Path was iterated as a list: "'PosixPath' object is not iterable", naming no argument.
    (tmp_path / "a.txt").write_text("one two.\nthree.\n\nfour five.\n")
    documents = read_documents(tmp_path / "a.txt", tokenizer)
    assert documents == read_documents([str(tmp_path / "a.txt")], tokenizer)
    instances = create_pretraining_instances(documents, tokenizer, PretrainingDataConfig(dupe_factor=1))
    assert write_pretraining_records(instances, tmp_path / "r.tfrecord") == len(instances["token_ids"])
    assert sum(1 for _ in read_pretraining_records(tmp_path / "r.tfrecord")) == len(instances["token_ids"])
    with pytest.raises(TypeError, match=r"input_files takes a path .* got int"):
        read_documents(3, tokenizer)
    with pytest.raises(IsADirectoryError, match=r"is a directory, not a corpus file: pass its files"):
        read_documents(tmp_path, tokenizer)  # was TensorFlow's FailedPreconditionError


def test_read_pretraining_records_takes_comma_separated_globs_as_its_docstring_says(tokenizer, tmp_path):
    # The string was taken as one path: "No pretraining records match ['a.tfrecord,b.tfrecord']".
    (tmp_path / "a.txt").write_text("one two.\nthree.\n\nfour five.\nsix.\n")
    instances = create_pretraining_instances(read_documents(str(tmp_path / "a.txt"), tokenizer), tokenizer,
                                             PretrainingDataConfig(dupe_factor=2))
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord")]
    write_pretraining_records(instances, paths)
    assert sum(1 for _ in read_pretraining_records(",".join(paths))) == len(instances["token_ids"])
    assert sum(1 for _ in read_pretraining_records(f"{paths[0]},{tmp_path}/b*")) == len(instances["token_ids"])


@pytest.mark.parametrize("field, value, message", [
    ("max_predictions_per_seq", 128 * 0.15, r"max_predictions_per_seq must be a whole number .* 19.2: pass round"),
    ("max_seq_length", 64.0, r"max_seq_length must be a whole number \(an int\); got 64.0: pass 64\."),
    ("dupe_factor", "5", r"dupe_factor must be a whole number \(an int\); got '5'\."),
    ("masked_lm_prob", "0.15", r"masked_lm_prob must be a number"),
    ("do_whole_word_mask", "false", r"do_whole_word_mask must be True or False; got 'false'"),
    ("random_seed", None, r"random_seed must be a whole number"),
])
def test_a_data_config_field_of_another_type_is_refused_naming_it(field, value, message):
    # A float count failed in numpy at instance time ("'float' object cannot be interpreted as an integer"), a
    # string with "'<' not supported"; "false" masked whole words and a seed of None drew other instances each run.
    with pytest.raises(TypeError, match=message):
        PretrainingDataConfig(**{field: value})
    config = PretrainingDataConfig(max_seq_length=np.int64(64), max_predictions_per_seq=np.int32(10),
                                   masked_lm_prob=np.float32(0.15), do_whole_word_mask=np.bool_(True))
    assert [type(getattr(config, name)) for name in ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob",
                                                     "do_whole_word_mask")] == [int, int, float, bool]


def test_documents_not_of_the_tokenizers_ids_are_refused_naming_the_fix(tokenizer):
    config = PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=2, dupe_factor=1)
    # Text: "invalid literal for int() with base 10: 'a'".
    with pytest.raises(TypeError, match=r"Document 0 is a str, not a list of sentences .* read_documents"):
        create_pretraining_instances(["all work and no play", "a dull boy"], tokenizer, config)
    with pytest.raises(TypeError, match=r"Document 1 holds str 'a dull boy', not a sentence of token ids"):
        create_pretraining_instances([[[5, 6]], ["a dull boy"]], tokenizer, config)
    # Ids of a larger vocabulary were written in silence (and failed with IndexError with whole-word masks).
    size = tokenizer.vocabulary_size()
    for whole_words in (False, True):
        with pytest.raises(ValueError, match=rf"Document 2 holds token id {size}, outside the tokenizer's vocabulary "
                                             rf"of {size} tokens"):
            create_pretraining_instances([[[5, 6], [7]], [], [[8, size]]], tokenizer,
                                         PretrainingDataConfig(max_seq_length=16, max_predictions_per_seq=2,
                                                               do_whole_word_mask=whole_words))
    assert len(create_pretraining_instances([[np.array([5, 6]), [7]], [[8, 9]]], tokenizer, config)["token_ids"])


def test_cli_writes_records_from_the_original_sample_text(default_preset_dir, tmp_path, capsys):
    from keras_bert_zoo.cli.main import main

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(kbz.BertTokenizer.from_preset(default_preset_dir).get_vocabulary()) + "\n")
    out = tmp_path / "sample.tfrecord"
    assert main(["create-pretraining-data", "--input_file", shared_path("corpus", "bert_sample_text", "sample_text.txt"),
                 "--output_file", str(out), "--vocab_file", str(vocab), "--do_lower_case", "--max_seq_length", "128",
                 "--max_predictions_per_seq", "20", "--masked_lm_prob", "0.15", "--dupe_factor", "5",
                 "--random_seed", "12345"]) == 0
    records = list(read_pretraining_records(str(out)).as_numpy_iterator())
    assert f"{len(records)} instances from 3 documents" in capsys.readouterr().out
    assert len(records) > 50
    example = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(str(out)))).numpy())
    features = example.features.feature
    assert sorted(features) == sorted(["token_ids", "segment_ids", "padding_mask", "mask_positions", "mask_ids",
                                       "mask_weights", "next_sentence_label", "vocabulary_sha256", "lowercase"])
    # The vocabulary the ids index, and its casing, as create-pretraining-data was told them.
    tokens = vocab.read_text().splitlines()
    assert features["vocabulary_sha256"].bytes_list.value == [
        hashlib.sha256("\n".join(tokens).encode()).hexdigest()[:16].encode()]
    assert features["lowercase"].int64_list.value == [1]
    sample = shared_path("corpus", "bert_sample_text", "sample_text.txt")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:  # no vocabulary: a usage error of the parser, as --help shows it
        main(["create-pretraining-data", "--input_file", sample, "--output_file", str(out)])
    assert exit_info.value.code == 2
    assert "one of the arguments --vocab_file --preset is required" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:  # a missing input is a usage error of the parser
        main(["create-pretraining-data", "--input_file", "x", "--output_file", str(out)])
    assert exit_info.value.code == 2 and "--input_file" in capsys.readouterr().err


def test_cli_reads_several_input_files_as_an_unquoted_glob_passes_them(default_preset_dir, tmp_path, capsys):
    from keras_bert_zoo.cli.main import main

    sample = open(shared_path("corpus", "bert_sample_text", "sample_text.txt"), encoding="utf-8").read()
    shards = [tmp_path / f"corpus-{i}.txt" for i in range(3)]
    for shard in shards:
        shard.write_text(sample, encoding="utf-8")
    out = tmp_path / "records.tfrecord"
    # As the shell expands corpus-*.txt, with a comma-separated one beside: pretrain's --input_file takes both.
    argv = ["create-pretraining-data", "--input_file", str(shards[0]), f"{shards[1]},{shards[2]}",
            "--output_file", str(out), "--preset", default_preset_dir, "--max_seq_length", "32",
            "--max_predictions_per_seq", "5", "--dupe_factor", "1"]
    assert main(argv) == 0
    assert "instances from 9 documents" in capsys.readouterr().out
    assert main(argv[:4] + [str(out)] + argv[4:]) != 0  # an input among them that is also the output
    assert "is also an --input_file" in capsys.readouterr().err


def test_dynamic_masking_draws_fresh_masks_each_epoch(tokenizer, wikitext):
    from keras_bert_zoo.data.pretraining_records import dynamic_masking

    tf.random.set_seed(0)
    instances = create_pretraining_instances(wikitext[:20], tokenizer, PretrainingDataConfig(dupe_factor=1))
    originals = _originals(instances)
    ds = pretraining_batches(instances, batch_size=8, remask=dynamic_masking(tokenizer, 0.15, 20))
    epochs = [list(ds.as_numpy_iterator()) for _ in range(2)]
    first = np.concatenate([inputs["mask_positions"] for inputs, _, _ in epochs[0]])
    second = np.concatenate([inputs["mask_positions"] for inputs, _, _ in epochs[1]])
    assert not np.array_equal(first, second)
    chosen, real = 0, 0
    for batch, (inputs, labels, weights) in enumerate(epochs[0]):
        source = originals[batch * 8 : (batch + 1) * 8]  # no shuffling: instances in order
        w = weights["masked_lm_logits"] > 0
        rows = np.repeat(np.arange(8), w.sum(1))
        positions = inputs["mask_positions"][w]
        np.testing.assert_array_equal(labels["masked_lm_logits"][w], source[rows, positions])
        untouched = np.ones_like(source, bool)
        untouched[rows, positions] = False
        np.testing.assert_array_equal(inputs["token_ids"][untouched], source[untouched])
        special = {tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id}
        assert not special & set(labels["masked_lm_logits"][w].tolist())
        chosen += w.sum()
        real += inputs["padding_mask"].sum()
    assert abs(chosen / real - 0.15) < 0.02


def _records_with_an_id(tmp_path, tokenizer, wikitext, row, token_id):
    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)
    instances = create_pretraining_instances(wikitext[:4], tokenizer, config)
    instances["token_ids"][row, 1] = token_id
    path = str(tmp_path / "r.tfrecord")
    write_pretraining_records(instances, path)
    return path, len(instances["token_ids"])


@pytest.mark.parametrize("token_id", [30522, -1])
def test_records_with_ids_outside_the_vocabulary_stop_with_a_message(tokenizer, wikitext, tmp_path, token_id):
    from keras_bert_zoo.data.pretraining_records import OUT_OF_VOCABULARY

    size = tokenizer.vocabulary_size()
    assert size == 30522
    path, count = _records_with_an_id(tmp_path, tokenizer, wikitext, row=3, token_id=token_id)
    assert len(list(read_pretraining_records(path, 32, 5))) == count  # unchecked, as before
    records = read_pretraining_records(path, 32, 5, vocabulary_size=size).as_numpy_iterator()
    for _ in range(3):
        next(records)  # the rows before it
    with pytest.raises(tf.errors.InvalidArgumentError, match=re.escape(OUT_OF_VOCABULARY)):
        next(records)
    # Training refuses them before a model loads, naming the file (they were a CPU error steps in, garbage on a GPU).
    with pytest.raises(ValueError, match=rf"r\.tfrecord: {re.escape(OUT_OF_VOCABULARY)} \(30522 tokens\)"):
        kbz.pretrain_from_records(str(tmp_path / "run"), path, num_train_steps=1, preset=kbz.DEFAULT_PRESET,
                                  batch_size=2)
    assert not os.path.exists(tmp_path / "run" / "model")


def test_a_record_outside_the_vocabulary_past_the_first_checked_stops_training_naming_it(
        tokenizer, wikitext, tmp_path, monkeypatch):
    from keras_bert_zoo.data.pretraining_records import OUT_OF_VOCABULARY
    from keras_bert_zoo.training import pretrain as pretrain_module

    path, count = _records_with_an_id(tmp_path, tokenizer, wikitext, row=3, token_id=40_000)
    monkeypatch.setattr(pretrain_module, "check_first_records", lambda records, files: None)  # as if past them
    with pytest.raises(ValueError, match=rf"r\.tfrecord: {re.escape(OUT_OF_VOCABULARY)}"):
        kbz.pretrain_from_records(str(tmp_path / "run"), path, num_train_steps=count, preset=kbz.DEFAULT_PRESET,
                                  batch_size=2, checkpoint_every=count, verbose=0)


def test_records_of_another_vocabulary_of_the_same_size_are_refused_before_a_model_loads(
        tokenizer, wikitext, tmp_path, capsys):
    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.data.pretraining_records import check_record_vocabulary

    # Another vocabulary of the same size: two tokens swapped, so every id stays in range.
    tokens = tokenizer.get_vocabulary()
    swapped = list(tokens)
    swapped[2000], swapped[2001] = swapped[2001], swapped[2000]
    (tmp_path / "other_vocab.txt").write_text("\n".join(swapped) + "\n")
    other = kbz.BertTokenizer(str(tmp_path / "other_vocab.txt"), lowercase=True)
    assert other.vocabulary_size() == tokenizer.vocabulary_size()
    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)
    instances = create_pretraining_instances(wikitext[:4], other, config)
    tagged = str(tmp_path / "tagged.tfrecord")
    write_pretraining_records(instances, tagged, tokenizer=other)
    # The tags do not change what is read: a reader that does not ask for them ignores them.
    read_back = list(read_pretraining_records(tagged, 32, 5, vocabulary_size=30522).as_numpy_iterator())
    np.testing.assert_array_equal([r["token_ids"] for r in read_back], instances["token_ids"])
    check_record_vocabulary(tagged, other)
    with pytest.raises(ValueError, match=r"tagged\.tfrecord was written with another vocabulary .* than the model's"):
        check_record_vocabulary(tagged, tokenizer)
    # The same vocabulary, cased: the ids of capitalised words would never be seen.
    cased = kbz.BertTokenizer(str(tmp_path / "other_vocab.txt"), lowercase=False)
    with pytest.raises(ValueError, match=r"written lower-cased but the model's tokenizer is cased: .*--nodo_lower_case"):
        check_record_vocabulary(tagged, cased)
    # A casing pretrain was given with its vocabulary (a new model's) is the one to change, not the records': the
    # advice was to write a cased vocabulary's records lower-cased.
    with pytest.raises(ValueError, match=r"written lower-cased but the model's tokenizer is cased: pass pretrain "
                                         r"--do_lower_case \(lowercase=True\), the records' casing\.$"):
        check_record_vocabulary(tagged, cased, casing_given=True)
    with pytest.raises(ValueError, match=r"pass pretrain --do_lower_case \(lowercase=True\)"):
        kbz.pretrain_from_records(str(tmp_path / "run"), tagged, num_train_steps=1, vocabulary=str(
            tmp_path / "other_vocab.txt"), lowercase=False, config=dict(num_layers=1, num_heads=2, hidden_dim=8,
                                                                        intermediate_dim=16), batch_size=2)
    assert not os.path.exists(tmp_path / "run")
    # Untagged records (google-research/bert's script's) cannot be told apart: they pass.
    untagged = str(tmp_path / "untagged.tfrecord")
    write_pretraining_records(instances, untagged)
    check_record_vocabulary(untagged, tokenizer)
    # pretrain refuses them before the model loads, and leaves no output directory.
    with pytest.raises(ValueError, match="another vocabulary"):
        kbz.pretrain_from_records(str(tmp_path / "run"), tagged, num_train_steps=1, preset=kbz.DEFAULT_PRESET,
                                  batch_size=2)
    assert not os.path.exists(tmp_path / "run")
    # The command line tags what it writes, with the preset's vocabulary, and a preset of it reads them.
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n\n".join("The first sentence of document %d.\nIts second one.\nAnd a third." % i
                                   for i in range(8)) + "\n")
    out = str(tmp_path / "cli.tfrecord")
    assert main(["create-pretraining-data", "--input_file", str(corpus), "--output_file", out,
                 "--preset", kbz.DEFAULT_PRESET, "--max_seq_length", "32", "--max_predictions_per_seq", "5"]) == 0
    check_record_vocabulary(out, tokenizer)
    with pytest.raises(ValueError, match=r"cli\.tfrecord was written with another vocabulary"):
        check_record_vocabulary(out, other)


def _next_sentence_warnings(documents, tokenizer, config):
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        instances = create_pretraining_instances(documents, tokenizer, config)
    return instances, [str(w.message) for w in caught]


def test_a_corpus_whose_layout_defeats_next_sentence_prediction_is_named(tokenizer, tmp_path):
    # One abstract per line, no blank lines, read as sentences: one document, so every random B is from it.
    words = "cells genes proteins mice patients doctors samples tissues rats trials".split()
    lines = [" ".join(f"The {words[(a + s) % 10]} of study {a} changed {words[s]} in week {s}." for s in range(8))
             for a in range(12)]
    (tmp_path / "abstracts.txt").write_text("\n".join(lines) + "\n")
    one = read_documents(str(tmp_path / "abstracts.txt"), tokenizer)
    assert len(one) == 1
    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=2)
    _, messages = _next_sentence_warnings(one, tokenizer, config)
    assert len(messages) == 1 and "holds 1 document" in messages[0] and "--corpus_format documents" in messages[0]
    # Two such files: two documents, but every line fills a chunk alone, so B is always random.
    (tmp_path / "more.txt").write_text("\n".join(lines[::-1]) + "\n")
    two = read_documents([str(tmp_path / "abstracts.txt"), str(tmp_path / "more.txt")], tokenizer)
    instances, messages = _next_sentence_warnings(two, tokenizer, config)
    share = instances["next_sentence_label"].mean()
    assert share > 0.9 and len(messages) == 1 and f"{share:.0%} of the instances" in messages[0]
    # Read as one document per line: sentences, pairs of both kinds, no warning.
    documents = read_documents(str(tmp_path / "abstracts.txt"), tokenizer, corpus_format="documents")
    instances, messages = _next_sentence_warnings(documents, tokenizer, config)
    assert messages == [] and 0.4 < instances["next_sentence_label"].mean() < 0.8


def _small_records(tokenizer, documents, path, max_seq_length=32, max_predictions_per_seq=5):
    config = PretrainingDataConfig(max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                                   dupe_factor=1)
    write_pretraining_records(create_pretraining_instances(documents, tokenizer, config), str(path))
    return str(path)


def test_records_of_another_shape_are_named_before_training(tokenizer, wikitext, tmp_path):
    from keras_bert_zoo.data.pretraining_records import record_shapes

    _small_records(tokenizer, wikitext[:4], tmp_path / "a.tfrecord")
    _small_records(tokenizer, wikitext[4:8], tmp_path / "b.tfrecord")
    assert record_shapes(str(tmp_path / "*.tfrecord")) == (32, 5)
    # Only the first file's first record was read: c's length failed mid-training with TensorFlow's own error.
    _small_records(tokenizer, wikitext[8:12], tmp_path / "c.tfrecord", max_seq_length=64)
    with pytest.raises(ValueError, match=r"c\.tfrecord was written with max_seq_length 64, max_predictions_per_seq 5"
                                         r", but .*a\.tfrecord with 32, 5"):
        record_shapes(str(tmp_path / "*.tfrecord"))


def test_a_glob_skips_directories_and_an_empty_file_is_not_records(tokenizer, wikitext, tmp_path, capsys):
    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.data.pretraining_records import is_pretraining_records
    from keras_bert_zoo.data.pretraining_records import record_files
    from keras_bert_zoo.data.pretraining_records import record_shapes

    records = _small_records(tokenizer, wikitext[:4], tmp_path / "a.tfrecord")
    (tmp_path / "logs").mkdir()  # read as a file, it failed with TensorFlow's FailedPreconditionError
    (tmp_path / "empty.tfrecord").write_bytes(b"")  # a shard with no instance
    assert record_files(str(tmp_path / "*")) == [records, str(tmp_path / "empty.tfrecord")]
    assert len(list(read_pretraining_records(str(tmp_path / "*"), 32, 5))) == len(list(read_pretraining_records(
        records, 32, 5)))
    assert record_shapes(str(tmp_path / "*")) == (32, 5)
    assert is_pretraining_records(records) and not is_pretraining_records(str(tmp_path / "empty.tfrecord"))
    # Alone, an empty file was taken for records ("holds no records"); it is named as empty.
    argv = ["pretrain", "--preset", "minilm_l6_h384_en_uncased", "--output_dir", str(tmp_path / "run"), "--input_file"]
    assert main(argv + [str(tmp_path / "empty.tfrecord")]) == 2
    assert f"--input_file {tmp_path / 'empty.tfrecord'} is empty" in capsys.readouterr().err
    assert not os.path.exists(tmp_path / "run")
    # Records given as text were "not UTF-8 text: save the file as UTF-8 (iconv ...)".
    assert main(["create-pretraining-data", "--input_file", records, "--output_file", str(tmp_path / "out.tfrecord"),
                 "--preset", "minilm_l6_h384_en_uncased"]) == 2
    assert f"{records} is a TFRecord file of pretraining instances, not corpus text" in capsys.readouterr().err


def test_a_killed_writers_temporary_shard_is_removed_and_never_read(tokenizer, wikitext, tmp_path):
    import socket
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    host = socket.gethostname()
    # Half-written shards under utils.atomic's names: a killed writer's, and a running one's (this process).
    killed = tmp_path / f".tmp-out-00000-of-00002.tfrecord-{child.pid}@{host}-abc123"
    running = tmp_path / f".tmp-out-00001-of-00002.tfrecord-{os.getpid()}@{host}-def456"
    for path in (killed, running):
        path.write_bytes(b"\x10\x00\x00\x00half a record")
    paths = shard_paths(str(tmp_path / "out.tfrecord"), 2)
    instances = create_pretraining_instances(wikitext[:4], tokenizer, PretrainingDataConfig(
        max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1))
    write_pretraining_records(instances, paths)
    # The killed writer's is gone (they were named .tmp-PID-name, never removed); a glob reads no temporary.
    assert sorted(os.listdir(tmp_path)) == sorted([running.name, *(os.path.basename(p) for p in paths)])
    records = read_pretraining_records(str(tmp_path / "*"), 32, 5)
    assert sum(1 for _ in records) == len(instances["token_ids"])  # was a DataLossError on the half record


def test_output_file_problems_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    from keras_bert_zoo.cli import create_pretraining_data_command
    from keras_bert_zoo.cli.main import main

    monkeypatch.setattr(create_pretraining_data_command, "run", lambda args: pytest.fail("run before the check"))
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("One cell.\nTwo genes.\n\nThree mice.\nFour rats.\n")
    (tmp_path / "a_file").write_text("x")
    common = ["create-pretraining-data", "--preset", "minilm_l6_h384_en_uncased", "--input_file", str(corpus)]
    # Under a file: "[Errno 17] File exists" after all the tokenizing, naming no flag.
    with pytest.raises(SystemExit) as exit_info:
        main(common + ["--output_file", str(tmp_path / "a_file" / "x.tfrecord")])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "argument --output_file" in err
    assert f"{tmp_path / 'a_file'} is a file, so the directory {tmp_path / 'a_file'} cannot be made" in err
    # The corpus itself: it would have been replaced by the records.
    assert main(common + ["--output_file", str(corpus)]) == 2
    assert f"--output_file {corpus} is also an --input_file" in capsys.readouterr().err
    assert corpus.read_text().startswith("One cell.") and sorted(os.listdir(tmp_path)) == ["a_file", "corpus.txt"]


def test_a_rerun_with_another_shard_count_names_the_earlier_shards_and_deletes_nothing(tmp_path, capsys):
    """An earlier run's shards of another count, which a glob of OUT-* reads with the new ones, are named. They
    were removed, and so were input files named like shards (a corpus wiki-00000-of-00002.txt written to
    --output_file wiki.txt was deleted); shards that would overwrite an input are refused."""
    from keras_bert_zoo.cli.main import main

    text = "\n\n".join(f"Cell {i} grew.\nGene {i} fell.\nMouse {i} ran." for i in range(6)) + "\n"
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(text)
    out = tmp_path / "data" / "out.tfrecord"

    def write(shards, source=corpus, output=out):
        code = main(["create-pretraining-data", "--preset", "minilm_l6_h384_en_uncased", "--input_file", str(source),
                     "--output_file", str(output), "--num_shards", str(shards), "--dupe_factor", "1"])
        return code, sorted(os.listdir(output.parent)), capsys.readouterr().err

    assert write(3)[:2] == (0, [f"out-0000{i}-of-00003.tfrecord" for i in range(3)])
    code, names, err = write(2)
    assert code == 0 and len(names) == 5  # nothing deleted
    assert "3 files beside the new shards are named as --output_file" in err and "out-00000-of-00003" in err
    # A corpus named like shards of the output is read, never deleted, and not named as an earlier run's.
    corpus_dir = tmp_path / "wiki"
    corpus_dir.mkdir()
    for i in range(2):
        (corpus_dir / f"wiki-0000{i}-of-00002.txt").write_text(text)
    code, names, err = write(1, source=corpus_dir / "wiki-*.txt", output=corpus_dir / "wiki.txt")
    assert code == 0 and names == ["wiki-00000-of-00002.txt", "wiki-00001-of-00002.txt", "wiki.txt"]
    assert "named as --output_file" not in err
    code, names, err = write(2, source=corpus_dir / "wiki-*.txt", output=corpus_dir / "wiki.txt")
    assert code == 2 and "would write" in err and "an --input_file" in err
    assert (corpus_dir / "wiki-00000-of-00002.txt").read_text() == text


def test_a_max_predictions_per_seq_far_from_the_masking_rate_is_named(tokenizer, wikitext):
    import warnings

    def made(length, predictions):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            config = PretrainingDataConfig(max_seq_length=length, max_predictions_per_seq=predictions, dupe_factor=1)
        return config, [str(w.message) for w in caught]

    assert made(128, 20)[1] == [] and made(64, 10)[1] == []
    # 200 slots at length 64: the same masks as 10 (at most round(64 * 0.15)), the rest padding.
    wasteful, messages = made(64, 200)
    assert len(messages) == 1 and "the masks are those of 10" in messages[0]
    assert "Set max_predictions_per_seq to 10" in messages[0]
    right = made(64, 10)[0]
    padded, exact = (create_pretraining_instances(wikitext[:6], tokenizer, c) for c in (wasteful, right))
    np.testing.assert_array_equal(padded["mask_positions"][:, :10], exact["mask_positions"])
    assert not padded["mask_weights"][:, 10:].any()
    # 20 at length 512 caps what a full instance masks at 3.9%, not 15%.
    messages = made(512, 20)[1]
    assert len(messages) == 1 and "20 masks (3.9% of its pieces, not 15%)" in messages[0]
    assert "Set max_predictions_per_seq to 77" in messages[0]


def test_random_next_segments_are_more_than_half_as_the_readme_says(tokenizer):
    """A one-sentence chunk always takes a random B (google-research/bert's algorithm): the README's 58-59% for
    PubMed abstracts, the baseline held-out next-sentence accuracy is judged against (it said 50%)."""
    documents = read_documents(shared_path("corpus", "pubmed_abstracts", "PubMedAbstract_1MB.txt"), tokenizer,
                               corpus_format="documents")
    instances = create_pretraining_instances(documents, tokenizer, PretrainingDataConfig(dupe_factor=1))
    assert 0.575 < instances["next_sentence_label"].mean() < 0.6


def test_google_research_berts_records_are_read_as_ours(tokenizer, wikitext, tmp_path):
    """Records of create_pretraining_data.py (its feature names, float masked_lm_weights) were refused as "not a
    file of pretraining instances": corpora prepared for the original run_pretraining.py train here as they are."""
    from keras_bert_zoo.data.pretraining_records import check_record_vocabulary
    from keras_bert_zoo.data.pretraining_records import record_shapes

    config = PretrainingDataConfig(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1)
    instances = create_pretraining_instances(wikitext[:4], tokenizer, config)
    google = str(tmp_path / "google.tfrecord")
    ints = lambda values: tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))  # noqa: E731
    with tf.io.TFRecordWriter(google) as writer:  # as write_instance_to_example_files writes them
        for row in range(len(instances["token_ids"])):
            features = {"input_ids": ints(instances["token_ids"][row]), "input_mask": ints(instances["padding_mask"][row]),
                        "segment_ids": ints(instances["segment_ids"][row]),
                        "masked_lm_positions": ints(instances["mask_positions"][row]),
                        "masked_lm_ids": ints(instances["mask_ids"][row]),
                        "masked_lm_weights": tf.train.Feature(float_list=tf.train.FloatList(
                            value=instances["mask_weights"][row].astype(float))),
                        "next_sentence_labels": ints([instances["next_sentence_label"][row]])}
            writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    assert record_shapes(google) == (32, 5)
    check_record_vocabulary(google, tokenizer)  # untagged: only the ids' range can be checked
    records = list(read_pretraining_records(google, 32, 5, vocabulary_size=30522).as_numpy_iterator())
    for name in instances:
        np.testing.assert_array_equal([record[name] for record in records], instances[name])
    metrics = kbz.pretrain_from_records(str(tmp_path / "run"), google, num_train_steps=1, preset=kbz.DEFAULT_PRESET,
                                        batch_size=2, verbose=0)
    assert metrics["global_step"] == 1 and np.isfinite(metrics["train_loss"]).all(), metrics
    # One run reads one format: a glob over both kinds is refused, naming them.
    write_pretraining_records(instances, str(tmp_path / "ours.tfrecord"), tokenizer=tokenizer)
    with pytest.raises(ValueError, match=r"ours\.tfrecord holds keras-bert-zoo's records but .*google\.tfrecord "
                                         "google-research/bert's: one run reads one format"):
        record_shapes(str(tmp_path / "*.tfrecord"))


@pytest.mark.parametrize("tags, shown", [
    ({"vocabulary_sha256": []}, r"vocabulary_sha256 \[\], lowercase \[1\]"),  # empty
    ({"vocabulary_sha256": [b"\xff" * 100000]}, r"vocabulary_sha256 \[b'\\xff"),  # huge, not hex
    ({"vocabulary_sha256": None}, r"vocabulary_sha256 \[\], lowercase \[1\]"),  # casing alone: was not checked
    ({"lowercase": [7]}, r"lowercase \[7\]"),  # was "written lower-cased but the model's tokenizer is lower-cased"
    ({"lowercase": None}, r"lowercase \[\]"),
])
def test_records_with_malformed_vocabulary_tags_are_refused_as_such(tokenizer, tmp_path, tags, shown):
    from keras_bert_zoo.data.pretraining_records import check_record_vocabulary
    from keras_bert_zoo.data.pretraining_records import vocabulary_fingerprint

    fingerprint = vocabulary_fingerprint(tokenizer)
    values = {"vocabulary_sha256": [fingerprint["vocabulary_sha256"].encode()], "lowercase": [1], **tags}
    features = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=[1] * 4)) for name in
                ("token_ids", "segment_ids", "padding_mask", "mask_positions", "mask_ids", "mask_weights",
                 "next_sentence_label")}
    if values["vocabulary_sha256"] is not None:
        features["vocabulary_sha256"] = tf.train.Feature(bytes_list=tf.train.BytesList(
            value=values["vocabulary_sha256"]))
    if values["lowercase"] is not None:
        features["lowercase"] = tf.train.Feature(int64_list=tf.train.Int64List(value=values["lowercase"]))
    path = str(tmp_path / "crafted.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        writer.write(tf.train.Example(features=tf.train.Features(feature=features)).SerializeToString())
    with pytest.raises(ValueError, match=rf"crafted\.tfrecord holds malformed vocabulary tags \(.*{shown}"):
        check_record_vocabulary(path, tokenizer)


def _numbered_instances(count, run):
    """`count` instances of 8 pieces whose second piece names the `run` that wrote them and third their row."""
    zeros = lambda *shape: np.zeros(shape, "int32")  # noqa: E731
    token_ids = zeros(count, 8)
    token_ids[:, 1], token_ids[:, 2] = run, np.arange(count)
    return {"token_ids": token_ids, "segment_ids": zeros(count, 8), "padding_mask": zeros(count, 8) + 1,
            "mask_positions": zeros(count, 2), "mask_ids": zeros(count, 2), "mask_weights": zeros(count, 2),
            "next_sentence_label": zeros(count)}


def test_a_corpus_written_in_several_runs_is_read_mixed_for_training_and_in_order_for_evaluation(tmp_path):
    # Two create-pretraining-data runs (one per slice of a corpus, as the README says), 8 shards each. Sorted,
    # run 1's 8 files filled the interleave's 8 slots: training drew its first 64 instances from run 1 alone.
    for run in (1, 2):
        write_pretraining_records(_numbered_instances(64, run), shard_paths(str(tmp_path / f"run{run}.tfrecord"), 8))
    glob = str(tmp_path / "*.tfrecord")

    def pieces(records):
        return [(int(t[1]), int(t[2])) for t in records.map(lambda r: r["token_ids"]).as_numpy_iterator()]

    # Evaluation: sorted files, 8 at a time round-robin; row r was written to shard r % 8, so each run's rows
    # come back in order, run 1's before run 2's.
    in_order = [(run, row) for run in (1, 2) for row in range(64)]
    assert pieces(read_pretraining_records(glob, 8, 2)) == in_order
    assert pieces(read_pretraining_records(glob, 8, 2)) == in_order  # the same on every pass

    def first_batches(seed):
        records = read_pretraining_records(glob, 8, 2, shuffle_files=True, seed=seed)
        batches = pretraining_batches(records, 16, shuffle_buffer=32, seed=seed, repeat=True)
        return [x["token_ids"][:, 1:3].numpy().tolist() for x, _, _ in batches.take(2)]

    for seed in (1, 2, 3):
        batches = first_batches(seed)
        # The first 32 instances drawn from a buffer of 32: from the first 64 read, which were run 1's alone.
        assert {run for batch in batches for run, _ in batch} == {1, 2}, seed
        assert batches == first_batches(seed)
    assert first_batches(1) != first_batches(2)
    # Each pass reads every record once, the files in a new order.
    passes = pieces(read_pretraining_records(glob, 8, 2, shuffle_files=True, seed=5).repeat(2))
    assert sorted(passes[:128]) == sorted(passes[128:]) == in_order and passes[:128] != passes[128:]


def test_record_shapes_are_read_from_the_files_and_a_given_one_that_differs_is_named(tmp_path):
    # Records of 8 pieces and 2 predictions, read with the old defaults (128, 20), failed at the first batch with
    # TensorFlow's "Can't parse serialized Example", naming neither length.
    path = str(tmp_path / "records.tfrecord")
    write_pretraining_records(_numbered_instances(6, 1), path)
    records = read_pretraining_records(path)
    assert records.element_spec["token_ids"].shape == [8] and records.element_spec["mask_ids"].shape == [2]
    assert [int(r["token_ids"][2]) for r in records.as_numpy_iterator()] == list(range(6))
    assert len(list(read_pretraining_records(path, 8, 2))) == 6  # given as written
    with pytest.raises(ValueError, match=r"^max_seq_length 128 does not match the records \(.*records\.tfrecord was "
                                         r"written with max_seq_length 8\): pass 8, or leave it out"):
        read_pretraining_records(path, 128)
    with pytest.raises(ValueError, match=r"^max_predictions_per_seq 20 does not match the records \(.* was written "
                                         r"with max_predictions_per_seq 2\): pass 2"):
        read_pretraining_records(path, max_predictions_per_seq=20)
    (tmp_path / "empty.tfrecord").write_bytes(b"")
    with pytest.raises(ValueError, match=r"empty\.tfrecord holds no records"):
        read_pretraining_records(str(tmp_path / "empty.tfrecord"), 8, 2)


def test_max_predictions_per_seq_follows_a_length_other_than_128_unless_given():
    # google-research/bert's README: about max_seq_length * masked_lm_prob (20 of 128). At --max_seq_length 64 the
    # default 20 stood, and the library warned of its own default (2x the masked-LM work, half of it padding).
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for positions, given, expected in ((None, {}, (128, 20)), (512, {}, (128, 20)),
                                           (None, {"max_seq_length": 64}, (64, 10)),
                                           (512, {"max_seq_length": 512}, (512, 77)),
                                           (16, {}, (16, 2)),
                                           (None, {"max_seq_length": 64, "masked_lm_prob": 0.3}, (64, 19)),
                                           (512, {"masked_lm_prob": 0.3}, (128, 38)),
                                           (None, {"max_seq_length": 64, "max_predictions_per_seq": 9}, (64, 9))):
            config = PretrainingDataConfig.for_positions(positions, **given)
            assert (config.max_seq_length, config.max_predictions_per_seq) == expected, given
    # A value given far from it is kept, and warned of.
    with pytest.warns(UserWarning, match=r"max_predictions_per_seq 20 is far from max_seq_length 64 x masked_lm_prob "
                                         r"0.15 = 10: .* Set max_predictions_per_seq to 10"):
        assert PretrainingDataConfig.for_positions(None, max_seq_length=64,
                                                   max_predictions_per_seq=20).max_predictions_per_seq == 20


def test_a_corpus_read_mostly_as_unknown_pieces_is_warned_of_and_a_tfrecord_name_is_named(tokenizer, tmp_path):
    """A vocabulary not made for the corpus wrote instances of [UNK] (1 in nearly every position), in silence."""
    english, javanese = tmp_path / "english.txt", tmp_path / "javanese.txt"
    english.write_text("The cell divides.\nIt grows.\n\nThe gene binds.\n")
    javanese.write_text("\ua9b2\ua98f\ua9c0\ua9b1\ua9ab \ua997\ua9ae.\n\n\ua9a7\ua9b1 \ua997\ua9ae.\n")  # Javanese script
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        read_documents(str(english), tokenizer)
    with pytest.warns(UserWarning) as caught:
        documents = read_documents(str(javanese), tokenizer)
    pieces = [i for document in documents for sentence in document for i in sentence]
    unknown = pieces.count(tokenizer.token_to_id("[UNK]"))
    assert unknown > 0.1 * len(pieces)  # by hand: the count the warning reports
    assert [str(w.message) for w in caught] == [
        f"{unknown / len(pieces):.0%} of the {len(pieces)} word pieces of {javanese} are [UNK] (a vocabulary made for the "
        "corpus leaves under 1%): is the vocabulary the corpus's language's? A fresh model can learn one "
        "(--vocab_from_corpus)."]
    named = tmp_path / "vectors.tfrecord"
    named.write_bytes(b"\x93NUMPY\x01\x00")
    with pytest.raises(ValueError, match=f"^{re.escape(str(named))} is named as TFRecords but holds no pretraining "
                                         r"records \(those create-pretraining-data writes\), nor UTF-8 text: "):
        read_documents(str(named), tokenizer)
