"""Export versions as TF Serving reads them, and what an export leaves when it fails or races another."""

import importlib
import os

import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.export.batching_parameters import BATCHING_FILE
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.utils.atomic import atomic_directory

pytestmark = pytest.mark.slow  # each test exports a tiny model, several seconds

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"]
# The module, which the package's function of the same name hides.
exporting = importlib.import_module("keras_bert_zoo.export.export_for_serving")
INT64_MAX = 2**63 - 1  # TF Serving parses version directory names with strtoll


def _backbone():
    return kbz.BertBackbone(vocabulary_size=len(VOCABULARY), num_layers=1, num_heads=2, hidden_dim=8,
                            intermediate_dim=16, max_sequence_length=16)


@pytest.fixture(scope="module")
def classifier():
    return kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16), num_classes=2)


def test_versions_past_int64_are_refused_and_ignored(classifier, tmp_path):
    for version in (INT64_MAX + 1, 10**23, 0, True, 2.0):
        with pytest.raises(ValueError, match="whole number from 1 to 9223372036854775807"):
            kbz.export.export_for_serving(classifier, str(tmp_path), version=version, model_name="m")
    assert not os.path.exists(tmp_path / "m")
    # Directories TF Serving would skip do not move the next number: 4 follows 3.
    for name in ("3", str(INT64_MAX + 1), "99999999999999999999999", "\u0663\u0664", "tmp"):
        os.makedirs(tmp_path / "m" / name)
    assert os.path.basename(kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")) == "4"
    os.makedirs(tmp_path / "m" / str(INT64_MAX))
    with pytest.raises(ValueError, match="the last TF Serving reads"):
        kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")


def test_a_version_written_meanwhile_by_another_export_is_kept(classifier, tmp_path, monkeypatch):
    theirs = tmp_path / "m" / "1"
    write = exporting.write_warmup_requests

    def another_export_finishes_first(path, *args):  # while this export writes its temporary directory
        if not theirs.exists():
            os.makedirs(theirs)
            (theirs / "saved_model.pb").write_text("theirs")
        write(path, *args)

    monkeypatch.setattr(exporting, "write_warmup_requests", another_export_finishes_first)
    # A version asked for is not taken from the other export.
    with pytest.raises(FileExistsError, match="written by another process while this one ran"):
        kbz.export.export_for_serving(classifier, str(tmp_path), version=1, model_name="m")
    assert (theirs / "saved_model.pb").read_text() == "theirs"
    assert sorted(os.listdir(tmp_path / "m")) == ["1"]  # no temporary left
    # A numbered export takes the next number instead.
    os.remove(theirs / "saved_model.pb")
    os.rmdir(theirs)
    path = kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")
    assert os.path.basename(path) == "2" and (theirs / "saved_model.pb").read_text() == "theirs"
    assert '"version": 2' in open(os.path.join(path, "job.json")).read()

    # overwrite=True replaces it, as asked.
    monkeypatch.undo()
    kbz.export.export_for_serving(classifier, str(tmp_path), version=1, model_name="m", overwrite=True)
    assert os.path.getsize(theirs / "saved_model.pb") > 1000


def test_atomic_directory_without_replace_takes_only_a_free_or_empty_place(tmp_path):
    target = tmp_path / "d"
    os.makedirs(target)  # empty: no writer's result, taken
    with atomic_directory(str(target), replace=False) as tmp:
        open(os.path.join(tmp, "x"), "w").close()
    assert os.listdir(target) == ["x"]
    with pytest.raises(FileExistsError):
        with atomic_directory(str(target), replace=False) as tmp:
            open(os.path.join(tmp, "y"), "w").close()
    assert os.listdir(target) == ["x"] and sorted(os.listdir(tmp_path)) == ["d"]


def test_later_exports_keep_the_batching_file_the_user_edited(classifier, tmp_path):
    kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")
    path = tmp_path / "m" / BATCHING_FILE
    assert "num_batch_threads { value: " in path.read_text()
    edited = kbz.export.batching_parameters(max_batch_size=64, num_batch_threads=16)
    path.write_text(edited)
    kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")
    assert path.read_text() == edited
    # A link to the user's settings stays a link, even one whose target is gone for now.
    os.remove(path)
    os.symlink(tmp_path / "settings.txt", path)
    kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")
    assert os.path.islink(path) and not os.path.exists(tmp_path / "settings.txt")


def test_load_export_takes_the_highest_version_tf_serving_reads(classifier, tmp_path):
    path = kbz.export.export_for_serving(classifier, str(tmp_path), version=INT64_MAX, model_name="m")
    os.makedirs(tmp_path / "m" / str(INT64_MAX + 1))  # skipped by TF Serving, and so here
    loaded = kbz.export.load_export(str(tmp_path / "m"))
    out = loaded.signatures["classify"](text=tf.constant(["the cat"]))
    np.testing.assert_allclose(out["probabilities"], classifier.predict_proba(["the cat"]), atol=1e-6)
    assert os.path.basename(path) == str(INT64_MAX)


def test_a_failed_export_leaves_no_model_directory(tmp_path, monkeypatch):
    tagger = kbz.BertTokenClassifier(_backbone(), TokenClassificationPreprocessor(kbz.BertTokenizer(VOCABULARY), 16),
                                     label_names=["O", "X-Y", "B-Y"])  # no tag scheme reads X-
    with pytest.raises(ValueError, match=r"^The served signature entities finds entities by conlleval tags, but 1 of "
                                         r"this tagger's tags is not a conlleval tag: 'X-Y'\."):
        tagger.export(str(tmp_path), model_name="ner")
    # Multi-label names are joined with commas in the served `labels`: one holding a comma would read as two.
    tagged = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16), num_classes=3,
                                problem_type="multi_label", label_names=["x", "x,y", "y"])
    with pytest.raises(ValueError, match=r"hold a comma \(\['x,y'\]\)"):
        tagged.export(str(tmp_path), model_name="topics")
    classifier = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16),
                                    num_classes=2)

    def fails(*args):
        raise RuntimeError("the disk filled up")

    monkeypatch.setattr(exporting, "write_warmup_requests", fails)  # a failure while the version is written
    with pytest.raises(RuntimeError, match="disk filled up"):
        classifier.export(str(tmp_path / "new" / "base"), model_name="clf")
    assert os.listdir(tmp_path) == []  # neither the model directory nor the base it made
    # A model directory that was there before stays, with its versions.
    os.makedirs(tmp_path / "clf" / "1")
    with pytest.raises(RuntimeError):
        classifier.export(str(tmp_path), model_name="clf")
    assert os.listdir(tmp_path / "clf") == ["1"]
    monkeypatch.undo()
    out = kbz.export.load_export(classifier.export(str(tmp_path), model_name="clf")).signatures["classify"](
        text=tf.constant(["the cat"]))
    np.testing.assert_allclose(out["probabilities"], classifier.predict_proba(["the cat"]), atol=1e-6)


def test_a_fine_tuned_task_refuses_another_preprocessor_before_tracing(classifier, tmp_path):
    """Its signatures tokenize with its own: the one given reached `embed` alone, at another length, in silence."""
    other = kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 8)
    with pytest.raises(ValueError, match="BertClassifier is served with the preprocessor it was fine-tuned with"):
        kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m", preprocessor=other)
    assert os.listdir(tmp_path) == []
    # Its own, given, is no other; a pretrainer takes the one given in place of its own.
    assert kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m",
                                         preprocessor=classifier.preprocessor)
    pretrainer = kbz.BertPretrainer(_backbone(), preprocessor=kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16))
    served = kbz.export.load_export(kbz.export.export_for_serving(pretrainer, str(tmp_path), model_name="mlm",
                                                                  preprocessor=other))
    out = served.signatures["fill_mask"](text=tf.constant(["the cat sat the cat sat the"]))
    assert out["truncated"].numpy().tolist() == [True]  # 7 pieces and 2 special tokens: not in 8, in its own 16


def test_a_directory_where_the_batching_file_goes_is_refused_before_the_version_is_written(classifier, tmp_path):
    """It was refused after tracing, once version 1 was written: the export failed, and left a version."""
    (tmp_path / "m" / BATCHING_FILE).mkdir(parents=True)
    with pytest.raises(IsADirectoryError, match=f"{BATCHING_FILE} is a directory: remove it, or rename it"):
        kbz.export.export_for_serving(classifier, str(tmp_path), model_name="m")
    assert os.listdir(tmp_path / "m") == [BATCHING_FILE]


def test_the_default_model_name_does_not_count_the_models_a_process_built(classifier, tmp_path):
    """Keras names the second classifier of a process bert_classifier_1: re-running a notebook's cell exported to
    exports/bert_classifier_1, and load_export("exports/bert_classifier") (the README's) read the old model."""
    retrained = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16), num_classes=2)
    assert retrained.name != classifier.name
    for model in (classifier, retrained):
        kbz.export.export_for_serving(model, str(tmp_path))
    assert sorted(os.listdir(tmp_path / "bert_classifier")) == ["1", "2", BATCHING_FILE]
    named = kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16), num_classes=2,
                               name="sentiment_2")
    assert exporting.default_model_name(named) == "sentiment_2"  # a name given is kept whole


def _classifier(**kwargs):
    return kbz.BertClassifier(_backbone(), kbz.BertPreprocessor(kbz.BertTokenizer(VOCABULARY), 16), num_classes=2,
                              **kwargs)


def test_a_name_given_that_looks_like_keras_count_is_kept_whole(classifier):
    """Only the count Keras appends to a name it made up is dropped: a model named bert_classifier_2 or
    bert_token_classifier_3 on purpose lost its suffix, and its export went to another model's directory."""
    made_up = _classifier()
    assert made_up.name.startswith("bert_classifier_")  # the fixture was the first: Keras counted this one
    assert exporting.default_model_name(made_up) == "bert_classifier"
    assert exporting.default_model_name(_classifier(name="bert_classifier_2")) == "bert_classifier_2"
    ner = kbz.BertTokenClassifier(_backbone(), TokenClassificationPreprocessor(kbz.BertTokenizer(VOCABULARY), 16),
                                  label_names=["O", "B-X"], name="bert_token_classifier_3")
    assert exporting.default_model_name(ner) == "bert_token_classifier_3"
    assert exporting.default_model_name(kbz.BertBackbone(**_backbone().get_config() | {"name": "bert_backbone_1"})) \
        == "bert_backbone_1"
    assert exporting.default_model_name(_backbone()) == "bert_backbone"


def test_a_saved_model_keeps_the_name_given_and_drops_the_count_keras_made(tmp_path, capsys):
    """Saved and loaded (as the CLI's export loads `--model`), a made-up name comes back as the class's and a
    given one whole: the config saves the name, and a name restored from it is a given one."""
    from keras_bert_zoo.cli.main import main

    _classifier()  # the next classifier of this process is counted
    made_up, named = _classifier(), _classifier(name="bert_classifier_2")
    assert made_up.name != "bert_classifier" and made_up.get_config()["name"] == "bert_classifier"
    assert named.get_config()["name"] == "bert_classifier_2"
    for model, expected in ((made_up, "bert_classifier"), (named, "bert_classifier_2")):
        model.save_to_preset(str(tmp_path / expected))
        loaded = kbz.BertClassifier.from_preset(str(tmp_path / expected))
        assert loaded.name == expected and exporting.default_model_name(loaded) == expected
    # The CLI names the directory before it loads the model (a version there is refused) and exports into it.
    os.makedirs(tmp_path / "exports" / "bert_classifier_2" / "1")
    assert main(["export", "--model", str(tmp_path / "bert_classifier_2"), "--output_dir", str(tmp_path / "exports"),
                 "--version", "1"]) == 2
    assert "exports/bert_classifier_2/1 already exists" in capsys.readouterr().err
    assert main(["export", "--model", str(tmp_path / "bert_classifier_2"),
                 "--output_dir", str(tmp_path / "exports")]) == 0
    assert sorted(os.listdir(tmp_path / "exports")) == ["bert_classifier_2"]
    assert sorted(os.listdir(tmp_path / "exports" / "bert_classifier_2")) == ["1", "2", BATCHING_FILE]
