"""`keras-bert-zoo saved-model-cli`: TensorFlow's saved_model_cli with the TF-Text ops loaded.

The exports tokenize inside the graph with TF-Text ops, which TensorFlow's own
`saved_model_cli` does not register, so its `run` (and the function listing of
`show --all`) fail on them. This runs the same tool after registering them.
"""

import sys


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "saved-model-cli",
        help="TensorFlow's saved_model_cli (show, run, ...) with TF-Text ops registered.",
        description="Arguments are passed to saved_model_cli, e.g. "
                    "`keras-bert-zoo saved-model-cli run --dir EXPORT/1 --tag_set serve "
                    "--signature_def classify --input_exprs 'text=[\"Great film.\"]'`.",
        add_help=False,
    )
    parser.add_argument("arguments", nargs="*")
    parser.set_defaults(run=run)


def run(args):
    import tensorflow_text  # noqa: F401  (registers the ops the exported graphs use)
    from tensorflow.python.tools import saved_model_cli

    sys.argv = ["saved_model_cli", *args.arguments]
    return saved_model_cli.main()
