"""Errors raised while finding, downloading and converting presets."""


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
