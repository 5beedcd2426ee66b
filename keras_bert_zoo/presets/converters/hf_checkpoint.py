"""Read Hugging Face-format BERT directories (config.json + weights + vocab.txt)."""

import json
import os
import re

import numpy as np

from keras_bert_zoo.layers.activations import hf_activation
from keras_bert_zoo.presets.converters.checkpoint import Checkpoint
from keras_bert_zoo.presets.converters.checkpoint import infer_lowercase
from keras_bert_zoo.presets.converters.checkpoint import read_vocabulary
from keras_bert_zoo.presets.converters.torch_pickle import load_torch_state_dict
from keras_bert_zoo.presets.errors import CheckpointError

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")


def is_hf_checkpoint_dir(directory):
    return os.path.isfile(os.path.join(directory, "config.json")) and any(
        os.path.isfile(os.path.join(directory, f)) for f in WEIGHT_FILES
    )


def hf_config_to_backbone(config, source):
    model_type = config.get("model_type", "bert")
    if model_type != "bert":
        raise CheckpointError(f"{source} holds a '{model_type}' model, not BERT.")
    if config.get("position_embedding_type", "absolute") != "absolute":
        raise CheckpointError(f"{source}: only absolute position embeddings are supported.")
    return {
        "vocabulary_size": config["vocab_size"],
        "num_layers": config["num_hidden_layers"],
        "num_heads": config["num_attention_heads"],
        "hidden_dim": config["hidden_size"],
        "intermediate_dim": config["intermediate_size"],
        "dropout": config.get("hidden_dropout_prob", 0.1),
        "max_sequence_length": config.get("max_position_embeddings", 512),
        "num_segments": config.get("type_vocab_size", 2),
        "layer_norm_epsilon": config.get("layer_norm_eps", 1e-12),
        "hidden_activation": hf_activation(config.get("hidden_act", "gelu")),
        "initializer_range": config.get("initializer_range", 0.02),
    }


_LAYER = re.compile(r"encoder\.layer\.(\d+)\.")


def hf_name_to_google(key, value):
    """Map one HF state-dict entry to `(google_name, array)`, or None to skip."""
    if key.endswith("position_ids") or key == "cls.predictions.decoder.weight":
        return None
    name = key
    for prefix in ("bert.", "model."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    if name in ("cls.predictions.bias", "cls.predictions.decoder.bias"):
        return "cls/predictions/output_bias", value
    if name.startswith("cls.seq_relationship."):
        # HF Linear weight [2, hidden] is already Google's output_weights layout.
        return "cls/seq_relationship/output_" + ("weights" if name.endswith("weight") else "bias"), value
    name = _LAYER.sub(lambda m: f"encoder.layer_{m.group(1)}.", name)
    parts = name.split(".")
    leaf, path = parts[-1], "/".join(parts[:-1])
    if not name.startswith("cls."):
        path = "bert/" + path
    if "LayerNorm" in parts:
        return f"{path}/{'gamma' if leaf in ('weight', 'gamma') else 'beta'}", value
    if "embeddings" in parts[-2]:
        return path, value
    if leaf == "weight":
        return f"{path}/kernel", value.T  # torch Linear stores [out, in]
    return f"{path}/bias", value


def load_hf_weights(directory):
    """Read the weights, safetensors first, as Google-named float32 arrays."""
    safetensors_path = os.path.join(directory, "model.safetensors")
    if os.path.isfile(safetensors_path):
        from safetensors import SafetensorError
        from safetensors.numpy import load_file

        try:
            state = load_file(safetensors_path)
        except (SafetensorError, OSError, ValueError) as e:
            raise CheckpointError(
                f"Cannot read {safetensors_path}: {e}. The file is corrupt or "
                "truncated: download it again."
            ) from e
    else:
        state = load_torch_state_dict(os.path.join(directory, "pytorch_model.bin"))
    weights = {}
    for key, value in state.items():
        mapped = hf_name_to_google(key, value)
        if mapped is not None:
            weights[mapped[0]] = np.asarray(mapped[1], dtype=np.float32)
    return weights


def read_hf_checkpoint(directory):
    """Read an HF-format directory into a `Checkpoint`.

    The directory needs `config.json`, `vocab.txt` and `model.safetensors`
    or `pytorch_model.bin` (read without torch). `do_lower_case` comes from
    `tokenizer_config.json` when present, else from the vocabulary.
    """
    config_path = os.path.join(directory, "config.json")
    vocab_path = os.path.join(directory, "vocab.txt")
    if not os.path.isfile(vocab_path):
        raise CheckpointError(f"{directory} has no vocab.txt: a BERT checkpoint needs its WordPiece vocabulary.")
    try:
        with open(config_path, encoding="utf-8") as f:
            config = hf_config_to_backbone(json.load(f), directory)
    except (json.JSONDecodeError, KeyError) as e:
        raise CheckpointError(f"{config_path} is not a valid BERT config.json: {e}") from e
    vocabulary = read_vocabulary(vocab_path, config["vocabulary_size"], directory)
    lowercase = infer_lowercase(vocabulary)
    tokenizer_config = os.path.join(directory, "tokenizer_config.json")
    if os.path.isfile(tokenizer_config):
        with open(tokenizer_config, encoding="utf-8") as f:
            lowercase = json.load(f).get("do_lower_case", lowercase)
    return Checkpoint(config, vocabulary, lowercase, directory, lambda: load_hf_weights(directory))
