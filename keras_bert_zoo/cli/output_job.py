"""The output directory of `finetune` and `pretrain`: claimed by one job, resumed only by the same job."""

import contextlib
import os
import shutil
import sys

# Arguments that do not change what the job writes. Left out on purpose:
# epochs (rerunning with more continues the same training) and where it runs.
NOT_IN_FINGERPRINT = {"run", "command", "argv", "verbose", "flag_names", "output", "overwrite_output_dir", "epochs",
                      "strategy", "tpu"}


def add_output_arguments(parser, help):
    """`--output` (a directory, not a file) and `--overwrite_output_dir`."""
    from keras_bert_zoo.cli.flag_types import output_directory

    parser.add_argument("--output", required=True, type=output_directory, help=help)
    parser.add_argument("--overwrite_output_dir", action="store_true",
                        help="Replace the work of another job (or a finished model) in --output instead of "
                             "refusing. Without it, only the same job can continue there (resuming its backup).")


def flag_names(parser):
    """`{dest: "--flag"}` of a parser, so messages say the flag a user types."""
    return {action.dest: action.option_strings[0] for action in parser._actions if action.option_strings}


def job_fingerprint(args, file_flags):
    """What decides the job's result, keyed by flag; files (`file_flags` dests) by size and SHA-256."""
    from keras_bert_zoo.utils.job_record import file_fingerprint

    fingerprint = {}
    for dest, value in sorted(vars(args).items()):
        if dest in NOT_IN_FINGERPRINT:
            continue
        if dest in file_flags and value is not None:
            value = [file_fingerprint(v) for v in value] if isinstance(value, list) else file_fingerprint(value)
        fingerprint[args.flag_names.get(dest, "--" + dest)] = value
    return fingerprint


@contextlib.contextmanager
def output_job(args, file_flags=()):
    """Claim `args.output` for this job (see `claim_output_dir`), and record how it ended.

    Yields:
        True when the job resumes its own backup.
    """
    from keras_bert_zoo.training.finetune import BACKUP_DIR
    from keras_bert_zoo.training.finetune import METRICS_FILE
    from keras_bert_zoo.training.finetune import MODEL_DIR
    from keras_bert_zoo.utils.job_record import JOB_FILE
    from keras_bert_zoo.utils.job_record import claim_output_dir
    from keras_bert_zoo.utils.job_record import finish_job

    created = not os.path.exists(args.output)
    recorded = {k: v for k, v in vars(args).items() if k not in ("run", "flag_names", "argv")}
    resume = claim_output_dir(
        args.output, args.command, job_fingerprint(args, file_flags), args={"argv": args.argv, **recorded},
        owned=((MODEL_DIR, METRICS_FILE), (BACKUP_DIR,)), overwrite=args.overwrite_output_dir,
    )
    if resume:
        print(f"Resuming the same {args.command} job from {args.output}'s backup.", file=sys.stderr)
    try:
        yield resume
    except KeyboardInterrupt:
        finish_job(args.output, "interrupted")
        raise
    except BaseException:
        if created and os.listdir(args.output) == [JOB_FILE]:
            shutil.rmtree(args.output)  # failed before writing anything: leave no empty output behind
        else:
            finish_job(args.output, "failed")
        raise
    finish_job(args.output)
