"""python -m benchmarks run | readme  (see benchmarks/README.md)."""

import argparse
import glob
import json
import os
import sys
import tempfile

from benchmarks import report, run

ROOT = run.ROOT
RESULTS = os.path.join("benchmarks", "results")


def _write_atomically(path, text):
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(handle, "w") as f:
        f.write(text)
    os.replace(temporary, path)


def _csv(choices):
    def parse(value):
        items = value.split(",")
        unknown = [i for i in items if i not in choices]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {unknown[0]!r}; choose from {', '.join(choices)}")
        return items

    return parse


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    measure = commands.add_parser("run", help="measure and write a results file",
                                  formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    measure.add_argument("--jobs", type=_csv(("inference", "train", "pretrain")), default=["inference", "train", "pretrain"])
    measure.add_argument("--sizes", type=_csv(("minilm", "base")), default=["minilm", "base"])
    measure.add_argument("--dtypes", type=_csv(("float32", "bfloat16")), default=["float32", "bfloat16"])
    measure.add_argument("--rounds", type=int, default=5)
    measure.add_argument("--torch_python", default=os.path.join(".venv-torch", "bin", "python"),
                         help="interpreter with torch (CPU build) and transformers, for the HF torch peer")
    measure.add_argument("--output_file", required=True, help=f"results JSON, relative to the repository, e.g. "
                                                              f"{RESULTS}/cpu2_amx.json")
    commands.add_parser("readme", help="rewrite README.md's benchmark table from benchmarks/results/*.json")
    args = parser.parse_args(argv)

    if args.command == "run":
        if args.rounds < 3:
            parser.error("--rounds must be at least 3 for a median, min and max to mean anything")
        if os.path.isabs(args.output_file):
            parser.error("--output_file must be relative to the repository (results files name no machine's paths)")
        command = "python -m benchmarks run " + " ".join(a for a in (argv if argv is not None else sys.argv[1:])
                                                         if a != "run")
        torch_python = os.path.join(ROOT, args.torch_python)
        output = os.path.join(ROOT, args.output_file)
        run.run(args.jobs, args.sizes, args.dtypes, args.rounds, torch_python, command,
                save=lambda document: _write_atomically(output, json.dumps(document, indent=1) + "\n"))
        print(f"wrote {args.output_file}")
    else:
        paths = sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, RESULTS, "bench_*.json")))
        readme = os.path.join(ROOT, "README.md")
        with open(readme) as f:
            text = f.read()
        _write_atomically(readme, report.replace_section(text, report.readme_section(paths, ROOT)))
        print(f"README.md: table from {', '.join(paths)}")


if __name__ == "__main__":
    main()
