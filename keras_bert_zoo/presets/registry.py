"""The preset zoo: one JSON file per preset in the top-level presets/ folder."""

import difflib
import functools
import importlib.resources
import json
import os
import re

from keras_bert_zoo.presets.errors import PresetNotFoundError

TABLE_COLUMNS = ("name", "params", "domain", "casing", "source", "license")
# The preset examples, recipes and the command line use when none is named:
# small, and shipped on PyPI, so it loads offline.
DEFAULT_PRESET = "minilm_l6_h384_en_uncased"
# Every form `from_preset` reads, for the error of a string that is none of them.
PRESET_FORMS = ("a registered preset name (see keras_bert_zoo.list_presets() or `keras-bert-zoo presets`), a local "
                "directory, an hf://org/name handle or the http(s):// URL of a .zip or .tar.gz archive")


@functools.lru_cache(maxsize=None)
def _all_presets():
    presets = {}
    for entry in importlib.resources.files("keras_bert_zoo.preset_files").iterdir():
        if entry.name.endswith(".json"):
            spec = json.loads(entry.read_text(encoding="utf-8"))
            presets[spec["name"]] = spec
    return presets


def preset_names():
    return sorted(_all_presets())


def is_preset_name(preset):
    """Whether `from_preset(preset)` reads `preset` as a registered preset's
    name: it is not a local directory, an hf:// handle, a URL or a path."""
    preset = os.fspath(preset)
    return not (os.path.isdir(preset) or preset.startswith(("hf://", "http://", "https://"))
                or os.sep in preset or preset.startswith("."))


def get_preset_spec(name):
    """Return the JSON spec of a named preset.

    Raises:
        PresetNotFoundError: listing the closest names.
    """
    presets = _all_presets()
    if name in presets:
        return presets[name]
    # Names holding every word of the query first ("scibert_uncased"), then
    # spelling neighbours ("bert_bse_en_uncased").
    words = [w for w in re.split(r"[_\-.\s]+", name.lower()) if w]
    containing = [p for p in sorted(presets) if words and all(w in p for w in words)]
    close = containing + [p for p in difflib.get_close_matches(name, presets, n=3, cutoff=0.5) if p not in containing]
    close = close[:3]
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise PresetNotFoundError(f"Unknown preset '{name}'.{hint} from_preset takes {PRESET_FORMS}.")


class PresetTable(list):
    """A list of preset rows (dicts) that prints as a table."""

    def __str__(self):
        rows = [TABLE_COLUMNS] + [tuple(str(r[c]) for c in TABLE_COLUMNS) for r in self]
        widths = [max(len(row[i]) for row in rows) for i in range(len(TABLE_COLUMNS))]
        lines = ["  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows]
        lines.insert(1, "  ".join("-" * w for w in widths))
        return "\n".join(lines)

    __repr__ = __str__


def _format_params(count):
    return f"{count / 1e6:.1f}M"


def list_presets():
    """All presets: name, parameter count, domain, casing, weight source, license.

    Returns:
        A `PresetTable` (a list of dicts that prints as a table).

    Examples:
    >>> table = list_presets()
    >>> "minilm_l6_h384_en_uncased" in [row["name"] for row in table]
    True
    """
    rows = []
    for name in preset_names():
        spec = _all_presets()[name]
        rows.append(
            {
                "name": name,
                "params": _format_params(spec["params"]),
                "domain": spec["domain"],
                "casing": "uncased" if spec["tokenizer"]["lowercase"] else "cased",
                "source": spec["sources"][0].get("label", spec["sources"][0].get("url", "")),
                "license": spec["license"],
                "description": spec["description"],
            }
        )
    return PresetTable(rows)
