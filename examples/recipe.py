"""What the recipes in examples/ share: `--quick` defaults and flags passed on only when given.

Each recipe passes the library only the flags you give, so the library's
defaults (BERT's recipes) apply to the rest; `--quick` fills unset flags with
small values that run on the offline default preset and the project's shared
data in a minute or two.
"""

import argparse
import os

from keras_bert_zoo.cli.flag_types import non_negative_int
from keras_bert_zoo.cli.flag_types import positive_float
from keras_bert_zoo.cli.flag_types import positive_int
from keras_bert_zoo.cli.flag_types import whole_epochs

SHARED_DATA = os.environ.get(
    "KERAS_BERT_ZOO_SHARED_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))


def recipe_parser(description):
    """An argument parser with the flags every recipe has."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--preset", help="Preset name, directory, hf:// handle or URL (default: the offline "
                                         "default preset, kbz.DEFAULT_PRESET).")
    parser.add_argument("--output_dir", help="Where the model, metrics.json and logs go (default: "
                                             "runs/RECIPE, or runs/RECIPE_quick with --quick).")
    parser.add_argument("--overwrite_output_dir", action="store_true", help="Replace another job's output_dir.")
    parser.add_argument("--quick", action="store_true",
                        help="A small run on the offline preset and ../shared/data (flags you give still apply).")
    return parser


def fraction(value):
    number = float(value)
    if not 0 < number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not between 0 and 1")
    return number


def add_finetuning_flags(parser, unit, held_out_when):
    """The data-slice and schedule flags every fine-tuning recipe shares (`unit`: what an example is)."""
    parser.add_argument("--eval_fraction", type=fraction, default=0.1, help=f"Held out of train {held_out_when}.")
    parser.add_argument("--max_train_examples", type=positive_int, help=f"Train on the first N {unit} only.")
    parser.add_argument("--max_eval_examples", type=positive_int, help=f"Score the first N evaluation {unit} only.")
    parser.add_argument("--max_seq_length", type=positive_int, help="Packed length in word pieces.")
    parser.add_argument("--train_batch_size", type=positive_int, help="Examples (windows) per step.")
    # As keras-bert-zoo checks them: a rate of 0 trained at the default 5e-5 in silence, a negative one upwards.
    parser.add_argument("--learning_rate", type=positive_float, help="Peak rate of BERT's AdamW schedule.")
    parser.add_argument("--num_train_epochs", type=whole_epochs, help="Passes over the training data.")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="Seed of the held-out split and the training.")


def train_and_held_out(train, dev, args):
    """`(train, dev)` as the flags ask: dev given, or split off train; each cut to its maximum."""
    if dev is None:
        train, dev = train.split(args.eval_fraction, seed=args.seed)
    train = train.head(args.max_train_examples) if args.max_train_examples else train
    return train, dev.head(args.max_eval_examples) if args.max_eval_examples else dev


def finetune(task, train, dev, args):
    """Compile with the given rate and run the library's resumable fine-tuning job into --output_dir."""
    import keras_bert_zoo as kbz

    task.compile(**given(args, learning_rate="learning_rate"))
    kbz.finetune(task, train, None, args.output_dir, validation_data=dev, seed=args.seed,
                 overwrite_output_dir=args.overwrite_output_dir,
                 **given(args, epochs="num_train_epochs", batch_size="train_batch_size"))


def apply_quick(args, recipe, **small_values):
    """Fill the flags the user left unset: the quick values under --quick; the output directory always."""
    import keras_bert_zoo as kbz

    if args.quick:
        for flag, value in small_values.items():
            if getattr(args, flag) is None:
                setattr(args, flag, value)
    args.preset = args.preset or kbz.DEFAULT_PRESET
    if args.output_dir is None:
        args.output_dir = os.path.join("runs", recipe + ("_quick" if args.quick else ""))
        # A quick run replaces the last quick run in its own folder, never a folder the user named.
        args.overwrite_output_dir = args.overwrite_output_dir or args.quick
    return args


def run(main):
    """Run a recipe's `main`; an error a user can fix is one line (exit status 2), not a traceback."""
    import sys

    try:
        main()
    except (ValueError, OSError) as e:
        message = " ".join(str(e).split()).replace("overwrite_output_dir=True", "--overwrite_output_dir")
        print(f"error: {message or type(e).__name__}", file=sys.stderr)
        sys.exit(2)


def shared_data(*parts):
    """A path under the shared data that --quick reads; a clear exit when it is missing."""
    path = os.path.join(SHARED_DATA, *parts)
    if not os.path.exists(path):
        raise SystemExit(f"--quick reads {path}, which is missing: give the data flags, "
                         "or set KERAS_BERT_ZOO_SHARED_DATA to the shared data folder.")
    return path


def given(args, **flags):
    """`{library_argument: value}` for the flags the user (or --quick) set."""
    return {name: getattr(args, flag) for name, flag in flags.items() if getattr(args, flag) is not None}


def write_metrics(output_dir, metrics):
    """`output_dir/metrics.json`, written whole or not at all; printed too."""
    import json

    path = os.path.join(output_dir, "metrics.json")
    with open(path + ".tmp", "w") as f:
        json.dump(metrics, f, indent=2)
    os.replace(path + ".tmp", path)
    print(json.dumps(metrics, indent=2))
