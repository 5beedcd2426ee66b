"""SavedModel exports: raw text in, the Keras task's own predictions out (in a fresh process)."""

import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data.squad import read_squad
from keras_bert_zoo.export.request_inputs import bucket_length
from keras_bert_zoo.export.warmup_requests import read_warmup_requests
from keras_bert_zoo.utils.job_record import content_digest
from tests.conftest import shared_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXTS = ["Germline BRCA1 mutations cause hereditary breast cancer.", "A warm, funny film.",
         "Naïve café owners in Zürich (aged 40+) took aspirin-induced asthma drugs!", "one"]
LABELS = ["O", "B-Disease", "I-Disease", "B-Chemical", "I-Chemical"]


def _sharpen(dense):
    """Scale a fresh head so its predictions are far from uniform (a sharper test)."""
    dense.kernel.assign(dense.kernel.numpy() * 30.0)


def _run_in_fresh_process(tmp_path, requests):
    requests_file, output_file = tmp_path / "requests.json", tmp_path / "outputs.npz"
    requests_file.write_text(json.dumps(requests))
    subprocess.run([sys.executable, "-m", "tests.export_runner", str(requests_file), str(output_file)],
                   cwd=ROOT, check=True, capture_output=True, timeout=600)
    return dict(np.load(output_file, allow_pickle=True))


@pytest.fixture(scope="module")
def exported(default_preset_dir, tmp_path_factory):
    """A classifier, a tagger and a QA model on the default preset, exported."""
    base = str(tmp_path_factory.mktemp("exports"))
    keras.utils.set_random_seed(7)
    classifier = kbz.BertClassifier.from_preset(default_preset_dir, num_classes=3, sequence_length=64,
                                                label_names=["neg", "neu", "pos"])
    _sharpen(classifier.output_dense)
    tagger = kbz.BertTokenClassifier.from_preset(default_preset_dir, label_names=LABELS, sequence_length=64)
    _sharpen(tagger.output_dense)
    qa = kbz.BertQuestionAnswerer.from_preset(default_preset_dir, sequence_length=64, doc_stride=16,
                                              max_query_length=16)
    _sharpen(qa.span_dense)
    return {
        "classifier": (classifier, classifier.export(base, model_name="sentiment")),
        "tagger": (tagger, tagger.export(base, model_name="ner")),
        "qa": (qa, qa.export(base, model_name="qa")),
        "base": base,
    }


@pytest.mark.slow
def test_string_signatures_match_the_keras_tasks(exported, tmp_path):
    classifier, classifier_path = exported["classifier"]
    tagger, tagger_path = exported["tagger"]
    qa, qa_path = exported["qa"]
    squad = read_squad(shared_path("squad", "dev-v1.1-sample-articles0-2.json")).head(6)
    questions = list(squad.questions) + ["Who ran?", ""]
    contexts = list(squad.contexts) + ["Ann ran to the park.", "Ann ran."]  # SQuAD contexts span many windows
    pairs = [("He said hi.", "He greeted them."), ("A dog.", "A cat sat on the mat.")]
    tagged = TEXTS + [" ".join(TEXTS * 10)]  # an abstract's length: many windows of 64 positions
    outputs = _run_in_fresh_process(tmp_path, [
        {"key": "classify", "path": classifier_path, "signature": "serving_default", "inputs": {"text": TEXTS}},
        {"key": "pairs", "path": classifier_path, "signature": "classify_pairs",
         "inputs": {"text": [a for a, _ in pairs], "text_b": [b for _, b in pairs]}},
        {"key": "embed", "path": classifier_path, "signature": "embed", "inputs": {"text": TEXTS}},
        {"key": "entities", "path": tagger_path, "signature": "serving_default", "inputs": {"text": tagged}},
        {"key": "answer", "path": qa_path, "signature": "serving_default",
         "inputs": {"question": questions, "context": contexts}},
    ])

    np.testing.assert_allclose(outputs["classify/probabilities"], classifier.predict_proba(TEXTS), atol=1e-5)
    assert [s.decode() for s in outputs["classify/labels"]] == classifier.predict_labels(TEXTS)
    assert np.ptp(outputs["classify/probabilities"], axis=0).max() > 1e-3  # texts get different answers
    np.testing.assert_allclose(outputs["pairs/probabilities"], classifier.predict_proba(pairs), atol=1e-5)
    text_preprocessor = kbz.BertPreprocessor(classifier.preprocessor.tokenizer, 64)
    np.testing.assert_allclose(outputs["embed/mean_pooled"],
                               kbz.encode_texts(TEXTS, backbone=classifier.backbone, preprocessor=text_preprocessor),
                               atol=1e-5)
    np.testing.assert_allclose(outputs["embed/pooled_output"],
                               kbz.encode_texts(TEXTS, backbone=classifier.backbone, preprocessor=text_preprocessor,
                                                pooling="pooled"), atol=1e-5)

    expected = tagger.predict_entities(tagged)
    assert sum(map(len, expected)) >= 4 and len(expected[-1]) > 10
    for row, entities in enumerate(expected):
        count = outputs["entities/entity_count"][row]
        assert count == len(entities)
        for column, entity in enumerate(entities):
            assert outputs["entities/entity_text"][row, column].decode() == entity["text"]
            assert outputs["entities/entity_label"][row, column].decode() == entity["label"]
            assert (outputs["entities/start"][row, column], outputs["entities/end"][row, column]) == (
                entity["start"], entity["end"])
            assert outputs["entities/score"][row, column] == pytest.approx(entity["score"], abs=1e-5)
        assert (outputs["entities/start"][row, count:] == -1).all()

    expected = qa.predict_answers([{"question": q, "context": c} for q, c in zip(questions, contexts)])
    for row, answer in enumerate(expected):
        assert outputs["answer/answer"][row].decode() == answer["answer"]
        assert (outputs["answer/start"][row], outputs["answer/end"][row]) == (answer["start"], answer["end"])
        assert outputs["answer/score"][row] == pytest.approx(answer["score"], abs=1e-5)


@pytest.mark.slow
def test_bad_requests_get_defined_results(exported, tmp_path):
    _, classifier_path = exported["classifier"]
    _, tagger_path = exported["tagger"]
    long_text = " ".join(["word"] * 300)
    texts = ["", "   \t", "caf\xe9 \udcff", long_text]
    raw = [t.encode("utf-8", "surrogateescape") for t in texts]  # \udcff -> the invalid byte 0xFF
    outputs = _run_in_fresh_process(tmp_path, [
        {"key": "classify", "path": classifier_path, "signature": "classify",
         "inputs": {"text": [r.decode("latin-1") for r in raw]}, "raw_bytes": True},
        {"key": "entities", "path": tagger_path, "signature": "entities", "inputs": {"text": texts[:2] + [long_text]}},
    ])
    probabilities = outputs["classify/probabilities"]
    assert np.isfinite(probabilities).all() and np.allclose(probabilities.sum(-1), 1.0, atol=1e-5)
    assert outputs["classify/truncated"].tolist() == [False, False, False, True]
    assert outputs["entities/entity_count"][:2].tolist() == [0, 0]


@pytest.mark.subprocess
def test_saved_model_cli_lists_string_signatures_and_runs_them(exported):
    classifier, path = exported["classifier"]
    show = subprocess.run([os.path.join(os.path.dirname(sys.executable), "saved_model_cli"), "show", "--dir", path,
                           "--all"], capture_output=True, text=True, timeout=300, check=True).stdout
    for name, inputs in {"classify": ["text"], "classify_pairs": ["text", "text_b"], "embed": ["text"],
                         "serving_default": ["text"]}.items():
        block = show.split(f"signature_def['{name}']:")[1].split("signature_def[")[0]
        for input_name in inputs:
            assert f"inputs['{input_name}'] tensor_info:\n        dtype: DT_STRING" in block
    run = subprocess.run([os.path.join(os.path.dirname(sys.executable), "keras-bert-zoo"), "saved-model-cli", "run",
                          "--dir", path, "--tag_set", "serve", "--signature_def", "classify",
                          "--input_exprs", f"text={TEXTS[:2]!r}"], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    labels = run.split("Result for output key labels:")[1].split("Result")[0]
    assert labels.split() == [f"[b'{classifier.predict_labels(TEXTS[:2])[0]}'",
                              f"b'{classifier.predict_labels(TEXTS[:2])[1]}']"]


@pytest.mark.slow
def test_warmup_records_are_prediction_logs_for_real_signatures(exported):
    for key in ("classifier", "tagger", "qa"):
        _, path = exported[key]
        logs = read_warmup_requests(os.path.join(path, "assets.extra", "tf_serving_warmup_requests"))
        loaded = kbz.export.load_export(path)
        assert logs
        for log in logs:
            request = log.predict_log.request
            assert request.model_spec.name == os.path.basename(os.path.dirname(path))
            function = loaded.signatures[request.model_spec.signature_name]
            inputs = {name: tf.make_ndarray(proto) for name, proto in request.inputs.items()}
            assert set(inputs) == set(function.structured_input_signature[1])
            function(**{name: tf.constant(value) for name, value in inputs.items()})  # runs as TF Serving would


def test_layout_assets_and_single_copy_of_the_weights(exported):
    classifier, path = exported["classifier"]
    assert path == os.path.join(exported["base"], "sentiment", "1")
    assert sorted(os.listdir(path)) == ["assets", "assets.extra", "fingerprint.pb", "job.json", "saved_model.pb",
                                        "variables"]
    job = json.load(open(os.path.join(path, "job.json")))
    assert (job["command"], job["model"], job["model_name"], job["version"]) == ("export", "BertClassifier",
                                                                                 "sentiment", 1)
    assert job["weights_sha256"] == content_digest([w.numpy() for w in classifier.weights])
    assert job["status"] == "finished" and job["signatures"][0] == "classify" and job["versions"]["tensorflow"]
    vocabulary = open(os.path.join(path, "assets", "vocab.txt"), encoding="utf-8").read().split("\n")[:-1]
    assert vocabulary == classifier.preprocessor.tokenizer.get_vocabulary()
    assert open(os.path.join(path, "assets", "labels.txt")).read().split() == ["neg", "neu", "pos"]
    weight_bytes = sum(w.numpy().nbytes for w in classifier.weights)
    variables = os.path.join(path, "variables")
    stored = sum(os.path.getsize(os.path.join(variables, f)) for f in os.listdir(variables))
    assert weight_bytes <= stored <= 1.05 * weight_bytes


@pytest.mark.slow
def test_a_mixed_precision_export_stores_the_encoders_kernels_in_16_bits(tiny_checkpoint, tmp_path):
    """Every request would cast them: the export holds them cast once, and answers as the Keras model does."""
    from keras_bert_zoo.export.export_for_serving import load_export

    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12,
                                                dtype="mixed_bfloat16")
    path = classifier.export(str(tmp_path), model_name="m")
    stored = tf.train.load_checkpoint(os.path.join(path, "variables", "variables"))
    dtypes = {name: dtype.name for name, dtype in stored.get_variable_to_dtype_map().items()
              if name != "_CHECKPOINTABLE_OBJECT_GRAPH"}
    encoder_layers = [layer for layer in classifier.backbone._flatten_layers() if hasattr(layer, "cast_on_read")]
    # Six dense layers per encoder layer, a kernel and a bias each; one copy of every weight.
    assert list(dtypes.values()).count("bfloat16") == 12 * len(encoder_layers) > 0
    assert len(dtypes) == len(classifier.weights)
    served = load_export(path).signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"]
    np.testing.assert_allclose(served, classifier.predict_proba(TEXTS), atol=1e-2)


@pytest.mark.slow
@pytest.mark.parametrize("problem_type", ["multi_class", "multi_label"])
def test_label_names_that_are_not_strings_are_served_as_labels_txt_spells_them(tiny_checkpoint, tmp_path,
                                                                             problem_type):
    """Star ratings as ints: `labels` was int32 for a single-label export, and a multi-label one failed to trace."""
    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=3, sequence_length=12,
                                                problem_type=problem_type, label_names=[1, 2, 3], threshold=0.0)
    path = classifier.export(str(tmp_path), model_name="stars")
    labels = kbz.export.load_export(path).signatures["serving_default"](text=tf.constant(TEXTS[:2]))["labels"]
    assert labels.dtype == tf.string
    expected = [",".join(map(str, names)) if problem_type == "multi_label" else str(names)
                for names in classifier.predict_labels(TEXTS[:2])]
    assert [label.decode() for label in labels.numpy()] == expected
    assert open(os.path.join(path, "assets", "labels.txt")).read().split() == ["1", "2", "3"]


def _graph_ops(version_dir):
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved_model.ParseFromString(f.read())
    graph = saved_model.meta_graphs[0].graph_def
    return {node.op for node in graph.node} | {node.op for f in graph.library.function for node in f.node_def}


def _ops_outside_core_tensorflow(version_dir):
    return _graph_ops(version_dir) - set(dir(tf.raw_ops))


def test_exports_need_only_the_tf_text_ops_tf_serving_links(exported):
    """TF Serving's builds link TF-Text 2.12 (tensorflow/serving#4057): an op added later, such as
    `TFText>RoundRobinTrim` (what keras-hub's default packer adds), would fail to load there."""
    needed = set().union(*(_ops_outside_core_tensorflow(exported[kind][1]) for kind in ("classifier", "tagger", "qa")))
    assert needed == {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets", "NormalizeUTF8",
                      "RegexSplitWithOffsets"}
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    assert all(f"`{op}`" in readme for op in needed)  # the README lists what a server must have


@pytest.mark.slow
def test_the_readme_names_every_export_that_needs_regex_split(tiny_checkpoint, tmp_path):
    """fill_mask finds the [MASK] literals with RegexSplitWithOffsets, as the tagger splits words: the README named
    the token classifier alone, so a server built for the others looked fit for a pretrainer's export."""
    path = kbz.BertPretrainer.from_preset(tiny_checkpoint, sequence_length=16).export(str(tmp_path), model_name="mlm")
    assert "RegexSplitWithOffsets" in _ops_outside_core_tensorflow(path)
    readme = " ".join(open(os.path.join(ROOT, "README.md"), encoding="utf-8").read().split())
    assert "for the token classifier and the pretrainer (`fill_mask`), `RegexSplitWithOffsets`" in readme


def test_exports_carry_no_gradient_functions(exported):
    """Serving never differentiates: the encoder's written-out gradients (fused_ops) stay out of the graph."""
    from tensorflow.core.protobuf import saved_model_pb2

    for kind in ("classifier", "tagger", "qa"):
        saved_model = saved_model_pb2.SavedModel()
        with open(os.path.join(exported[kind][1], "saved_model.pb"), "rb") as f:
            saved_model.ParseFromString(f.read())
        assert not saved_model.meta_graphs[0].graph_def.library.registered_gradients, kind


@pytest.mark.slow
def test_trained_model_exports_without_optimizer_state(tiny_checkpoint, tmp_path):
    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12)
    classifier.fit(["all work", "no play"] * 4, [0, 1] * 4, epochs=1, batch_size=4, verbose=0)
    assert len(classifier.optimizer.variables) > 2 * len(classifier.weights)  # Adam's slots exist
    path = classifier.export(str(tmp_path), model_name="tiny")
    stored = [shape for name, shape in tf.train.list_variables(os.path.join(path, "variables", "variables"))
              if name != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    assert sorted(map(tuple, stored)) == sorted(tuple(w.shape) for w in classifier.weights)


@pytest.mark.slow
def test_versions_are_numbered_and_never_half_written(tiny_checkpoint, tmp_path, monkeypatch):
    import importlib

    module = importlib.import_module("keras_bert_zoo.export.export_for_serving")
    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12)
    assert classifier.export(str(tmp_path), model_name="m").endswith(os.path.join("m", "1"))
    assert classifier.export(str(tmp_path), model_name="m").endswith(os.path.join("m", "2"))
    with pytest.raises(FileExistsError, match="already exists: pass another version"):
        classifier.export(str(tmp_path), model_name="m", version=2)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(module, "write_warmup_requests", broken)
    with pytest.raises(OSError, match="disk full"):
        classifier.export(str(tmp_path), model_name="m")
    # No version 3, no temporary left; the batching settings sit beside the versions.
    assert sorted(os.listdir(tmp_path / "m")) == ["1", "2", "batching_parameters.txt"]
    with pytest.raises(ValueError, match="model_name 'a/b' must use letters"):
        classifier.export(str(tmp_path), model_name="a/b")


@pytest.mark.slow
def test_the_export_is_shaped_for_the_serving_device_not_the_exporting_machine(tiny_checkpoint, tmp_path,
                                                                               monkeypatch):
    """On a machine with a GPU the encoder runs keras-hub's forward pass (Einsum products); an export for CPU
    serving (the default) must still carry the matmul-by-matmul CPU graph, and `serving_device="gpu"` keras-hub's,
    wherever it is traced. Both answer as the Keras model does; a bad device is refused before tracing."""
    from keras_bert_zoo.export.export_for_serving import load_export
    from keras_bert_zoo.layers import bert_encoder_layer

    classifier = kbz.BertClassifier.from_preset(tiny_checkpoint, num_classes=2, sequence_length=12)
    _sharpen(classifier.output_dense)
    expected = classifier.predict_proba(TEXTS)
    monkeypatch.setattr(bert_encoder_layer, "_tensorflow_sees_a_gpu", lambda: True)
    on_gpu_machine = classifier.export(str(tmp_path), model_name="m")
    for_gpu = classifier.export(str(tmp_path), model_name="m", serving_device="gpu")
    monkeypatch.setattr(bert_encoder_layer, "_tensorflow_sees_a_gpu", lambda: False)
    for_gpu_on_cpu_machine = classifier.export(str(tmp_path), model_name="m", serving_device="gpu")
    assert "Einsum" not in _graph_ops(on_gpu_machine) and "MatMul" in _graph_ops(on_gpu_machine)
    assert "Einsum" in _graph_ops(for_gpu) and "Einsum" in _graph_ops(for_gpu_on_cpu_machine)
    for path, device in ((on_gpu_machine, "cpu"), (for_gpu, "gpu"), (for_gpu_on_cpu_machine, "gpu")):
        assert json.load(open(os.path.join(path, "job.json")))["serving_device"] == device
        probabilities = load_export(path).signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"]
        np.testing.assert_allclose(probabilities, expected, atol=1e-5, err_msg=device)
    with pytest.raises(ValueError, match=r"serving_device must be one of \('cpu', 'gpu'\).*got 'tpu'"):
        classifier.export(str(tmp_path), model_name="m", serving_device="tpu")
    assert sorted(os.listdir(tmp_path / "m")) == ["1", "2", "3", "batching_parameters.txt"]


def test_buckets_follow_the_longest_text():
    assert int(bucket_length(tf.constant([3, 10]), 128)) == 16
    assert int(bucket_length(tf.constant([3, 17]), 128)) == 32
    assert int(bucket_length(tf.constant([100]), 128)) == 128
    assert int(bucket_length(tf.constant([300]), 512)) == 384
    assert int(bucket_length(tf.constant([5]), 12)) == 12


@pytest.mark.slow
def test_cli_exports_a_preset_as_an_embedding_model(default_preset_dir, tmp_path):
    from keras_bert_zoo.cli.main import main

    argv = ["export", "--model", default_preset_dir, "--output", str(tmp_path), "--model_name", "minilm",
            "--max_seq_length", "32", "--serving_device", "gpu"]
    assert main(argv) == 0
    path = str(tmp_path / "minilm" / "1")
    job = json.load(open(os.path.join(path, "job.json")))
    assert job["args"] == {"argv": argv, "model": default_preset_dir} and job["model"] == "BertBackbone"
    assert job["serving_device"] == "gpu" and "Einsum" in _graph_ops(path)  # keras-hub's forward pass, on any machine
    outputs = _run_in_fresh_process(tmp_path, [
        {"key": "embed", "path": str(tmp_path / "minilm"), "signature": "serving_default", "inputs": {"text": TEXTS}},
    ])
    assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    np.testing.assert_allclose(outputs["embed/mean_pooled"],
                               kbz.encode_texts(TEXTS, preset=default_preset_dir, sequence_length=32), atol=1e-5)


@pytest.mark.slow
def test_cli_exports_a_pretrain_output_with_its_masked_lm(tiny_checkpoint, tmp_path):
    """`pretrain` writes OUTPUT_DIR/model, a preset holding the pretrainer: export refused it as "not a fine-tuned
    classifier, NER or QA model", though its --model takes any preset."""
    from keras_bert_zoo.cli.main import main

    pretrainer = kbz.BertPretrainer.from_preset(tiny_checkpoint, sequence_length=16)
    pretrainer.save_to_preset(str(tmp_path / "run" / "model"))
    assert main(["export", "--model", str(tmp_path / "run"), "--output", str(tmp_path / "e"), "--model_name", "bio",
                 "--max_seq_length", "16"]) == 0
    path = str(tmp_path / "e" / "bio" / "1")
    assert json.load(open(os.path.join(path, "job.json")))["model"] == "BertPretrainer"
    served = kbz.export.load_export(path).signatures
    out = served["serving_default"](text=tf.constant(["all [MASK] and no play"]))
    guesses = pretrainer.fill_mask(["all [MASK] and no play"])[0][0]
    assert [t.decode() for t in out["top_tokens"][0, 0].numpy()] == [token for token, _ in guesses]
    np.testing.assert_allclose(out["top_scores"][0, 0], [p for _, p in guesses], atol=1e-6)
    assert "embed" in served


@pytest.mark.slow
def test_fill_mask_matches_googles_masked_lm(tiny_checkpoint, tmp_path):
    """The tiny checkpoint's second reference example, as text: Google's own
    log-probabilities give the expected top tokens and probabilities."""
    reference = json.load(open(os.path.join(tiny_checkpoint, "reference_outputs.json")))
    pretrainer = kbz.BertPretrainer.from_preset(tiny_checkpoint, sequence_length=16)
    vocabulary = pretrainer.preprocessor.tokenizer.get_vocabulary()
    ids = reference["inputs"]["input_ids"][1]  # [CLS] all [MASK] and no [MASK] [SEP] jack [SEP]
    text_a, text_b = " ".join(vocabulary[i] for i in ids[1:6]), vocabulary[ids[7]]
    assert (text_a, text_b) == ("all [MASK] and no [MASK]", "jack")
    log_probs = np.array(reference["outputs"]["masked_lm_log_probs"])[2:4]  # its two masks
    top = np.argsort(-log_probs, axis=-1)[:, :3]

    guesses = pretrainer.fill_mask([(text_a, text_b)], top_k=3)[0]
    assert [[token for token, _ in mask] for mask in guesses] == [[vocabulary[i] for i in row] for row in top]
    np.testing.assert_allclose([[p for _, p in mask] for mask in guesses],
                               np.exp(np.take_along_axis(log_probs, top, -1)), atol=1e-5)

    path = kbz.export.export_for_serving(pretrainer, str(tmp_path), model_name="mlm")
    outputs = _run_in_fresh_process(tmp_path, [
        {"key": "pairs", "path": path, "signature": "fill_mask_pairs", "inputs": {"text": [text_a], "text_b": [text_b]}},
        {"key": "single", "path": path, "signature": "fill_mask", "inputs": {"text": ["[MASK] work", "no mask"]}},
    ])
    assert outputs["pairs/mask_count"].tolist() == [2]
    assert [[t.decode() for t in row[:3]] for row in outputs["pairs/top_tokens"][0]] == [
        [vocabulary[i] for i in row] for row in top]
    np.testing.assert_allclose(outputs["pairs/top_scores"][0, :, :3], np.exp(np.take_along_axis(log_probs, top, -1)),
                               atol=1e-5)
    assert outputs["single/mask_count"].tolist() == [1, 0]
    assert [t.decode() for t in outputs["single/top_tokens"][0, 0]] == [
        token for token, _ in pretrainer.fill_mask(["[MASK] work"])[0][0]]


def _batching_parameters_message():
    """TF Serving's BatchingParameters (session_bundle_config.proto), the fields
    this project writes, built here because the pip packages do not ship it."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, wrappers_pb2

    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(wrappers_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(name="batching.proto", package="tensorflow.serving",
                                              dependency=["google/protobuf/wrappers.proto"])
    message = file.message_type.add(name="BatchingParameters")
    for number, name in enumerate(["max_batch_size", "batch_timeout_micros", "max_enqueued_batches",
                                   "num_batch_threads"], start=1):
        message.field.add(name=name, number=number, type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                          type_name=".google.protobuf.Int64Value")
    pool.Add(file)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("tensorflow.serving.BatchingParameters"))


def test_batching_parameters_beside_the_versions_parse_as_tf_servings_message(exported):
    from google.protobuf import text_format

    with open(os.path.join(exported["base"], "sentiment", "batching_parameters.txt")) as f:
        parameters = text_format.Parse(f.read(), _batching_parameters_message()())
    assert parameters.max_batch_size.value == 32 and parameters.batch_timeout_micros.value == 2000
    assert parameters.num_batch_threads.value == os.cpu_count()


@pytest.mark.parametrize("settings, message", [
    ({"max_batch_size": 0}, "max_batch_size must be a positive integer"),
    ({"batch_timeout_micros": -1}, "batch_timeout_micros must be a non-negative integer"),
    ({"num_batch_threads": 2.5}, "num_batch_threads must be a positive integer"),
    ({"num_batch_threads": 0}, "num_batch_threads must be a positive integer"),
])
def test_bad_batching_settings_are_refused(settings, message):
    with pytest.raises(ValueError, match=message):
        kbz.export.batching_parameters(**settings)
