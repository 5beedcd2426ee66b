"""What every benchmark script does with its results file: refuse flags
that would make it meaningless, start it with the machine's description,
and write it atomically."""

import argparse
import json
import os
import tempfile
import time

from benchmarks import machine

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_parser(doc, default_output_file, rounds_help=None):
    """A benchmark script's flags: `--output_file`, and `--rounds` if it
    times rounds (`rounds_help`); it adds its own."""
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    if rounds_help:
        parser.add_argument("--rounds", type=int, default=3, help=f"{rounds_help}, at least 3 (default: %(default)s)")
    parser.add_argument("--output_file", default=os.path.join("benchmarks", "results", default_output_file),
                        help="results JSON, relative to the repository (default: %(default)s)")
    return parser


def check_flags(parser, rounds, output_file):
    if rounds < 3:
        parser.error("--rounds must be at least 3 for a median, min and max to mean anything")
    check_output_file(parser, output_file)


def check_output_file(parser, output_file):
    if os.path.isabs(output_file):
        parser.error("--output_file must be relative to the repository (results files name no machine's paths)")
    # Found now, not when the results are written after minutes of measuring.
    folder = os.path.dirname(os.path.join(ROOT, output_file))
    if not os.path.isdir(folder):
        parser.error(f"--output_file {output_file!r}: no folder {os.path.relpath(folder, ROOT)!r} in the repository; "
                     f"create it or write into benchmarks/results")


def new_document(command):
    """The command that reproduces the file, the checkout's commit, the CPU and flags, load before,
    the libraries' versions (a script that runs TensorFlow itself adds the
    kernels it loaded: `machine.tensorflow_onednn()`)."""
    document = {"command": command.rstrip(), "machine": machine.cpu_description(),
                "load_before": machine.load_average(), "started": time.strftime("%Y-%m-%d %H:%M:%S"),
                "versions": machine.library_versions()}
    commit = machine.source_commit()
    if commit:
        document["commit"] = commit
    return document


def write_text(path, text):
    """Replace `path` (relative to the repository or absolute) in one rename."""
    path = os.path.join(ROOT, path)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(handle, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def write_document(path, document):
    document["load_after"] = machine.load_average()
    write_text(path, json.dumps(document, indent=1) + "\n")
