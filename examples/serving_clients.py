"""Query a model served by TensorFlow Serving over REST and gRPC, with raw text.

Export a fine-tuned model (or any preset) and serve it first:

    keras-bert-zoo export --model runs/glue_mrpc --output_dir exports --model_name mrpc   # -> exports/mrpc/1
    docker run -p 8500:8500 -p 8501:8501 -v "$PWD/exports/mrpc:/models/mrpc" -e MODEL_NAME=mrpc tensorflow/serving

then send the same inputs both ways (the answers must agree):

    python examples/serving_clients.py --model_name mrpc --signature_name classify_pairs \\
        --text "He said hi." --text_b "He greeted them."
    python examples/serving_clients.py --model_name qa --signature_name answer \\
        --input question="Who ran?" --input context="Ann ran to the park."

The REST client needs only the standard library; the gRPC one uses
tensorflow-serving-api (installed with keras_bert_zoo).
"""

import argparse
import json
import urllib.error
import urllib.request

import numpy as np


def predict_rest(address, model_name, signature_name, inputs, timeout=10.0):
    """TF Serving's REST `:predict` in the columnar format: `{input: [values]}` -> `{output: array}`."""
    body = json.dumps({"signature_name": signature_name, "inputs": inputs}).encode()
    request = urllib.request.Request(f"http://{address}/v1/models/{model_name}:predict", data=body,
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            outputs = json.load(response)["outputs"]
    except urllib.error.HTTPError as e:  # TF Serving explains a bad request in the body
        raise SystemExit(f"REST {e.code} from {address}: {e.read().decode(errors='replace')}") from None
    except urllib.error.URLError as e:
        raise SystemExit(_no_server(address, e.reason, model_name, "--rest_address")) from None
    # A signature with one output answers with that output alone.
    return {name: np.array(value) for name, value in outputs.items()} if isinstance(outputs, dict) else np.array(outputs)


def _no_server(address, reason, model_name, flag):
    return (f"No server answers at {address} ({reason}). Start TensorFlow Serving on your export first, e.g. "
            f"docker run -p 8500:8500 -p 8501:8501 -v \"$PWD/exports/{model_name}:/models/{model_name}\" "
            f"-e MODEL_NAME={model_name} tensorflow/serving, or point {flag} at your server.")


def predict_grpc(address, model_name, signature_name, inputs, timeout=10.0):
    """The `PredictionService.Predict` RPC: `{input: [values]}` -> `{output: array}`."""
    import grpc
    import tensorflow as tf
    from tensorflow_serving.apis import predict_pb2
    from tensorflow_serving.apis import prediction_service_pb2_grpc

    with grpc.insecure_channel(address) as channel:
        request = predict_pb2.PredictRequest()
        request.model_spec.name, request.model_spec.signature_name = model_name, signature_name
        for name, values in inputs.items():
            request.inputs[name].CopyFrom(tf.make_tensor_proto(values))
        try:
            response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(request, timeout=timeout)
        except grpc.RpcError as e:
            if e.code() != grpc.StatusCode.UNAVAILABLE:
                raise SystemExit(f"gRPC {e.code().name} from {address}: {e.details()}") from None
            raise SystemExit(_no_server(address, e.details(), model_name, "--grpc_address")) from None
    return {name: tf.make_ndarray(proto) for name, proto in response.outputs.items()}


def _plain(values):
    """An output as JSON-ready lists, text as text."""
    values = np.asarray(values)
    if values.dtype.kind in "SO":
        return np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v), otypes=[object])(
            values).tolist()
    return values.tolist()


def _same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind in "SUO" or b.dtype.kind in "SUO":
        return _plain(a) == _plain(b)
    return np.allclose(a, b, atol=1e-4)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--model_name", required=True, help="The name the server serves the export under.")
    parser.add_argument("--signature_name", default="serving_default")
    parser.add_argument("--rest_address", default="localhost:8501")
    parser.add_argument("--grpc_address", default="localhost:8500")
    parser.add_argument("--text", action="append", help="A text (repeat for a batch).")
    parser.add_argument("--text_b", action="append", help="The second text of each pair.")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE",
                        help="Any other input, e.g. question=... and context=... (repeat for a batch).")
    args = parser.parse_args(argv)
    inputs = {}
    for item in args.input:
        name, sep, value = item.partition("=")
        if not sep:
            parser.error(f"--input {item}: expected NAME=VALUE")
        inputs.setdefault(name, []).append(value)
    inputs.update({name: values for name, values in (("text", args.text), ("text_b", args.text_b)) if values})
    if not inputs:
        parser.error("nothing to send: give --text (and --text_b) or --input NAME=VALUE")
    counts = {name: len(values) for name, values in inputs.items()}
    if len(set(counts.values())) > 1:
        parser.error(f"every input needs one value per example; got {counts}")
    rest = predict_rest(args.rest_address, args.model_name, args.signature_name, inputs)
    grpc = predict_grpc(args.grpc_address, args.model_name, args.signature_name, inputs)
    if not isinstance(rest, dict):
        rest = {name: rest for name in grpc}
    print(json.dumps({name: _plain(grpc[name]) for name in sorted(grpc)}))
    differ = [name for name in grpc if name not in rest or not _same(rest[name], grpc[name])]
    if differ:
        raise SystemExit(f"REST and gRPC answers differ in {differ}.")
    print("REST and gRPC agree.")


if __name__ == "__main__":
    main()
