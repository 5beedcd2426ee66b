"""`keras-bert-zoo export`: a fine-tuned model (or any preset) to a TF Serving version."""

import os

from keras_bert_zoo.cli.flag_types import add_flag
from keras_bert_zoo.cli.flag_types import local_path
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.library_defaults import given
from keras_bert_zoo.cli.library_defaults import library_default
from keras_bert_zoo.cli.usage_error import UsageError


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "export",
        help="Export a model as a TF Serving SavedModel that takes raw text.",
        description="Write EXPORT_BASE/<model_name>/<version>/ with string signatures "
                    "(tokenization inside the graph), assets and warm-up requests.",
    )
    parser.add_argument("--model", required=True,
                        help="A fine-tuned model: a `finetune` --output_dir, or its model/ (as evaluate and "
                             "predict take it); a `pretrain` --output_dir or its model/ (exported with fill_mask); "
                             "or any preset (exported as an embedding model; one fine-tuned with transformers, a "
                             "BertForSequenceClassification, ...ForTokenClassification or ...ForQuestionAnswering "
                             "directory or hf:// handle, as that task, with its head).")
    add_flag(parser, "--output_dir", "--output", dest="output", required=True, type=local_path,
             help="EXPORT_BASE: the directory TF Serving's --model_base_path points above.")
    parser.add_argument("--version", type=positive_int,
                        help="Version number (default: one above the highest present).")
    parser.add_argument("--model_name", help="Default: the task's name (e.g. bert_classifier).")
    parser.add_argument("--max_seq_length", type=positive_int,
                        help="Packed length for a pretrained model, a bare preset or one fine-tuned with "
                             "transformers: at most its positions (default: "
                             f"{library_default('tasks.task', 'Task', 'default_sequence_length')}; a transformers "
                             "question answerer: "
                             f"{library_default('tasks.bert_question_answerer', 'BertQuestionAnswerer', 'default_sequence_length')}"
                             "; cut to the model's positions). A `finetune` model exports at its own length.")
    parser.add_argument("--dtype", choices=("float32", "bfloat16", "mixed_bfloat16", "mixed_float16"),
                        help="The export's weights and compute (default: the model's own). bfloat16 halves the "
                             "export and ran 1.3-1.9x faster on a CPU with AMX (amx_bf16); on CPUs without AMX it "
                             "is slower. mixed_bfloat16 computes in bfloat16 as well but keeps the embeddings and "
                             "LayerNorm weights in float32 (for a CPU, --serving_device cpu, the encoder's kernels "
                             "are stored in bfloat16; for a GPU in float32, as Keras keeps them). mixed_float16: "
                             "likewise in float16, for GPUs.")
    parser.add_argument("--serving_device", choices=("cpu", "gpu"),
                        help=default_help("The device TF Serving runs the export on, whichever machine exports it: "
                                          "the encoder's graph is shaped for it.", "export.export_for_serving",
                                          "export_for_serving", "serving_device"))
    parser.add_argument("--overwrite", action="store_true", help="Replace the existing version --version names.")
    parser.set_defaults(run=run)


def _load(model, max_seq_length, dtype):
    from keras_bert_zoo.cli.finetune_command import _load_task
    from keras_bert_zoo.cli.finetune_command import saved_task_config
    from keras_bert_zoo.cli.finetune_command import fine_tuned_model_dir
    from keras_bert_zoo.cli.preset_limits import check_sequence_length
    from keras_bert_zoo.models.bert_backbone import BertBackbone
    from keras_bert_zoo.presets.errors import PresetNotFoundError
    from keras_bert_zoo.presets.loader import load_backbone_config
    from keras_bert_zoo.presets.loader import saved_task_class
    from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
    from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer
    from keras_bert_zoo.tasks.task import Task

    saved = fine_tuned_model_dir(model)
    # `pretrain` saves its model as `finetune` does: it exports with its masked-LM head (it was refused).
    pretrained = saved is not None and issubclass(saved_task_class(saved), BertPretrainer)
    if saved is not None and not pretrained:
        if max_seq_length is not None:
            raise UsageError(f"--max_seq_length is for a pretrained model's or a bare preset's export; {model} is a "
                             "fine-tuned model, which exports at the sequence length it was fine-tuned with: drop the "
                             "flag.")
        if hasattr(saved_task_class(saved), "predict_entities"):
            from keras_bert_zoo.tasks.bert_token_classifier import check_entity_tags

            # Tags that name no entity are refused by task.json, before the weights load and the graph traces.
            check_entity_tags(saved_task_config(saved).get("label_names"), "The served signature entities")
        return _load_task(model, dtype=dtype), None
    preset = saved or model
    if saved is None and os.path.isdir(model):
        from keras_bert_zoo.cli.finetune_command import unfinished_job

        unfinished = unfinished_job(model, fine_tuned=False)
        if unfinished:
            raise UsageError(f"--model {model} {unfinished}.")
    try:
        config = load_backbone_config(preset)
    except PresetNotFoundError as e:
        raise UsageError(f"--model {model} is neither a fine-tuned model (a `finetune` --output_dir or its "
                         f"model/) nor a preset: {e}") from None
    task_cls = saved_task_class(preset)
    # A pretrained model exports with its masked-LM head; a task fine-tuned elsewhere (an HF
    # BertForTokenClassification) with its head (it was exported as an embedding model, its head dropped); any
    # other preset (a converted checkpoint's pretraining heads too) as an embedding model.
    exported = BertPretrainer if pretrained else \
        task_cls if task_cls is not None and not issubclass(task_cls, BertPretrainer) else None
    length = check_sequence_length(max_seq_length, (exported or Task).default_sequence_length, preset,
                                   config=config)
    if exported is not None:
        return exported.from_preset(preset, sequence_length=length, dtype=dtype), None
    return BertBackbone.from_preset(model, dtype=dtype), BertPreprocessor.from_preset(model, sequence_length=length)


def run(args):
    from keras_bert_zoo.export.export_for_serving import check_model_name
    from keras_bert_zoo.export.export_for_serving import check_version
    from keras_bert_zoo.export.export_for_serving import default_model_name
    from keras_bert_zoo.export.export_for_serving import export_for_serving
    from keras_bert_zoo.utils.atomic import check_file_can_be_written

    # Before loading and tracing: a bad name or version, an unwritable base or a version already there fails in a
    # second, not after ~25 s.
    if args.overwrite and args.version is None:  # ignored in silence: a new number replaces nothing
        raise UsageError("--overwrite replaces the version --version names; without it the export takes the next free "
                         "number: pass --version, or drop --overwrite.")
    if args.version is not None:
        try:
            check_version(args.version)
        except ValueError as e:
            raise UsageError(f"--version: {e}") from None
    if args.model_name is not None:
        check_model_name(args.model_name)
        if args.version is not None:
            _check_new_version(os.path.join(args.output, args.model_name, str(args.version)), args.overwrite)
    # Checked, not made: a --model refused below left an empty EXPORT_BASE (export_for_serving makes it).
    check_file_can_be_written(os.path.join(args.output, args.model_name or "model"))
    model, preprocessor = _load(args.model, args.max_seq_length, args.dtype)
    if args.version is not None:  # the name is the task's: known once loaded
        _check_new_version(os.path.join(args.output, args.model_name or default_model_name(model), str(args.version)),
                           args.overwrite)
    path = export_for_serving(model, args.output, version=args.version, model_name=args.model_name,
                              preprocessor=preprocessor, overwrite=args.overwrite, **given(args, "serving_device"),
                              job_args={"argv": args.argv, "model": args.model})
    print(path)


def _check_new_version(version_dir, overwrite):
    if os.path.exists(version_dir) and not overwrite:
        raise UsageError(f"--version: {version_dir} already exists: pass another --version (or none, for the next "
                         "number), or --overwrite to replace it.")
