"""python -m benchmarks run | readme  (see benchmarks/README.md)."""

import argparse
import glob
import json
import os
import shutil
import sys

from benchmarks import report, results_file, run
from benchmarks.peers import DTYPES

ROOT = run.ROOT
RESULTS = os.path.join("benchmarks", "results")
DEFAULT_TORCH_PYTHON = os.path.join(".venv-torch", "bin", "python")


def _csv(choices):
    def parse(value):
        items = value.split(",")
        unknown = [i for i in items if i not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown[0]!r}; choose from {', '.join(choices)}")
        return items

    return parse


def _interpreter(name):
    """`name` as a shell runs it: a command on PATH when it names no folder, else a path (`~` expanded), relative
    to the repository; None unless it is an executable file."""
    name = os.path.expanduser(name)
    found = shutil.which(name if os.sep not in name else os.path.join(ROOT, name))
    return found and os.path.abspath(found)  # the workers run in the repository


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("run", help="measure and write a results file",
                                  formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    measure.add_argument("--jobs", type=_csv(("inference", "train", "pretrain")), default=["inference", "train", "pretrain"],
                         help="comma-separated: a backbone's forward pass, a classifier's training step (AdamW), "
                              "a pretraining step (masked LM + next sentence)")
    measure.add_argument("--sizes", type=_csv(("minilm", "base")), default=["minilm", "base"],
                         help="comma-separated: minilm (6 layers, hidden 384), base (BERT-Base: 12 layers, hidden 768)")
    measure.add_argument("--dtypes", type=_csv(DTYPES), default=["float32", "bfloat16"],
                         help="bfloat16 and float16 are Keras' mixed policies (float16: for GPUs)")
    measure.add_argument("--xla", type=_csv(("off", "on")), default=["off"],
                         help="compile the TensorFlow peers' steps with XLA (torch runs eagerly either way)")
    measure.add_argument("--shapes", type=_csv(sorted({f"{b}x{n}" for shapes in run.SHAPES.values() for b, n in shapes})),
                         default=argparse.SUPPRESS, help="only these batch x length shapes of each job (default: all)")
    measure.add_argument("--rounds", type=int, default=5, help="timed rounds per config, the peers' order rotating "
                                                               "each round")
    measure.add_argument("--torch_python", default=argparse.SUPPRESS, help=f"interpreter with torch and transformers, for the HF torch peer: a "
                                                 f"path relative to the repository, or a command on PATH (python3) "
                                                 f"(default: {DEFAULT_TORCH_PYTHON}, the CPU build `make benchmark` "
                                                 f"installs, if it is there; else no HF torch peer)")
    measure.add_argument("--output_file", required=True, default=argparse.SUPPRESS, help=f"results JSON, relative to the repository, e.g. "
                                                              f"{RESULTS}/cpu2_amx.json")
    commands.add_parser("readme", help="rewrite README.md's benchmark tables from benchmarks/results/ "
                                       f"({', '.join(report.RESULTS_FILES)})")
    args = parser.parse_args(argv)

    if args.command == "run":
        results_file.check_flags(parser, args.rounds, args.output_file)
        # The kernels TensorFlow loads with are part of what reproduces the figures (it reads 1/true and 0/false).
        setting = os.environ.get("TF_ENABLE_ONEDNN_OPTS", "").lower()
        onednn = {"1": "1", "true": "1", "0": "0", "false": "0"}.get(setting)
        command = ((f"TF_ENABLE_ONEDNN_OPTS={onednn} " if onednn else "") + "python -m benchmarks run "
                   + " ".join(a for a in (argv if argv is not None else sys.argv[1:]) if a != "run"))
        # Without the default interpreter the run goes on without the HF torch peer (and says so); one asked for
        # must exist, or a long run would end without the peer it was run for.
        asked = getattr(args, "torch_python", None)
        torch_python = _interpreter(asked or DEFAULT_TORCH_PYTHON)
        if asked is not None and torch_python is None:
            parser.error(f"--torch_python {args.torch_python}: no such interpreter (neither an executable file under "
                         f"the repository nor a command on PATH)")
        asked_shapes = getattr(args, "shapes", None)
        shapes = asked_shapes and [tuple(int(n) for n in shape.split("x")) for shape in asked_shapes]
        if shapes and not any((b, n) in shapes for job in args.jobs for b, n in run.SHAPES[job]):
            parser.error(f"--shapes {','.join(asked_shapes)} matches none of the shapes of --jobs {','.join(args.jobs)} ("
                         + "; ".join(f"{job}: {','.join(f'{b}x{n}' for b, n in run.SHAPES[job])}" for job in args.jobs)
                         + ")")
        document = run.run(args.jobs, args.sizes, args.dtypes, args.rounds, torch_python, command,
                           save=lambda document: results_file.write_text(args.output_file,
                                                                         json.dumps(document, indent=1) + "\n"),
                           xla=[x == "on" for x in args.xla], shapes=shapes)
        print(f"wrote {args.output_file}")
        if document.get("failed"):
            print(f"{len(document['failed'])} config(s) failed (see 'failed' in {args.output_file})"
                  + (f"; {document['stopped']}" if "stopped" in document else ""), file=sys.stderr)
            sys.exit(1)
    else:
        paths = [os.path.relpath(p, ROOT) for pattern in report.RESULTS_FILES
                 for p in sorted(glob.glob(os.path.join(ROOT, RESULTS, pattern)))]
        readme = os.path.join(ROOT, "README.md")
        with open(readme) as f:
            text = f.read()
        results_file.write_text(readme, report.replace_section(text, report.readme_section(paths, ROOT)))
        print(f"README.md: table from {', '.join(paths)}")


if __name__ == "__main__":
    main()
