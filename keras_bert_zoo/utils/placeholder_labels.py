"""transformers' placeholder label names, read by the checkpoint converters
and by the tasks that refuse or map them."""

# How transformers names the labels of a config without `id2label` (`LABEL_0`, `LABEL_1`, ...).
UNNAMED_LABELS = "LABEL_{}"


def unnamed_labels(names):
    """Whether a head's label `names` are no names of its own: None, or transformers' `LABEL_0`, ....

    Examples:
    >>> unnamed_labels(["LABEL_0", "LABEL_1"]), unnamed_labels(["O", "B-Gene"])
    (True, False)
    """
    return names is None or list(names) == [UNNAMED_LABELS.format(i) for i in range(len(names))]
