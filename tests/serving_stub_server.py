"""A minimal stand-in for TensorFlow Serving over our exports: gRPC `Predict` and REST `:predict`.

TensorFlow Serving is not installable from PyPI; this serves the two calls
our README and examples/serving_clients.py make. It loads
`EXPORT_BASE/<model name>` (highest version) and calls the requested
signature. REST takes TF Serving's row (`instances` -> `predictions`) and
columnar (`inputs` -> `outputs`) formats. Prints "serving" once it listens.

    python -m tests.serving_stub_server EXPORT_BASE GRPC_PORT [REST_PORT]
"""

import json
import os
import re
import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import grpc  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow_serving.apis import predict_pb2  # noqa: E402
from tensorflow_serving.apis import prediction_service_pb2_grpc  # noqa: E402

from keras_bert_zoo.export.export_for_serving import load_export  # noqa: E402


class Models:
    """Exports loaded on first use, by model name."""

    def __init__(self, export_base):
        self._export_base = export_base
        self._loaded = {}
        self._lock = threading.Lock()

    def run(self, name, signature_name, inputs):
        with self._lock:
            if name not in self._loaded:
                self._loaded[name] = load_export(os.path.join(self._export_base, name))
        signature = self._loaded[name].signatures[signature_name or "serving_default"]
        return {key: value.numpy() for key, value in signature(**inputs).items()}


class PredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, models):
        self._models = models

    def Predict(self, request, context):
        inputs = {key: tf.constant(tf.make_ndarray(proto)) for key, proto in request.inputs.items()}
        response = predict_pb2.PredictResponse()
        response.model_spec.CopyFrom(request.model_spec)
        outputs = self._models.run(request.model_spec.name, request.model_spec.signature_name, inputs)
        for key, value in outputs.items():
            response.outputs[key].CopyFrom(tf.make_tensor_proto(value))
        return response


def _json_ready(value):
    """Arrays as JSON lists; strings as text, as TF Serving writes them."""
    if value.dtype.kind in "SO":
        return tf.nest.map_structure(lambda b: b.decode("utf-8"), value.tolist())
    return value.tolist()


def rest_handler(models):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            match = re.fullmatch(r"/v1/models/([^/:]+)(?:/versions/\d+)?:predict", self.path)
            if not match:
                return self._reply(404, {"error": f"unknown path {self.path}"})
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if "instances" in body:  # row format: one dict (or value) per example
                rows = body["instances"]
                inputs = {k: [row[k] for row in rows] for k in rows[0]} if isinstance(rows[0], dict) else {"text": rows}
            else:
                inputs = body["inputs"]
            outputs = models.run(match.group(1), body.get("signature_name"),
                                 {k: tf.constant(v) for k, v in inputs.items()})
            outputs = {k: _json_ready(v) for k, v in outputs.items()}
            if "instances" in body:
                count = len(body["instances"])
                return self._reply(200, {"predictions": [{k: v[i] for k, v in outputs.items()} for i in range(count)]})
            return self._reply(200, {"outputs": outputs})

        def _reply(self, status, payload):
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args):  # quiet
            pass

    return Handler


def main(export_base, grpc_port, rest_port=None):
    models = Models(export_base)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(PredictionService(models), server)
    server.add_insecure_port(f"localhost:{grpc_port}")
    server.start()
    if rest_port is not None:
        rest = ThreadingHTTPServer(("localhost", rest_port), rest_handler(models))
        threading.Thread(target=rest.serve_forever, daemon=True).start()
    print("serving", flush=True)
    server.wait_for_termination()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else None)
