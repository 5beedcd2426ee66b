"""A task fine-tuned with transformers (BertFor{Sequence,Token}Classification, BertForQuestionAnswering) loads as
ours with its trained head: checked against the logits transformers itself computed (fixtures/tiny_hf_tasks,
written by make_hf_reference.py)."""

import json
import os
import shutil
import warnings

import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets.errors import CheckpointError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "tiny_hf_tasks")
TOLERANCE = 1e-5
INPUTS = ("token_ids", "segment_ids", "padding_mask")
TASKS = {"sequence": kbz.BertClassifier, "token": kbz.BertTokenClassifier,
         "question_answering": kbz.BertQuestionAnswerer}


def _reference(kind):
    return np.load(os.path.join(FIXTURES, kind, "reference.npz"))


def _assert_logits_match(task, kind, rows=None):
    """`task`'s logits on the reference inputs equal transformers' (`rows`: its columns of them, a head cut)."""
    ref = _reference(kind)
    out = task({name: ref[name] for name in INPUTS})
    real = ref["padding_mask"].astype(bool)
    if kind == "question_answering":
        for name in ("start_logits", "end_logits"):
            np.testing.assert_allclose(out[name].numpy()[real], ref[name][real], atol=TOLERANCE)
    elif kind == "token":
        np.testing.assert_allclose(out.numpy()[real], ref["logits"][real], atol=TOLERANCE)
    else:
        expected = ref["logits"] if rows is None else ref["logits"][:, rows]
        np.testing.assert_allclose(out.numpy(), expected, atol=TOLERANCE)


def _copy(kind, tmp_path, **config):
    """A copy of the `kind` fixture with `config` entries replaced in its config.json (None: removed)."""
    directory = tmp_path / kind
    shutil.copytree(os.path.join(FIXTURES, kind), directory)
    path = directory / "config.json"
    document = json.loads(path.read_text())
    document.update(config)
    path.write_text(json.dumps({k: v for k, v in document.items() if v is not None}))
    return str(directory)


@pytest.mark.parametrize("kind", list(TASKS))
def test_a_fine_tuned_hf_task_loads_as_ours_with_its_head(kind):
    # The head was left out ("a task made from it starts its own head"): a fine-tuned model could not be used.
    directory = os.path.join(FIXTURES, kind)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no head left out; no pooler warning where it is unused
        task = TASKS[kind].from_preset(directory, sequence_length=9)
    _assert_logits_match(task, kind)
    assert type(kbz.Task.from_preset(directory)) is TASKS[kind]  # the checkpoint names its task
    if kind == "token":  # id2label, in id order
        assert task.label_names == ["O", "B-Gene", "I-Gene"]
        assert task.predict_tags([["the", "brca1", "gene"]])[0][0] in task.label_names
    if kind == "sequence":  # no id2label saved: transformers' own names, and its one-label rule
        assert (task.num_classes, task.problem_type, task.label_names) == (2, "multi_class", ["LABEL_0", "LABEL_1"])


def test_a_classifiers_problem_type_and_dropout_come_from_its_config(tmp_path):
    directory = _copy("sequence", tmp_path, problem_type="multi_label_classification", classifier_dropout=0.25,
                      id2label={"1": "toxic", "0": "obscene"})
    task = kbz.BertClassifier.from_preset(directory)
    assert (task.problem_type, task.dropout, task.label_names) == ("multi_label", 0.25, ["obscene", "toxic"])
    _assert_logits_match(task, "sequence")


def test_a_one_label_head_is_a_regression_as_transformers_reads_it(tmp_path):
    # Cut to its first row, the head computes the first column of transformers' logits.
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    directory = _copy("sequence", tmp_path)
    path = os.path.join(directory, "model.safetensors")
    state = load_file(path)
    state["classifier.weight"], state["classifier.bias"] = state["classifier.weight"][:1], state["classifier.bias"][:1]
    save_file(state, path)
    task = kbz.BertClassifier.from_preset(directory)
    assert (task.num_classes, task.problem_type, task.label_names) == (1, "regression", None)
    _assert_logits_match(task, "sequence", rows=[0])


def test_label_names_given_rename_the_loaded_head(tmp_path):
    task = kbz.BertClassifier.from_preset(os.path.join(FIXTURES, "sequence"), label_names=["negative", "positive"])
    assert task.label_names == ["negative", "positive"]
    _assert_logits_match(task, "sequence")


def _tag_logits(task):
    ref = _reference("token")
    return task({name: ref[name] for name in INPUTS}).numpy()[ref["padding_mask"].astype(bool)]


def test_a_heads_labels_given_in_another_order_keep_their_meaning(tmp_path):
    # A tag set read from data comes sorted (B-Gene, I-Gene, O), id2label in training order (O, B-Gene, I-Gene):
    # the names were put on the head's outputs in the order given, so every "O" was tagged B-Gene, in silence.
    directory = os.path.join(FIXTURES, "token")
    order = ["B-Gene", "I-Gene", "O"]
    tagger = kbz.BertTokenClassifier.from_preset(directory, label_names=order)
    reference = _reference("token")["logits"][_reference("token")["padding_mask"].astype(bool)]
    np.testing.assert_allclose(_tag_logits(tagger), reference[:, [1, 2, 0]], atol=TOLERANCE)
    words = [["the", "brca1", "gene", "binds", "to", "p53", "."]]
    assert tagger.predict_tags(words) == kbz.BertTokenClassifier.from_preset(directory).predict_tags(words)
    # Saved, it restores in its own order, and in any other order given.
    tagger.save_to_preset(str(tmp_path / "saved"))
    np.testing.assert_allclose(_tag_logits(kbz.BertTokenClassifier.from_preset(str(tmp_path / "saved"))),
                               reference[:, [1, 2, 0]], atol=TOLERANCE)
    again = kbz.BertTokenClassifier.from_preset(str(tmp_path / "saved"), label_names=["I-Gene", "O", "B-Gene"])
    np.testing.assert_allclose(_tag_logits(again), reference[:, [2, 0, 1]], atol=TOLERANCE)
    with pytest.raises(kbz.PresetError, match=r"from_preset\(label_names=\['O', 'B-Chem', 'I-Chem'\]\) names other "
                                              r"labels than the saved BertTokenClassifier's \['B-Gene', 'I-Gene', 'O'\]"):
        kbz.BertTokenClassifier.from_preset(str(tmp_path / "saved"), label_names=["O", "B-Chem", "I-Chem"])


def test_other_labels_than_the_heads_start_it_fresh_and_say_so():
    with pytest.warns(UserWarning, match=r"asks for a BertTokenClassifier of labels \['O', 'B-Chem', 'I-Chem'\], not "
                                         r"its \['O', 'B-Gene', 'I-Gene'\]: its head starts fresh"):
        tagger = kbz.BertTokenClassifier.from_preset(os.path.join(FIXTURES, "token"),
                                                     label_names=["O", "B-Chem", "I-Chem"])
    assert tagger.label_names == ["O", "B-Chem", "I-Chem"]
    assert not np.allclose(_tag_logits(tagger), _reference("token")["logits"][
        _reference("token")["padding_mask"].astype(bool)], atol=0.1)


def test_arguments_for_another_output_layer_start_the_head_fresh_and_say_so():
    directory = os.path.join(FIXTURES, "sequence")
    with pytest.warns(UserWarning, match=r"is a fine-tuned BertForSequenceClassification whose head has 2 output\(s\), "
                                         r"and from_preset\(num_classes=...\) asks for a BertClassifier of 3 output\(s\): its head "
                                         "starts fresh; the BERT under it is loaded"):
        task = kbz.BertClassifier.from_preset(directory, num_classes=3)
    assert task.num_classes == 3 and task.label_names is None  # not the head's 2 names
    ref = _reference("sequence")
    pooled = task.backbone({name: ref[name] for name in INPUTS})["pooled_output"]
    np.testing.assert_allclose(pooled, ref["pooled_output"], atol=TOLERANCE)
    with pytest.warns(UserWarning, match="its head starts fresh"):
        tagger = kbz.BertTokenClassifier.from_preset(os.path.join(FIXTURES, "token"), label_names=["O", "B-X"])
    assert tagger.output_layer.units == 2


def test_arguments_for_another_output_layer_that_make_no_task_alone_are_refused_naming_the_fix():
    # 3 label names for a 2-label head: past the head, they made no BertClassifier alone, and Python's TypeError
    # ("missing 1 required positional argument: 'num_classes'") was all the caller got.
    directory = os.path.join(FIXTURES, "sequence")
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "its head starts fresh" for a task that is not made
        with pytest.raises(kbz.PresetError) as caught:
            kbz.BertClassifier.from_preset(directory, label_names=["a", "b", "c"])
    assert str(caught.value) == (
        f"{directory} is a fine-tuned BertForSequenceClassification, and from_preset(label_names=...) makes no "
        "BertClassifier of it: not with its head (3 label_names for num_classes=2.), nor alone, with a fresh head "
        "(BertClassifier needs num_classes: the number of classes (of targets, for regression) (num_classes=3 for the "
        "3 label_names given).). Fix those arguments, or leave them out to load the trained head.")
    # An invalid dropout was reported as the missing num_classes alone: the reason is the rate.
    with pytest.raises(kbz.PresetError, match=r"from_preset\(dropout=...\) makes no BertClassifier of it: not with "
                                              r"its head \(Invalid value received for argument `rate`.*rate=2.0\)"):
        kbz.BertClassifier.from_preset(directory, dropout=2.0)
    # With them all, the head starts fresh, as the warning says; the BERT under it is transformers'.
    with pytest.warns(UserWarning, match="its head starts fresh"):
        task = kbz.BertClassifier.from_preset(directory, label_names=["a", "b", "c"], num_classes=3)
    assert (task.num_classes, task.label_names) == (3, ["a", "b", "c"])
    ref = _reference("sequence")
    pooled = task.backbone({name: ref[name] for name in INPUTS})["pooled_output"]
    np.testing.assert_allclose(pooled, ref["pooled_output"], atol=TOLERANCE)


def test_another_task_from_a_fine_tuned_checkpoint_loads_its_bert_and_names_the_head_left_out():
    directory = os.path.join(FIXTURES, "sequence")
    with pytest.warns(UserWarning, match=r"is a fine-tuned BertForSequenceClassification: its head is not loaded into "
                                         r"a BertTokenClassifier \(BertClassifier.from_preset loads it\)"):
        tagger = kbz.BertTokenClassifier.from_preset(directory, label_names=["O", "B-Gene"])
    ref = _reference("sequence")
    real = ref["padding_mask"].astype(bool)
    out = tagger.backbone({name: ref[name] for name in INPUTS})["sequence_output"]
    np.testing.assert_allclose(out.numpy()[real], ref["sequence_output"][real], atol=TOLERANCE)


def test_a_head_of_no_task_here_is_left_out_with_a_warning(tmp_path):
    # BertForMultipleChoice's `classifier` is one logit per choice: no task of ours has it.
    directory = _copy("sequence", tmp_path, architectures=["BertForMultipleChoice"])
    with pytest.warns(UserWarning, match=r"its head \(classifier.bias, classifier.weight\) is not loaded, as its "
                                         "config.json names no task here"):
        kbz.BertBackbone.from_preset(directory)
    with pytest.raises(kbz.PresetError, match="holds a backbone but no saved task"), \
            pytest.warns(UserWarning, match="is not loaded, as its config.json names no task here"):
        kbz.Task.from_preset(directory)


@pytest.mark.parametrize("config, message", [
    ({"id2label": {"0": "O", "2": "B-Gene", "3": "I-Gene"}}, r"'id2label' has ids \[0, 2, 3\], not 0..2 once each"),
    ({"id2label": {"0": "O", "00": "B-Gene", "1": "I-Gene"}}, r"'id2label' has ids \[0, 0, 1\]"),
    ({"id2label": {"zero": "O"}}, r"'id2label' has keys \['zero'\]; label ids are whole numbers"),
    ({"id2label": {"0": "O", "1": 7, "2": "I-Gene"}}, "'id2label' names a label 7; label names are non-empty strings"),
    ({"id2label": {"0": "O", "1": "B-Gene"}}, r"'id2label' names 2 labels, but .*'classifier.weight' has 3"),
    ({"id2label": ["O", "B-Gene", "I-Gene"]}, "'id2label' is .*, not an object of label ids to names"),
    ({"architectures": "BertForTokenClassification"}, "'architectures' is .*, not a list of class names"),
    ({"problem_type": "ranking"}, "'problem_type' is 'ranking'; transformers' are"),
    ({"classifier_dropout": 1.5}, r"the classifier's dropout rate is 1.5 .*a rate is a number in \[0, 1\)"),
])
def test_a_fine_tuned_config_that_contradicts_itself_or_its_head_is_refused(tmp_path, config, message):
    directory = _copy("token", tmp_path, **config)
    with pytest.raises(CheckpointError, match=message):
        kbz.BertTokenClassifier.from_preset(directory)


def test_an_invalid_argument_of_the_callers_is_refused_as_theirs_not_the_configs():
    # doc_stride=0 was blamed on the checkpoint: "does not make a BertQuestionAnswerer: doc_stride must be ... Fix
    # its config.json (id2label names the labels), or give from_preset the task's ." (a list of none).
    with pytest.raises(kbz.PresetError) as caught:
        kbz.BertQuestionAnswerer.from_preset(os.path.join(FIXTURES, "question_answering"), doc_stride=0)
    assert str(caught.value) == ("from_preset(doc_stride=...) is not a valid BertQuestionAnswerer config: doc_stride "
                                 "must be a positive whole number; got 0.")


def test_a_config_naming_a_task_whose_head_the_weights_lack_is_refused(tmp_path):
    directory = _copy("sequence", tmp_path, architectures=["BertForQuestionAnswering"])
    with pytest.raises(CheckpointError, match="says the model is a BertForQuestionAnswering, but .* has no "
                                              "'qa_outputs.weight', its head"):
        kbz.BertBackbone.from_preset(directory)


def test_duplicate_label_names_are_refused_naming_the_fix(tmp_path):
    directory = _copy("token", tmp_path, id2label={"0": "O", "1": "B-Gene", "2": "B-Gene"})
    with pytest.raises(kbz.PresetError, match=r"a fine-tuned BertForTokenClassification, does not make a BertTokenClassifier: label_names must be a non-empty list of distinct tags.* Fix its config.json \(id2label names the labels\)"):
        kbz.BertTokenClassifier.from_preset(directory)
    # Names given replace them.
    task = kbz.BertTokenClassifier.from_preset(directory, label_names=["O", "B-Gene", "I-Gene"])
    _assert_logits_match(task, "token")


@pytest.mark.slow
def test_the_command_line_exports_a_tagger_fine_tuned_with_transformers_with_its_head(tmp_path, capsys):
    # `export --model <its directory>` exported an embedding model: the fine-tuned head was dropped in silence.
    import tensorflow as tf

    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.export.export_for_serving import load_export

    directory = os.path.join(FIXTURES, "token")
    assert main(["export", "--model", directory, "--output_dir", str(tmp_path), "--max_seq_length", "16"]) == 0
    capsys.readouterr()
    export = load_export(str(tmp_path / "bert_token_classifier"))
    text = "the brca1 gene binds to p53 ."
    served = export.signatures["entities"](text=tf.constant([text]))
    expected = kbz.BertTokenClassifier.from_preset(directory, sequence_length=16).predict_entities([text])[0]
    count = int(served["entity_count"][0])
    assert count == len(expected) > 0
    assert [(e["label"], e["start"], e["end"]) for e in expected] == [
        (served["entity_label"][0, i].numpy().decode(), int(served["start"][0, i]), int(served["end"][0, i]))
        for i in range(count)]
    np.testing.assert_allclose(served["score"][0, :count], [e["score"] for e in expected], atol=1e-5)


@pytest.mark.slow
def test_the_command_line_predicts_and_evaluates_with_a_model_fine_tuned_with_transformers(tmp_path, capsys):
    # predict and evaluate took only a `finetune` output ("is not a fine-tuned model: expected ... task.json").
    from keras_bert_zoo.cli.main import main

    texts = ["the brca1 gene binds to p53 .", "p53 binds to the gene ."]
    lines = tmp_path / "texts.txt"
    lines.write_text("\n".join(texts) + "\n")
    tagger = os.path.join(FIXTURES, "token")
    assert main(["predict", "--model", tagger, "--input_file", str(lines)]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    expected = kbz.BertTokenClassifier.from_preset(tagger).predict_entities(texts)
    assert [r["entities"] for r in records] == json.loads(json.dumps(expected))
    # evaluate: labels by id2label's names (transformers' LABEL_i here), scored as the library scores them.
    classifier = os.path.join(FIXTURES, "sequence")
    labelled = tmp_path / "eval.jsonl"
    labelled.write_text("".join(json.dumps({"text": t, "label": f"LABEL_{i % 2}"}) + "\n"
                                for i, t in enumerate(texts * 3)))
    assert main(["evaluate", "--model", classifier, "--eval_file", str(labelled), "--format", "jsonl"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    predicted = kbz.BertClassifier.from_preset(classifier).predict_proba(texts * 3).argmax(-1)
    assert metrics["eval_examples"] == 6
    assert metrics["accuracy"] == pytest.approx(np.mean(predicted == np.arange(6) % 2))


def test_the_command_line_refuses_a_pretrained_checkpoint_as_a_fine_tuned_model(tmp_path, capsys):
    from keras_bert_zoo.cli.main import main

    lines = tmp_path / "texts.txt"
    lines.write_text("p53 binds .\n")
    directory = os.path.join(os.path.dirname(FIXTURES), "tiny_hf_bert")
    assert main(["predict", "--model", directory, "--input_file", str(lines)]) == 2
    assert (f"--model {directory} is a pretrained BERT, not a fine-tuned classifier, NER or QA model: {directory} "
            "holds a 'BertPretrainer'. Fine-tune it first: keras-bert-zoo finetune --preset") in capsys.readouterr().err
    # One of transformers' base models (BertModel: no heads at all).
    bare = tmp_path / "bare"
    shutil.copytree(os.path.join(FIXTURES, "sequence"), bare)
    document = json.loads((bare / "config.json").read_text())
    (bare / "config.json").write_text(json.dumps({**document, "architectures": ["BertModel"]}))
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    state = load_file(str(bare / "model.safetensors"))
    save_file({k: v for k, v in state.items() if not k.startswith("classifier.")}, str(bare / "model.safetensors"))
    assert main(["predict", "--model", str(bare), "--input_file", str(lines)]) == 2
    assert f"{bare} holds a transformers BertModel (its config.json's architectures), no task's head. Fine-tune it " \
        "first" in capsys.readouterr().err


def test_a_tagger_with_placeholder_tags_refuses_to_find_entities_and_names_the_fix(tmp_path):
    # Without id2label, transformers names the tags LABEL_0, ...: no B-/I- prefix, so every word read as outside
    # any entity, and predict_entities found none, in silence (the export refused "tag 'LABEL_0'" as no BIO tag).
    directory = _copy("token", tmp_path, id2label=None, label2id=None)
    tagger = kbz.BertTokenClassifier.from_preset(directory)
    words = [["the", "brca1", "gene", "binds", "to", "p53", "."]]
    # Tags alone keep their meaning: the fixture's O, B-Gene, I-Gene by id.
    named = kbz.BertTokenClassifier.from_preset(os.path.join(FIXTURES, "token"))
    ids = {"O": 0, "B-Gene": 1, "I-Gene": 2}
    assert tagger.predict_tags(words) == [[f"LABEL_{ids[tag]}" for tag in named.predict_tags(words)[0]]]
    fix = (r"transformers' placeholders LABEL_0..LABEL_2 \(its checkpoint's config.json has no id2label\), which "
           r"name no entity. Give its tags in the order of its head's outputs: BertTokenClassifier.from_preset\(..., "
           r"label_names=\['O', 'B-<type>', ...\]\)")
    with pytest.raises(ValueError, match="^predict_entities finds entities by their tags .*" + fix):
        tagger.predict_entities(["the brca1 gene binds to p53 ."])
    with pytest.raises(ValueError, match="^evaluate_entities finds entities by their tags .*" + fix):
        tagger.evaluate_entities(words, [[0, 1, 2, 0, 0, 1, 0]])
    with pytest.raises(ValueError, match="^The served signature entities finds entities by their tags .*" + fix):
        tagger.export(str(tmp_path / "export"))
    # The fix: its tags named, in its head's order, it finds what the checkpoint with id2label finds.
    text = "the brca1 gene binds to p53 ."
    renamed = kbz.BertTokenClassifier.from_preset(directory, label_names=["O", "B-Gene", "I-Gene"])
    assert renamed.predict_entities([text]) == named.predict_entities([text])


def test_the_command_line_refuses_a_tagger_with_placeholder_tags_before_tracing(tmp_path, capsys):
    from keras_bert_zoo.cli.main import main

    directory = _copy("token", tmp_path, id2label=None, label2id=None)
    lines = tmp_path / "texts.txt"
    lines.write_text("the brca1 gene binds to p53 .\n")
    assert main(["predict", "--model", directory, "--input_file", str(lines)]) == 2
    assert capsys.readouterr().err.startswith(
        "keras-bert-zoo predict: error: predict finds entities by their tags (O, B-<type>, I-<type>, ...), but this "
        "tagger's are transformers' placeholders LABEL_0..LABEL_2")
    conll = tmp_path / "eval.conll"
    conll.write_text("the O\nbrca1 B-Gene\ngene I-Gene\n")
    assert main(["evaluate", "--model", directory, "--eval_file", str(conll)]) == 2
    assert "evaluate finds entities by their tags" in capsys.readouterr().err  # not "unknown tag 'O'"
    assert main(["export", "--model", directory, "--output_dir", str(tmp_path / "export"),
                 "--max_seq_length", "16"]) == 2
    assert "error: The served signature entities finds entities by their tags" in capsys.readouterr().err
    assert not (tmp_path / "export" / "bert_token_classifier").exists()


TEXTS = ["the brca1 gene", "p53 binds to the gene", "the gene ."]


def _predicted(task, texts=TEXTS):
    """The output each text's probabilities rank first: the reference the scores below are computed from."""
    return task.predict_proba(texts).argmax(-1)


def test_a_classifier_without_id2label_scores_data_labelled_by_id():
    # transformers' LABEL_i is class i, so GLUE's labels 0 / 1, as text in a file, are its classes: they were
    # refused ("'0' is not one of the label_names ['LABEL_0', 'LABEL_1']").
    classifier = kbz.BertClassifier.from_preset(os.path.join(FIXTURES, "sequence"))
    gold = np.array([1, 1, 0])
    expected = np.mean(_predicted(classifier) == gold)
    assert classifier.evaluate_glue(TEXTS, ["1", "1", "0"])["accuracy"] == pytest.approx(expected)
    assert classifier.evaluate_glue(TEXTS, ["LABEL_1", "1", "LABEL_0"])["accuracy"] == pytest.approx(expected)
    with pytest.raises(ValueError, match=r"^Example 1's label 'positive' is not a class id 0..1 or its placeholder "
                                         r"name LABEL_0..LABEL_1 \(transformers' names of a checkpoint without "
                                         r"id2label\): "
                                         r"give class ids, or give the classifier label_names=\[...\] in the order "
                                         "of its outputs.$"):
        classifier.evaluate_glue(TEXTS, ["1", "positive", "0"])
    with pytest.raises(ValueError, match=r"Example 0's label '2' is not a class id 0..1"):
        classifier.evaluate_glue(TEXTS[:1], ["2"])


def test_a_readers_labels_follow_the_classifiers_names_not_their_positions(tmp_path):
    # A GLUE file's "0" / "1" were read by their position in its own label list: against the names ["1", "0"],
    # every "0" was scored as the class named "1", in silence.
    folder = tmp_path / "SST-2"
    folder.mkdir()
    (folder / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{text}\t0\n" for text in TEXTS))
    data = kbz.data.read_glue(str(folder / "dev.tsv"))
    directory = os.path.join(FIXTURES, "sequence")
    reversed_names = kbz.BertClassifier.from_preset(directory, label_names=["1", "0"])
    # The class named "0" is output 1.
    assert reversed_names.evaluate_glue(data)["accuracy"] == pytest.approx(np.mean(_predicted(reversed_names) == 1))
    with pytest.raises(ValueError, match=r"Example 0's label '2' is not one of the label_names \['1', '0'\] "
                                         r"\(which name classes by numbers, so text is read as names alone\): "
                                         r"relabel the data with these labels."):
        reversed_names.prepare_labels(["2"])
    # Names that are no numbers read their names, and ids written as text.
    named = kbz.BertClassifier.from_preset(directory, label_names=["negative", "positive"])
    assert named.evaluate_glue(data)["accuracy"] == pytest.approx(np.mean(_predicted(named) == 0))
    assert named.prepare_labels(["positive", "0", "negative", "1"]).tolist() == [1, 0, 0, 1]


@pytest.mark.slow
def test_the_command_line_evaluates_a_classifier_without_id2label_on_data_labelled_by_id(tmp_path, capsys):
    from keras_bert_zoo.cli.main import main

    classifier = os.path.join(FIXTURES, "sequence")
    labelled = tmp_path / "eval.jsonl"
    gold = [1, 1, 0]
    labelled.write_text("".join(json.dumps({"text": t, "label": g}) + "\n" for t, g in zip(TEXTS, gold)))
    assert main(["evaluate", "--model", classifier, "--eval_file", str(labelled)]) == 0
    metrics = json.loads(capsys.readouterr().out)
    expected = np.mean(_predicted(kbz.BertClassifier.from_preset(classifier)) == np.array(gold))
    assert (metrics["eval_examples"], metrics["accuracy"]) == (3, pytest.approx(expected))
    # Labels that are neither ids nor its names are refused, naming the file.
    folder = tmp_path / "RTE"
    folder.mkdir()
    (folder / "dev.tsv").write_text("index\tsentence1\tsentence2\tlabel\n0\tthe gene\tp53 binds\tentailment\n")
    assert main(["evaluate", "--model", classifier, "--eval_file", str(folder / "dev.tsv")]) == 2
    assert (f"--eval_file {folder / 'dev.tsv'}: the label 'entailment' is not a class id 0..1 or its placeholder "
            "name LABEL_0..LABEL_1") in capsys.readouterr().err


def test_a_length_not_given_is_cut_to_the_positions_and_one_given_beyond_them_is_refused():
    # The fixtures have 16 positions: the tasks' defaults (128; QA 384) are cut to them. A length given beyond them
    # was cut too, in silence.
    for kind, task_cls in TASKS.items():
        assert task_cls.from_preset(os.path.join(FIXTURES, kind)).preprocessor.sequence_length == 16
    with pytest.raises(ValueError, match="sequence_length=32 is longer than the model's 16 position embeddings"):
        kbz.BertTokenClassifier.from_preset(os.path.join(FIXTURES, "token"), sequence_length=32)


@pytest.mark.slow
def test_the_command_line_exports_a_model_with_fewer_positions_than_the_default_length(tmp_path, capsys):
    # Refused: "The default --max_seq_length 128 is more than the 16 positions"; the model's positions are all
    # it can read, and the export says it packs them.
    import tensorflow as tf

    from keras_bert_zoo.cli.main import main
    from keras_bert_zoo.export.export_for_serving import load_export

    directory = os.path.join(FIXTURES, "token")
    assert main(["export", "--model", directory, "--output_dir", str(tmp_path)]) == 0
    assert (f"keras-bert-zoo export: warning: --max_seq_length not given: 16, the 16 positions of the preset "
            f"{directory} (the default, 128, is more).") in capsys.readouterr().err
    served = load_export(str(tmp_path / "bert_token_classifier")).signatures["entities"]
    # Words of a piece each: 14 with [CLS] and [SEP] fill the 16 positions; 40 take strided windows of 14.
    texts = [" ".join(["gene"] * count) for count in (14, 40)]
    expected = kbz.BertTokenClassifier.from_preset(directory).predict_entities(texts)
    out = served(text=tf.constant(texts))
    count = out["entity_count"].numpy().tolist()
    assert count == [len(row) for row in expected] and count[1] > 0
    assert [[(int(out["start"][i, j]), int(out["end"][i, j])) for j in range(n)] for i, n in enumerate(count)] \
        == [[(e["start"], e["end"]) for e in row] for row in expected]
