"""`keras-bert-zoo presets`: the preset table."""

import json


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "presets", help="List the available presets.",
        description="The preset table. `*` marks the default preset (of encode, extract-features and finetune); "
                    "the `cached` column says which presets are downloaded and converted already, so they load "
                    "offline.")
    parser.add_argument("--json", action="store_true", help="Print the full preset specs as JSON.")
    parser.set_defaults(run=run)


def _marked(table):
    from keras_bert_zoo import DEFAULT_PRESET
    from keras_bert_zoo.presets import preset_io
    from keras_bert_zoo.presets.loader import cached_preset_dir

    rows = []
    for row in table:
        cached = preset_io.is_saved_preset_dir(cached_preset_dir(row["name"]))
        rows.append({**row, "name": row["name"] + (" *" if row["name"] == DEFAULT_PRESET else ""),
                     "cached": "yes" if cached else "no"})
    return rows


def run(args):
    from keras_bert_zoo import DEFAULT_PRESET
    from keras_bert_zoo.presets.registry import TABLE_COLUMNS
    from keras_bert_zoo.presets.registry import get_preset_spec
    from keras_bert_zoo.presets.registry import list_presets

    table = list_presets()
    if args.json:
        specs = [{**get_preset_spec(row["name"]), "default": row["name"] == DEFAULT_PRESET} for row in table]
        print(json.dumps(specs, indent=2))
        return
    columns = (*TABLE_COLUMNS, "cached")
    rows = [columns] + [tuple(str(r[c]) for c in columns) for r in _marked(table)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    print("\n".join(lines))
    print(f"\n* default preset ({DEFAULT_PRESET}); cached: loads offline.")
