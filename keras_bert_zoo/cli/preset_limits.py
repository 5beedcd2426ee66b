"""Flags checked against a preset's config, before any model is built."""


def _config(preset):
    from keras_bert_zoo.presets.loader import load_backbone_config

    return load_backbone_config(preset)


def _default_positions():
    import inspect

    from keras_bert_zoo.models.bert_backbone import BertBackbone

    return inspect.signature(BertBackbone).parameters["max_sequence_length"].default


def check_sequence_length(value, preset=None, config=None, flag="--max_seq_length"):
    """Refuse a packed length beyond the model's positions (instead of silently clamping it).

    Args:
        value: the flag's value (None: the command's default, always allowed).
        preset: the preset whose config says the limit; or
        config: a `BertBackbone` config dict (default positions if unset).
    """
    if value is None:
        return
    if config is None:
        config = _config(preset)
    limit = config.get("max_sequence_length", _default_positions())
    if value > limit:
        where = f"the preset {preset}" if preset is not None else "the model config"
        raise ValueError(f"{flag} {value} is more than the {limit} positions of {where}: pass at most {limit}.")


def check_layers(layers, preset, flag="--layers"):
    """Refuse encoder layer indices the preset's model does not have."""
    count = _config(preset)["num_layers"]
    bad = [layer for layer in layers if not -count <= layer < count]
    if bad:
        raise ValueError(f"{flag} {bad[0]} does not exist: the preset {preset} has {count} layers "
                         f"(use {-count}..{count - 1}; -1 is the last).")
