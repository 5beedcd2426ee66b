"""The README's benchmark table, rendered from the results files."""

import json
import os

from benchmarks.run import OURS

BEGIN, END = "<!-- benchmarks: begin (python -m benchmarks readme) -->", "<!-- benchmarks: end -->"
COLUMNS = (("keras_hub", "keras-hub"), ("hf_torch", "HF torch"), ("matmul_chain", "matmul bound"))


def _figure(row, peer):
    entry = row["peers"].get(peer)
    return f"{entry['seq_per_s']['median']:.1f}" if entry else "-"


def _memory(row):
    return " / ".join(f"{row['peers'][p]['peak_rss_mb']:.0f}" if p in row["peers"] else "-"
                      for p in (OURS, "keras_hub", "hf_torch"))


def _ratio(row, peer):
    entry = row["ratios"].get(f"{OURS}/{peer}")
    return f"{entry['median']:.2f} ({entry['min']:.2f}-{entry['max']:.2f})" if entry else "-"


def render(document, path):
    m = document["machine"]
    versions = ", ".join(f"{k} {v}" for k, v in sorted(document["versions"].items()))
    lines = [
        f"`{path}` ({document['started']}): {m['cpu']}, {m['cores']} cores, flags {' '.join(m['flags']) or 'none'}; "
        f"load {document['load_before']} before, {document['load_after']} after; {versions}. "
        f"Reproduce: `{document['command']}`.",
        "",
        "| job | model | dtype | batch x length | ours seq/s | " + " | ".join(f"{n} seq/s" for _, n in COLUMNS)
        + " | " + " | ".join(f"ours / {n} (min-max)" for _, n in COLUMNS)
        + " | peak RSS MB (ours / keras-hub / HF torch) |",
        "|" + "---|" * (5 + 2 * len(COLUMNS) + 1),
    ]
    for row in document["results"]:
        c = row["config"]
        lines.append(
            f"| {c['job']} | {c['size']} | {c['dtype']} | {c['batch']} x {c['length']} | {_figure(row, OURS)} | "
            + " | ".join(_figure(row, p) for p, _ in COLUMNS) + " | "
            + " | ".join(_ratio(row, p) for p, _ in COLUMNS) + f" | {_memory(row)} |"
        )
    return "\n".join(lines)


def readme_section(results_paths, root):
    blocks = []
    for path in results_paths:
        with open(os.path.join(root, path)) as f:
            blocks.append(render(json.load(f), path))
    return "\n\n".join([BEGIN] + blocks + [END])


def replace_section(readme_text, section):
    start, end = readme_text.index(BEGIN), readme_text.index(END) + len(END)
    return readme_text[:start] + section + readme_text[end:]
