"""Entity-level precision / recall / F1 with the semantics of CoNLL's conlleval.

A chunk starts at B-X, or at I-X when no chunk of type X is open (after O or
after another type: IOB1 and stray I- tags start entities, as conlleval
counts them). A chunk ends before O, before B-, and at a change of type. A
tag without a type (`B`, `I`: BioBERT's NER files) has the empty type. A
predicted entity is correct only if its type and both boundaries match a
gold entity.

IOBES tags follow conlleval.pl's IOBES extension (seqeval's rules alike): a
chunk also starts at S-X, and ends after E-X and after S-X, so a single-word
S-X is an entity of its own. BILOU's L- and U- are IOBES' E- and S-.

Those are the tags read here (`is_entity_tag`); any other tag (a bare type
`PER`, `O-PER`, a number) names no entity, and what finds or scores
entities refuses it (`check_tag_scheme`) rather than find none.
"""

import collections

from keras_bert_zoo.metrics.scored_set_size import warn_if_too_few

OUTSIDE = "O"  # the tag of a word in no entity


# conlleval.pl's chunk rules over tag prefixes, with its IOBES extension.
_ENDS_AFTER = {"E", "S"}  # the last or only word of a chunk
_ENDS_BETWEEN = {("B", "B"), ("B", "S"), ("B", OUTSIDE), ("I", "B"), ("I", "S"), ("I", OUTSIDE)}
_STARTS_AT = {"B", "S"}
_STARTS_BETWEEN = {("E", "E"), ("E", "I"), ("S", "E"), ("S", "I"), (OUTSIDE, "E"), (OUTSIDE, "I")}
_BILOU = {"L": "E", "U": "S"}
# The prefixes of the tags read: conlleval's B- and I-, its IOBES extension's E- and S-, BILOU's L- and U-.
TAG_PREFIXES = ("B", "I", "E", "S", "L", "U")
_SHOWN = 5  # the refused tags a message names


def is_entity_tag(tag):
    """Whether `tag` is a tag of an entity scheme as conlleval reads it: "O",
    or one of `TAG_PREFIXES` alone (BioBERT's `B` / `I`: the empty type) or
    before `-<type>`.

    Another tag, as a bare type `PER`, is read by no rule of a scheme:
    conlleval finds no entity in `O PER PER O` (no prefix starts one), yet
    one of the empty type in `B-LOC PER B-LOC` (each change of type ends
    and starts one).

    Examples:
    >>> [is_entity_tag(tag) for tag in ("O", "B-PER", "I", "U-Chem", "PER", "O-PER", "b-PER", 0)]
    [True, True, True, True, False, False, False, False]
    """
    return isinstance(tag, str) and (tag == OUTSIDE or tag.partition("-")[0] in TAG_PREFIXES)


def entity_tag_help(tag):
    """What tags conlleval reads, and how to write a type without a prefix
    (`tag`, when a string) so that it is read: the end of each message that
    refuses a tag `is_entity_tag` does not take."""
    # A tag of another prefix ("O-PER") is no type: I-O-PER would be read as the type "O-PER".
    kind = tag if isinstance(tag, str) and tag and "-" not in tag else "PER"
    return (f"conlleval reads O and tags of a prefix B-, I-, E-, S- (IOBES) or L-, U- (BILOU), before a type or "
            f"alone (B-PER, I), and finds no entity in other tags. Write an entity type without a prefix ({kind!r}) "
            f"as 'I-{kind}' on each of an entity's words (IO tags: conlleval joins consecutive I-{kind} words into one "
            f"entity), or 'B-{kind}' on its first word and 'I-{kind}' on the rest.")


def check_tag_scheme(tags, reader, whose="the tags given", fix=""):
    """Refuse `tags` that `is_entity_tag` does not take before `reader` finds
    entities by them: it would find none (or chunks of no scheme), in silence.

    Args:
        tags: tag strings (a tag set, or every tag of some sentences).
        reader: what finds the entities, for the message (e.g.
            `"entity_scores"`).
        whose: the tags' owner, for the message (`"this tagger's tags"`).
        fix: the caller's own way out, appended to the message.

    Raises:
        ValueError: naming the refused tags (the first few, and how many),
            the tags read, and how to write a bare type.

    Examples:
    >>> check_tag_scheme(["O", "B-PER", "I-PER", "S-LOC"], "entity_scores")
    >>> check_tag_scheme(["O", "PER"], "entity_scores")
    Traceback (most recent call last):
    ...
    ValueError: entity_scores finds entities by conlleval tags, but 1 of the tags given ...: 'PER'. conlleval reads ...
    """
    bad = list(dict.fromkeys(tag for tag in tags if not is_entity_tag(tag)))
    if not bad:
        return
    shown = ", ".join(repr(tag) for tag in bad[:_SHOWN]) + (f" and {len(bad) - _SHOWN} more" * (len(bad) > _SHOWN))
    refused = "is not a conlleval tag" if len(bad) == 1 else "are not conlleval tags"
    raise ValueError(f"{reader} finds entities by conlleval tags, but {len(bad)} of {whose} {refused}: {shown}. "
                     f"{entity_tag_help(bad[0])}" + (f" {fix}" if fix else ""))


def _split(tag):
    if tag == OUTSIDE:
        return OUTSIDE, ""
    # As conlleval.pl: a tag without a type (BioBERT's B / I) is a chunk of the empty type, not an O.
    prefix, _, kind = tag.partition("-")
    return _BILOU.get(prefix, prefix), kind


def extract_chunks(tags):
    """Return `[(type, start, end_exclusive)]` for one tag sequence of tags
    `is_entity_tag` takes (unchecked here: `entity_scores` and the tagger check them).

    Graph twin: `token_classifier_signatures._chunk_begins`; parity:
    `tests/test_bert_token_classifier.py::test_graph_chunks_match_extract_chunks`.
    """
    chunks = []
    start = None
    previous, previous_kind = OUTSIDE, ""
    for i, tag in enumerate(list(tags) + [OUTSIDE]):
        prefix, kind = _split(tag)
        if start is not None and (previous in _ENDS_AFTER or (previous, prefix) in _ENDS_BETWEEN
                                  or previous_kind != kind):
            chunks.append((previous_kind, start, i))
            start = None
        if prefix != OUTSIDE and (prefix in _STARTS_AT or (previous, prefix) in _STARTS_BETWEEN
                                  or previous_kind != kind):
            start = i
        previous, previous_kind = prefix, kind
    return chunks


# The scheme whose rule a chunk's last tag ends it by: BIO (and IO) end a chunk at B- or I-, by the tag after it;
# IOBES every chunk at E- or S-, BILOU at L- or U-.
_ENDING_SCHEMES = {"B": "BIO", "I": "BIO", "E": "IOBES", "S": "IOBES", "L": "BILOU", "U": "BILOU"}


def chunk_ending_schemes(tags):
    """`{scheme: position}`: each scheme by whose rule `tags` end a chunk ("BIO": at B- or I-; "IOBES": at E- or
    S-; "BILOU": at L- or U-), with the position of the last tag of its first such chunk. Tags of one scheme end
    every chunk by its rule; conlleval reads them mixed all the same, each by its prefix.

    Examples:
    >>> chunk_ending_schemes(["B-PER", "E-PER", "O", "S-LOC"])
    {'IOBES': 1}
    >>> chunk_ending_schemes(["B-PER", "I-PER", "O", "S-LOC"])
    {'BIO': 1, 'IOBES': 3}
    """
    endings = {}
    for _, _, end in extract_chunks(tags):
        endings.setdefault(_ENDING_SCHEMES[tags[end - 1].partition("-")[0]], end - 1)
    return endings


def entity_scores(gold_sequences, predicted_sequences):
    """Micro precision / recall / F1 over entities, overall and per type.

    Returns:
        `{"precision", "recall", "f1", "gold_entities", "predicted_entities",
        "per_type": {type: {...}}}`, scores as fractions in [0, 1].

    Raises:
        ValueError: the numbers of sentences or of a sentence's tags differ,
            or a tag is not one of an entity scheme (`check_tag_scheme`).
    """
    if len(gold_sequences) != len(predicted_sequences):
        raise ValueError("gold and predicted have different numbers of sentences.")
    # Bare types ("PER") scored F1 0 with no entity found, in silence.
    check_tag_scheme([tag for tags in (*gold_sequences, *predicted_sequences) for tag in tags], "entity_scores")
    warn_if_too_few(len(gold_sequences), noun="sentence")
    counts = collections.defaultdict(lambda: [0, 0, 0])  # correct, gold, predicted
    for sentence, (gold, predicted) in enumerate(zip(gold_sequences, predicted_sequences)):
        if len(gold) != len(predicted):
            raise ValueError(f"sentence {sentence}: {len(gold)} gold tags but {len(predicted)} predicted.")
        gold_chunks, predicted_chunks = set(extract_chunks(gold)), set(extract_chunks(predicted))
        for kind, *_ in gold_chunks:
            counts[kind][1] += 1
        for chunk in predicted_chunks:
            counts[chunk[0]][2] += 1
            counts[chunk[0]][0] += chunk in gold_chunks

    def scores(correct, gold, predicted):
        precision = correct / predicted if predicted else 0.0
        recall = correct / gold if gold else 0.0
        f1 = 2 * precision * recall / (precision + recall) if correct else 0.0
        return {"precision": precision, "recall": recall, "f1": f1, "gold_entities": gold,
                "predicted_entities": predicted}

    total = [sum(c[i] for c in counts.values()) for i in range(3)]
    return {**scores(*total), "per_type": {kind: scores(*c) for kind, c in sorted(counts.items())}}
