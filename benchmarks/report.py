"""The README's benchmark table, rendered from the results files."""

import json
import os
import re

from benchmarks.run import OURS

BEGIN, END = "<!-- benchmarks: begin (python -m benchmarks readme) -->", "<!-- benchmarks: end -->"
# The results files the README renders: the step benchmarks, serving, then the cost of a call.
RESULTS_FILES = ("bench_*.json", "serving_vs_keras_hub*.json", "call_overhead_vs_keras_hub*.json")
COLUMNS = (("keras_hub", "keras-hub"), ("hf_torch", "HF torch"), ("matmul_chain", "matmul bound"))


def _figure(row, peer):
    entry = row["peers"].get(peer)
    return f"{entry['seq_per_s']['median']:.1f}" if entry else "-"


def _memory(row, key):
    return " / ".join(f"{row['peers'][p][key]:.0f}" if p in row["peers"] else "-" for p in (OURS, "keras_hub", "hf_torch"))


def _ratio(row, peer):
    entry = row["ratios"].get(f"{OURS}/{peer}")
    return f"{entry['median']:.2f} ({entry['min']:.2f}-{entry['max']:.2f})" if entry else "-"


def _header(document, path):
    m = document["machine"]
    versions = "".join(f", {k} {v}" for k, v in sorted(document.get("versions", {}).items()))
    gpus = "".join(f", GPU {g['name']} ({g['memory.total']}, driver {g['driver_version']})"
                   for g in document.get("gpus") or ())
    commit = f", commit {document['commit']}" if document.get("commit") else ""
    return (f"`{path}` ({document['started']}{commit}): {m['cpu']}, {m['cores']} cores, flags {' '.join(m['flags']) or 'none'}"
            f"{gpus}; "
            f"load {document['load_before']} before, {document['load_after']} after{versions}. "
            f"Reproduce: `{document['command']}`." + (f" {document['note']}" if document.get("note") else ""))


def render_serving(document, path):
    """benchmarks/serving_vs_keras_hub.py's results: one row per scenario."""
    def served(figures):
        return (f"{figures['sentences_per_s']['median']:.1f} ({figures['p50_ms']['median']:.0f} / "
                f"{figures['p95_ms']['median']:.0f} ms)")

    setup = document["setup"]
    lines = [f"Serving: {setup['preset']} classifier exports in {setup['dtype']}, {setup['data']}, "
             f"{setup['rounds']} rounds. " + _header(document, path), "",
             "| clients x batch | TF batching | ours sentences/s (p50 / p95) | keras-hub sentences/s (p50 / p95) "
             "| ours / keras-hub (min-max) |", "|---|---|---|---|---|"]
    for name, row in document["results"].items():
        clients, batch = re.match(r"(\d+)_clients_batch_(\d+)", name).groups()
        ratio = row[f"ratio_{OURS}/keras_hub"]
        lines.append(f"| {clients} x {batch} | {'on' if name.endswith('tf_batching') else 'off'} | "
                     f"{served(row[OURS])} | {served(row['keras_hub'])} | "
                     f"{ratio['median']:.2f} ({ratio['min']:.2f}-{ratio['max']:.2f}) |")
    return "\n".join(lines)


def render_call_overhead(document, path):
    """benchmarks/call_overhead_vs_keras_hub.py's results: one row per scenario."""
    def timed(figures):
        return f"{figures['ms']['median']:.0f} ({figures['first_call_ms']:.0f})"

    setup = document["setup"]
    lines = [f"One call with a few examples: {setup['preset']} classifiers, raw text in, sequence length "
             f"{setup['sequence_length']}, {setup['rounds']} rounds. " + _header(document, path), "",
             "| call | ours ms (first call) | keras-hub ms (first call) | keras-hub / ours (min-max) |",
             "|---|---|---|---|"]
    for scenario, row in document["results"].items():
        ratio = row["keras_hub_over_ours"]
        lines.append(f"| {scenario} | {timed(row[OURS])} | {timed(row['keras_hub'])} | "
                     f"{ratio['median']:.1f} ({ratio['min']:.1f}-{ratio['max']:.1f}) |")
    return "\n".join(lines)


def render(document, path):
    if "call_overhead_vs_keras_hub" in document["command"]:
        return render_call_overhead(document, path)
    if isinstance(document["results"], dict):
        return render_serving(document, path)
    # On a GPU the memory that limits a batch is the device's.
    memory, memory_name = ("peak_device_mb", "peak GPU MB") if document.get("gpus") else ("peak_rss_mb", "peak RSS MB")
    lines = [
        _header(document, path),
        "",
        "| job | model | dtype | batch x length | ours seq/s | " + " | ".join(f"{n} seq/s" for _, n in COLUMNS)
        + " | " + " | ".join(f"ours / {n} (min-max)" for _, n in COLUMNS)
        + f" | {memory_name} (ours / keras-hub / HF torch) |",
        "|" + "---|" * (5 + 2 * len(COLUMNS) + 1),
    ]
    for row in document["results"]:
        c = row["config"]
        lines.append(
            f"| {c['job']} | {c['size']} | {c['dtype']}{', XLA' if c.get('xla') else ''} | {c['batch']} x {c['length']} "
            f"| {_figure(row, OURS)} | " + " | ".join(_figure(row, p) for p, _ in COLUMNS) + " | "
            + " | ".join(_ratio(row, p) for p, _ in COLUMNS) + f" | {_memory(row, memory)} |"
        )
    for failed in document.get("failed", ()):
        c = failed["config"]
        lines.append(f"\nNot measured: {c['job']} {c['size']} {c['dtype']}{', XLA' if c.get('xla') else ''} "
                     f"{c['batch']} x {c['length']}: {(failed['error'].splitlines() or [''])[0]}")
    if document.get("stopped"):
        lines.append(f"\nStopped: {document['stopped']}.")
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
