"""Flags checked against a preset's config, before any model is built."""

import warnings

from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.preprocessing.special_tokens import shortest_sequence_length
from keras_bert_zoo.utils.packed_length import packed_length


def _config(preset):
    from keras_bert_zoo import load_tensorflow
    from keras_bert_zoo.presets.registry import get_preset_spec
    from keras_bert_zoo.presets.registry import is_preset_name

    if is_preset_name(preset):
        # Its spec says it (a download checks it): a check downloads nothing, and an unknown name is refused
        # before TensorFlow loads.
        return get_preset_spec(preset)["config"]
    load_tensorflow()  # a directory's or handle's config is read by the loader, which imports Keras
    from keras_bert_zoo.presets.loader import load_backbone_config

    return load_backbone_config(preset)


def _default_positions():
    import inspect

    from keras_bert_zoo.models.bert_backbone import BertBackbone

    return inspect.signature(BertBackbone).parameters["max_sequence_length"].default


def check_sequence_length(value, default, preset=None, config=None, segments=1):
    """Refuse a packed length given beyond the model's positions (instead of silently clamping it), or too short
    for any text; return the length the command packs.

    The rule of every command with --max_seq_length and a preset. Without the flag, the command's library cuts
    its default to the positions (`utils.packed_length`, as `Task.from_preset` and `encode_texts` do): a preset
    with fewer positions is not refused for a length nobody gave, and a warning says the length packed. A preset
    named is read even when there is no length to check, so a mistyped name is refused here, before TensorFlow
    loads.

    Args:
        value: the flag's value (None: not given).
        default: the command's length when the flag is not given; None where its input holds the length
            (pretraining records).
        preset: the preset whose config says the limit; or
        config: a `BertBackbone` config dict (default positions if unset). Neither: no limit but the shortest.
        segments: the texts packed in a sequence (2: pretraining's pairs).

    Returns:
        `value`, else the default (None where there is none).
    """
    flag = "--max_seq_length"
    given = value is not None
    if config is None and preset is not None:
        config = _config(preset)
    if not given and default is None:
        return None
    limit = None if config is None else config.get("max_sequence_length") or _default_positions()
    where = f"the preset {preset}" if preset is not None else "the model config"
    if not given:
        value = packed_length(None, default, limit)
        if value != default:
            warnings.warn(f"{flag} not given: {value}, the {limit} positions of {where} (the default, {default}, is "
                          "more).")
    shortest = shortest_sequence_length(segments)  # a piece in each segment, as the library requires
    if value < shortest:
        tokens = "[CLS] a [SEP]" if segments == 1 else "[CLS] a [SEP] b [SEP]"
        raise UsageError(f"{flag} {value} leaves no room for text: {tokens} needs {shortest} positions; "
                         f"pass at least {shortest}.")
    if limit is not None and value > limit:  # given: a default is cut to the positions above
        raise UsageError(f"{flag} {value} is more than the {limit} positions of {where}: pass at most {limit}.")
    return value


def check_layers(layers, preset, flag="--layers"):
    """Refuse encoder layer indices the preset's model does not have, or one layer named twice.

    Args:
        layers: the flag's value.
    """
    count = _config(preset)["num_layers"]
    bad = [layer for layer in layers if not -count <= layer < count]
    if bad:
        raise UsageError(f"{flag} {bad[0]} does not exist: the preset {preset} has {count} layers "
                         f"(pass {flag} within {-count}..{count - 1}; -1 is the last).")
    for i, layer in enumerate(layers):
        # -1 and count - 1 are the same layer: each would be written out as a copy of the other.
        same = next((earlier for earlier in layers[:i] if earlier % count == layer % count), None)
        if same is not None:
            twice = f"layer {layer} twice" if same == layer else \
                f"one layer twice ({same} and {layer}: the preset {preset} has {count} layers)"
            raise UsageError(f"{flag}={','.join(map(str, layers))} names {twice}: pass each layer once.")
