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


def _split(tag):
    if tag == OUTSIDE:
        return OUTSIDE, ""
    # As conlleval.pl: a tag without a type (BioBERT's B / I) is a chunk of the empty type, not an O.
    prefix, _, kind = tag.partition("-")
    return _BILOU.get(prefix, prefix), kind


def extract_chunks(tags):
    """Return `[(type, start, end_exclusive)]` for one tag sequence.

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


def entity_scores(gold_sequences, predicted_sequences):
    """Micro precision / recall / F1 over entities, overall and per type.

    Returns:
        `{"precision", "recall", "f1", "gold_entities", "predicted_entities",
        "per_type": {type: {...}}}`, scores as fractions in [0, 1].
    """
    if len(gold_sequences) != len(predicted_sequences):
        raise ValueError("gold and predicted have different numbers of sentences.")
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
