"""`keras-bert-zoo report RUN`: a finetune or pretrain run's training curves as a PNG, and its final metrics."""

import json
import os
import sys

from keras_bert_zoo.cli.flag_types import output_file
from keras_bert_zoo.cli.usage_error import UsageError
from keras_bert_zoo.utils.text_files import read_json_object


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "report", help="Draw a run's training curves (PNG) and print its final metrics.",
        description="Reads the TensorBoard logs that finetune and pretrain write into OUTPUT_DIR/logs, draws every "
                    "per-epoch metric (train and validation) to a PNG, and prints the last epoch's values with the "
                    "run's metrics.json. Needs matplotlib (pip install matplotlib).")
    parser.add_argument("run_dir", metavar="RUN", help="A finetune or pretrain --output_dir.")
    # Checked as parsed: a directory or an unwritable path failed only once the curves were drawn, naming the
    # temporary file.
    parser.add_argument("--output_file", type=output_file, help="The PNG to write (default: RUN/curves.png).")
    parser.set_defaults(run=run)


def run(args):
    from keras_bert_zoo.training.finetune import METRICS_FILE
    from keras_bert_zoo.training.training_logs import CURVES_FILE
    from keras_bert_zoo.training.training_logs import plot_training_logs
    from keras_bert_zoo.utils.job_record import job_status

    if not os.path.isdir(args.run_dir):
        raise UsageError(f"RUN {args.run_dir} is not a directory: pass a finetune or pretrain --output_dir.")
    output_file = args.output_file or os.path.join(args.run_dir, CURVES_FILE)
    report = {"curves": output_file, "final_epoch": plot_training_logs(args.run_dir, output_file)}
    # A run that stopped shows the epochs it finished, which read like a finished run's but for this.
    status = job_status(args.run_dir)
    if status is not None:
        report["status"] = status
    how = {"running": "is still running", "killed": "did not finish: job.json says running, but its process is "
           "gone (killed)"}.get(status, f"did not finish (job.json: {status})")
    if status not in (None, "finished"):
        print(f"{args.run_dir} {how}: its curves and final_epoch end at the last epoch it finished.", file=sys.stderr)
    metrics = os.path.join(args.run_dir, METRICS_FILE)
    if os.path.isfile(metrics):
        report["metrics"] = read_json_object(metrics, UsageError)
    print(json.dumps(report, indent=2))
