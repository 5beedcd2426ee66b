"""A model's own name: the one its user gave, or, where Keras made one up, the class's without Keras' count.

Keras names an unnamed object by its class in snake case and counts the objects of that name a process made:
the second `BertClassifier` is `bert_classifier_1`. That count says nothing about the model; a name the user
gave (`bert_classifier_2`, `ner_v_3`) says what they mean. Only Keras' own count is dropped, where the model
is saved (`get_config`) and exported (`default_model_name`).
"""

import re


def class_default_name(cls):
    """The name Keras makes up for an object of `cls`, before its count: BertClassifier -> bert_classifier.

    As `keras.src.utils.naming.to_snake_case` (not exported by Keras).
    """
    name = re.sub(r"\W+", "", cls.__name__)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def note_name(model, name):
    """Call in a model's `__init__` after Keras' with the `name` it was given (None: Keras made one up).

    A name restored by `from_config` is a given one: `get_config` saves a made-up name as the class's.
    """
    model._made_up_name = model.name if name is None else None


def own_name(model):
    """`model.name` as given, or the class's default name where Keras made the name up (dropping its count).

    A model that did not `note_name` (not one of the package's): a name of the class's default followed by
    `_N` is taken for Keras'.
    """
    default = class_default_name(type(model))
    if not hasattr(model, "_made_up_name"):
        return default if re.fullmatch(rf"{re.escape(default)}(_\d+)?", model.name) else model.name
    return default if model.name == model._made_up_name else model.name
