"""One named entry point of an export: a traced function and a sample request."""

import dataclasses

import tensorflow as tf

from keras_bert_zoo.export.row_chunks import run_model


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


def _checked_ids(backbone, inputs):
    """`inputs` checked in the graph against what the backbone can read.

    On GPU an out-of-range id would gather zeros instead of failing, and a
    server does not check shapes: every rule is an assert that fails the
    request with `InvalidArgumentError`, naming the input.
    """
    inputs = {name: tf.ensure_shape(value, [None, None], name=f"{name}_must_be_a_matrix")
              for name, value in inputs.items()}
    token_ids = inputs["token_ids"]
    length = tf.shape(token_ids)[1]
    checks = [tf.debugging.assert_less_equal(length, backbone.max_sequence_length, message=(
        f"token_ids are longer than the {backbone.max_sequence_length} positions of the model")),
              # Heads read [CLS] at position 0: a row needs it (an empty batch needs nothing).
              tf.debugging.Assert((length > 0) | (tf.shape(token_ids)[0] == 0),
                                  ["token_ids must hold at least one token per row ([CLS])"])]
    for name in ("segment_ids", "padding_mask"):
        checks.append(tf.debugging.assert_equal(tf.shape(inputs[name]), tf.shape(token_ids),
                                                message=f"{name} must have the shape of token_ids"))
    limits = {"token_ids": (backbone.vocabulary_size, f"the vocabulary size, {backbone.vocabulary_size}"),
              "segment_ids": (backbone.num_segments, f"the number of segments, {backbone.num_segments}")}
    if "mask_positions" in inputs:
        checks.append(tf.debugging.assert_equal(tf.shape(inputs["mask_positions"])[0], tf.shape(token_ids)[0],
                                                message="mask_positions must have a row per row of token_ids"))
        limits["mask_positions"] = (length, "the length of token_ids")
    for name, (limit, what) in limits.items():
        checks.append(tf.debugging.assert_non_negative(inputs[name], message=f"{name} must be >= 0"))
        checks.append(tf.debugging.assert_less(inputs[name], limit, message=f"{name} must be < {what}"))
    with tf.control_dependencies(checks):
        return {name: tf.identity(value) for name, value in inputs.items()}


def ids_signature(model, example_ids):
    """`predict_ids`: the model's own int32 inputs (`token_ids`, `segment_ids`,
    `padding_mask`, and `mask_positions` for a pretrainer) in, its raw outputs
    (floats as float32) out, for clients that tokenize themselves. Ids outside the model's
    tables, positions past the text, or shapes that differ are refused."""
    names = sorted(model.input)
    specs = [tf.TensorSpec([None, None], tf.int32, name=name) for name in names]
    backbone = getattr(model, "backbone", model)

    # The functional model's symbolic outputs give the structure; floats are served as float32, as every string
    # signature serves them (under a mixed policy the symbolic dtypes are the compute dtype, not always the real one).
    output_signature = tf.nest.map_structure(
        lambda t: tf.TensorSpec(t.shape, tf.float32 if tf.as_dtype(t.dtype).is_floating else t.dtype), model.output)

    @tf.function(input_signature=specs)
    def predict_ids(*inputs):
        outputs = run_model(model, _checked_ids(backbone, dict(zip(names, inputs))), output_signature)
        return outputs if isinstance(outputs, dict) else {"logits": outputs}

    example = {name: example_ids.get(name, example_ids["token_ids"][:, :1] * 0) for name in names}
    return ServingSignature("predict_ids", predict_ids, example)
