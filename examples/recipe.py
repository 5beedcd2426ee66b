"""What the recipes in examples/ share: `--quick` defaults and flags passed on only when given.

Each recipe passes the library only the flags you give, so the library's
defaults (BERT's recipes) apply to the rest; `--quick` fills unset flags with
small values that run on the offline default preset and the project's shared
data in a minute or two.
"""

import argparse
import os

SHARED_DATA = os.environ.get(
    "KERAS_BERT_ZOO_SHARED_DATA", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "data"))


def recipe_parser(description):
    """An argument parser with the flags every recipe has."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--preset", help="Preset name, directory, hf:// handle or URL "
                                         "(default: the offline default preset).")
    parser.add_argument("--output_dir", help="Where the model, metrics.json and logs go.")
    parser.add_argument("--overwrite_output_dir", action="store_true", help="Replace another job's output_dir.")
    parser.add_argument("--quick", action="store_true",
                        help="A small run on the offline preset and ../shared/data (flags you give still apply).")
    return parser


def apply_quick(args, recipe, **small_values):
    """Fill the flags the user left unset: the quick values under --quick; the output directory always."""
    import keras_bert_zoo as kbz

    if args.quick:
        for flag, value in small_values.items():
            if getattr(args, flag) is None:
                setattr(args, flag, value)
        args.overwrite_output_dir = True  # a quick run replaces the last one
    args.preset = args.preset or kbz.DEFAULT_PRESET
    args.output_dir = args.output_dir or os.path.join("runs", recipe + ("_quick" if args.quick else ""))
    return args


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
