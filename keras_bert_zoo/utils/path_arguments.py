"""File arguments of the library's functions: a path (`str` or `os.PathLike`, as `pathlib.Path`) or a list."""

import os


def path_list(paths, argument):
    """`paths` as a list of `str` paths.

    A `pathlib.Path` is one path, as a string is: iterated as a list, it failed with "'PosixPath' object is not
    iterable", naming no argument.

    Args:
        paths: a path (`str`, `os.PathLike`) or an iterable of them.
        argument: the argument's name, for the error.

    Raises:
        TypeError: naming `argument` and the forms taken.

    Examples:
    >>> import pathlib
    >>> path_list(pathlib.Path("a.txt"), "input_files"), path_list(["a.txt", pathlib.Path("b.txt")], "input_files")
    (['a.txt'], ['a.txt', 'b.txt'])
    """
    if isinstance(paths, (str, os.PathLike)):
        return [os.fspath(paths)]
    try:
        items = list(paths)
    except TypeError:
        items = None
    if items is None or isinstance(paths, (bytes, dict)) or \
            not all(isinstance(item, (str, os.PathLike)) for item in items):
        got = type(paths).__name__ if items is None or isinstance(paths, (bytes, dict)) else \
            f"a list holding a {next(type(i).__name__ for i in items if not isinstance(i, (str, os.PathLike)))}"
        raise TypeError(f"{argument} takes a path (a str or pathlib.Path) or a list of them; got {got}.")
    return [os.fspath(item) for item in items]


def remote_output_error(path):
    """Why the output file or directory `path` cannot be a URL (`gs://bucket/run`), or None for a local path. Outputs are
    written with atomic renames through the local file system, where a URL names a local folder `gs:` (only
    TensorFlow's own writers, TensorBoard's, reached the bucket)."""
    scheme, separator, _ = os.fspath(path).partition("://")
    if not separator:
        return None
    return (f"{os.fspath(path)} is a URL: outputs are written through the local file system (atomically), which "
            f"would make a local folder '{scheme}:'. Mount the bucket (gcsfuse for GCS) and pass its local path, or "
            "write locally and copy when the job ends.")
