"""A command line the user must change, and the one line every such error is printed as."""


class UsageError(ValueError):
    """A flag's value, or flags together, that a command refuses once parsed (argparse refuses the rest)."""


def usage_line(prog, message):
    """How argparse's usage errors and a command's `UsageError` are printed alike: the usage block (25 lines for
    finetune) is one --help away."""
    return f"{prog}: error: {message} (flags: {prog} --help)"
