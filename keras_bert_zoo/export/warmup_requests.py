"""TF Serving's warm-up file: real `PredictionLog` records, one per signature.

TF Serving replays `assets.extra/tf_serving_warmup_requests` when it loads a
version, so the first client request does not pay for graph initialisation.
"""

import tensorflow as tf


def warmup_log(model_name, signature_name, inputs):
    """A `PredictionLog` holding a `PredictRequest` for `signature_name`."""
    from tensorflow_serving.apis import predict_pb2
    from tensorflow_serving.apis import prediction_log_pb2

    request = predict_pb2.PredictRequest()
    request.model_spec.name = model_name
    request.model_spec.signature_name = signature_name
    for name, values in inputs.items():
        request.inputs[name].CopyFrom(tf.make_tensor_proto(values))
    return prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))


def write_warmup_requests(path, model_name, signatures):
    """Write one warm-up record per signature (its example request) to `path`."""
    with tf.io.TFRecordWriter(path) as writer:
        for signature in signatures:
            writer.write(warmup_log(model_name, signature.name, signature.example).SerializeToString())


def read_warmup_requests(path):
    """The `PredictionLog` records of a warm-up file."""
    from tensorflow_serving.apis import prediction_log_pb2

    logs = []
    for record in tf.data.TFRecordDataset(path):
        logs.append(prediction_log_pb2.PredictionLog.FromString(record.numpy()))
    return logs
