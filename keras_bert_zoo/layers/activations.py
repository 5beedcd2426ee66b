"""The GELU variants BERT checkpoints were trained with."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert_zoo")
def gelu_tanh(x):
    """GELU, tanh approximation: google-research/bert and HF `gelu_new`."""
    return keras.activations.gelu(x, approximate=True)


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
    if name not in _HF_ACTIVATIONS:
        raise ValueError(
            f"Unsupported hidden_act '{name}' in the checkpoint config. "
            f"Supported: {sorted(_HF_ACTIVATIONS)}."
        )
    return _HF_ACTIVATIONS[name]


def get_activation(name):
    """Resolve a backbone config activation name to a callable."""
    if name == "gelu_tanh":
        return gelu_tanh
    if name == "gelu":
        # Keras' default GELU is the exact erf form.
        return keras.activations.gelu
    return keras.activations.get(name)
