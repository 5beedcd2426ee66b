"""The user's path through Keras' conventions: validation data in every form, a tuple of two
text columns, reader results straight into fit / evaluate, and a clear refusal of anything else.

Tiny models over a vocabulary of the test's words, with large random pooler and output weights,
so that different data give clearly different losses: a validation loss equal to `evaluate` on
the validation data (and not to `evaluate` on the training data) shows that the validation data,
and only it, was scored. One epoch on a handful of examples.
"""

import json
import re
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
import keras_bert_zoo.tasks.task as task_module
from keras_bert_zoo.data import read_conll
from keras_bert_zoo.data import read_glue
from keras_bert_zoo.data import read_squad
from keras_bert_zoo.optimization.bert_adamw import bert_adamw
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.preprocessing.model_inputs import MODEL_INPUTS
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from tests.conftest import shared_path

TRAIN = ["the cat sat on the mat", "a dog ran home", "it rained all day", "the sun shone", "birds sang", "we left"]
TRAIN_Y = [0, 1, 1, 0, 1, 0]
DEV = ["a cat ran", "the day was long", "dogs sang", "home again"]
DEV_Y = [1, 0, 0, 1]
DEV_B = ["a dog sat", "it was", "cats ran home", "the mat"]

SENTENCES = [["familial", "cancer", "is", "rare"], ["the", "dog", "sat"], ["breast", "cancer", "risk"]]
TAGS = [["B-Disease", "I-Disease", "O", "O"], ["O", "O", "O"], ["B-Disease", "I-Disease", "O"]]
NER_LABELS = ["O", "B-Disease", "I-Disease"]

QA_EXAMPLES = [
    {"id": "q1", "question": "who ran home?", "context": "the dog ran home. the cat sat.", "answers": [("the dog", 0)]},
    {"id": "q2", "question": "who sat?", "context": "the dog ran home. the cat sat.", "answers": [("the cat", 18)]},
    {"id": "q3", "question": "what shone?", "context": "it rained, then the sun shone.", "answers": [("the sun", 16)]},
    {"id": "q4", "question": "what was rare?", "context": "familial cancer is rare.", "answers": [("familial cancer", 0)]},
]


POSITIONS = 32


def _tokenizer():
    texts = TRAIN + DEV + DEV_B + [w for s in SENTENCES for w in s] + [
        e[k] for e in QA_EXAMPLES for k in ("question", "context")]
    words = sorted({w for t in texts for w in re.findall(r"\w+|[^\w\s]", t.lower())})
    return kbz.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words)


def _backbone(vocabulary_size, dropout=0.1):
    """A random backbone whose [CLS] vector depends on the text: BERT's initial weights
    (stddev 0.02) leave it nearly the same for every input."""
    backbone = kbz.BertBackbone(vocabulary_size=vocabulary_size, num_layers=1, num_heads=2, hidden_dim=16,
                                intermediate_dim=32, max_sequence_length=POSITIONS, dropout=dropout)
    rng = np.random.default_rng(0)
    for weight in backbone.weights:
        if len(weight.shape) >= 2:
            weight.assign(rng.normal(0.0, weight.shape[0] ** -0.5, weight.shape).astype("float32"))
    return backbone


def _spread(layer):
    """Large random output weights: outputs (and losses) that differ with the input."""
    layer.kernel.assign(np.random.default_rng(0).normal(0.0, 1.0, layer.kernel.shape).astype("float32"))


def _classifier(dropout=0.1):
    tokenizer = _tokenizer()
    model = kbz.BertClassifier(_backbone(tokenizer.vocabulary_size(), dropout),
                               BertPreprocessor(tokenizer, sequence_length=16, max_sequence_length=POSITIONS),
                               num_classes=2, dropout=dropout)
    _spread(model.output_dense)
    return model


def _tagger():
    tokenizer = _tokenizer()
    model = kbz.BertTokenClassifier(_backbone(tokenizer.vocabulary_size()),
                                    TokenClassificationPreprocessor(tokenizer, 16, POSITIONS), label_names=NER_LABELS)
    _spread(model.output_dense)
    return model


@pytest.fixture(scope="module")
def clf():
    return _classifier()


@pytest.fixture(autouse=True)
def _either_text_form(request):
    """The module's classifier is fitted on texts and on pairs by turns: each test starts it taking either
    (`text_pairs`, which fit records, is tested in test_bert_classifier)."""
    if "clf" in request.fixturenames:
        request.getfixturevalue("clf").text_pairs = None


@pytest.fixture(scope="module")
def ner():
    return _tagger()


@pytest.fixture(scope="module")
def qa():
    tokenizer = _tokenizer()
    model = kbz.BertQuestionAnswerer(_backbone(tokenizer.vocabulary_size()),
                                     BertPreprocessor(tokenizer, sequence_length=POSITIONS), doc_stride=8,
                                     max_query_length=8)
    _spread(model.span_dense)
    return model


def _evaluate(task, *data, batch_size=4):
    return task.evaluate(*data, batch_size=batch_size, verbose=0, return_dict=True)


def _assert_validated_on(history, task, reference, train_reference, batch_size=4):
    """The last epoch's validation metrics are `evaluate` on the validation data (weights are
    unchanged after it), and not the training data's. NER's loss is a mean over each batch's
    tagged words, so its reference is batched as the validation was."""
    expected = _evaluate(task, *reference, batch_size=batch_size)
    assert history.history["val_loss"][-1] == pytest.approx(expected["loss"], rel=1e-4)
    for name in expected:
        assert history.history["val_" + name][-1] == pytest.approx(expected[name], rel=1e-4, abs=1e-6)
    assert expected["loss"] != pytest.approx(_evaluate(task, *train_reference)["loss"], rel=1e-2)


# --- 1: validation_data, every form, every task ---

VALIDATION_FORMS = {
    "tuple of lists": lambda clf: (DEV, DEV_Y),
    "list [x, y]": lambda clf: [DEV, DEV_Y],
    "numpy arrays": lambda clf: (np.array(DEV), np.array(DEV_Y)),
    "object array": lambda clf: (np.array(DEV, dtype=object), DEV_Y),
    "unbatched dataset": lambda clf: tf.data.Dataset.from_tensor_slices((DEV, DEV_Y)),
    "batched dataset": lambda clf: tf.data.Dataset.from_tensor_slices((DEV, DEV_Y)).batch(3),
    "preprocessed dataset": lambda clf: clf.make_dataset(DEV, DEV_Y, batch_size=3),
    "packed arrays": lambda clf: ({k: v.numpy() for k, v in clf.preprocessor(DEV).items()}, np.array(DEV_Y)),
}


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(VALIDATION_FORMS))
def test_classifier_validation_data_in_every_form(clf, form):
    history = clf.fit(TRAIN, TRAIN_Y, validation_data=VALIDATION_FORMS[form](clf), epochs=1, batch_size=4,
                      verbose=0)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    _assert_validated_on(history, clf, (DEV, DEV_Y), (TRAIN, TRAIN_Y))


PAIR_FORMS = {
    "list of pairs": lambda: (list(zip(DEV, DEV_B)), DEV_Y),
    "tuple of columns": lambda: ((DEV, DEV_B), DEV_Y),
    "numpy columns": lambda: ((np.array(DEV), np.array(DEV_B)), np.array(DEV_Y)),
    "[n, 2] array": lambda: (np.array(list(zip(DEV, DEV_B))), DEV_Y),
    "dataset of ((a, b), label)": lambda: tf.data.Dataset.from_tensor_slices(((DEV, DEV_B), DEV_Y)),
    "dataset of ([batch, 2] rows, label)": lambda: tf.data.Dataset.from_tensor_slices(
        (np.array(list(zip(DEV, DEV_B))), DEV_Y)).batch(3),
}


@pytest.mark.slow
@pytest.mark.parametrize("form", sorted(PAIR_FORMS))
def test_pair_classifier_validation_data_in_every_form(clf, form):
    train = tf.data.Dataset.from_tensor_slices(((TRAIN, TRAIN[::-1]), TRAIN_Y))
    history = clf.fit(train, validation_data=PAIR_FORMS[form](), epochs=2, batch_size=4, verbose=0)
    assert len(history.history["val_loss"]) == 2
    _assert_validated_on(history, clf, (list(zip(DEV, DEV_B)), DEV_Y), (list(zip(TRAIN, TRAIN[::-1])), TRAIN_Y))


@pytest.mark.slow
def test_ner_validation_data_in_every_form(ner, tmp_path):
    path = tmp_path / "dev.tsv"
    path.write_text("\n\n".join("\n".join(f"{w}\t{t}" for w, t in zip(s, tags)) for s, tags in zip(SENTENCES, TAGS)))
    ids = [[NER_LABELS.index(t) for t in tags] for tags in TAGS]
    forms = [
        (SENTENCES, TAGS),
        read_conll(str(path)),
        tf.data.Dataset.from_tensor_slices((tf.ragged.constant(SENTENCES), tf.ragged.constant(ids))),
        ner.make_dataset(SENTENCES, TAGS, batch_size=2),
    ]
    train = [["the", "cat", "sat"], ["cancer", "risk"]], [["O", "O", "O"], ["B-Disease", "O"]]
    for form in forms:
        history = ner.fit(*train, validation_data=form, epochs=1, batch_size=2, verbose=0)
        _assert_validated_on(history, ner, (SENTENCES, TAGS), train, batch_size=2)


def test_ner_reads_padded_batches_without_their_padding(ner):
    """padded_batch pads words with "" and tags with 0 (or -100, as Hugging Face pads labels): the padding was
    scored as words tagged with the first label (a -100 stopped evaluation with an assertion). It is dropped."""
    ids = [[NER_LABELS.index(t) for t in tags] for tags in TAGS]
    expected = ner.evaluate(SENTENCES, TAGS, return_dict=True, verbose=0)
    rows = tf.data.Dataset.from_generator(lambda: zip(SENTENCES, ids), output_signature=(
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32)))
    for padded in (rows.padded_batch(3), rows.padded_batch(3, padding_values=(b"", -100))):
        assert padded.element_spec[0].shape.rank == 2
        scores = ner.evaluate(padded, return_dict=True, verbose=0)
        assert scores == pytest.approx(expected, rel=1e-5)
    probabilities = ner.predict(rows.padded_batch(3).map(lambda words, tags: words), verbose=0)
    np.testing.assert_allclose(probabilities, ner.predict(SENTENCES, verbose=0), atol=1e-5)


def _write_squad(path, examples):
    paragraphs = [{"context": e["context"], "qas": [{"id": e["id"], "question": e["question"], "answers": [
        {"text": t, "answer_start": s} for t, s in e["answers"]]}]} for e in examples]
    path.write_text(json.dumps({"data": [{"title": "t", "paragraphs": paragraphs}]}))
    return str(path)


@pytest.mark.slow
def test_qa_validation_data_and_split(qa, tmp_path):
    dev = read_squad(_write_squad(tmp_path / "dev.json", QA_EXAMPLES[2:]))
    for form in (dev, QA_EXAMPLES[2:]):
        history = qa.fit(QA_EXAMPLES[:2], validation_data=form, epochs=1, batch_size=2, verbose=0)
        _assert_validated_on(history, qa, (QA_EXAMPLES[2:],), (QA_EXAMPLES[:2],))
    # The held-out examples are whole questions, not windows of them.
    history = qa.fit(QA_EXAMPLES, validation_split=0.5, epochs=1, batch_size=2, verbose=0)
    _assert_validated_on(history, qa, (QA_EXAMPLES[2:],), (QA_EXAMPLES[:2],))


@pytest.mark.slow
def test_validation_split_holds_out_the_last_examples(clf, ner):
    history = clf.fit(TRAIN, TRAIN_Y, validation_split=0.5, epochs=1, batch_size=4, verbose=0)
    _assert_validated_on(history, clf, (TRAIN[3:], TRAIN_Y[3:]), (TRAIN[:3], TRAIN_Y[:3]))
    history = ner.fit(SENTENCES, TAGS, validation_split=0.34, epochs=1, batch_size=2, verbose=0)
    _assert_validated_on(history, ner, (SENTENCES[2:], TAGS[2:]), (SENTENCES[:2], TAGS[:2]), batch_size=2)
    with pytest.raises(ValueError, match=r"validation_split cannot split a tf.data.Dataset .*validation_data="):
        clf.fit(tf.data.Dataset.from_tensor_slices((TRAIN, TRAIN_Y)), validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match=r"validation_split=0.1 of 6 examples holds out none of them"):
        clf.fit(TRAIN, TRAIN_Y, validation_split=0.1, verbose=0)


def test_validation_data_without_labels_or_in_another_shape_is_refused(clf):
    """Each error names validation_data: fit's x and y were fine ("No labels: pass y" sent users to y)."""
    with pytest.raises(ValueError, match=r"^validation_data: No labels: pass \(x, y\), or a Dataset"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=DEV, verbose=0)
    with pytest.raises(ValueError, match=r"^validation_data as a tuple must be \(x, y\); got 3 items"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=(DEV, DEV_Y, [1.0] * 4), verbose=0)
    with pytest.raises(TypeError, match=r"^validation_data: BertClassifier takes .* got set"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=(set(DEV), DEV_Y), verbose=0)
    with pytest.raises(ValueError, match=r"^validation_data: 4 examples but 1 labels\.$"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=(DEV, [1]), verbose=0)
    with pytest.raises(ValueError, match=r"^validation_data: Example 1's label is 7, outside the classes \[0, 2\)"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=(DEV, [1, 7, 0, 0]), verbose=0)
    # validation_split's part is of x and y, and named so.
    with pytest.raises(ValueError, match=r"^Example 5's label is 7, outside"):
        clf.fit(TRAIN, [0, 1, 1, 0, 1, 7], validation_split=0.2, verbose=0)


def test_validation_batch_size_batches_the_validation_data_as_in_keras(clf):
    """fit(validation_batch_size=n) was ignored in silence: the validation data were batched by batch_size (packed
    arrays beside a training list by 32, Keras' default)."""
    class ValidationBatches(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.batches = 0

        def on_test_batch_end(self, batch, logs=None):
            self.batches += 1

    for validation, y in ((DEV, DEV_Y), (dict(clf.preprocessor(DEV)), np.array(DEV_Y))):
        for batch_size, expected in ((None, 2), (1, 4), (3, 2)):
            counter = ValidationBatches()
            clf.fit(TRAIN, TRAIN_Y, batch_size=2, validation_data=(validation, y), validation_batch_size=batch_size,
                    callbacks=[counter], verbose=0)
            assert counter.batches == expected, (type(validation), batch_size)
    with pytest.raises(ValueError, match=r"validation_batch_size must be a positive whole number; got 0"):
        clf.fit(TRAIN, TRAIN_Y, validation_data=(DEV, DEV_Y), validation_batch_size=0, verbose=0)


# --- 2: Keras' input conventions ---

@pytest.mark.slow
def test_a_tuple_of_two_columns_is_a_batch_of_pairs(clf):
    pairs = list(zip(DEV, DEV_B))
    expected = clf.predict(pairs)
    assert not np.allclose(expected[0], expected[1])
    for columns in ((DEV, DEV_B), (np.array(DEV), np.array(DEV_B)), (tuple(DEV), np.array(DEV_B, dtype=object))):
        np.testing.assert_allclose(clf.predict(columns), expected, atol=1e-6)
    np.testing.assert_allclose(clf.predict(np.array(pairs)), expected, atol=1e-6)
    np.testing.assert_allclose(clf.predict_proba((DEV, DEV_B)), clf.predict_proba(pairs), atol=1e-6)
    assert clf.predict_labels((DEV, DEV_B)) == clf.predict_labels(pairs)
    assert _evaluate(clf, (DEV, DEV_B), DEV_Y) == pytest.approx(_evaluate(clf, pairs, DEV_Y))
    # A tuple of two 2-item sequences is two columns, as in Keras; a list of them is two pairs.
    np.testing.assert_allclose(clf.predict((["a cat", "a dog"], ["sat", "ran"])),
                               clf.predict([("a cat", "sat"), ("a dog", "ran")]), atol=1e-6)
    # A tuple of strings stays a batch of single texts.
    np.testing.assert_allclose(clf.predict(tuple(DEV)), clf.predict(DEV), atol=1e-6)
    history = clf.fit((TRAIN, TRAIN[::-1]), np.array(TRAIN_Y), epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])


@pytest.mark.slow
def test_repeated_calls_trace_the_preprocessing_once_per_input_form(monkeypatch):
    """fit / evaluate / predict pack with preprocessing traced once per task and input form, for any count
    of examples: traced again for each call's new pipeline, it cost 2-5 s per call whatever the data's size."""
    clf, ner = _classifier(), _tagger()  # fresh: no call has traced their preprocessing yet
    clf.compile()
    ner.compile()
    traced = []
    for layer in (clf.preprocessor, ner.preprocessor):
        call = type(layer).call

        def counted(self, *args, _call=call, **kwargs):
            if not tf.executing_eagerly():  # being traced
                traced.append(type(self).__name__)
            return _call(self, *args, **kwargs)

        monkeypatch.setattr(type(layer), "call", counted)

    def calls(n):
        pairs = list(zip(DEV, DEV_B))[:n]
        expected = clf.predict_on_batch(clf.preprocessor(pairs))
        # predict packs to its bucket's length, the preprocessor to sequence_length: other summation orders (an AMD
        # EPYC differed by 12 float32 steps at 2.8).
        np.testing.assert_allclose(clf.predict(pairs), expected, rtol=1e-5, atol=1e-6)
        clf.evaluate(DEV[:n], DEV_Y[:n], verbose=0)
        ner.predict_tags(SENTENCES[:n])
        ner.evaluate(SENTENCES[:n], TAGS[:n], verbose=0)

    calls(2)
    calls(3)  # each form traced for one count of examples, then for any
    warmed_up = list(traced)
    assert {"BertPreprocessor", "TokenClassificationPreprocessor"} <= set(warmed_up)
    calls(4)
    clf.fit(TRAIN[:5], TRAIN_Y[:5], epochs=1, verbose=0)  # fit packs labelled texts as evaluate does
    clf.text_pairs = None  # fit recorded single texts; `calls` predicts pairs too
    calls(1)
    assert traced == warmed_up


def test_each_fit_trains_as_a_new_bert_adamw_over_its_own_steps_without_tracing_again(monkeypatch):
    """`fit` schedules the "auto" optimizer over the steps it is given. It compiled a new optimizer for
    that on every call, and Keras traced the train step again each time (15 s a call for MiniLM); the
    schedule now restarts in place. Reference: a model with the same weights trained by an optimizer
    built for exactly those steps."""
    traced = []
    train_step = kbz.BertClassifier.train_step

    def counted(self, *args, **kwargs):
        traced.append(tf.executing_eagerly())
        return train_step(self, *args, **kwargs)

    monkeypatch.setattr(kbz.BertClassifier, "train_step", counted)
    model, reference = _classifier(dropout=0.0), _classifier(dropout=0.0)  # no dropout: the same steps
    model.compile(learning_rate=1e-3)
    model.fit(TRAIN[:4], TRAIN_Y[:4], batch_size=2, epochs=1, shuffle=False, verbose=0)
    reference.set_weights(model.get_weights())
    assert traced == [False]  # one trace, then graph runs
    # Other steps, epochs and warm-up: 3 batches x 3 epochs, round(0.9) = 1 warm-up step.
    history = model.fit(TRAIN, TRAIN_Y, batch_size=2, epochs=3, shuffle=False, verbose=0)
    assert traced == [False]

    reference.compile(optimizer=bert_adamw(1e-3, total_steps=9, warmup_steps=1))
    expected = reference.fit(TRAIN, TRAIN_Y, batch_size=2, epochs=3, shuffle=False, verbose=0)
    assert int(model.optimizer.iterations) == int(reference.optimizer.iterations) == 9
    np.testing.assert_allclose(history.history["loss"], expected.history["loss"], rtol=1e-5)
    for got, want in zip(model.trainable_weights, reference.trainable_weights):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-6, err_msg=got.path)
    assert model.get_compile_config()["auto_optimizer"]["total_steps"] == 9


def test_a_schedule_fixed_at_compile_runs_on_across_fit_calls_and_survives_saving(tmp_path):
    """compile(total_steps=N): one warm-up + decay over N steps that fit calls continue (it was replaced by
    each call's own schedule, silently). Reference: BERT's formula, by hand."""
    model = _classifier(dropout=0.0)
    model.compile(learning_rate=1e-3, total_steps=20)  # 2 warm-up steps
    model.fit(TRAIN, TRAIN_Y, batch_size=2, epochs=2, verbose=0)  # 6 steps
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.models.load_model(path)
    for m in (model, restored):
        m.fit(TRAIN[:4], TRAIN_Y[:4], batch_size=2, epochs=1, verbose=0)  # 2 more
        assert int(m.optimizer.iterations) == 8
        assert float(m.optimizer.learning_rate) == pytest.approx(1e-3 * (1 - 8 / 20))  # optimization.py


def test_a_dataset_of_unknown_length_trains_at_the_peak_rate_with_a_warning():
    """Its steps cannot be counted before the run. A second fit left the first fit's finished schedule in
    place (rate 0: nothing learned, no word said); it now starts afresh at the constant peak rate and says so."""
    model = _classifier(dropout=0.0)
    model.compile(learning_rate=1e-3)
    model.fit(TRAIN, TRAIN_Y, batch_size=2, epochs=1, verbose=0)
    assert float(model.optimizer.learning_rate) == 0.0  # BERT's decay ends at 0
    unknown = tf.data.Dataset.from_tensor_slices((TRAIN, TRAIN_Y)).filter(lambda x, y: True).batch(2)
    before = [w.numpy() for w in model.trainable_weights]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model.fit(unknown, epochs=0, verbose=0)  # no step to run: no warning, the optimizer untouched
    assert float(model.optimizer.learning_rate) == 0.0
    with pytest.warns(UserWarning, match=r"unknown length.*constant rate 0.001.*steps_per_epoch"):
        model.fit(unknown, epochs=1, verbose=0)
    assert float(model.optimizer.learning_rate) == pytest.approx(1e-3)
    assert not np.allclose(before[0], model.trainable_weights[0].numpy())


def test_fit_refuses_a_bad_batch_size_and_runs_no_epoch_as_keras_does(clf, ner):
    clf.compile()
    for call in (lambda b: clf.fit(TRAIN, TRAIN_Y, batch_size=b, verbose=0), lambda b: clf.predict(DEV, batch_size=b),
                 lambda b: clf.evaluate(DEV, DEV_Y, batch_size=b, verbose=0),
                 lambda b: ner.predict_tags(SENTENCES, batch_size=b)):
        for bad in (0, -1, 2.5, True):
            with pytest.raises(ValueError, match=rf"batch_size must be a positive whole number; got {bad!r}"):
                call(bad)
    # No epoch to run (epochs=0, or initial_epoch=epochs): Keras trains no step and says nothing.
    for kwargs in ({"epochs": 0}, {"epochs": 1, "initial_epoch": 1}):
        assert clf.fit(TRAIN, TRAIN_Y, verbose=0, **kwargs).history == {}


def test_sample_weight_weighs_in_memory_examples_as_keras_does(clf, ner):
    """Keras' weighted loss, by hand: mean over the examples of weight x cross-entropy. A list with
    sample_weight failed with Keras' message about Datasets (the list became one inside)."""
    clf.compile()
    weights = [0.0, 2.0, 0.5, 1.0]
    probabilities = clf.predict_proba(DEV)
    losses = -np.log(probabilities[np.arange(len(DEV)), DEV_Y])
    for batch_size in (4, 3):
        loss = clf.evaluate(DEV, DEV_Y, sample_weight=weights, batch_size=batch_size, verbose=0)[0]
        assert loss == pytest.approx(float(np.mean(np.array(weights) * losses)), rel=1e-5)
    packed = clf.preprocessor(DEV)
    assert clf.evaluate(dict(packed), np.array(DEV_Y), sample_weight=np.array(weights), verbose=0)[0] == \
        pytest.approx(float(np.mean(np.array(weights) * losses)), rel=1e-5)
    history = clf.fit(TRAIN, TRAIN_Y, sample_weight=[0.0] * len(TRAIN), batch_size=3, verbose=0)
    assert history.history["loss"] == [0.0]  # every example weighs nothing

    with pytest.raises(ValueError, match=r"one number per example: 4 examples, but its shape is \(3,\)"):
        clf.evaluate(DEV, DEV_Y, sample_weight=[1.0, 1.0, 1.0], verbose=0)
    with pytest.raises(ValueError, match=r"sample_weight 1 is -1.0; weights must be finite and non-negative"):
        clf.fit(DEV, DEV_Y, sample_weight=[1.0, -1.0, 1.0, 1.0], verbose=0)
    with pytest.raises(ValueError, match=r"with validation_split is not supported"):
        clf.fit(TRAIN, TRAIN_Y, sample_weight=[1.0] * len(TRAIN), validation_split=0.5, verbose=0)
    with pytest.raises(ValueError, match=r"Dataset carries its own sample weights"):
        clf.fit(tf.data.Dataset.from_tensor_slices((DEV, DEV_Y)), sample_weight=weights, verbose=0)
    for weighed in ({"sample_weight": [1.0] * len(SENTENCES)}, {}):
        with pytest.raises(ValueError, match=r"BertTokenClassifier does not take sample.weight"):
            if weighed:
                ner.evaluate(SENTENCES, TAGS, verbose=0, **weighed)
            else:  # in a Dataset's elements, where its preprocessing would drop them
                ner.evaluate(tf.data.Dataset.from_tensor_slices((tf.ragged.constant(SENTENCES), tf.ragged.constant(
                    ner.tag_ids(TAGS)), tf.ones([len(SENTENCES)]))), verbose=0)


@pytest.mark.slow
def test_class_weight_weighs_each_label_by_its_class_as_keras_does(qa):
    """Keras' class_weight, by hand: each example's (NER: each word's) loss weighs its class's weight, a class
    left out 1.0. Label names as keys raised a TypeError inside Keras, a class above the largest key given failed
    mid-fit, and NER refused it (its word masks are sample weights)."""
    clf = _classifier(dropout=0.0)
    clf.compile(learning_rate=1e-12)
    losses = -np.log(clf.predict_proba(DEV)[np.arange(len(DEV)), DEV_Y])
    by_class = np.array([3.0, 1.0])[DEV_Y]
    for class_weight in ({0: 3.0}, {0: 3.0, 1: 1.0}):
        loss = clf.fit(DEV, DEV_Y, class_weight=class_weight, batch_size=len(DEV), verbose=0).history["loss"][0]
        assert loss == pytest.approx(float(np.mean(by_class * losses)), rel=1e-4)
    named = kbz.BertClassifier(clf.backbone, clf.preprocessor, num_classes=2, label_names=["no", "yes"], dropout=0.0)
    named.output_dense.set_weights(clf.output_dense.get_weights())
    named.compile(learning_rate=1e-12)
    loss = named.fit(DEV, DEV_Y, class_weight={"no": 3.0}, batch_size=len(DEV), verbose=0).history["loss"][0]
    assert loss == pytest.approx(float(np.mean(by_class * losses)), rel=1e-4)
    for bad, message in (({2: 1.0}, r"class_weight names 2, which is no class of this model: give class ids 0..1"),
                         ({"maybe": 1.0}, r"names 'maybe'.* or label names \['no', 'yes'\]"),
                         ({0: -1.0}, r"class_weight\[0\] is -1.0; a weight is a finite number >= 0")):
        with pytest.raises(ValueError, match=message):
            named.fit(DEV, DEV_Y, class_weight=bad, verbose=0)

    tokenizer = _tokenizer()
    ner = kbz.BertTokenClassifier(_backbone(tokenizer.vocabulary_size(), dropout=0.0),
                                  TokenClassificationPreprocessor(tokenizer, 16, POSITIONS), label_names=NER_LABELS,
                                  dropout=0.0)
    _spread(ner.output_dense)
    ner.compile(learning_rate=1e-12)
    ids = ner.tag_ids(TAGS)
    word_losses = np.concatenate([-np.log(p[np.arange(len(t)), t]) for p, t in zip(
        ner.predict_word_probabilities(SENTENCES), ids)])
    weights = np.array([1.0, 4.0, 4.0])[np.concatenate(ids)]  # O 1 (left out), B- and I-Disease 4
    loss = ner.fit(SENTENCES, TAGS, class_weight={"B-Disease": 4.0, 2: 4.0}, batch_size=len(SENTENCES),
                   verbose=0).history["loss"][0]
    # NER's loss is the weighted mean over the words (see default_loss).
    assert loss == pytest.approx(float(np.sum(weights * word_losses) / np.sum(weights)), rel=1e-4)
    with pytest.raises(ValueError, match=r"BertQuestionAnswerer's labels are no classes, so class_weight does not"):
        qa.fit(QA_EXAMPLES, class_weight={0: 1.0}, verbose=0)


def test_evaluate_glue_cuts_long_texts_to_the_window_as_run_classifier_does():
    """The reported figures read a long text as run_classifier.py, Keras' evaluate and the export do: its first
    window only. They averaged windows, which training never saw, and differed from evaluate's. A regression's
    mean squared error against the cut texts' own predictions shows which reading was scored."""
    tokenizer = _tokenizer()
    scorer = kbz.BertClassifier(_backbone(tokenizer.vocabulary_size(), 0.0),
                                BertPreprocessor(tokenizer, sequence_length=16, max_sequence_length=POSITIONS),
                                num_classes=1, problem_type="regression", dropout=0.0)
    _spread(scorer.output_dense)
    words = " ".join(TRAIN + DEV).split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, 30)) for _ in range(8)]  # 30 pieces, a window of 14
    cut, windowed = scorer.predict(texts, verbose=0)[:, 0], scorer.predict_proba(texts)[:, 0]
    assert np.abs(cut - windowed).max() > 1e-2  # the two readings differ on these texts
    assert scorer.evaluate_glue(texts, cut)["mse"] == pytest.approx(0.0, abs=1e-10)
    scorer.compile()
    assert scorer.evaluate(texts, cut, return_dict=True, verbose=0)["loss"] == pytest.approx(0.0, abs=1e-10)


def test_packed_inputs_follow_keras_batching_and_splitting(clf):
    """Packed arrays go to Keras as they are: predict batches them by batch_size, and fit's schedule covers
    the steps Keras runs: floor(n * (1 - validation_split)) examples, all n when validation_data is given."""
    packed = {k: v.numpy() for k, v in clf.preprocessor(TRAIN).items()}
    batches = []
    counter = keras.callbacks.LambdaCallback(on_predict_batch_end=lambda batch, logs: batches.append(batch))
    clf.predict(packed, batch_size=4, callbacks=[counter])
    assert len(batches) == 2  # 6 rows by 4
    clf.compile()
    clf.fit(packed, np.array(TRAIN_Y), batch_size=2, validation_split=0.3, verbose=0)  # floor(4.2) = 4 rows
    assert clf.optimizer._learning_rate.total_steps == 2 == int(clf.optimizer.iterations)
    clf.fit(packed, np.array(TRAIN_Y), batch_size=2, validation_split=0.3, validation_data=(packed, np.array(TRAIN_Y)),
            verbose=0)
    assert clf.optimizer._learning_rate.total_steps == 3 == int(clf.optimizer.iterations)


def test_examples_packed_chunk_by_chunk_are_the_preprocessors_batch_in_order(clf, ner, monkeypatch):
    monkeypatch.setattr(task_module, "_PACKING_CHUNK", 3)  # 8 pairs and 9 sentences: several chunks, one short
    pairs, labels = list(zip(DEV, DEV_B)) * 2, DEV_Y * 2
    batches = list(clf.make_dataset(pairs, labels, batch_size=5))
    assert [len(y) for _, y in batches] == [5, 3]
    for name, expected in clf.preprocessor(pairs).items():
        assert np.concatenate([x[name] for x, _ in batches]).tolist() == expected.numpy().tolist()
    assert np.concatenate([y for _, y in batches]).tolist() == labels

    sentences, tags = SENTENCES * 3, TAGS * 3
    batches = list(ner.make_dataset(sentences, tags, batch_size=4))
    inputs, tag_ids, weights = ner.preprocessor(tf.ragged.constant(sentences), tf.ragged.constant(ner.tag_ids(tags)))
    for name in MODEL_INPUTS:
        assert np.concatenate([x[name] for x, _, _ in batches]).tolist() == inputs[name].numpy().tolist()
    assert np.concatenate([y for _, y, _ in batches]).tolist() == tag_ids.numpy().tolist()
    assert np.concatenate([w for _, _, w in batches]).tolist() == weights.numpy().tolist()


def test_every_pipeline_handed_to_keras_runs_without_the_autotune_thread(clf, ner, qa):
    """tf.data's autotuning thread can hold the end of a fit, evaluate or predict call for up to a minute
    (see `without_autotune_thread`): no pipeline the library builds starts one (only fit on packed arrays
    leaves them to Keras, which splits and shuffles them). QA's windows reach Keras as batches of run_squad's
    features, in order."""
    texts = tf.data.Dataset.from_tensor_slices((DEV, DEV_Y))
    sentences = tf.data.Dataset.from_generator(lambda: iter(zip(SENTENCES, ner.tag_ids(TAGS))), output_signature=(
        tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.int32)))
    qa_data, _ = qa._keras_inputs(QA_EXAMPLES, batch_size=3)
    packed = {k: v.numpy() for k, v in clf.preprocessor(DEV).items()}
    pipelines = {
        "texts": clf.make_dataset(DEV, DEV_Y, shuffle=True), "text dataset": clf.make_dataset(texts),
        "sentences": ner.make_dataset(SENTENCES, TAGS), "sentence dataset": ner.make_dataset(sentences),
        "QA windows": qa_data,
        "packed arrays (evaluate, predict)": task_module._packed_rows(packed, 3, DEV_Y, np.ones(len(DEV))),
        "packed dataset": clf._keras_inputs(tf.data.Dataset.from_tensor_slices(packed), labeled=False)[0],
    }
    for name, pipeline in pipelines.items():
        assert pipeline.options().autotune.enabled is False, name
        next(iter(pipeline))  # and it runs

    windows = qa.features(qa._labelled_examples(QA_EXAMPLES), with_answers=True)
    batches = list(qa_data)
    assert [len(y["start_logits"]) for _, y in batches][:-1] == [3] * (len(batches) - 1)
    for name, expected in windows.inputs.items():
        assert np.concatenate([x[name] for x, _ in batches]).tolist() == np.asarray(expected).tolist(), name
    assert np.concatenate([y["start_logits"] for _, y in batches]).tolist() == windows.start_positions.tolist()
    assert np.concatenate([y["end_logits"] for _, y in batches]).tolist() == windows.end_positions.tolist()

    # Keras' own checks on packed arrays hold: rows counted alike, weights with labels only.
    with pytest.raises(ValueError, match=r"different numbers of rows \(3, 4\)"):
        clf.evaluate(packed, DEV_Y[:3])
    with pytest.raises(ValueError, match=r"No labels: pass y"):
        clf.evaluate(packed)
    with pytest.raises(ValueError, match="sample_weight needs labels"):
        task_module._packed_rows(packed, 3, None, np.ones(len(DEV)))


def test_columns_of_different_lengths_are_refused(clf):
    with pytest.raises(ValueError, match=r"two text columns \(texts_a, texts_b\) hold 4 and 3 texts"):
        clf.predict((DEV, DEV_B[:3]))
    with pytest.raises(TypeError, match=r"text_b of pair 1 is None"):
        clf.predict((DEV[:2], ["a", None]))


@pytest.mark.slow
def test_datasets_batched_or_not_give_the_same_predictions(clf):
    expected = clf.predict(DEV)
    unbatched = tf.data.Dataset.from_tensor_slices(DEV)
    np.testing.assert_allclose(clf.predict(unbatched), expected, atol=1e-6)
    np.testing.assert_allclose(clf.predict(unbatched.batch(3)), expected, atol=1e-6)
    np.testing.assert_allclose(clf.predict(clf.make_dataset(DEV, batch_size=3, labeled=False)), expected, atol=1e-6)


REJECTED = {
    "set": lambda: set(DEV),
    "generator": lambda: (t for t in DEV),
    "3-d array": lambda: np.array([[["a", "b"]]]),
    "list of dicts": lambda: [{"text": "a"}],
    "int": lambda: 3,
}


@pytest.mark.parametrize("form", sorted(REJECTED))
def test_other_forms_are_refused_naming_the_accepted_ones(clf, form):
    accepted = r"BertClassifier takes a list .* a tuple of two columns \(texts_a, texts_b\); a tf.data.Dataset"
    for call in (lambda x: clf.fit(x, DEV_Y, verbose=0), lambda x: clf.evaluate(x, DEV_Y, verbose=0), clf.predict):
        with pytest.raises(TypeError, match=accepted):
            call(REJECTED[form]())


def test_one_text_alone_is_told_to_be_a_list_of_one(clf):
    """A single string was refused with the forms and "got str", not the fix."""
    for call in (clf.predict, clf.predict_proba, clf.predict_labels, lambda x: clf.fit(x, [1], verbose=0)):
        with pytest.raises(TypeError, match=r"; got str: one text is a list of one, \[text\].$"):
            call("a cat ran")


def test_packed_dicts_of_other_keys_and_other_tasks_forms_are_refused(clf, ner, qa):
    with pytest.raises(ValueError, match=r"exactly the keys .*unknown: \['text'\].*Or pass raw examples .*columns"):
        clf.fit({"text": DEV}, DEV_Y, verbose=0)
    with pytest.raises(TypeError, match=r"BertTokenClassifier takes a list of sentences, .* got set"):
        ner.fit({("a",)}, [["O"]], verbose=0)
    with pytest.raises(TypeError, match=r"BertQuestionAnswerer takes QA examples \(kbz.data.read_squad's .* got generator"):
        qa.fit((e for e in QA_EXAMPLES), verbose=0)
    with pytest.raises(ValueError, match=r"QA examples hold their answers; pass them without y"):
        qa.fit(QA_EXAMPLES, [0, 1, 2, 3], verbose=0)


def test_labels_as_lists_or_arrays_are_the_same_labels(clf):
    losses = [_evaluate(clf, TRAIN, labels)["loss"]
              for labels in (TRAIN_Y, np.array(TRAIN_Y), np.array(TRAIN_Y, dtype="float32")[:, None])]
    assert losses == pytest.approx([losses[0]] * 3)


# --- 3: every reader's result goes straight into its task ---

@pytest.mark.slow
def test_glue_result_fits_evaluates_and_unpacks(clf, tmp_path):
    folder = tmp_path / "MRPC"
    folder.mkdir()
    rows = list(zip(DEV_Y, DEV, DEV_B))
    (folder / "dev.tsv").write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
                                    + "".join(f"{y}\t1\t2\t{a}\t{b}\n" for y, a, b in rows))
    data = read_glue(str(folder / "dev.tsv"))
    texts, labels = data  # the labels by name, as the classifier reads the whole
    assert (texts, labels) == (list(zip(DEV, DEV_B)), [str(y) for y in DEV_Y]) == (data.x, data.y)
    history = clf.fit(data, epochs=1, batch_size=4, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert _evaluate(clf, data) == pytest.approx(_evaluate(clf, texts, labels))
    np.testing.assert_allclose(clf.predict(data), clf.predict(texts), atol=1e-6)
    with pytest.raises(ValueError, match=r"The ClassificationExamples hold their labels; pass them without y"):
        clf.fit(data, labels, verbose=0)


@pytest.mark.slow
def test_shared_glue_file_trains_as_read(clf):
    data = read_glue(shared_path("glue", "MRPC", "train.tsv")).head(8)
    with open(shared_path("glue", "MRPC", "train.tsv"), encoding="utf-8-sig") as f:
        first = [line.split("\t") for line in f.read().split("\n")[1:9]]
    assert data.y == [row[0] for row in first]
    assert data.x[0] == (first[0][3], first[0][4])
    history = clf.fit(data, validation_data=data, epochs=1, batch_size=4, verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(_evaluate(clf, data.x, data.y)["loss"], rel=1e-4)


@pytest.mark.slow
def test_conll_result_fits_evaluates_and_unpacks(ner, tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("-DOCSTART-\tO\n\n" + "\n\n".join(
        "\n".join(f"{w}\t{t}" for w, t in zip(s, tags)) for s, tags in zip(SENTENCES, TAGS)) + "\n")
    data = read_conll(str(path))
    sentences, tags = data
    assert (sentences, tags) == (SENTENCES, TAGS)
    history = ner.fit(data, epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert _evaluate(ner, data) == pytest.approx(_evaluate(ner, sentences, tags))


def test_squad_result_fits_and_evaluates(qa, tmp_path):
    data = read_squad(_write_squad(tmp_path / "train.json", QA_EXAMPLES))
    assert data.answers == [[e["answers"][0]] for e in QA_EXAMPLES]
    history = qa.fit(data, epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert _evaluate(qa, data) == pytest.approx(_evaluate(qa, QA_EXAMPLES))


def test_predict_takes_a_dataset_of_examples_and_labels_as_keras_does(clf):
    """Keras' predict ignores the y of a Dataset of (x, y); the labels were read as a second text column."""
    expected = clf.predict(DEV)
    for ds in (tf.data.Dataset.from_tensor_slices((DEV, DEV_Y)),
               tf.data.Dataset.from_tensor_slices((DEV, DEV_Y)).batch(3),
               tf.data.Dataset.from_tensor_slices((DEV, DEV_Y, [1.0] * 4)).batch(2)):
        np.testing.assert_allclose(clf.predict(ds), expected, atol=1e-6)
    pairs = clf.predict(list(zip(DEV, DEV_B)))
    assert not np.allclose(pairs, expected, atol=1e-3)
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices((DEV, DEV_B)).batch(2)), pairs, atol=1e-6)
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices(((DEV, DEV_B), DEV_Y)).batch(2)), pairs,
                               atol=1e-6)


def test_a_dataset_of_text_rows_reads_them_as_an_array_of_rows_is_read(clf):
    """A batched Dataset of a 2-D string tensor (a DataFrame's two text columns): [batch, 2] rows are pairs and
    [batch, 1] rows single texts, as in an [n, 2] / [n, 1] array. Its rows reached the packer as a 3-D ragged
    tensor, which failed deep in keras-hub with "Shape (None, None, None) must have rank 2"."""
    pairs = clf.predict(list(zip(DEV, DEV_B)))
    rows = np.array(list(zip(DEV, DEV_B)))
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices(rows).batch(3)), pairs, atol=1e-6)
    np.testing.assert_allclose(clf.predict(tf.data.Dataset.from_tensor_slices((rows, DEV_Y)).batch(3)), pairs,
                               atol=1e-6)
    column = tf.data.Dataset.from_tensor_slices(np.array(DEV)[:, None]).batch(3)
    np.testing.assert_allclose(clf.predict(column), clf.predict(DEV), atol=1e-6)
    with pytest.raises(ValueError, match=r"shape \(None, 3\) are rows of 3 columns"):
        clf.predict(tf.data.Dataset.from_tensor_slices(np.array([DEV, DEV_B, DEV]).T).batch(3))


def test_fit_refuses_a_dataset_without_labels_before_tracing(clf):
    for ds in (tf.data.Dataset.from_tensor_slices(TRAIN).batch(2), tf.data.Dataset.from_tensor_slices(TRAIN)):
        with pytest.raises(ValueError, match=r"The Dataset holds texts but no labels"):
            clf.fit(ds, verbose=0)


def test_a_dataset_with_y_beside_it_is_refused_as_keras_refuses_it(clf, ner, qa):
    """fit(ds, y): Keras refuses a y beside a Dataset; here it was dropped in silence, and fit trained on the
    Dataset's own labels (or on none, for a Dataset of packed inputs)."""
    labelled = tf.data.Dataset.from_tensor_slices((TRAIN, TRAIN_Y)).batch(2)
    texts = tf.data.Dataset.from_tensor_slices(TRAIN).batch(2)
    for call in (lambda: clf.fit(labelled, TRAIN_Y, verbose=0), lambda: clf.fit(texts, TRAIN_Y, verbose=0),
                 lambda: clf.evaluate(labelled, TRAIN_Y, verbose=0),
                 lambda: clf.fit(DEV, DEV_Y, validation_data=(labelled, TRAIN_Y), verbose=0),
                 lambda: ner.evaluate(tf.data.Dataset.from_tensor_slices(tf.ragged.constant(SENTENCES)), TAGS,
                                      verbose=0),
                 lambda: qa.evaluate(tf.data.Dataset.from_tensor_slices(dict(clf.preprocessor(DEV))), DEV_Y,
                                     verbose=0)):
        with pytest.raises(ValueError, match=r"A tf.data.Dataset carries its own labels, as in Keras: .*pass no y"):
            call()


def test_a_dataset_of_texts_and_label_names_trains_as_their_ids():
    """fit and evaluate read a Dataset's second string as the label's name, as Keras reads (x, y): it was refused
    as a pair without labels; predict then ignores it, on a classifier fine-tuned on single texts."""
    names = ["neg", "pos"]
    by_id, by_name = _classifier(dropout=0.0), _classifier(dropout=0.0)
    by_name.set_weights(by_id.get_weights())
    by_name.label_names = names
    named = tf.data.Dataset.from_tensor_slices((TRAIN, [names[y] for y in TRAIN_Y])).batch(3)
    ids = tf.data.Dataset.from_tensor_slices((TRAIN, TRAIN_Y)).batch(3)
    np.testing.assert_allclose(by_name.evaluate(named, verbose=0), by_id.evaluate(ids, verbose=0), rtol=1e-5)
    trained = [model.fit(data, epochs=2, verbose=0).history["loss"] for model, data in ((by_id, ids), (by_name, named))]
    np.testing.assert_allclose(trained[1], trained[0], rtol=1e-5)
    assert by_name.text_pairs is False
    np.testing.assert_allclose(by_name.predict(named), by_name.predict(TRAIN), atol=1e-6)


def _records_of_unknown_length(directory, count=24, length=16, predictions=3, vocabulary_size=40):
    """`count` random pretraining instances written as 2 shards; read back, Keras cannot know their length."""
    rng = np.random.default_rng(0)
    instances = {"token_ids": rng.integers(5, vocabulary_size, (count, length)).astype("int32"),
                 "segment_ids": np.repeat([[0] * (length // 2) + [1] * (length // 2)], count, 0).astype("int32"),
                 "padding_mask": np.ones((count, length), "int32"),
                 "mask_positions": np.sort(rng.permutation(np.arange(1, length))[:predictions]
                                           + np.zeros((count, 1), "int64"), axis=1).astype("int32"),
                 "mask_ids": rng.integers(5, vocabulary_size, (count, predictions)).astype("int32"),
                 "mask_weights": np.ones((count, predictions), "int32"),
                 "next_sentence_label": rng.integers(0, 2, count).astype("int32")}
    instances["mask_weights"][::2, -1] = 0  # padded predictions too
    kbz.data.write_pretraining_records(instances, [str(directory / f"r-{i}.tfrecord") for i in range(2)])
    return kbz.data.read_pretraining_records(str(directory / "r-*.tfrecord"))


def test_a_dataset_of_unknown_length_is_evaluated_and_fit_over_its_batches_alone(tmp_path):
    # Keras ran one step more after such data ended, and kept what of it did not wait for the batch:
    # evaluate counted an empty batch of 8 (the mean loss times 3/4 here), fit an optimizer step more per epoch.
    batches = kbz.data.pretraining_batches(_records_of_unknown_length(tmp_path), 8)
    assert int(batches.cardinality()) == tf.data.UNKNOWN_CARDINALITY

    def pretrainer():
        keras.utils.set_random_seed(0)
        model = kbz.BertPretrainer(kbz.BertBackbone(vocabulary_size=40, num_layers=1, num_heads=2, hidden_dim=8,
                                                    intermediate_dim=16, max_sequence_length=16, dropout=0.0))
        model.compile(learning_rate=1e-2, total_steps=6)
        return model

    model = pretrainer()
    losses = [float(model.compute_loss(x=x, y=y, y_pred=model(x), sample_weight=w)) for x, y, w in batches]
    assert len(losses) == 3
    assert model.evaluate(batches, verbose=0, return_dict=True)["loss"] == pytest.approx(np.mean(losses), rel=1e-6)
    model.fit(batches, epochs=2, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 6
    # The same weights as a fit told the data's length, which Keras stops at (AdamW's decay ran in the extra step).
    known = pretrainer()
    known.fit(batches.apply(tf.data.experimental.assert_cardinality(3)), epochs=2, verbose=0)
    for ours, reference in zip(model.get_weights(), known.get_weights()):
        np.testing.assert_allclose(ours, reference, rtol=1e-5, atol=1e-7)


def test_pretraining_batches_reach_keras_without_the_autotune_thread(tmp_path):
    """As every other pipeline (see `without_autotune_thread`): the batches build tuned, and the task hands
    Keras them untuned, for fit, evaluate and predict alike."""
    batches = kbz.data.pretraining_batches(_records_of_unknown_length(tmp_path), 8, shuffle_buffer=16, repeat=True)
    assert batches.options().autotune.enabled is not False
    model = kbz.BertPretrainer(kbz.BertBackbone(vocabulary_size=40, num_layers=1, num_heads=2, hidden_dim=8,
                                                intermediate_dim=16, max_sequence_length=16))
    for labeled in (True, False):
        fed, _ = model._keras_inputs(batches, labeled=labeled)
        assert fed.options().autotune.enabled is False
        next(iter(fed))


def test_a_dataset_of_unknown_length_is_read_to_its_end_without_keras_warning_it_ran_out(clf):
    # Keras says "Your input ran out of data; interrupting training" whenever a Dataset of unknown length (a
    # generator's, a file's) ends, which is how it learns the length, in fit, its validation and evaluate alike.
    def examples(texts, labels):
        return tf.data.Dataset.from_generator(lambda: zip(texts, labels), output_signature=(
            tf.TensorSpec([], tf.string), tf.TensorSpec([], tf.int32)))

    train, dev = examples(TRAIN, TRAIN_Y), examples(DEV, DEV_Y)
    assert train.cardinality() == tf.data.UNKNOWN_CARDINALITY
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = clf.fit(train, validation_data=dev, batch_size=4, epochs=2, verbose=0)
        scores = clf.evaluate(dev, batch_size=4, verbose=0)
        outputs = clf.predict(dev.map(lambda text, label: text), batch_size=4)
    assert not [w for w in caught if "ran out of data" in str(w.message)]
    assert len(history.history["val_loss"]) == 2 and scores[0] == pytest.approx(history.history["val_loss"][1])
    assert outputs.shape == (len(DEV), 2)
    # Where steps were asked for, running out is the user's to know: of the training data or the validation data.
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        clf.fit(train, batch_size=4, epochs=1, steps_per_epoch=5, verbose=0)
    with pytest.warns(UserWarning, match="Your input ran out of data"):
        clf.fit(train, validation_data=dev, validation_steps=5, batch_size=4, epochs=1, verbose=0)


def test_dataset_labels_as_a_column_after_a_flat_list_train_as_one_label_each(clf):
    # The packing function, traced for [batch] labels, was traced again for [batch, 1] ones at an unknown rank,
    # and Keras' loss refused it: "Cannot take the length of shape with unknown rank".
    flat = tf.data.Dataset.from_tensor_slices((TRAIN, TRAIN_Y)).batch(3)
    column = tf.data.Dataset.from_tensor_slices((TRAIN, [[y] for y in TRAIN_Y])).batch(3)
    clf.fit(flat, verbose=0)
    history = clf.fit(column, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert clf.evaluate(column, verbose=0) == pytest.approx(clf.evaluate(flat, verbose=0), rel=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"A multi_class label holds several values: one class "
                                                             r"per example"):
        clf.evaluate(tf.data.Dataset.from_tensor_slices((TRAIN, [[y, y] for y in TRAIN_Y])).batch(3), verbose=0)
