"""Errors raised while finding, downloading and converting presets."""

import contextlib
import contextvars


class PresetError(ValueError):
    """A preset cannot be found, read or converted."""


class PresetNotFoundError(PresetError):
    """The preset name, path or handle does not resolve."""


class CheckpointError(PresetError):
    """A checkpoint file is corrupt, truncated or does not fit the config."""


class UnsafeCheckpointError(CheckpointError):
    """A pickled checkpoint holds something other than plain tensors."""


class NetworkUnreachableError(PresetError, ConnectionError):
    """A download failed because the network (or host) cannot be reached."""


# How an error tells the user to load a preset from a directory: in Python with from_preset(); on the
# command line with its flag, which the command sets with `presets_named_by`.
_PRESET_FLAG = contextvars.ContextVar("preset_flag", default=None)


def load_directory_advice(directory):
    """`call from_preset('DIRECTORY')`, or `pass --preset DIRECTORY` where a command line named its flag."""
    flag = _PRESET_FLAG.get()
    return f"pass {flag} {directory}" if flag else f"call from_preset('{directory}')"


@contextlib.contextmanager
def presets_named_by(flag):
    """Within the block, preset errors advise the command-line `flag` rather than from_preset()."""
    token = _PRESET_FLAG.set(flag)
    try:
        yield
    finally:
        _PRESET_FLAG.reset(token)
