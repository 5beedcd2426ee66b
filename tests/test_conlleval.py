"""Entity extraction and scoring with conlleval's semantics, hand-checked."""

import pytest

from keras_bert_zoo.data.conll import read_conll
from keras_bert_zoo.metrics.conlleval import TAG_PREFIXES
from keras_bert_zoo.metrics.conlleval import check_tag_scheme
from keras_bert_zoo.metrics.conlleval import entity_scores
from keras_bert_zoo.metrics.conlleval import extract_chunks
from keras_bert_zoo.metrics.conlleval import is_entity_tag
from tests.conftest import shared_path


def test_chunks_bio():
    tags = ["B-Disease", "I-Disease", "O", "B-Disease", "B-Disease", "I-Disease"]
    assert extract_chunks(tags) == [("Disease", 0, 2), ("Disease", 3, 4), ("Disease", 4, 6)]


def test_stray_inside_tags_start_entities_like_conlleval():
    # I- after O starts an entity; a type change splits it.
    assert extract_chunks(["O", "I-PER", "I-PER", "I-LOC", "O", "I-LOC"]) == [
        ("PER", 1, 3), ("LOC", 3, 4), ("LOC", 5, 6)]
    # B-X then I-Y: two entities.
    assert extract_chunks(["B-PER", "I-LOC"]) == [("PER", 0, 1), ("LOC", 1, 2)]


def test_tags_without_a_type_are_chunks_of_the_empty_type_as_in_conlleval_pl():
    # BioBERT's NER files tag B / I / O. conlleval.pl splits a tag at its first hyphen, and one without a hyphen
    # is its own prefix with the type "" (they were read as O: no entity, F1 0).
    assert extract_chunks(["B", "I", "O", "I", "B", "B-X"]) == [("", 0, 2), ("", 3, 4), ("", 4, 5), ("X", 5, 6)]
    gold = [["B", "I", "O", "B"], ["O", "B", "I"]]
    pred = [["B", "I", "O", "O"], ["B", "I", "I"]]
    # Hand count: gold (0,2) (3,4) | (1,3); predicted (0,2) | (0,3) -> 1 correct of 2 predicted, 3 gold.
    scores = entity_scores(gold, pred)
    assert (scores["precision"], scores["recall"]) == (0.5, pytest.approx(1 / 3))
    assert scores["per_type"][""]["gold_entities"] == 3


def test_iobes_and_bilou_chunks_follow_conlleval_pls_iobes_rules():
    """A single-word S-X is an entity, and E-X / S-X close their chunk (conlleval.pl's IOBES extension, as
    seqeval): S-Chem was no entity at all (F1 0 on identical tags), and E-X I-X ran on as one chunk."""
    assert extract_chunks(["S-Chem", "O", "B-Chem", "E-Chem", "O"]) == [("Chem", 0, 1), ("Chem", 2, 4)]
    assert extract_chunks(["S-Chem", "S-Chem", "B-Dis", "I-Dis", "E-Dis", "S-Dis"]) == [
        ("Chem", 0, 1), ("Chem", 1, 2), ("Dis", 2, 5), ("Dis", 5, 6)]
    # After E-X, an I-X or E-X opens a new chunk; B-X followed by S-X is two.
    assert extract_chunks(["B-X", "E-X", "I-X", "E-X", "B-X", "S-X"]) == [
        ("X", 0, 2), ("X", 2, 4), ("X", 4, 5), ("X", 5, 6)]
    # BILOU: L- ends a chunk as E- does, U- is a single-word chunk as S- is.
    assert extract_chunks(["U-Chem", "B-Dis", "I-Dis", "L-Dis", "O"]) == [("Chem", 0, 1), ("Dis", 1, 4)]
    scores = entity_scores([["S-Chem", "O"]], [["S-Chem", "O"]])
    assert (scores["f1"], scores["gold_entities"]) == (1.0, 1)


def test_scores_hand_computed():
    gold = [["B-D", "I-D", "O", "B-C"], ["O", "B-D"]]
    pred = [["B-D", "I-D", "O", "O"], ["B-D", "I-D"]]
    # gold: D(0,2) C(3,4) | D(1,2); predicted: D(0,2) | D(0,2) -> 1 correct of 2 predicted, 3 gold.
    scores = entity_scores(gold, pred)
    assert (scores["precision"], scores["recall"]) == (0.5, pytest.approx(1 / 3))
    assert scores["f1"] == pytest.approx(2 * 0.5 * (1 / 3) / (0.5 + 1 / 3))
    assert scores["per_type"]["C"]["recall"] == 0.0
    assert scores["per_type"]["D"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "gold_entities": 2,
                                       "predicted_entities": 2}


def test_boundaries_must_match_exactly():
    assert entity_scores([["B-D", "I-D"]], [["B-D", "O"]])["f1"] == 0.0


def test_reads_ncbi_disease_counts():
    data = read_conll(shared_path("ner", "NCBI-disease", "train.tsv"))
    assert len(data) == 5424
    assert sum(len(s) for s in data.words) == 135701
    assert data.label_names == ["O", "B-Disease", "I-Disease"]
    assert sum(t == "B-Disease" for s in data.tags for t in s) == 5134


def test_reads_sciie_space_separated_with_docstart():
    data = read_conll(shared_path("scibert", "sciie-ner", "train.txt"))
    assert len(data) == 1861
    assert data.words[0][0] == "English" and data.tags[0][0] == "I-Material"
    assert "-DOCSTART-" not in {w for s in data.words for w in s}


def test_scoring_one_sentence_warns_once_naming_the_count():
    with pytest.warns(UserWarning) as caught:
        assert entity_scores([["B-D", "I-D", "O"]], [["B-D", "I-D", "O"]])["f1"] == 1.0
    assert [str(w.message) for w in caught] == [
        "Scoring 1 sentence: scores on so few say little about the model; score a larger held-out set."]


# --- One rule for which tags name entities ---

def test_the_tags_taken_are_those_conlleval_reads_as_entities():
    """Each tag `is_entity_tag` takes is read by a rule of a scheme: alone (and between O's) it is one entity of
    its type, or none for O; the export's decoder reads the same prefixes."""
    from keras_bert_zoo.export.token_classifier_signatures import _PREFIXES

    assert set(_PREFIXES) == set(TAG_PREFIXES) == {"B", "I", "E", "S", "L", "U"}
    taken = [prefix + suffix for prefix in TAG_PREFIXES for suffix in ("", "-Chem", "-A-B")]
    for tag in taken:
        kind = tag.partition("-")[2]
        assert is_entity_tag(tag), tag
        assert extract_chunks([tag]) == [(kind, 0, 1)], tag
        assert extract_chunks(["O", tag, "O"]) == [(kind, 1, 2)], tag
    assert is_entity_tag("O") and extract_chunks(["O"]) == []
    # A bare type is read by no rule of a scheme: between O's conlleval finds nothing in it at all.
    for tag in ("PER", "Chemical", "O-PER", "MISC"):
        assert not is_entity_tag(tag), tag
        assert extract_chunks(["O", tag, tag, "O"]) == [], tag
    # Nor is another prefix, a prefix of another case, an empty tag or a number (a tag id, not a tag).
    assert not any(is_entity_tag(tag) for tag in ("X-PER", "b-PER", "i", "", " O", 0, 1, None))


def test_schemes_of_every_kind_are_scored():
    for tags in (["O", "B-PER", "I-PER"], ["O", "I-PER", "I-LOC"], ["O", "B", "I"],
                 ["O", "B-X", "I-X", "E-X", "S-X"], ["O", "B-X", "I-X", "L-X", "U-X"]):
        assert check_tag_scheme(tags, "entity_scores") is None, tags
    # IO tags: conlleval joins consecutive I-PER words into one entity. Hand count: gold PER(0,2) LOC(3,4);
    # predicted PER(0,2) -> 1 correct of 1 predicted, of 2 gold.
    scores = entity_scores([["I-PER", "I-PER", "O", "I-LOC"], ["O"]], [["I-PER", "I-PER", "O", "O"], ["O"]])
    assert (scores["precision"], scores["recall"], scores["gold_entities"]) == (1.0, 0.5, 2)


def test_entity_scores_refuses_tags_that_name_no_entity():
    # Bare types: no entity found in gold or predictions, F1 0, in silence.
    with pytest.raises(ValueError, match=(
            r"^entity_scores finds entities by conlleval tags, but 2 of the tags given are not conlleval tags: "
            r"'PER', 'LOC'\. conlleval reads O and tags of a prefix B-, I-, E-, S- \(IOBES\) or L-, U- \(BILOU\).* "
            r"Write an entity type without a prefix \('PER'\) as 'I-PER' on each of an entity's words \(IO tags: "
            r"conlleval joins consecutive I-PER words into one entity\), or 'B-PER' on its first word and 'I-PER' "
            r"on the rest\.$")):
        entity_scores([["PER", "PER", "O"], ["LOC"]], [["PER", "O", "O"], ["LOC"]])
    # In the predictions alone too; many are named by the first few and their count.
    with pytest.raises(ValueError, match=r"1 of the tags given is not a conlleval tag: 'Chem'\. "):
        entity_scores([["B-Chem", "O"], ["O"]], [["Chem", "O"], ["O"]])
    many = [f"T{i}" for i in range(8)]
    with pytest.raises(ValueError, match=r"8 of the tags given are not conlleval tags: 'T0', 'T1', 'T2', 'T3', 'T4' "
                                         r"and 3 more\. "):
        entity_scores([many, ["O"]], [many, ["O"]])


# --- Files that mix tag schemes ---

def test_a_file_mixing_tag_schemes_is_read_whole_with_a_warning_naming_a_line_of_each(tmp_path):
    """A BIO file joined to an IOBES one was read in silence: a tagger trained on it learns a one-word entity as
    both B-X and S-X. conlleval reads each tag by its prefix (the BIO sentence and its IOBES twin are the same
    entities), so the file is read and scored as it is, with a warning."""
    assert extract_chunks(["B-PER", "I-PER", "O", "B-LOC"]) == extract_chunks(["B-PER", "E-PER", "O", "S-LOC"])
    path = tmp_path / "joined.tsv"
    path.write_text("John\tB-PER\nSmith\tI-PER\nsaid\tO\n\nAnn\tB-PER\nLee\tE-PER\nin\tO\nOslo\tS-LOC\n")
    with pytest.warns(UserWarning) as caught:
        data = read_conll(str(path))
    assert [str(w.message) for w in caught] == [
        f"{path}:2: an entity ends at 'I-PER', as BIO tags end one, but at line 6 one ends at 'E-PER', as IOBES "
        "tags do: the file mixes tag schemes (files of two schemes joined?). conlleval reads each tag by its prefix, "
        "so it is scored as it is, but a tagger trained on it learns two tags for one thing (a one-word entity as "
        "B-X and as S-X). Write it in one scheme: in IOBES, an entity's last word is E-X and a one-word entity S-X "
        "(BILOU: L-X, U-X); in BIO, they are I-X and B-X."]
    assert caught[0].filename == __file__  # the caller's line, not the reader's
    assert data.tags == [["B-PER", "I-PER", "O"], ["B-PER", "E-PER", "O", "S-LOC"]]
    # IOBES joined to BILOU, in one sentence.
    path.write_text("Ann\tS-PER\nin\tO\nOslo\tU-LOC\n")
    with pytest.warns(UserWarning, match=r"joined.tsv:1: an entity ends at 'S-PER', as IOBES tags end one, but at "
                                         r"line 3 one ends at 'U-LOC', as BILOU tags do"):
        read_conll(str(path))


@pytest.mark.parametrize("tags", [["B-X", "I-X", "O", "B-Y", "I-Y", "I-Y"], ["I-X", "I-X", "O", "I-Y"],
                                  ["B", "I", "O"], ["B-X", "I-X", "E-X", "O", "S-Y", "S-Y"], ["B-X", "L-X", "U-Y", "O"]])
def test_a_file_of_one_scheme_reads_without_a_warning(tmp_path, tags, recwarn):
    path = tmp_path / "one.tsv"
    path.write_text("".join(f"w{i}\t{tag}\n" for i, tag in enumerate(tags)))
    assert read_conll(str(path)).tags == [tags]
    assert not recwarn.list
