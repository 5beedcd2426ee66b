"""The keras-bert-zoo command line."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_zoo.cli.main import main
from keras_bert_zoo.tasks.sentence_embedding import encode_texts
from tests.conftest import shared_path

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")


def test_presets_table(capsys):
    assert main(["presets"]) == 0
    out = capsys.readouterr().out
    assert "minilm_l6_h384_en_uncased" in out and "scibert_scivocab_base_en_cased" in out
    assert main(["presets", "--json"]) == 0
    specs = json.loads(capsys.readouterr().out)
    assert len(specs) == 10 and all("sources" in s for s in specs)


@pytest.mark.slow
def test_encode_writes_npy_matching_the_api(tmp_path, default_preset_dir):
    texts = tmp_path / "texts.txt"
    texts.write_text("Aspirin inhibits COX-1.\nThe cat sat on the mat.\n")
    out = tmp_path / "vectors.npy"
    code = main(["encode", "--preset", default_preset_dir, "--input_file", str(texts), "--output_file", str(out),
                 "--max_seq_length", "32"])
    assert code == 0
    vectors = np.load(out)
    expected = encode_texts(["Aspirin inhibits COX-1.", "The cat sat on the mat."], preset=default_preset_dir,
                            sequence_length=32)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)


@pytest.mark.slow
def test_mean_pooling_matches_hf_outputs(default_preset_dir):
    """Mean pooling over HF's token vectors (the sentence-transformers recipe)."""
    reference = np.load(os.path.join(FIXTURES, "minilm_hf_reference.npz"))
    from tests.fixtures.make_hf_reference import TEXTS

    ours = encode_texts([TEXTS[0], TEXTS[3]], preset=default_preset_dir, sequence_length=64)
    for row, index in zip(ours, (0, 3)):
        np.testing.assert_allclose(row, reference[f"sequence_output_{index}"].mean(axis=0), atol=1e-5)
    cls = encode_texts([TEXTS[0]], preset=default_preset_dir, pooling="cls", sequence_length=64)
    np.testing.assert_allclose(cls[0], reference["sequence_output_0"][0], atol=1e-5)


def test_text_lines_end_at_newlines_as_an_editor_numbers_them(tmp_path):
    from keras_bert_zoo.cli.text_lines import read_text_lines

    path = tmp_path / "texts.txt"
    path.write_bytes("one\r\ntwo\x0cstill two\u2028and two\nthree\n\n\n".encode("utf-8"))
    assert read_text_lines(str(path), "--input_file") == ["one", "two\x0cstill two\u2028and two", "three"]
    path.write_bytes(b"one\n\r\ntwo\n")
    with pytest.raises(ValueError, match=r"line 2 is empty \(1 empty lines in all\)"):
        read_text_lines(str(path), "--input_file")


def test_encode_texts_without_a_length_packs_a_small_model_s_positions(tiny_checkpoint):
    # The default 128 was refused on the tiny checkpoint's 16 positions, a length nobody gave.
    import keras_bert_zoo as kbz

    text = " ".join(["all work and no play"] * 5)  # more than 16 pieces: truncated to the positions
    backbone = kbz.BertBackbone.from_preset(tiny_checkpoint)
    inputs = kbz.BertPreprocessor(kbz.BertTokenizer.from_preset(tiny_checkpoint), sequence_length=16)([text])
    tokens = backbone(inputs)["sequence_output"].numpy()[0]
    assert inputs["padding_mask"].numpy().sum() == 16
    np.testing.assert_allclose(encode_texts([text], preset=tiny_checkpoint)[0], tokens.mean(axis=0), atol=1e-5)
    with pytest.raises(ValueError, match="sequence_length=17 is longer than the model's 16 position embeddings"):
        encode_texts([text], preset=tiny_checkpoint, sequence_length=17)


def test_encode_errors_are_clear(tmp_path, capsys):
    empty = tmp_path / "empty_lines.txt"
    empty.write_text("fine\n\nalso fine\n")
    assert main(["encode", "--input_file", str(empty)]) == 2
    assert f"--input_file {empty}: line 2 is empty (1 empty lines in all)" in capsys.readouterr().err
    assert main(["encode", "fine", " "]) == 2
    assert "Text 2 is empty" in capsys.readouterr().err
    # extract-features dropped empty lines: the rows after one no longer matched their lines.
    assert main(["extract-features", "--input_file", str(empty), "--output_file", str(tmp_path / "f.jsonl")]) == 2
    assert f"--input_file {empty}: line 2 is empty" in capsys.readouterr().err
    assert not (tmp_path / "f.jsonl").exists()
    assert main(["encode", "--preset", "scibert_uncased", "x"]) == 2
    assert "scibert_scivocab_base_en_uncased" in capsys.readouterr().err
    # Any other name than .npy or .jsonl got JSON lines in silence: np.load could not read "vectors.npz".
    assert main(["encode", "x", "--output_file", str(tmp_path / "vectors.npz")]) == 2
    assert (f"--output_file {tmp_path / 'vectors.npz'}: encode writes a .npy file (a float32 matrix) or a .jsonl "
            "file (JSON lines)") in capsys.readouterr().err
    assert not (tmp_path / "vectors.npz").exists()


@pytest.mark.subprocess
def test_console_script_is_installed():
    result = subprocess.run([os.path.join(os.path.dirname(sys.executable), "keras-bert-zoo"), "--help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "encode" in result.stdout


@pytest.mark.slow
def test_encode_on_a_real_corpus_slice(default_preset_dir):
    """Similar sentences from the shared SST-2 data score higher than unrelated ones."""
    with open(shared_path("glue", "SST-2", "train.tsv"), encoding="utf-8") as f:
        sentences = [line.split("\t")[0] for line in f.read().splitlines()[1:201]]
    vectors = encode_texts(sentences, preset=default_preset_dir, normalize=True, sequence_length=64)
    assert vectors.shape == (200, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    similarity = vectors @ vectors.T
    # The identical-text diagonal is 1; the rest spread well below it.
    assert np.median(similarity[~np.eye(200, dtype=bool)]) < 0.5


@pytest.mark.slow
def test_export_in_bfloat16_or_mixed_stores_16_bit_weights_and_serves_as_float32(tiny_checkpoint, tmp_path, capsys):
    import tensorflow as tf

    from keras_bert_zoo.export.export_for_serving import load_export
    from keras_bert_zoo.presets.loader import load_backbone_config

    dtypes = ("float32", "bfloat16", "mixed_bfloat16", "mixed_float16")
    for dtype in dtypes:
        assert main(["export", "--model", tiny_checkpoint, "--output_dir", str(tmp_path), "--model_name", dtype,
                     "--max_seq_length", "16", "--dtype", dtype]) == 0
    capsys.readouterr()
    stored = {dtype: list(tf.train.load_checkpoint(str(tmp_path / dtype / "1" / "variables" / "variables"))
                          .get_variable_to_dtype_map().values()) for dtype in dtypes}
    assert tf.float32 in stored["float32"] and tf.bfloat16 not in stored["float32"]
    assert tf.bfloat16 in stored["bfloat16"] and tf.float32 not in stored["bfloat16"]
    # Mixed: the encoder's kernels and biases (12 a layer) in bfloat16, the rest (embeddings, LayerNorms) float32.
    assert stored["mixed_bfloat16"].count(tf.bfloat16) == 12 * load_backbone_config(tiny_checkpoint)["num_layers"]
    assert tf.float32 in stored["mixed_bfloat16"]
    assert stored["mixed_float16"].count(tf.float16) == stored["mixed_bfloat16"].count(tf.bfloat16)
    for dtype in dtypes:  # the version says which policy wrote it (the weights' dtypes alone do not)
        assert json.load(open(tmp_path / dtype / "1" / "job.json"))["dtype_policy"] == dtype
    exports = {dtype: load_export(str(tmp_path / dtype)) for dtype in dtypes}
    texts = tf.constant(["Aspirin inhibits COX-1.", "The cat sat."])
    pooled = {dtype: export.signatures["embed"](text=texts)["mean_pooled"].numpy() for dtype, export in exports.items()}
    for dtype in dtypes[1:]:
        np.testing.assert_allclose(pooled[dtype], pooled["float32"], atol=0.05 * np.abs(pooled["float32"]).max())
        assert not np.array_equal(pooled[dtype], pooled["float32"])


@pytest.mark.slow
def test_repeated_encoding_with_loaded_models_traces_once_and_pools_as_by_hand(default_preset_dir, monkeypatch):
    """encode_texts built a new tf.function each call (MiniLM: ~1.2 s of tracing per call on 2 cores, whatever
    the texts). Reference for the values: the backbone's eager outputs, pooled by hand."""
    import keras_bert_zoo as kbz
    from keras_bert_zoo.layers.bert_encoder_layer import BertEncoderLayer

    backbone = kbz.BertBackbone.from_preset(default_preset_dir)
    preprocessor = kbz.BertPreprocessor.from_preset(default_preset_dir, sequence_length=24)
    traced = []
    call = BertEncoderLayer.call

    def counted(self, *args, **kwargs):
        if not tf.executing_eagerly():
            traced.append(self.name)
        return call(self, *args, **kwargs)

    monkeypatch.setattr(BertEncoderLayer, "call", counted)
    texts = ["Aspirin inhibits COX-1.", "The cat sat.", ("A pair", "of texts"), "Fourth, a longer sentence here."]
    for pooling in ("mean", "cls", "pooled"):
        for count in (1, 2, 3, 1):
            batch = [t for t in texts if isinstance(t, str)][:count]
            got = encode_texts(batch, backbone=backbone, preprocessor=preprocessor, pooling=pooling)
            inputs = preprocessor(batch)
            outputs = backbone(inputs)
            mask = inputs["padding_mask"].numpy()[:, :, None]
            expected = {"mean": (outputs["sequence_output"].numpy() * mask).sum(1) / mask.sum(1),
                        "cls": outputs["sequence_output"].numpy()[:, 0],
                        "pooled": outputs["pooled_output"].numpy()}[pooling]
            np.testing.assert_allclose(got, expected, atol=2e-5)
        warmed_up = len(traced)
        mixed = encode_texts(texts, backbone=backbone, preprocessor=preprocessor, pooling=pooling)
        np.testing.assert_allclose(mixed[2:3], encode_texts(texts[2:3], backbone=backbone, preprocessor=preprocessor,
                                                            pooling=pooling), atol=2e-5)
        assert len(traced) == warmed_up
    with pytest.warns(UserWarning, match=r"1 of 1 inputs are longer than sequence_length=24"):
        encode_texts(["word " * 40], backbone=backbone, preprocessor=preprocessor)
