"""BertClassifier: learns real data, round-trips, runs under a strategy."""

import os
import warnings

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data.glue import read_glue
from tests.conftest import TINY_CHECKPOINT
from tests.conftest import shared_path
from tests.round_trip import keras_file_round_trip, preset_round_trip


@pytest.fixture(scope="module")
def sst2():
    data = read_glue(shared_path("glue", "SST-2", "train.tsv"))
    return data.texts[:320], data.labels[:320], data.texts[-200:], data.labels[-200:]


@pytest.mark.learning
def test_learns_sst2_from_a_small_slice(default_preset_dir, sst2):
    train_x, train_y, test_x, test_y = sst2
    clf = kbz.BertClassifier.from_preset(default_preset_dir, num_classes=2, sequence_length=48)
    clf.compile(learning_rate=1e-4)
    before = clf.evaluate(test_x, test_y, verbose=0, return_dict=True)
    history = clf.fit(train_x, train_y, epochs=3, batch_size=16, verbose=0)
    after = clf.evaluate(test_x, test_y, verbose=0, return_dict=True)
    losses = history.history["loss"]
    assert losses[-1] < losses[0] - 0.2
    assert after["loss"] < before["loss"]
    # Chance is 0.5 (and the majority class 0.56 here); a few hundred examples get far above.
    assert after["accuracy"] > 0.72
    assert clf.predict_labels(["a warm , funny and moving film", "a dull , lifeless mess"]) == [1, 0]


@pytest.mark.slow
def test_pairs_and_dataset_input(default_preset_dir):
    clf = kbz.BertClassifier.from_preset(default_preset_dir, num_classes=3, sequence_length=24,
                                         label_names=["a", "b", "c"])
    ds = tf.data.Dataset.from_tensor_slices(((["x y", "z"], ["p", "q r"]), [0, 2]))
    history = clf.fit(ds, epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    probabilities = clf.predict_proba([("x y", "p")])
    assert probabilities.shape == (1, 3) and probabilities.sum() == pytest.approx(1.0, abs=1e-5)
    # Both texts of a pair reach the model, from lists and from a Dataset alike.
    pairs = [("x y", "p"), ("x y", "q r z")]
    packed = clf.preprocessor(pairs)
    expected = clf.predict_on_batch(packed)
    np.testing.assert_allclose(clf.predict(pairs), expected, atol=1e-5)
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices((["x y"] * 2, ["p", "q r z"]))),
                               expected, atol=1e-5)
    assert not np.allclose(expected[0], expected[1])
    assert clf.predict_labels([("x y", "p")])[0] in {"a", "b", "c"}


@pytest.mark.learning
def test_multi_label_and_regression_learn(default_preset_dir):
    texts = [f"{w} {v}" for w in ("red", "blue", "green", "pink") for v in ("car", "tree", "house", "boat")] * 4
    multi_hot = [[float("red" in t or "pink" in t), float("car" in t or "boat" in t)] for t in texts]
    clf = kbz.BertClassifier.from_preset(default_preset_dir, num_classes=2, problem_type="multi_label",
                                         sequence_length=8, label_names=["warm", "vehicle"])
    clf.compile(learning_rate=3e-4)
    history = clf.fit(texts, multi_hot, epochs=4, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < 0.5 * history.history["loss"][0]
    assert clf.predict_labels(["red car", "blue tree"]) == [["warm", "vehicle"], []]

    lengths = [float(len(t.split())) for t in ["a", "a b c", "a b c d e", "a b", "a b c d"] * 8]
    texts = [" ".join(["word"] * int(n)) for n in lengths]
    reg = kbz.BertClassifier.from_preset(default_preset_dir, num_classes=1, problem_type="regression", sequence_length=8)
    reg.compile(learning_rate=3e-4)
    reg.fit(texts, lengths, epochs=12, batch_size=8, verbose=0)
    predictions = reg.predict_labels([" ".join(["word"] * n) for n in range(1, 6)])
    assert predictions[-1] - predictions[0] > 2.5  # true difference 4
    assert np.corrcoef(predictions, np.arange(1, 6))[0, 1] > 0.95


def _tiny_classifier():
    return kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, sequence_length=12, label_names=["no", "yes"])


@pytest.mark.slow
@pytest.mark.usefixtures("tiny_checkpoint")
def test_save_to_preset_and_keras_file_round_trip(tmp_path):
    clf = _tiny_classifier()
    clf.fit(["all work", "no play", "jack a dull boy", "makes"], [0, 1, 1, 0], epochs=1, batch_size=2, verbose=0)
    texts = ["all work and no play", "makes jack a dull boy"]
    expected = clf.predict(texts)
    restored = preset_round_trip(clf, tmp_path)
    np.testing.assert_allclose(restored.predict(texts), expected, atol=1e-5)
    assert restored.label_names == ["no", "yes"]
    # A preset holds each weight without the optimizer's slots.
    assert os.path.getsize(tmp_path / "preset" / "task.weights.h5") < 3 * os.path.getsize(tmp_path / "preset" / "model.weights.h5")
    reloaded = keras_file_round_trip(clf, tmp_path)
    np.testing.assert_allclose(reloaded.predict(texts), expected, atol=1e-5)


@pytest.mark.slow
@pytest.mark.usefixtures("tiny_checkpoint")
def test_under_mirrored_strategy():
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    with strategy.scope():
        clf = _tiny_classifier()
    history = clf.fit(["all work", "no play"] * 4, [0, 1] * 4, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert clf.distribute_strategy is strategy


def test_label_count_mismatch_is_refused(tiny_checkpoint):
    with pytest.raises(ValueError, match="2 label_names for num_classes=3"):
        kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=3, label_names=["a", "b"])
    clf = _tiny_classifier()
    with pytest.raises(ValueError, match="3 examples but 2 labels"):
        clf.fit(["a", "b", "c"], [0, 1])


def test_a_missing_class_count_is_named_with_the_count_of_the_label_names(tiny_checkpoint):
    # Python's "missing 1 required positional argument: 'num_classes'" said nothing of the label_names given.
    with pytest.raises(ValueError, match=r"BertClassifier needs num_classes: the number of classes \(of targets, for "
                                         r"regression\) \(num_classes=2 for the 2 label_names given\)\.$"):
        kbz.BertClassifier.from_preset(tiny_checkpoint, label_names=["10", "20"])
    with pytest.raises(ValueError, match=r"BertClassifier needs num_classes: .* for regression\)\.$"):
        kbz.BertClassifier.from_preset(tiny_checkpoint)


def test_logits_are_the_head_on_the_full_backbones_pooled_vector(tiny_checkpoint):
    """The classifier runs the last layer on [CLS] alone; what it computes is the head on the whole backbone's
    pooled output, in inference and in a training step's gradients (dropout off)."""
    clf = kbz.BertClassifier(kbz.BertBackbone.from_preset(tiny_checkpoint, dropout=0.0),
                             kbz.BertPreprocessor.from_preset(tiny_checkpoint, sequence_length=16),
                             num_classes=3, dropout=0.0)
    packed = clf.preprocessor(tf.constant(["all work and no play", "makes jack"]))
    labels = tf.constant([2, 0])

    def logits_and_gradients(model):
        with tf.GradientTape() as tape:
            logits = model(packed, training=True)
            loss = tf.reduce_sum(tf.keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True))
        return logits, tape.gradient(loss, clf.trainable_variables)

    logits, gradients = logits_and_gradients(clf)
    reference, reference_gradients = logits_and_gradients(
        lambda x, training: clf.output_dense(clf.backbone(x, training=training)["pooled_output"]))
    np.testing.assert_allclose(logits, reference, atol=1e-5)
    for variable, a, b in zip(clf.trainable_variables, gradients, reference_gradients):
        np.testing.assert_allclose(tf.convert_to_tensor(a), tf.convert_to_tensor(b), atol=1e-5, err_msg=variable.path)


def test_int8_quantized_classifier_scores_close_to_float(tiny_checkpoint):
    clf = _tiny_classifier()
    texts = ["all work and no play", "a dull boy"]
    clf.predict_labels(texts)  # a graph-mode call: the preprocessor's layers stay unbuilt
    float_probabilities = clf.predict_proba(texts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "Layer Dropout does not have a `quantize` method" per layer
        clf.quantize("int8")
    assert clf.output_dense.quantization_mode == "int8"
    np.testing.assert_allclose(clf.predict_proba(texts), float_probabilities, atol=0.02)


def test_a_quantized_classifier_is_not_saved_where_it_would_not_load(tiny_checkpoint, tmp_path):
    """A preset or .keras file of a quantized task was written, then refused as "corrupt or crafted" (the preset)
    or loaded with its layers left unloaded (the .keras file). Refused on saving, naming what works instead."""
    clf = _tiny_classifier()
    clf.predict_labels(["all work"])
    clf.quantize("int8")
    for save, path in ((clf.save_to_preset, tmp_path / "preset"), (clf.save, tmp_path / "clf.keras")):
        with pytest.raises(kbz.PresetError, match=r"The model is quantized: \d+ of its weights are integers .*"
                                                  r"quantize it again after loading, or export"):
            save(str(path))
        assert not path.exists()


def test_long_texts_are_read_by_averaged_windows(tiny_checkpoint):
    clf = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=6)
    words = "all work and no play makes jack a dull boy".split()  # 10 pieces, window 4, stride 2
    long_text = " ".join(words)
    logits = clf.predict_windowed([long_text, "all work"])
    # Hand-built windows: pieces [0:4], [2:6], [4:8], [6:10].
    windows = [" ".join(words[s:s + 4]) for s in (0, 2, 4, 6)]
    expected = clf.predict(windows).mean(axis=0)
    np.testing.assert_allclose(logits[0], expected, atol=1e-5)
    np.testing.assert_allclose(logits[1], clf.predict(["all work"])[0], atol=1e-5)
    np.testing.assert_allclose(clf.predict_windowed([long_text], doc_stride=3)[0],
                               clf.predict([" ".join(words[s:s + 4]) for s in (0, 3, 6)]).mean(axis=0), atol=1e-5)
    with pytest.warns(DeprecationWarning, match="`stride` is now `doc_stride`"):
        np.testing.assert_allclose(clf.predict_windowed([long_text], stride=3), clf.predict_windowed(
            [long_text], doc_stride=3), atol=1e-6)
    probabilities = clf.predict_proba([long_text])
    np.testing.assert_allclose(probabilities[0], np.exp(expected) / np.exp(expected).sum(), atol=1e-5)
    # Windows or not, the dtype is predict's.
    assert logits.dtype == probabilities.dtype == clf.predict(["all work"]).dtype == np.float32


@pytest.mark.subprocess
def test_a_saved_task_loads_in_a_fresh_interpreter(tiny_checkpoint, tmp_path):
    """Keras finds the classes a saved task names through its registry: loading must not
    depend on modules an earlier call happened to import."""
    import subprocess
    import sys

    _tiny_classifier().save_to_preset(str(tmp_path / "clf"))
    code = ("import keras_bert_zoo as kbz; "
            f"print(kbz.BertClassifier.from_preset({str(tmp_path / 'clf')!r}).label_names)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "['no', 'yes']"


@pytest.mark.slow
def test_a_classifier_takes_only_the_form_it_was_fine_tuned_on(tiny_checkpoint, tmp_path):
    """An SST-2 model given sentence pairs (or an MRPC model single sentences) answers with numbers that mean
    nothing: after fit, the other form is refused in every form and entry point, and left out of the export."""
    from keras_bert_zoo.export.export_for_serving import load_export

    clf = _tiny_classifier()
    both = ["classify", "classify_pairs"]
    assert clf.text_pairs is None and [s.name for s in clf.task_signatures(None)] == both
    clf.predict([("all work", "no play")])  # not known yet: either form
    clf.fit(["all work", "no play"] * 4, [0, 1] * 4, epochs=1, batch_size=4, verbose=0)
    assert clf.text_pairs is False
    as_objects = np.empty(1, object)
    as_objects[0] = ("a", "b")  # pandas' df[["a", "b"]].apply(tuple, axis=1).values
    pairs_forms = [[("a", "b")], (["a"], ["b"]), np.array([["a", "b"]]), as_objects,
                   tf.data.Dataset.from_tensor_slices(((["a"], ["b"]), [0]))]
    for pairs in pairs_forms:
        with pytest.raises(ValueError, match=r"fine-tuned on single texts \(text_pairs=False\) but is given "
                                             r"sentence pairs.*set its text_pairs = None"):
            clf.predict(pairs)
    for call in (lambda: clf.evaluate([("a", "b")], [0], verbose=0), lambda: clf.predict_proba([("a", "b")]),
                 lambda: clf.evaluate_glue([("a", "b")], [0])):
        with pytest.raises(ValueError, match="given sentence pairs"):
            call()
    with pytest.raises(ValueError, match="fit trains this classifier on single texts but its validation data are "
                                         "sentence pairs"):
        clf.fit(["a", "b"], [0, 1], validation_data=([("a", "b")], [0]), verbose=0)
    # A Dataset of two strings is now a text and its label name, which predict ignores, as Keras does.
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices((["a"], ["yes"]))), clf.predict(["a"]),
                               atol=1e-6)
    # Packed inputs carry no form; single texts still pass, long ones too (by windows).
    packed = clf.preprocessor(["all work"])
    np.testing.assert_allclose(clf.predict({k: v.numpy() for k, v in packed.items()}), clf.predict(["all work"]),
                               atol=1e-5)
    assert clf.predict_proba(["all work " * 20]).shape == (1, 2)

    # A refused fit changes nothing; fitting on the other form says so, and from then on takes that form (pairs
    # given as an object array of tuples too: they were recorded as single texts).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="is 2, outside the classes"):
            clf.fit([("a", "b"), ("c", "d")], [0, 2], verbose=0)
    assert clf.text_pairs is False
    objects = np.empty(2, object)
    objects[:] = [("a", "b"), ("c", "d")]
    with pytest.warns(UserWarning, match="fine-tuned on single texts; fit now trains it on sentence pairs"):
        clf.fit(objects, [0, 1], epochs=1, verbose=0)
    assert clf.text_pairs is True
    with pytest.raises(ValueError, match="fine-tuned on sentence pairs .* given single texts"):
        clf.predict_proba(["all work"])
    # One pair as a tuple is, as Keras reads a tuple, a batch of two texts: the message says how to give one pair.
    with pytest.raises(ValueError, match=r"given single texts.* A tuple of two strings is two single texts; one "
                                         r"pair is a list of one: \[\(text_a, text_b\)\]\.$"):
        clf.predict_proba(("all work", "no play"))

    # Saved and exported with it: the export serves only classify_pairs (serving_default too).
    restored = preset_round_trip(clf, tmp_path)
    assert restored.text_pairs is True
    clf.export(str(tmp_path / "export"), model_name="mrpc")
    served = load_export(str(tmp_path / "export" / "mrpc"))
    assert "classify" not in served.signatures and "classify_pairs" in served.signatures
    np.testing.assert_allclose(served.signatures["serving_default"](text=tf.constant(["a"]), text_b=tf.constant(["b"]))
                               ["probabilities"].numpy(), clf.predict_proba([("a", "b")]), atol=1e-5)
    clf.text_pairs = None
    assert clf.predict(["all work"]).shape == (1, 2)
    for bad in ("yes", 1):
        with pytest.raises(ValueError, match="text_pairs must be True, False or None"):
            kbz.BertClassifier(clf.backbone, clf.preprocessor, num_classes=2, text_pairs=bad)
        with pytest.raises(ValueError, match="text_pairs must be True, False or None"):
            clf.text_pairs = bad  # the docstring invites setting it: checked there too, not when loading a preset
    assert clf.text_pairs is None


def test_a_dataset_of_two_strings_is_a_text_and_its_label_where_labels_are_wanted(tiny_checkpoint):
    """Two strings side by side are (text_a, text_b) or (text, label). fit and evaluate read them as Keras reads
    (x, y), the label as `class_labels.class_index` reads text: a class id "0" without label_names, as in a list
    (a Dataset of them was refused as texts without labels). A classifier fine-tuned on single texts refuses them
    in predict, where no names tell a label from text_b (it dropped text_b in silence)."""
    clf = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12)
    texts = ["all work", "no play"]
    ids = tf.data.Dataset.from_tensor_slices((texts, ["0", "1"]))
    np.testing.assert_allclose(clf.evaluate(ids, verbose=0), clf.evaluate(texts, [0, 1], verbose=0), rtol=1e-5)
    two = tf.data.Dataset.from_tensor_slices((texts, ["jack", "a dull boy"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"A label is not a class id 0\.\.1 \(the classifier "
                       r"has no label_names\)\. \(A Dataset of two strings is read as \(text, label\)"):
        clf.fit(two, verbose=0)
    assert clf.text_pairs is None
    clf.fit(["all work", "no play"] * 2, [0, 1] * 2, epochs=1, verbose=0)
    with pytest.raises(ValueError, match="fine-tuned on single texts .* given sentence pairs"):
        clf.predict(two)
    # A fit stopped before its first step (a Dataset's label is checked in the graph) learnt nothing of pairs.
    bad = tf.data.Dataset.from_tensor_slices(((["all work", "no"], ["jack", "play"]), [0, 7])).batch(2)
    with pytest.raises(tf.errors.InvalidArgumentError):
        clf.fit(bad, verbose=0)
    assert clf.text_pairs is False
    # A Dataset of 1-tuples is single texts, checked as such.
    clf.text_pairs = True
    with pytest.raises(ValueError, match="fine-tuned on sentence pairs .* given single texts"):
        clf.predict(tf.data.Dataset.from_tensor_slices((["all work"],)))


def test_fit_and_evaluate_warn_of_the_texts_they_cut():
    """In-memory texts are packed by a traced function, where the preprocessor's truncation warning never fired:
    a model was fine-tuned and scored on cut texts without a word. predict_proba reads them whole (windows)."""
    clf, pairs = (kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, sequence_length=8) for _ in "ab")
    texts, labels = ["all work and no play makes jack a dull boy", "jack"], [0, 1]
    for call in (lambda: clf.fit(texts, labels, epochs=1, verbose=0),
                 lambda: clf.evaluate(texts, labels, verbose=0),
                 lambda: pairs.fit([("all work", "and no play makes jack a dull boy")], [1], epochs=1, verbose=0)):
        with pytest.warns(kbz.TruncationWarning, match=r"of \d inputs are longer than sequence_length=8 word-pieces"):
            call()
    with warnings.catch_warnings():
        warnings.simplefilter("error", kbz.TruncationWarning)
        clf.fit(["jack", "a dull boy"], labels, epochs=1, verbose=0)  # they fit: no warning
        clf.predict_proba(texts)


def _always_predicts(clf, class_id):
    """Make `clf` answer `class_id` for every text: logits are the bias alone, far apart."""
    kernel, bias = clf.output_dense.get_weights()
    bias = np.zeros_like(bias)
    bias[class_id] = 100.0
    clf.output_dense.set_weights([np.zeros_like(kernel), bias])


@pytest.mark.slow
def test_fit_on_a_readers_result_takes_its_label_names(tiny_checkpoint, tmp_path):
    """A classifier without label_names fitted on a reader's result trained on the reader's ids but kept no
    names: a dev file of another subset of labels was read by its own ids (cat 0, dog 1 here, where training's
    were 1 and 2) and scored against other classes in silence, and the saved model answered ids."""
    train_csv, dev_csv, other_csv = tmp_path / "train.csv", tmp_path / "dev.csv", tmp_path / "other.csv"
    train_csv.write_text("text,label\nthe cat,cat\na dog,dog\na bird,bird\nthe fish,fish\n")
    dev_csv.write_text("text,label\nthe cat,cat\na dog,dog\nmy dog,dog\nno dog,dog\n")
    other_csv.write_text("text,label\nthe cat,cat\na horse,horse\n")
    train, dev = kbz.data.read_csv(str(train_csv), "text", "label"), kbz.data.read_csv(str(dev_csv), "text", "label")
    assert (train.label_names, dev.label_names) == (["bird", "cat", "dog", "fish"], ["cat", "dog"])
    clf = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=4, sequence_length=12)
    clf.compile(learning_rate=1e-9)  # the answer stays the one set below
    _always_predicts(clf, 2)  # "dog" among training's names: 3 of the 4 dev examples
    history = clf.fit(train, validation_data=dev, epochs=1, batch_size=4, verbose=0)
    assert clf.label_names == ["bird", "cat", "dog", "fish"]
    assert history.history["val_accuracy"] == [pytest.approx(0.75)]
    assert clf.evaluate(dev, verbose=0, return_dict=True)["accuracy"] == pytest.approx(0.75)
    assert clf.evaluate_glue(dev)["accuracy"] == pytest.approx(0.75)
    assert clf.predict_labels(["a text"]) == ["dog"]
    assert preset_round_trip(clf, tmp_path).label_names == ["bird", "cat", "dog", "fish"]
    assert clf.get_config()["label_names"] == ["bird", "cat", "dog", "fish"]
    # A label the classifier does not know is refused, naming both lists.
    with pytest.raises(ValueError, match=r"other\.csv: Example 1's label 'horse' is not one of the label_names "
                                         r"\['bird', 'cat', 'dog', 'fish'\] .* The data's labels are "
                                         r"\['cat', 'horse'\]\.$"):
        clf.evaluate(kbz.data.read_csv(str(other_csv), "text", "label"), verbose=0)

    # Names of another count than the classes are refused (the classifier's ids would have no names), and a fit
    # stopped before its first step leaves it without names.
    three = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=3, sequence_length=12)
    with pytest.raises(ValueError, match=r"dev\.csv holds 2 labels \['cat', 'dog'\] but the classifier has "
                                         r"num_classes=3: give it label_names="):
        three.fit(dev, verbose=0)
    four = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=4, sequence_length=12)
    with pytest.raises(ValueError):
        four.fit(train, batch_size=0, verbose=0)
    assert four.label_names is None


def test_a_tf_data_label_out_of_the_classes_is_named(tiny_checkpoint):
    """A Dataset's bad label failed in the graph naming no value: of names, which names matched ([1 0]); of ids,
    the first three of the batch, not the bad one further on."""
    clf = _tiny_classifier()
    texts = [f"text {i}" for i in range(12)]
    for labels, message, named in (
            (["yes"] * 9 + ["maybe"] + ["no"] * 2, r"A label is not one of the label_names ", "maybe"),
            ([0] * 9 + [7, 1, 1], r"A class label is >= num_classes=2\.", "7"),
            ([0] * 9 + [-3, 1, 1], r"A class label is negative; classes are 0\.\.1\.", "-3"),
            ([0.0] * 9 + [0.5, 1.0, 1.0], r"A class label is not a whole number\.", "0.5")):
        dataset = tf.data.Dataset.from_tensor_slices((texts, labels))
        with pytest.raises(tf.errors.InvalidArgumentError, match=message + r".*\[The labels:\] \[" + named + r"\]"):
            list(clf.make_dataset(dataset, batch_size=12))
