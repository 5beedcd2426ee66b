"""`keras-bert-zoo finetune`, `evaluate` and `predict` (classification, NER, QA)."""

import contextlib
import json
import math
import os
import re
import sys
import warnings

from keras_bert_zoo.cli.flag_types import add_boolean_flag
from keras_bert_zoo.cli.flag_types import add_flag
from keras_bert_zoo.cli.flag_types import existing_file
from keras_bert_zoo.cli.flag_types import file_or_stdin
from keras_bert_zoo.cli.flag_types import finite_float
from keras_bert_zoo.cli.flag_types import fraction
from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import output_file
from keras_bert_zoo.cli.flag_types import positive_float
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.flag_types import whole_epochs
from keras_bert_zoo.cli.library_defaults import default_help
from keras_bert_zoo.cli.library_defaults import given
from keras_bert_zoo.cli.library_defaults import library_constant
from keras_bert_zoo.cli.library_defaults import library_default
from keras_bert_zoo.cli.text_lines import read_text_lines
from keras_bert_zoo.cli.output_job import add_output_arguments
from keras_bert_zoo.cli.output_job import fingerprint_files_read
from keras_bert_zoo.cli.output_job import flag_names
from keras_bert_zoo.cli.output_job import output_job
from keras_bert_zoo.cli.strategy_flags import add_strategy_arguments
from keras_bert_zoo.cli.strategy_flags import strategy_from_flags
from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.preprocessing.question_lengths import question_lengths
from keras_bert_zoo.utils.text_files import loads_json
from keras_bert_zoo.utils.text_files import untrusted_repr
from keras_bert_zoo.utils.text_files import utf8_errors_named

TASKS = ("classify", "ner", "qa")
# The flags (dests) of the files a job's fingerprint holds by their contents.
FILE_FLAGS = ("train", "eval")


READ = ("data.readers", "read_classification")
QA = ("tasks.bert_question_answerer", "BertQuestionAnswerer.__init__")
QA_STRIDE = ("preprocessing.question_lengths", "DEFAULT_DOC_STRIDE")
QA_QUERY = ("preprocessing.question_lengths", "DEFAULT_MAX_QUERY_LENGTH")
# The packed length of each --task without --max_seq_length: its task class's default_sequence_length.
TASK_LENGTH = {"classify": ("tasks.task", "Task"), "ner": ("tasks.task", "Task"),
               "qa": ("tasks.bert_question_answerer", "BertQuestionAnswerer")}
FINETUNE = ("training.finetune", "finetune")
CONLL = ("data.conll", "read_conll")
# Read from the library's source, so that --model is checked before TensorFlow loads.
MODEL_DIR = ("training.finetune", "MODEL_DIR")
HF_WEIGHT_FILES = ("presets.converters.hf_checkpoint", "WEIGHT_FILES")
GOOGLE_INDEX_GLOB = ("presets.converters.google_checkpoint", "CHECKPOINT_INDEX_GLOB")
TASK_CONFIG_FILE = ("presets.preset_io", "TASK_CONFIG_FILE")
# transformers' BERT classes with no head of a fine-tuned task (the others are left for the load to judge).
HF_PRETRAINED = ("BertModel", "BertForPreTraining", "BertForMaskedLM", "BertLMHeadModel")
# task.json's `module` and `class_name` of a `pretrain` model (Keras' serialization of the class).
PRETRAINER_CLASS = ("keras_bert_zoo.tasks.bert_pretrainer", "BertPretrainer")
MODEL_HELP = ("A fine-tuned model: a `finetune` --output_dir, or its model/; or one fine-tuned elsewhere: a "
              "transformers BertForSequenceClassification, ...ForTokenClassification or ...ForQuestionAnswering "
              "(its directory or hf:// handle), or a run_classifier.py or run_squad.py checkpoint directory.")


def _add_data_options(parser):
    parser.add_argument("--format", choices=("glue", "jsonl", "csv"),
                        help="Data format (default: guessed from the file; glue when --glue_task is given). csv: "
                             "a header, then rows separated by tabs (.tsv, or a header with a tab; quotes are "
                             "text, as in run_classifier.py) or commas (fields may be quoted).")
    parser.add_argument("--glue_task", help="GLUE task of a TSV, e.g. MRPC (implies --format glue; default: the "
                                            "file's folder name).")
    parser.add_argument("--text_column", help=default_help("csv/jsonl: column of the text.", *READ, "text_column"))
    parser.add_argument("--text_b_column", help="csv/jsonl: column of the second text of a pair.")
    parser.add_argument("--label_column", help=default_help("csv/jsonl: column of the label.", *READ, "label_column"))
    parser.add_argument("--skip_bad_rows", action="store_true", help="Skip (and count) bad rows instead of failing.")
    parser.add_argument("--word_column", type=int, help=default_help("NER: column of the word (CoNLL files).",
                                                                     *CONLL, "word_column"))
    parser.add_argument("--tag_column", type=int, help=default_help("NER: column of the tag (CoNLL files).",
                                                                    *CONLL, "tag_column"))


def add_parser(subparsers):
    from keras_bert_zoo import DEFAULT_PRESET

    parser = subparsers.add_parser(
        "finetune", help="Fine-tune a preset on a labelled file.",
        description="Fine-tune a preset for classification (GLUE TSV, CSV, JSON lines), NER (CoNLL) or extractive "
                    "QA (SQuAD JSON). Writes OUTPUT_DIR/model (load it with evaluate, predict, export), "
                    "OUTPUT_DIR/metrics.json and OUTPUT_DIR/backup (rerun the command to resume).")
    parser.add_argument("--task", choices=TASKS, required=True)
    parser.add_argument("--preset", default=DEFAULT_PRESET, help="Preset name, directory, hf:// handle or URL.")
    add_flag(parser, "--train_file", "--train", dest="train", type=existing_file, required=True, help="Training file.")
    add_flag(parser, "--eval_file", "--eval", dest="eval", type=existing_file,
             help="Evaluation file (default: hold out --eval_fraction of --train_file).")
    parser.add_argument("--eval_fraction", type=fraction, default=0.1)
    parser.add_argument("--max_train_examples", type=positive_int,
                        help="Train on N of the training examples only (quick runs), drawn at random by --seed: "
                             "the first N rows of a file sorted by label would be one class.")
    parser.add_argument("--max_eval_examples", type=positive_int,
                        help="Score N of the evaluation examples only (quick runs), drawn at random by --seed: the "
                             "held-out tenth of a large file can take longer than training on a few.")
    add_output_arguments(parser, help="Output directory (model/, metrics.json, backup/, job.json).")
    parser.add_argument("--problem_type", choices=("multi_class", "multi_label", "regression"),
                        help=default_help("classify: multi_class (one label per example), multi_label (any "
                                          "number: in a CSV/TSV label column as names separated by commas, "
                                          "\"sports,politics\", empty for none; in JSON lines as a list, "
                                          "[\"sports\", \"politics\"]) or regression (a number).",
                                          "tasks.bert_classifier", "BertClassifier.__init__", "problem_type"))
    add_flag(parser, "--num_train_epochs", "--epochs", dest="epochs", type=whole_epochs,
             help=default_help("", *FINETUNE, "epochs"))
    add_flag(parser, "--train_batch_size", "--batch_size", dest="batch_size", type=positive_int,
             help=default_help("", *FINETUNE, "batch_size"))
    parser.add_argument("--learning_rate", type=positive_float,
                        help=f"Peak learning rate (default: the task's: "
                             f"{library_default('tasks.task', 'Task', 'default_learning_rate')} for classify and "
                             f"ner, {library_default('tasks.bert_question_answerer', 'BertQuestionAnswerer', 'default_learning_rate')} for qa).")
    parser.add_argument("--max_seq_length", type=positive_int,
                        help=f"Packed length, at most the preset's positions (default: the task's: "
                             f"{_default_sequence_length('classify')} for classify and ner, "
                             f"{_default_sequence_length('qa')} for qa).")
    parser.add_argument("--doc_stride", type=positive_int,
                        help=f"QA: pieces between context windows; a window steps at most the context it holds, "
                             f"as run_squad.py's (default: {library_constant(*QA_STRIDE)}; on a model too small for "
                             "the default question, half the context a window holds).")
    parser.add_argument("--max_query_length", type=positive_int,
                        help=f"QA: question pieces kept (default: {library_constant(*QA_QUERY)}, or a quarter of "
                             "--max_seq_length where that leaves no context).")
    parser.add_argument("--n_best_size", type=positive_int,
                        help=default_help("QA: spans considered per question.", *QA, "n_best_size"))
    parser.add_argument("--max_answer_length", type=positive_int,
                        help=default_help("QA: longest answer, in pieces.", *QA, "max_answer_length"))
    add_boolean_flag(parser, "--version_2_with_negative", help="QA: SQuAD v2.0 (may not answer).")
    parser.add_argument("--null_score_diff_threshold", type=finite_float,
                        help=default_help("QA v2.0: answer only above this score margin.", *QA,
                                          "null_score_diff_threshold"))
    parser.add_argument("--seed", type=non_negative_int, default=0, help="Seed of the split and the training.")
    add_strategy_arguments(parser)
    _add_data_options(parser)
    parser.set_defaults(check=check_finetune, run=run_finetune)
    parser.set_defaults(flag_names=flag_names(parser))

    evaluate = subparsers.add_parser("evaluate", help="Score a fine-tuned model on a labelled file.")
    evaluate.add_argument("--model", required=True, help=MODEL_HELP)
    add_flag(evaluate, "--eval_file", "--eval", dest="eval", type=existing_file, required=True, help="Labelled file.")
    add_flag(evaluate, "--eval_batch_size", "--batch_size", dest="batch_size", type=positive_int, default=32)
    add_flag(evaluate, "--output_file", "--output", dest="output", type=output_file,
             help="Write the metrics JSON here.")
    _add_data_options(evaluate)
    evaluate.set_defaults(check=check_model_flag, run=run_evaluate)

    predict = subparsers.add_parser("predict", help="Label texts with a fine-tuned model.")
    predict.add_argument("--model", required=True, help=MODEL_HELP)
    add_flag(predict, "--input_file", "--input", dest="input", type=file_or_stdin, required=True,
             help="One text per line (text_a<TAB>text_b for pairs); "
                  'for QA, JSON lines {"question": ..., "context": ...}; \'-\' for stdin.')
    add_flag(predict, "--output_file", "--output", dest="output", type=output_file,
             help="JSON lines output (default: stdout).")
    add_flag(predict, "--predict_batch_size", "--batch_size", dest="batch_size", type=positive_int, default=32)
    predict.set_defaults(check=check_predict, run=run_predict)


def _default_sequence_length(task):
    return library_default(*TASK_LENGTH[task], "default_sequence_length")


@contextlib.contextmanager
def _arguments_as_flags(*names):
    """A reader's errors name its arguments (`tag_column=-1`); on the command line they are flags (`--tag_column
    -1`)."""
    try:
        yield
    except ValueError as e:
        message = re.sub(rf"(?<![-\w])({'|'.join(names)})\b(=?)",
                         lambda m: f"--{m.group(1)}" + (" " if m.group(2) else ""), str(e))
        if message == str(e):
            raise
        raise type(e)(message) from None


def _read_conll(path, args, label_names=None):
    from keras_bert_zoo.data.conll import read_conll

    with _arguments_as_flags("word_column", "tag_column"):
        return read_conll(path, label_names=label_names, **given(args, "word_column", "tag_column"))


def _read(path, args, label_names=None, problem_type=None):
    from keras_bert_zoo.data.readers import guess_format
    from keras_bert_zoo.data.readers import read_classification

    format = args.format
    if args.glue_task:
        if format not in (None, "glue"):
            raise UsageError(f"--glue_task {args.glue_task} reads a GLUE TSV: drop --format {format} "
                             "(or --glue_task).")
        format = "glue"
    multi_label = problem_type == "multi_label"
    if multi_label and (format or guess_format(path)) == "glue":
        raise UsageError(f"{path} is read as a GLUE TSV, with one label per example; --problem_type multi_label "
                         "reads a CSV/TSV (--format csv) or JSON-lines file.")
    with _arguments_as_flags("text_column", "text_b_column", "label_column"):
        data = read_classification(
            path, format=format, glue_task=args.glue_task, label_names=label_names,
            regression=problem_type == "regression", multi_label=multi_label,
            on_error="skip" if args.skip_bad_rows else "raise",
            **given(args, "text_column", "text_b_column", "label_column"),
        )
    if data.skipped:
        warnings.warn(f"--skip_bad_rows: {data.skipped} bad rows of {path} skipped; {len(data)} examples read.")
    return data


def _skipped_rows(args, **examples):
    """`{"train_skipped_rows": n, ...}` for the metrics: the rows of each file `--skip_bad_rows` dropped."""
    if not args.skip_bad_rows:
        return {}
    return {f"{name}_skipped_rows": data.skipped for name, data in examples.items() if data is not None}


def _json_scores(metrics):
    """`metrics` as strict JSON holds them: an undefined score (NaN: a correlation where the gold scores, or the
    predictions, are all one value) is null, with a warning, not the NaN that JSON readers refuse."""
    undefined = [name for name, value in metrics.items() if isinstance(value, float) and math.isnan(value)]
    if undefined:
        warnings.warn(f"{', '.join(undefined)} undefined on the {metrics['eval_examples']} evaluation examples (as a "
                      "correlation is where the gold scores or the predictions are all one value): written as null.")
    return {name: None if name in undefined else value for name, value in metrics.items()}


def _eval_batch_size(args):
    return args.batch_size or library_default(*FINETUNE, "batch_size")


def _split_or_read_eval(args, read, classes=None):
    """`(train, evaluation)`: --train_file, cut to --max_train_examples, and --eval_file or a held-out split of
    --train_file, cut to --max_eval_examples. `classes(examples)`: the classes examples hold, where a task tells classes apart: a cut holding
    one, of training examples holding several, is refused."""
    train = read(args.train)
    if args.eval:
        # Scored against the training file's labels (tags); QA examples have none to share.
        evaluation = read(args.eval, getattr(train, "label_names", None))
    else:
        whole = train
        train, evaluation = train.split(args.eval_fraction, seed=args.seed)
        if not len(evaluation) or not len(train):
            # An empty held-out set would be scored 0.0 after training; an empty training set fails inside fit.
            groups = len(set(whole.split_groups()))
            raise UsageError(f"--eval_fraction {args.eval_fraction} of the {len(whole)} examples of {args.train} "
                             f"leaves {len(train)} to train on and {len(evaluation)} to score"
                             + ("" if groups == len(whole) else
                                f" (questions are held out with their context, and it holds {groups})")
                             + ": pass --eval_file, or another --eval_fraction, or more examples.")
    if args.max_train_examples:
        whole, train = train, train.sample(args.max_train_examples, seed=args.seed)
        held, drawn = (sorted(classes(whole)), sorted(classes(train))) if classes else ([], [])
        if len(drawn) < 2 <= len(held):
            raise UsageError(f"--max_train_examples {args.max_train_examples}: the examples drawn (by --seed "
                             f"{args.seed}) are all of one class, {drawn[0]!r}, where the "
                             f"{len(whole)} training examples of {args.train} hold {len(held)} ({', '.join(held[:5])}"
                             f"{', ...' if len(held) > 5 else ''}): raise --max_train_examples, or pass another "
                             "--seed.")
    if args.max_eval_examples:
        # Drawn after the split, from the held-out side only: no example scored was trained on.
        evaluation = evaluation.sample(args.max_eval_examples, seed=args.seed)
    return train, evaluation


def _finetune_classifier(args):
    if args.eval and not any(getattr(args, flag) is not None for flag in _READ_FLAGS):
        # A GLUE TSV read by its folder's name (glue/SST-2/train.tsv): its dev file copied elsewhere was read as a
        # CSV of columns text / label and refused, where `evaluate` read it by the training file's task.
        task = _glue_task_of_trained(args.eval, [args.train])
        if task is not None:
            args.glue_task = task
            print(f"Reading --eval_file {args.eval} as --train_file: --glue_task {task}.", file=sys.stderr)
    with _file_of_another_task(args.train, args.eval):
        train, evaluation = _split_or_read_eval(
            args, lambda path, names=None: _read(path, args, label_names=names, problem_type=args.problem_type),
            classes=_single_labels if args.problem_type in (None, "multi_class") else None,
        )
    problem_type = args.problem_type
    if train.label_names is None:  # scores, by the reader's own knowledge of the file (GLUE STS-B), as run_glue.py
        if problem_type not in (None, "regression"):
            raise UsageError(f"{args.train} holds GLUE STS-B's similarity scores, not classes: leave out "
                             f"--problem_type {problem_type} (scores are learnt as regression).")
        problem_type = "regression"
    # The labels the examples hold (a GLUE task's file names all of the task's, whichever it holds).
    present = sorted(_single_labels(train)) if problem_type in (None, "multi_class") else None
    if present is not None and len(present) < 2:
        raise UsageError(f"{args.train} holds one label ({(present or train.label_names)[0]!r}): a classifier learns "
                         "to tell two or more apart. Add examples of the others, or --problem_type regression for "
                         "scores.")

    def build():
        from keras_bert_zoo.tasks.bert_classifier import BertClassifier

        return BertClassifier.from_preset(
            args.preset,
            num_classes=1 if problem_type == "regression" else len(train.label_names),
            label_names=train.label_names,
            sequence_length=args.max_seq_length,
            **({"problem_type": problem_type} if problem_type else {}),
        )

    # A held-out split carries its file's count (train's): only an --eval_file has one of its own.
    skipped = _skipped_rows(args, train=train, eval=evaluation if args.eval else None)
    # By name: against names that are numbers ("1".."5", sorted as text) the reader's ids are refused as ambiguous.
    return (build, train.texts, train.y,
            lambda task: {**skipped, **task.evaluate_glue(evaluation, batch_size=_eval_batch_size(args))},
            len(evaluation))


@contextlib.contextmanager
def _file_of_another_task(*paths):
    """A file refused as classification data says so where it looks made for another task: a CoNLL file (refused
    as "no column(s) ['text', 'label'] in the header ['Identification', 'O']") or SQuAD JSON ("missing field(s)
    ['text', 'label']; the row has ['data', 'version']")."""
    from keras_bert_zoo.data.errors import DataFormatError

    try:
        yield
    except DataFormatError as e:
        path = next((path for path in paths if path and str(e).startswith(path)), None)  # the file it names
        task = _task_a_file_looks_made_for(path) if path and os.path.isfile(path) else None
        if task is None:
            raise
        raise DataFormatError(f"{e} It looks like {_LOOKS[task]}: pass --task {task}.") from None


_LOOKS = {"ner": "a CoNLL file (a word and its entity tag per line)", "qa": "a SQuAD JSON file"}


def _task_a_file_looks_made_for(path):
    """"ner" where the first line of `path` is a word and an entity tag, "qa" where it opens as SQuAD JSON; None."""
    from keras_bert_zoo.metrics.conlleval import is_entity_tag

    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(1 << 16)
    if re.match(r'\s*\{\s*"(data|version)"\s*:', head):
        return "qa"
    first = next((line for line in head.splitlines() if line.strip() and not line.startswith("-DOCSTART-")), "")
    fields = first.split("\t") if "\t" in first else first.split()
    return "ner" if len(fields) >= 2 and is_entity_tag(fields[-1].strip()) else None


def _single_labels(examples):
    """The labels single-label examples hold, by name (none for scores)."""
    return set() if examples.label_names is None else set(examples.named_labels())


def _finetune_ner(args):
    train, evaluation = _split_or_read_eval(
        args, lambda path, names=None: _read_conll(path, args, label_names=names),
        classes=lambda examples: {tag for tags in examples.tags for tag in tags},
    )
    if len(train.label_names) < 2:
        raise UsageError(f"{args.train} holds one tag ({train.label_names[0]!r}): a tagger learns entities from their "
                         "B-/I- tags. Is --tag_column the tags' column (CoNLL-2003 and SciERC files hold others)?")

    def build():
        from keras_bert_zoo.tasks.bert_token_classifier import BertTokenClassifier

        return BertTokenClassifier.from_preset(args.preset, label_names=train.label_names,
                                               sequence_length=args.max_seq_length)

    def evaluate(task):
        scores = task.evaluate_entities(evaluation.words, evaluation.tags, _eval_batch_size(args))
        return {"entity_" + k: v for k, v in scores.items()}

    return build, train.words, train.tags, evaluate, len(evaluation)


def _finetune_qa(args):
    from keras_bert_zoo.data.squad import read_squad

    train, evaluation = _split_or_read_eval(args, lambda path, names=None: read_squad(path))
    evaluation.check_unique_ids()  # scored after training: refused now, not once training is done

    def build():
        from keras_bert_zoo.tasks.bert_question_answerer import BertQuestionAnswerer

        return BertQuestionAnswerer.from_preset(
            args.preset, sequence_length=args.max_seq_length,
            **given(args, "doc_stride", "max_query_length", "n_best_size", "max_answer_length",
                    "version_2_with_negative", "null_score_diff_threshold"),
        )

    return build, train, None, lambda task: task.evaluate_squad(evaluation, _eval_batch_size(args)), len(evaluation)


# Each reads and checks --task's data (plain Python: before TensorFlow loads), returning (build the task from
# --preset, x, y, score a task, eval count).
FINETUNERS = {"classify": _finetune_classifier, "ner": _finetune_ner, "qa": _finetune_qa}


def _check_qa_lengths(args, length):
    """The QA flags given must fit the packed length `length`, as the library checks them (those not given are
    fitted to it)."""
    flags = {"sequence_length": "--max_seq_length"}
    try:
        question_lengths(length, args.doc_stride, args.max_query_length,
                         spell=lambda name, value: f"{flags.get(name, '--' + name)} {value}")
    except ValueError as e:
        raise UsageError(str(e)) from None


# Flags that only one task reads; given to another, they would be ignored in silence.
TASK_FLAGS = {
    "classify": ("problem_type", "format", "glue_task", "text_column", "text_b_column", "label_column",
                 "skip_bad_rows"),
    "ner": ("word_column", "tag_column"),
    "qa": ("doc_stride", "max_query_length", "n_best_size", "max_answer_length", "version_2_with_negative",
           "null_score_diff_threshold"),
}


def _check_task_flags(args, task=None, reader=None):
    """Refuse flags that only another task reads (`task`: the one that runs, by default --task; `reader`: how
    the message names it, by default "--task TASK")."""
    task = task or args.task
    reader = reader or f"--task {task}"
    for other, names in TASK_FLAGS.items():
        # `is`, not `in`: 0.0 == False, and --null_score_diff_threshold 0 is given. A command may not have them all.
        given_names = [name for name in names
                       if getattr(args, name, None) is not None and getattr(args, name, None) is not False]
        if given_names and task != other:
            flags = ", ".join(f"--{name}" for name in given_names)
            raise UsageError(f"{flags} {'is' if len(given_names) == 1 else 'are'} for --task {other}; {reader} "
                             f"does not read {'it' if len(given_names) == 1 else 'them'}: leave "
                             f"{'it' if len(given_names) == 1 else 'them'} out.")


def check_finetune(args):
    """The flags against each other and the preset, then the data files (before TensorFlow loads)."""
    from keras_bert_zoo.presets.registry import is_preset_name

    _check_task_flags(args)
    # The job's fingerprint holds the columns' values, as it did when these flags had defaults of their own:
    # a job interrupted then resumes.
    for flag in ("word_column", "tag_column"):
        if getattr(args, flag) is None:
            setattr(args, flag, library_default(*CONLL, flag))
    # Without the flag, from_preset packs its task's default cut to the preset's positions, as checked here. A
    # registered preset's config is its spec (plain Python); a directory's or handle's is read by the loader, which
    # loads TensorFlow: the data are read before it, so that a bad row is refused as fast as with a preset's name.
    named = is_preset_name(args.preset)
    if named:
        _check_lengths(args)
    # The data once the flags hold: a bad row is refused in a second, before TensorFlow starts and before
    # --output_dir is claimed; every worker of a cluster reads its own copy. The files are fingerprinted as they
    # are read: the job records the bytes it trains on, however long TensorFlow takes to load.
    fingerprint_files_read(args, FILE_FLAGS)
    args.inputs_read = FINETUNERS[args.task](args)
    if not named:
        _check_lengths(args)


def _check_lengths(args):
    """--max_seq_length against the preset's positions, and QA's lengths against it."""
    from keras_bert_zoo.cli.preset_limits import check_sequence_length

    length = check_sequence_length(args.max_seq_length, _default_sequence_length(args.task), args.preset)
    if args.task == "qa":
        _check_qa_lengths(args, length)


def run_finetune(args):
    import keras

    from keras_bert_zoo.distribution.chief import claimed_by_chief
    from keras_bert_zoo.distribution.chief import is_chief
    from keras_bert_zoo.distribution.get_strategy import check_global_batch_size
    from keras_bert_zoo.tasks.task import Task
    from keras_bert_zoo.training.finetune import METRICS_FILE
    from keras_bert_zoo.training.finetune import MODEL_DIR
    from keras_bert_zoo.training.finetune import finetune
    from keras_bert_zoo.training.finetune import write_json
    from keras_bert_zoo.utils.job_record import written_results
    from keras_bert_zoo.utils.tf_config import cluster_workers

    # A multi-worker strategy configures TensorFlow's collectives, which must come before any op runs: with a
    # cluster in TF_CONFIG the strategy is made first, and the chief alone claims the (shared) output directory.
    strategy = strategy_from_flags(args) if cluster_workers() else None
    chief = strategy is None or is_chief(strategy)
    with claimed_by_chief(strategy, output_job(args, file_flags=FILE_FLAGS, chief=chief)):
        strategy = strategy or strategy_from_flags(args)
        check_global_batch_size(args.batch_size or library_default(*FINETUNE, "batch_size"), strategy)
        # Before the task is built: its head's initial weights and its dropout layers' seed generators are drawn then.
        keras.utils.set_random_seed(args.seed)
        build, x, y, evaluate, eval_count = args.inputs_read
        print(f"train: {len(x)} examples, eval: {eval_count}", file=sys.stderr)
        # This job trained and saved it, then stopped while scoring (a cluster's other workers read no record:
        # the chief's alone, so there all train again, from the backup).
        scoring = cluster_workers() <= 1 and MODEL_DIR in written_results(args.output)
        with strategy.scope():
            if scoring:
                print(f"Scoring {os.path.join(args.output, MODEL_DIR)} (not training again).", file=sys.stderr)
                task = Task.from_preset(os.path.join(args.output, MODEL_DIR))
            else:
                task = build()
                task.compile(**given(args, "learning_rate"))  # default: the task's (3e-5 for QA, 5e-5 otherwise)
        if not scoring:
            finetune(task, x, y, args.output, seed=args.seed, claim_output_dir=False,
                     **given(args, "epochs", "batch_size"))
        metrics = _json_scores({"task": args.task, "preset": args.preset, "train_examples": len(x),
                                "eval_examples": eval_count, "replicas": strategy.num_replicas_in_sync,
                                **evaluate(task)})
        if chief:
            write_json(os.path.join(args.output, METRICS_FILE), metrics)
    print(json.dumps(metrics, indent=2))


def fine_tuned_model_dir(path):
    """The saved task in `path`: a `finetune` output directory or its model/; None when neither."""
    for directory in (path, os.path.join(path, library_constant(*MODEL_DIR))):
        if os.path.isfile(os.path.join(directory, library_constant(*TASK_CONFIG_FILE))):
            return directory
    return None


def _is_checkpoint_dir(path):
    """Whether the directory `path` holds an HF or Google checkpoint, by its files (before TensorFlow loads)."""
    import glob

    hf = os.path.isfile(os.path.join(path, "config.json")) and any(
        os.path.isfile(os.path.join(path, name)) for name in library_constant(*HF_WEIGHT_FILES))
    return hf or (os.path.isfile(os.path.join(path, "bert_config.json"))
                  and bool(glob.glob(os.path.join(path, library_constant(*GOOGLE_INDEX_GLOB)))))


def unfinished_job(path, fine_tuned=True):
    """Why `path`, a `finetune` / `pretrain` --output_dir (or its backup/ or logs/) with no model/ yet, holds no model:
    a sentence naming its job's status and the fix; None for any other path. Read from job.json, before TensorFlow.
    `fine_tuned`: the command takes a fine-tuned model only (evaluate, predict), not a pretrained one."""
    from keras_bert_zoo.utils.job_record import JOB_FILE
    from keras_bert_zoo.utils.job_record import job_status
    from keras_bert_zoo.utils.job_record import read_job

    path = os.path.normpath(path)
    # The job's own folders only: a model (a preset, a checkpoint) kept elsewhere inside the directory is not it.
    own = (library_constant("training.finetune", "BACKUP_DIR"), library_constant("training.training_logs", "LOGS_DIR"))
    for job_dir in (path, os.path.dirname(path)) if os.path.basename(path) in own else (path,):
        job = read_job(job_dir) if os.path.isfile(os.path.join(job_dir, JOB_FILE)) else None
        if not isinstance(job, dict) or job.get("command") not in ("finetune", "pretrain") or \
                os.path.isdir(os.path.join(job_dir, library_constant(*MODEL_DIR))):
            continue
        command, status = job["command"], job_status(job_dir)
        then = ("then fine-tune its model/ (keras-bert-zoo finetune --preset "
                f"{os.path.join(job_dir, library_constant(*MODEL_DIR))} ...) and pass that --output_dir"
                if command == "pretrain" and fine_tuned else "then pass its --output_dir")
        if status == "running":
            fix = f"wait for it to write {os.path.join(job_dir, library_constant(*MODEL_DIR))}"
            if command == "pretrain" and fine_tuned:
                fix += f", {then}"
        elif status == "finished":
            # Its model/ was removed or moved since: a rerun of the job is refused over its finished results.
            fix = (f"its model/ has been removed or moved since; run the {command} command again with "
                   f"--overwrite_output_dir to train it anew, {then}")
        else:
            fix = (f"run the same keras-bert-zoo {command} command again to resume it (from its backup/, "
                   f"if it wrote one), {then}")
        where = "" if job_dir == path else "inside "
        # A job.json with no status (written by hand, or by an older version) says so, not "None".
        recorded = status if status is not None else "no status recorded"
        return (f"is {where}the --output_dir of a `{command}` job that has not written its model "
                f"({os.path.join(job_dir, JOB_FILE)}: {recorded}): {fix}")
    return None


def _fine_tuned_dir(path):
    """Where the fine-tuned task in `path` is: a `finetune` model's directory, a checkpoint directory or an hf://
    handle or URL (whether either holds a fine-tuned task is known once read); a `UsageError` naming --model when
    it is none of them."""
    from keras_bert_zoo.presets.registry import preset_names

    if path.startswith(("hf://", "http://", "https://")):
        return path
    found = fine_tuned_model_dir(path) if os.path.isdir(path) else None
    if found is None and os.path.isdir(path) and _is_checkpoint_dir(path):
        found = path
    if found is None:
        unfinished = unfinished_job(path) if os.path.isdir(path) else None
        if unfinished:
            raise UsageError(f"--model {path} {unfinished}.")
        problem = ("is a preset, not a fine-tuned model" if path in preset_names() else
                   "is not a fine-tuned model" if os.path.isdir(path) else "does not exist")
        raise UsageError(f"--model {path} {problem}: expected a `finetune` --output_dir or its model/ "
                         f"(with {library_constant(*TASK_CONFIG_FILE)}), or a checkpoint fine-tuned elsewhere (a "
                         "transformers BertFor...Classification or ...QuestionAnswering directory or hf:// handle).")
    return found


def _pretrained_holds(path):
    """What `path` holds where its files name a pretrained BERT, read before TensorFlow loads: a `pretrain` model
    (task.json: BertPretrainer), or a transformers checkpoint whose config.json names a class with no head of a task
    here (BertModel, BertForPreTraining: `HF_PRETRAINED`); else None, and loading the model decides."""
    from keras_bert_zoo.utils.text_files import read_json_object

    task_json, config_json = os.path.join(path, library_constant(*TASK_CONFIG_FILE)), os.path.join(path, "config.json")
    try:
        if os.path.isfile(task_json):
            document = read_json_object(task_json)
            held = (document.get("module"), document.get("class_name"))
            return f"a {PRETRAINER_CLASS[1]!r}" if held == PRETRAINER_CLASS else None
        config = read_json_object(config_json) if os.path.isfile(config_json) else {}
    except (OSError, ValueError):
        return None  # a damaged file is named by the load
    architectures = config.get("architectures")
    if config.get("model_type", "bert") == "bert" and isinstance(architectures, list) and architectures and \
            architectures[0] in HF_PRETRAINED:
        return f"a transformers {architectures[0]} (its config.json's architectures), no task's head"
    return None


def _pretrained_not_fine_tuned(path, found, holds):
    return UsageError(f"--model {path} is a pretrained BERT, not a fine-tuned classifier, NER or QA model: {found} "
                      f"holds {holds}. Fine-tune it first: keras-bert-zoo finetune --preset {found} ...")


def check_model_flag(args):
    """--model is a fine-tuned model's directory, not a pretrained one's where its files say so (before TensorFlow
    loads)."""
    found = _fine_tuned_dir(args.model)
    holds = _pretrained_holds(found) if os.path.isdir(found) else None
    if holds:
        raise _pretrained_not_fine_tuned(args.model, found, holds)


# Names of formats that are not JSON lines: predict wrote JSON lines into preds.csv without a word.
_NOT_JSON_LINES = (".csv", ".tsv", ".npy", ".npz", ".parquet", ".xlsx", ".xls", ".h5", ".pkl", ".pickle")


def check_predict(args):
    """check_model_flag, and an --output_file named for a format predict does not write."""
    if args.output and os.path.splitext(args.output)[1].lower() in _NOT_JSON_LINES:
        raise UsageError(f"--output_file {args.output}: predict writes JSON lines, one object per input line; end "
                         "the name with .jsonl.")
    check_model_flag(args)


def _fine_tuned_task(path):
    """`(directory, task class)` of a fine-tuned task saved by `finetune`, its weights not read yet."""
    from keras_bert_zoo.presets.loader import saved_task_class
    from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer

    found = _fine_tuned_dir(path)
    saved = saved_task_class(found)
    if saved is None or issubclass(saved, BertPretrainer):
        raise _pretrained_not_fine_tuned(path, found, "no task's head" if saved is None else f"a '{saved.__name__}'")
    return found, saved


def _fine_tuned_config(found):
    """`(config, task or None)` of the fine-tuned task in `found`: `finetune`'s model, and a converted download,
    say theirs in `task.json`, read before the weights load (None); a checkpoint read in place is loaded to
    read its `label_names`, `problem_type` and `text_pairs`."""
    from keras_bert_zoo.presets.loader import resolve
    from keras_bert_zoo.tasks.task import Task

    resolved = resolve(found)
    if resolved.saved_dir is not None:
        return saved_task_config(resolved.saved_dir), None
    task = Task.from_preset(found)
    return {name: getattr(task, name) for name in ("label_names", "problem_type", "text_pairs")
            if hasattr(task, name)}, task


def _load_task(path, **kwargs):
    """A fine-tuned task saved by `finetune`, as the class it was saved from
    (`**kwargs` for `Task.from_preset`, e.g. `dtype`)."""
    from keras_bert_zoo.tasks.task import Task

    return Task.from_preset(_fine_tuned_task(path)[0], **kwargs)


def run_evaluate(args):
    from keras_bert_zoo.tasks.task import Task

    # The file is read and checked against what the model was saved with (task.json) before its weights load.
    found, task_class = _fine_tuned_task(args.model)
    kind = "qa" if hasattr(task_class, "evaluate_squad") else "ner" if hasattr(task_class, "evaluate_entities") \
        else "classify"
    # A classification file's options, given for an NER or QA model, were ignored in silence.
    _check_task_flags(args, kind, reader=f"{args.model} (a {kind} model)")
    saved, loaded = _fine_tuned_config(found)
    with _eval_file_for(kind, args):
        data, scores = _read_eval_file(args, kind, found, saved)
    metrics = _json_scores({"eval_examples": len(data), **scores(loaded or Task.from_preset(found))})
    if args.output:
        from keras_bert_zoo.training.finetune import write_json

        write_json(args.output, metrics)
    print(json.dumps(metrics, indent=2))


# What each kind of model is scored on: said beside a row of --eval_file that cannot be read, which is often a
# file of another task ("expected one word and one tag, found word 'Quality'": GLUE's MRPC, for a tagger).
_EVAL_FILES = {"classify": "a classifier: it is scored on GLUE TSV, CSV or JSON-lines files of texts and labels",
               "ner": "a tagger: it is scored on CoNLL files (a word and its tag per line)",
               "qa": "a question answerer: it is scored on SQuAD JSON files"}


@contextlib.contextmanager
def _eval_file_for(kind, args):
    from keras_bert_zoo.data.errors import DataFormatError

    try:
        yield
    except DataFormatError as e:
        raise DataFormatError(f"{e} (--model {args.model} is {_EVAL_FILES[kind]}.)") from None


def _read_eval_file(args, kind, found, saved):
    """`(examples, scores(task))` of --eval_file for a model of `kind` saved with config `saved`."""
    if kind == "qa":
        from keras_bert_zoo.data.squad import read_squad

        data = read_squad(args.eval)
        data.check_unique_ids()

        def scores(task):
            return task.evaluate_squad(data, args.batch_size)
    elif kind == "ner":
        from keras_bert_zoo.tasks.bert_token_classifier import check_entity_tags

        check_entity_tags(saved.get("label_names"), "evaluate")  # before the file is read against the placeholders
        data = _read_conll(args.eval, args, label_names=saved.get("label_names"))

        def scores(task):
            return {"entity_" + k: v for k, v in task.evaluate_entities(data.words, data.tags, args.batch_size).items()}
    else:
        from keras_bert_zoo.tasks.bert_classifier import text_form_name

        _read_as_finetune_did(args, found)
        data = _read_scored(args, saved)
        pairs, text_pairs = isinstance(data.texts[0], tuple), saved.get("text_pairs")
        if text_pairs is not None and pairs != text_pairs:
            raise UsageError(f"--eval_file {args.eval} holds {text_form_name(pairs)} but {args.model} was "
                             f"fine-tuned on {text_form_name(text_pairs)}: score it on data of the task it learnt.")

        def scores(task):
            return {**_skipped_rows(args, eval=data), **task.evaluate_glue(data, batch_size=args.batch_size)}
    return data, scores


_READ_FLAGS = ("format", "glue_task", "text_column", "text_b_column", "label_column")


def _read_as_finetune_did(args, found):
    """Given none of the data flags, evaluate reads --eval_file with those the `finetune` job that saved `found`
    read its files with (its job.json): a model trained on --text_column review was scored on a column 'text'.
    A GLUE TSV finetune read by its folder's name (no flag) makes it --glue_task for an --eval_file elsewhere."""
    from keras_bert_zoo.utils.job_record import JOB_FILE
    from keras_bert_zoo.utils.job_record import read_job

    if any(getattr(args, flag) is not None for flag in _READ_FLAGS) or \
            os.path.basename(os.path.normpath(found)) != library_constant(*MODEL_DIR):
        return
    job_dir = os.path.dirname(os.path.normpath(found))
    job = read_job(job_dir)
    if job is None and os.path.lexists(os.path.join(job_dir, JOB_FILE)):
        print(f"{os.path.join(job_dir, JOB_FILE)} cannot be read (damaged?), so --eval_file is read with the default "
              f"flags: give {', '.join('--' + flag for flag in _READ_FLAGS)} as finetune was given them.",
              file=sys.stderr)
    job = job or {}
    recorded = job.get("args") if job.get("command") == "finetune" else None
    taken = {flag: recorded.get(flag) for flag in _READ_FLAGS if isinstance(recorded, dict)
             and isinstance(recorded.get(flag), str)}
    if isinstance(recorded, dict) and not taken and args.eval:
        # The paths as finetune's cwd named them: its fingerprint's (absolute); the args' relative ones were read
        # from evaluate's cwd.
        fingerprint = job.get("fingerprint") if isinstance(job.get("fingerprint"), dict) else {}
        trained = [entry.get("path") for entry in (fingerprint.get("--train_file"), fingerprint.get("--eval_file"))
                   if isinstance(entry, dict) and isinstance(entry.get("path"), str)] or \
            [recorded.get(key) for key in ("train", "eval")
             if isinstance(recorded.get(key), str) and os.path.isabs(recorded.get(key))]
        task = _glue_task_of_trained(args.eval, trained)
        if task is not None:
            taken = {"glue_task": task}
    if taken:
        vars(args).update(taken)
        print(f"Reading --eval_file as finetune read its files: "
              f"{' '.join(f'--{flag} {value}' for flag, value in taken.items())} (from "
              f"{os.path.join(job_dir, JOB_FILE)}).", file=sys.stderr)


def _glue_task_of_trained(path, trained):
    """The GLUE task the files `trained` were read as by their folders' names (glue/MRPC/train.tsv), for `path`,
    a TSV elsewhere (mrpc_dev.tsv) that would be read as a CSV with columns text / label and refused; None where
    that is not so (a .csv or JSON-lines file is no GLUE TSV: it is read as it is)."""
    from keras_bert_zoo.data.glue import infer_glue_task
    from keras_bert_zoo.data.readers import guess_format

    if infer_glue_task(path) is not None or not path.endswith(".tsv") or not os.path.isfile(path) or \
            guess_format(path) != "csv":
        return None
    tasks = {infer_glue_task(trained_path) for trained_path in trained if trained_path.endswith(".tsv")} - {None}
    return tasks.pop() if len(tasks) == 1 else None


def _read_scored(args, saved):
    """The --eval_file of a classifier `saved` (its config), its labels checked before the weights load against
    those the classifier reads (`class_labels.class_index`: its names, and ids written as text unless its names
    are numbers)."""
    from keras_bert_zoo.data.errors import UnknownLabelError
    from keras_bert_zoo.tasks.class_labels import class_index
    from keras_bert_zoo.tasks.class_labels import unreadable_label

    names = saved.get("label_names")
    index = None if names is None else class_index(names, len(names))
    try:
        data = _read(args.eval, args, label_names=None if index is None else list(index),
                     problem_type=saved.get("problem_type"))
    except UnknownLabelError as e:
        # The reader's "expected one of" listed the ids read as text among the names, as if names.
        raise unreadable_label(f"--eval_file {args.eval}, line {e.line}: the label {untrusted_repr(e.label)}", names,
                               len(names)) from None
    # A GLUE file's labels are its task's, whatever the model reads.
    unknown = [name for name in data.label_names or () if index is not None and name not in index]
    if unknown:
        raise unreadable_label(f"--eval_file {args.eval}: the label {untrusted_repr(unknown[0])}", names, len(names))
    return data


def _classification_records(task, texts, batch_size):
    outputs = task.predict_proba(texts, batch_size=batch_size)
    names = task.label_names or list(range(task.num_classes))
    for text, row in zip(texts, outputs):
        if task.problem_type == "regression":
            yield {"text": text, "value": float(row[0])}
            continue
        # Every label's probability, by name (a list would leave its order to be guessed).
        probabilities = {str(name): round(float(p), 6) for name, p in zip(names, row)}
        if task.problem_type == "multi_label":  # the chosen labels: those at or above the threshold
            yield {"text": text, "labels": [name for name, p in zip(names, row) if p >= task.threshold],
                   "probabilities": probabilities}
        else:
            best = int(row.argmax())
            yield {"text": text, "label": names[best], "score": float(row[best]), "probabilities": probabilities}


# What predict writes beside each question: an input field of one of these names would be overwritten.
_ANSWER_FIELDS = ("answer", "start", "end", "score")


_ONE_QUESTION_A_LINE = 'a question answering model reads one {"question": ..., "context": ...} per line.'


def _question(path, number, line):
    where = f"--input_file {path}, line {number}"
    try:
        example = loads_json(line, where)
    except ValueError as e:
        raise UsageError(f"{e} {_ONE_QUESTION_A_LINE.capitalize()}") from None
    if not isinstance(example, dict):
        raise UsageError(f"{where}: not a JSON object ({untrusted_repr(example)}); {_ONE_QUESTION_A_LINE}")
    for key in ("question", "context"):
        if key not in example:
            raise UsageError(f"{where}: no {key!r} (found {sorted(example)[:8]}); {_ONE_QUESTION_A_LINE}")
        if not isinstance(example[key], str):
            raise UsageError(f"{where}: {key!r} is {untrusted_repr(example[key])} ({type(example[key]).__name__}), "
                             "not a string.")
    clash = [key for key in _ANSWER_FIELDS if key in example]
    if clash:
        raise UsageError(f"{where}: predict writes its answer to {clash}, which the line holds: rename "
                         f"{'it' if len(clash) == 1 else 'them'} (e.g. gold_{clash[0]}).")
    return example


def _read_questions(path):
    """A question answering model's `--input_file`: JSON lines, each checked and named by its line."""
    if path == "-":
        text = sys.stdin.read().removeprefix("\ufeff")  # as utf-8-sig reads a file
    else:
        with utf8_errors_named(path), open(path, encoding="utf-8-sig") as f:
            text = f.read()
    try:
        whole = loads_json(text, path)
    except ValueError:  # JSON lines, or no JSON: each line is checked below
        whole = None
    if isinstance(whole, dict) and isinstance(whole.get("data"), list) and "question" not in whole:
        raise UsageError(f"--input_file {path} is a SQuAD file ({{'data': ...}}); predict reads JSON lines, one "
                         '{"question": ..., "context": ...} per line (kbz.data.read_squad reads SQuAD files).')
    # JSON lines, cut at "\n" only (splitlines would cut at U+2028 inside a string too); blank ones separate nothing.
    questions = [_question(path, number, line.removesuffix("\r")) for number, line in enumerate(text.split("\n"), 1)
                 if line.strip()]
    if not questions:
        raise UsageError(f"--input_file {path} holds no question: a question answering model reads one "
                         '{"question": ..., "context": ...} per line.')
    return questions


def saved_task_config(model_dir):
    """The config a fine-tuned task was saved with (its `task.json`), read before it loads: `label_names`,
    a classifier's `problem_type` and `text_pairs` (see `BertClassifier`; absent where not recorded)."""
    from keras_bert_zoo.presets import preset_io

    config = preset_io.read_json(model_dir, preset_io.TASK_CONFIG_FILE).get("config", {})
    return config if isinstance(config, dict) else {}


def _classifier_texts(path, lines, text_pairs):
    """A classifier's `--input_file` lines: single texts, or `(text_a, text_b)` pairs (text_a<TAB>text_b).

    A model fine-tuned on single texts reads each line whole, tabs and all; one fine-tuned on pairs needs one tab
    on every line; one that has not recorded its form reads pairs where every line holds one tab."""
    if text_pairs is False:
        if lines and all("\t" in line for line in lines):
            # A labelled TSV (a GLUE dev file) given to predict: its header and label columns become text.
            warnings.warn(f"--input_file {path}: every line holds a tab, as a TSV's rows do (line 1: {lines[0]!r:.80}); "
                          "the model, fine-tuned on single texts, reads each line whole as one text, tabs and all. "
                          "Give the texts alone (one per line), or score a labelled file with keras-bert-zoo evaluate.")
        return lines
    fields = [line.split("\t") for line in lines]
    if text_pairs:
        for number, parts in enumerate(fields, 1):
            if len(parts) != 2:
                raise UsageError(f"--input_file {path}, line {number}: {len(parts) - 1} tabs, where the model, "
                                 "fine-tuned on sentence pairs, needs one per line: text_a<TAB>text_b.")
        return [tuple(parts) for parts in fields]
    for number, parts in enumerate(fields, 1):
        if len(parts) > 2:
            raise UsageError(f"--input_file {path}, line {number}: {len(parts)} tab-separated fields; a line is one "
                             "text, or a pair as text_a<TAB>text_b.")
    pairs = [len(parts) == 2 for parts in fields]
    if any(pairs) and not all(pairs):
        number = pairs.index(not pairs[0]) + 1

        def kind(pair):
            return "a pair (text_a<TAB>text_b)" if pair else "one text (no tab)"

        raise UsageError(f"--input_file {path}, line {number} is {kind(not pairs[0])} but line 1 is "
                         f"{kind(pairs[0])}: a file holds one kind.")
    return [tuple(parts) for parts in fields] if pairs and pairs[0] else lines


def run_predict(args):
    from keras_bert_zoo.tasks.task import Task

    found, task_class = _fine_tuned_task(args.model)
    saved, loaded = _fine_tuned_config(found)
    if hasattr(task_class, "predict_answers"):
        examples = _read_questions(args.input)
    else:
        lines = read_text_lines(args.input, "--input_file")
        if hasattr(task_class, "predict_entities"):
            from keras_bert_zoo.tasks.bert_token_classifier import check_entity_tags

            check_entity_tags(saved.get("label_names"), "predict")  # before a saved model's weights load
        else:
            texts = _classifier_texts(args.input, lines, saved.get("text_pairs"))
    task = loaded or Task.from_preset(found)
    if hasattr(task, "predict_answers"):
        records = ({**e, **a} for e, a in zip(examples, task.predict_answers(examples, args.batch_size)))
    elif hasattr(task, "predict_entities"):
        records = ({"text": t, "entities": e} for t, e in zip(lines, task.predict_entities(lines, args.batch_size)))
    else:
        records = _classification_records(task, texts, args.batch_size)
    output = [json.dumps(record) for record in records]
    if args.output:
        from keras_bert_zoo.utils.atomic import atomic_file

        with atomic_file(args.output, "w") as f:
            f.writelines(line + "\n" for line in output)
        print(f"Wrote {len(output):,} predictions to {args.output}.", file=sys.stderr)
    else:
        print("\n".join(output))
