"""The output directory of `finetune` and `pretrain`: claimed by one job, resumed only by the same job."""

# What the parser adds beside the user's arguments: the command's functions, its flags' names, argv; and what a
# command's check read for its run (`inputs_read`: the data files; `files_read`: their fingerprints as read).
NOT_ARGUMENTS = {"run", "check", "flag_names", "argv", "inputs_read", "files_read"}
# Arguments that do not change what the job writes: where it runs. The epochs count: BERT's schedule decays over
# all of them, so a rerun asking for more (or fewer: it trained nothing and saved a half-decayed model as finished)
# would be another job.
NOT_IN_FINGERPRINT = NOT_ARGUMENTS | {"command", "verbose", "output", "overwrite_output_dir", "strategy", "tpu"}
# Arguments earlier versions left out of the fingerprint: a job recorded then still resumes.
ADDED_TO_FINGERPRINT = ("epochs",)


def add_output_arguments(parser, help):
    """`--output_dir` (a directory, not a file; once `--output`) and `--overwrite_output_dir`."""
    from keras_bert_zoo.cli.flag_types import add_flag
    from keras_bert_zoo.cli.flag_types import output_directory

    add_flag(parser, "--output_dir", "--output", dest="output", type=output_directory, required=True, help=help)
    parser.add_argument("--overwrite_output_dir", action="store_true",
                        help="Replace the work of another job (or a finished model) in --output_dir instead of "
                             "refusing. Without it, only the same job can continue there (where it stopped: its "
                             "backup, or a saved model not yet scored).")


def flag_names(parser):
    """`{dest: "--flag"}` of a parser, so messages say the flag a user types."""
    import argparse

    return {action.dest: action.option_strings[0] for action in parser._actions
            if action.option_strings and action.help != argparse.SUPPRESS}


def fingerprint_files_read(args, file_flags):
    """Fingerprint the files of `file_flags` (dests) as a command's check reads them, before it reads them: the
    job records the bytes it trains on, not those the file holds once TensorFlow has loaded (see
    `job_fingerprint`)."""
    import os

    from keras_bert_zoo.utils.job_record import file_fingerprint

    args.files_read = {}
    for dest in file_flags:
        path = getattr(args, dest, None)
        if isinstance(path, str):
            stat = os.stat(path)
            args.files_read[path] = (file_fingerprint(path), (stat.st_size, stat.st_mtime_ns))


def _fingerprint_of_read(args, path):
    """`path`'s fingerprint as the check read it; a file changed since then is refused (the job would record one
    file and train on another)."""
    import os

    from keras_bert_zoo.cli.usage_error import UsageError
    from keras_bert_zoo.utils.job_record import file_fingerprint

    read = getattr(args, "files_read", {}).get(path)
    if read is None:
        return file_fingerprint(path)
    fingerprint, (size, mtime_ns) = read
    stat = os.stat(path)
    if (stat.st_size, stat.st_mtime_ns) != (size, mtime_ns):
        raise UsageError(f"{path} changed while the job started (after it was read, before {args.output} was "
                         "claimed): run the command again once the file is written.")
    return fingerprint


def job_fingerprint(args, file_flags):
    """What decides the job's result, keyed by flag; files (`file_flags` dests) by size and SHA-256 (as the
    command's check read them, where it did: `fingerprint_files_read`)."""
    fingerprint = {}
    for dest, value in sorted(vars(args).items()):
        if dest in NOT_IN_FINGERPRINT:
            continue
        if dest in file_flags and value is not None:
            value = [_fingerprint_of_read(args, v) for v in value] if isinstance(value, list) else \
                _fingerprint_of_read(args, value)
        fingerprint[args.flag_names.get(dest, "--" + dest)] = value
    return fingerprint


def output_job(args, file_flags=(), extendable=None, chief=True):
    """Claim `args.output` for this job before any model loads (see `running_job`).

    `extendable`: the library's `{"extendable": (argument, ...), "training_state": entry}` for a job that a
    rerun asking for more (steps) extends; the arguments are dests, named here by their flags. `chief`: False in
    a cluster's other workers, which leave the directory to the chief.

    Returns:
        A context manager yielding True when the job resumes its own backup.
    """
    from keras_bert_zoo.training.finetune import OUTPUTS
    from keras_bert_zoo.utils.job_record import running_job

    recorded = {k: v for k, v in vars(args).items() if k not in NOT_ARGUMENTS}
    added = [args.flag_names.get(dest, "--" + dest) for dest in ADDED_TO_FINGERPRINT]
    extend = {}
    if extendable:
        extend = {"extendable": tuple(args.flag_names.get(dest, "--" + dest) for dest in extendable["extendable"]),
                  "training_state": extendable["training_state"]}
    return running_job(args.output, args.command, job_fingerprint(args, file_flags),
                       args={"argv": args.argv, **recorded}, owned=OUTPUTS, overwrite=args.overwrite_output_dir,
                       added_items=added, chief=chief, **extend)
