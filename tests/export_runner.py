"""Run in a fresh Python process by the export tests: load exports, call signatures.

Usage: python -m tests.export_runner REQUESTS.json OUTPUT.npz
REQUESTS.json: [{"key", "path", "signature", "inputs": {name: [strings]}[, "raw_bytes": true]}]
("raw_bytes": the strings are latin-1 spellings of arbitrary bytes, e.g. invalid UTF-8.)
"""

import json
import sys

import numpy as np


def main(requests_path, output_path):
    import tensorflow as tf

    from keras_bert_zoo.export import load_export

    results = {}
    loaded = {}
    for request in json.load(open(requests_path)):
        path = request["path"]
        if path not in loaded:
            loaded[path] = load_export(path)
        function = loaded[path].signatures[request["signature"]]
        if request.get("raw_bytes"):
            request["inputs"] = {name: [v.encode("latin-1") for v in values]
                                 for name, values in request["inputs"].items()}
        inputs = {name: tf.constant(values) for name, values in request["inputs"].items()}
        for name, value in function(**inputs).items():
            results[f"{request['key']}/{name}"] = value.numpy()
    np.savez(output_path, **results)


if __name__ == "__main__":
    main(*sys.argv[1:])
