"""`keras-bert-zoo presets`: the preset table."""

import json


def add_parser(subparsers):
    parser = subparsers.add_parser("presets", help="List the available presets.")
    parser.add_argument("--json", action="store_true", help="Print the full preset specs as JSON.")
    parser.set_defaults(run=run)


def run(args):
    from keras_bert_zoo.presets.registry import get_preset_spec
    from keras_bert_zoo.presets.registry import list_presets

    table = list_presets()
    if args.json:
        print(json.dumps([get_preset_spec(row["name"]) for row in table], indent=2))
    else:
        print(table)
