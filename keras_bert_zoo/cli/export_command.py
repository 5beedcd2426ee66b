"""`keras-bert-zoo export`: a fine-tuned model (or any preset) to a TF Serving version."""

import os


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "export",
        help="Export a model as a TF Serving SavedModel that takes raw text.",
        description="Write EXPORT_BASE/<model_name>/<version>/ with string signatures "
                    "(tokenization inside the graph), assets and warm-up requests.",
    )
    parser.add_argument("--model", required=True,
                        help="A `finetune` output directory (or its model/), a saved task preset, or any "
                             "preset (exported as an embedding model).")
    parser.add_argument("--output", required=True, help="EXPORT_BASE: the directory TF Serving's --model_base_path "
                                                        "points above.")
    parser.add_argument("--version", type=int, help="Version number (default: one above the highest present).")
    parser.add_argument("--model_name", "--model-name", help="Default: the task's name (e.g. bert_classifier).")
    parser.add_argument("--max_seq_length", "--max-seq-length", type=int, default=128,
                        help="Packed length for a bare preset's embedding export.")
    parser.add_argument("--overwrite", action="store_true", help="Replace an existing version.")
    parser.set_defaults(run=run)


def _load(model, max_seq_length):
    from keras_bert_zoo.cli.finetune_command import _load_task
    from keras_bert_zoo.models.bert_backbone import BertBackbone
    from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_zoo.presets.preset_io import TASK_CONFIG_FILE
    from keras_bert_zoo.training.finetune import MODEL_DIR

    if os.path.isfile(os.path.join(model, MODEL_DIR, TASK_CONFIG_FILE)):
        model = os.path.join(model, MODEL_DIR)
    if os.path.isfile(os.path.join(model, TASK_CONFIG_FILE)):
        return _load_task(model), None
    backbone = BertBackbone.from_preset(model)
    return backbone, BertPreprocessor.from_preset(model, sequence_length=min(max_seq_length,
                                                                             backbone.max_sequence_length))


def run(args):
    from keras_bert_zoo.export.export_for_serving import export_for_serving

    model, preprocessor = _load(args.model, args.max_seq_length)
    path = export_for_serving(model, args.output, version=args.version, model_name=args.model_name,
                              preprocessor=preprocessor, overwrite=args.overwrite)
    print(path)
