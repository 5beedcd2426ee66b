"""One named entry point of an export: a traced function and a sample request."""

import dataclasses

import tensorflow as tf


@dataclasses.dataclass
class ServingSignature:
    """A signature of the SavedModel.

    Attributes:
        name: the signature key clients name (e.g. `"classify"`).
        function: a `tf.function` with an `input_signature` of named specs.
        example: a small request `{input_name: list}` for the TF Serving
            warm-up file.
    """

    name: str
    function: object
    example: dict

    def concrete_function(self):
        return self.function.get_concrete_function()


def ids_signature(model, example_ids):
    """`predict_ids`: the model's own int32 inputs (`token_ids`, `segment_ids`,
    `padding_mask`, and `mask_positions` for a pretrainer) in, its raw outputs
    out, for clients that tokenize themselves."""
    names = sorted(model.input)
    specs = [tf.TensorSpec([None, None], tf.int32, name=name) for name in names]

    @tf.function(input_signature=specs)
    def predict_ids(*inputs):
        outputs = model(dict(zip(names, inputs)), training=False)
        return outputs if isinstance(outputs, dict) else {"logits": outputs}

    example = {name: example_ids.get(name, example_ids["token_ids"][:, :1] * 0) for name in names}
    return ServingSignature("predict_ids", predict_ids, example)
