"""The one check of a `tokenizer` argument, at the boundary of the functions that take one."""

import os

from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer


def check_tokenizer(tokenizer, caller, required=True, cls=BertTokenizer):
    """Return `tokenizer` if it is a `cls` (None too when not `required`); else raise a TypeError.

    Without it a string path, another library's tokenizer (keras-hub's) or a missing one failed deep inside
    with an AttributeError ("'str' object has no attribute 'get_vocabulary'") naming neither the argument nor
    the fix.

    Args:
        tokenizer: what the caller passed.
        caller: the function's name as the user calls it (`"write_pretraining_records"`).
        required: False where the argument may be None.
        cls: the tokenizer class expected (a preprocessor's `tokenizer_cls`).
    """
    if isinstance(tokenizer, cls) or (tokenizer is None and not required):
        return tokenizer
    name = cls.__name__
    if tokenizer is None:
        got, hint = "None", ""
    elif isinstance(tokenizer, (str, bytes, os.PathLike)):
        got = f"the {type(tokenizer).__name__} {os.fspath(tokenizer)!r}"
        hint = f" A path or preset name is not loaded for you: build the {name} from it first."
    else:
        got = f"a {type(tokenizer).__module__}.{type(tokenizer).__qualname__}"
        hint = (f" Another library's tokenizer (keras-hub's) is not one: build a {name} from its vocabulary, "
                f"{name}(tokenizer.get_vocabulary(), lowercase=...).") if hasattr(tokenizer, "get_vocabulary") else ""
    raise TypeError(f"{caller}: tokenizer must be a keras_bert_zoo {name}; got {got}. Pass "
                    f"{name}.from_preset(preset) (the model's own) or {name}('vocab.txt', lowercase=...).{hint}")
