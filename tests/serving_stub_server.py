"""A minimal gRPC PredictionService over our exports, for running the README's client code.

TensorFlow Serving is not installable from PyPI; this stands in for its
`Predict` RPC only: it loads `EXPORT_BASE/<model_spec.name>` (highest version)
and calls the requested signature. Prints "serving" once it listens.

    python -m tests.grpc_stub_server EXPORT_BASE PORT
"""

import os
import sys
from concurrent import futures

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import grpc  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402
from tensorflow_serving.apis import prediction_service_pb2_grpc  # noqa: E402

from keras_bert_zoo.export.export_for_serving import load_export  # noqa: E402


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, export_base):
        self._export_base = export_base
        self._models = {}

    def Predict(self, request, context):
        name = request.model_spec.name
        if name not in self._models:
            self._models[name] = load_export(os.path.join(self._export_base, name))
        signature = self._models[name].signatures[request.model_spec.signature_name or "serving_default"]
        inputs = {key: tf.constant(tf.make_ndarray(proto)) for key, proto in request.inputs.items()}
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        for key, value in signature(**inputs).items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value.numpy()))
        return response


def main(export_base, port):
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionService(export_base), server)
    server.add_insecure_port(f"localhost:{port}")
    server.start()
    print("serving", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
