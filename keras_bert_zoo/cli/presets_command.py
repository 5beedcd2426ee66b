"""`keras-bert-zoo presets`: the preset table."""

import json


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "presets", help="List the available presets.",
        description="The preset table. `*` marks the default preset (of encode, extract-features and finetune); "
                    "the `offline` column says which load without a network: cached (converted already), installed "
                    "(a local package, converted at first use), or no (downloaded at first use).")
    parser.add_argument("--json", action="store_true", help="Print the full preset specs as JSON.")
    parser.set_defaults(run=run)


def _marked(table):
    from keras_bert_zoo import DEFAULT_PRESET
    from keras_bert_zoo.presets.loader import offline_status

    return [{**row, "name": row["name"] + (" *" if row["name"] == DEFAULT_PRESET else ""),
             "offline": offline_status(row["name"])} for row in table]


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
    columns = (*TABLE_COLUMNS, "offline")
    rows = [columns] + [tuple(str(r[c]) for c in columns) for r in _marked(table)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    print("\n".join(lines))
    print(f"\n* default preset ({DEFAULT_PRESET}). offline: cached (converted already) or installed (a local "
          "package, converted at first use) load without a network; no: downloaded at first use.")
