"""`embed`: raw text to sentence vectors, for any backbone."""

import tensorflow as tf

from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import pack_texts
from keras_bert_zoo.export.row_chunks import chunk_rows
from keras_bert_zoo.export.row_chunks import map_row_chunks
from keras_bert_zoo.export.serving_signature import ServingSignature
from keras_bert_zoo.layers.pooling import pool


def embedding_signature(backbone, preprocessor):
    """Signature `embed`: `text` -> `pooled_output` (BERT's tanh pooler) and
    `mean_pooled` (average of the real tokens' vectors), plus `truncated`.

    Args:
        backbone: a `BertBackbone`.
        preprocessor: a `BertPreprocessor` (its `sequence_length` caps the text).
    """
    vector = tf.TensorSpec([None, backbone.hidden_dim], tf.float32)

    def vectors(inputs):
        outputs = backbone(inputs, training=False)
        return {"pooled_output": outputs["pooled_output"], "mean_pooled": pool(outputs, inputs["padding_mask"], "mean")}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    def embed(text):
        inputs, truncated = pack_texts(preprocessor, *checked_request(text=text))
        outputs = map_row_chunks(vectors, inputs, {"pooled_output": vector, "mean_pooled": vector},
                                 chunk_rows(tf.shape(inputs["token_ids"])[1]))
        return {**outputs, "truncated": truncated}

    return ServingSignature("embed", embed, {"text": ["The patient was given aspirin."]})
