"""The GELU variants BERT checkpoints were trained with (XLA-fused, see fused_ops)."""

import keras

from keras_bert_zoo.layers import fused_ops
from keras_bert_zoo.utils.text_files import untrusted_repr


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
def gelu(x):
    """Exact GELU, `x * Phi(x)` with erf: HF's `gelu`. Its gradient is
    first-order only (see `fused_ops`): for second derivatives use Keras'
    `keras.activations.gelu`."""
    return fused_ops.gelu_erf(x)


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
def gelu_tanh(x):
    """GELU, tanh approximation: google-research/bert and HF's `gelu_new`.
    First-order gradient only, as `gelu`'s (Keras': `keras.activations.gelu(x,
    approximate=True)`)."""
    return fused_ops.gelu_tanh(x)


# Checkpoint activation names -> Keras activations. HF's "gelu" is the exact
# erf form; Google's original code calls its tanh approximation "gelu", so
# the Google converter maps that name to "gelu_tanh" itself.
_HF_ACTIVATIONS = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "relu": "relu",
    "tanh": "tanh",
}


def hf_activation(name):
    """Map an HF `hidden_act` to the name our backbone config takes."""
    if not isinstance(name, str) or name not in _HF_ACTIVATIONS:  # a list is unhashable
        raise ValueError(f"Unsupported hidden_act {untrusted_repr(name)}. Supported: {sorted(_HF_ACTIVATIONS)}.")
    return _HF_ACTIVATIONS[name]


def get_activation(name):
    """Resolve a backbone config activation name to a callable."""
    if name == "gelu":
        return gelu
    if name == "gelu_tanh":
        return gelu_tanh
    return keras.activations.get(name)
