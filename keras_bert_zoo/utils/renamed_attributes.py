"""Old attribute names kept a release, for a class's `__getattr__`."""

import warnings


def renamed_attribute(obj, name, renames):
    """The value of `obj`'s attribute `name` under its new name (`renames`:
    old name -> new), with a DeprecationWarning; an AttributeError for any
    other name.

    Called from `__getattr__` rather than a property: Keras' saving reads
    every attribute `dir()` lists, and a property would warn on each save
    and load.
    """
    if name in renames:
        new = renames[name]
        warnings.warn(f"{type(obj).__name__}.{name} is now .{new}; {name} will be removed in the next release.",
                      DeprecationWarning, stacklevel=3)
        return getattr(obj, new)
    raise AttributeError(f"'{type(obj).__name__}' object has no attribute '{name}'")
