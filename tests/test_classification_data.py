"""Readers of GLUE TSV, JSON lines and CSV, against the counts of the shared data."""

import collections
import warnings

import pytest

from keras_bert_zoo.data.errors import DataFormatError
from keras_bert_zoo.data.glue import read_glue
from keras_bert_zoo.data.jsonl import read_jsonl
from keras_bert_zoo.data.readers import read_classification
from tests.conftest import shared_path

_MANY = 24  # examples, more than a file whose labels are looked at (20)

# Counts from shared/data/SOURCES.md.
GLUE_COUNTS = {
    "MRPC": (3668, {"1": 2474, "0": 1194}),
    "SST-2": (67349, {"1": 37569, "0": 29780}),
    "CoLA": (8551, {"1": 6023, "0": 2528}),
    "RTE": (2490, {"entailment": 1249, "not_entailment": 1241}),
}


@pytest.mark.parametrize("task", sorted(GLUE_COUNTS))
def test_glue_train_files(task):
    data = read_glue(shared_path("glue", task, "train.tsv"))
    count, labels = GLUE_COUNTS[task]
    assert len(data) == count
    assert {data.label_names[i]: n for i, n in collections.Counter(data.labels).items()} == labels


def test_glue_pairs_and_bom():
    data = read_glue(shared_path("glue", "MRPC", "train.tsv"))
    first = data.texts[0]
    assert isinstance(first, tuple) and first[0].startswith("Amrozi accused his brother")
    rte = read_glue(shared_path("glue", "RTE", "train.tsv"))
    assert rte.texts[0] == ("No Weapons of Mass Destruction Found in Iraq Yet.", "Weapons of Mass Destruction Found in Iraq.")
    assert rte.label_names == ["entailment", "not_entailment"]


def test_a_glue_task_is_named_as_hf_datasets_spell_it_and_an_unknown_folder_says_so(tmp_path):
    source = shared_path("glue", "SST-2", "train.tsv")
    path = tmp_path / "my_data" / "train.tsv"
    path.parent.mkdir()
    with open(source, encoding="utf-8") as f:
        path.write_text("".join(f.readline() for _ in range(6)))
    with pytest.raises(ValueError, match=r"train.tsv: which GLUE task it holds is not known, as its folder 'my_data' "
                                         r"names none; pass task= \(--glue_task on the command line\) one of"):
        read_glue(str(path))
    expected = read_glue(str(path), task="SST-2")
    assert len(expected) == 5 and expected.label_names == ["0", "1"]
    for spelling in ("sst2", "Sst-2", "SST2"):
        assert read_glue(str(path), task=spelling).labels == expected.labels
    with pytest.raises(ValueError, match=r"Unknown GLUE task 'SST-3'"):
        read_glue(str(path), task="SST-3")
    sst2 = tmp_path / "sst2" / "train.tsv"  # HF's name for the folder
    sst2.parent.mkdir()
    sst2.write_text(path.read_text())
    assert read_classification(str(sst2)).labels == expected.labels


def test_scibert_jsonl():
    data = read_jsonl(shared_path("scibert", "citation_intent", "train.txt"))
    assert len(data) == 1688
    counts = {data.label_names[i]: n for i, n in collections.Counter(data.labels).items()}
    assert counts == {"Background": 867, "Uses": 317, "CompareOrContrast": 305, "Motivation": 76,
                      "Extends": 63, "Future": 60}


def test_bad_rows_name_file_and_line(tmp_path):
    folder = tmp_path / "SST-2"
    folder.mkdir()
    path = folder / "train.tsv"
    path.write_text("sentence\tlabel\ngood movie\t1\nno label here\n\t0\nbad\t7\n")
    with pytest.raises(DataFormatError, match=r"train.tsv, line 3: expected at least 2 tab-separated columns"):
        read_glue(str(path))
    skipped = read_glue(str(path), on_error="skip")
    assert (len(skipped), skipped.skipped) == (1, 3)
    path.write_text("sentence\tlabel\ngood movie\t1\nbad\t7\n")
    with pytest.raises(DataFormatError, match=r"line 3: unknown label '7'; expected one of \['0', '1'\]"):
        read_glue(str(path))
    path.write_text("sentence\tlabel\ngood movie\t1\n  \t0\n")
    with pytest.raises(DataFormatError, match="line 3: empty text"):
        read_glue(str(path))


def test_missing_column_is_named(tmp_path):
    path = tmp_path / "data.csv"
    path.write_text("review,stars\ngreat,5\n")
    with pytest.raises(DataFormatError, match=r"no column\(s\) \['text', 'label'\]"):
        read_classification(str(path))
    data = read_classification(str(path), text_column="review", label_column="stars")
    assert (data.texts, data.labels, data.label_names) == (["great"], [0], ["5"])


def test_a_glue_header_read_as_a_plain_table_points_to_the_glue_reader(tmp_path):
    path = tmp_path / "mrpc_dev.tsv"
    path.write_text("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tHe said hi.\tHe greeted them.\n")
    with pytest.raises(DataFormatError, match=r"GLUE's \(MRPC\): read it with read_glue \(command line: --glue_task MRPC\)"):
        read_classification(str(path))
    assert read_glue(str(path), task="MRPC").labels == [1]


def test_jsonl_missing_field(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "a", "label": "x"}\n{"sentence": "b", "label": "y"}\n')
    with pytest.raises(DataFormatError, match=r"line 2: missing field\(s\) \['text'\]"):
        read_classification(str(path))


def test_split_is_disjoint_and_seeded():
    data = read_glue(shared_path("glue", "RTE", "train.tsv"))
    train, held_out = data.split(0.1, seed=3)
    assert (len(train), len(held_out)) == (2241, 249)
    # Together they are exactly the original examples, each once.
    assert sorted(map(str, train.texts + held_out.texts)) == sorted(map(str, data.texts))
    assert sorted(train.labels + held_out.labels) == sorted(data.labels)
    assert data.split(0.1, seed=3)[1].texts == held_out.texts


def test_tab_separated_files_keep_their_quotes(tmp_path):
    """A TSV outside a GLUE folder is read as run_classifier.py reads one (quotechar=None): a text opening with a
    quote lost it, or swallowed the rows after it up to the next quote. A .txt is tab-separated when its header is."""
    rows = [('"Aspirin" is an NSAID.', "drug"), ('It is 5" long.', "other"), ('"Unclosed quote here', "drug"),
            ("Next row", "other"), ("Last row", "drug")]
    lines = ["text\tlabel"] + ["\t".join(row) for row in rows]
    for name in ("data.tsv", "data.txt"):
        path = tmp_path / name
        path.write_text("\n".join(lines) + "\n")
        data = read_classification(str(path), format="csv")
        fields = [line.split("\t") for line in lines[1:]]
        assert data.texts == [text for text, _ in fields]
        assert [data.label_names[i] for i in data.labels] == [label for _, label in fields]
    # A bad row (a tab inside a text) is one row, counted as skipped; the rows after it are read.
    path = tmp_path / "bad.tsv"
    path.write_text("text\tlabel\n\"a\ttab\tdrug\nb\tother\n")
    with pytest.raises(DataFormatError, match=r"bad.tsv, line 2: 3 fields but the header has 2. Does a text hold a tab"):
        read_classification(str(path))
    skipped = read_classification(str(path), on_error="skip")
    assert (skipped.texts, skipped.skipped) == (["b"], 1)
    # A CSV writer's quoting (pandas' to_csv(sep="\t"), csv.writer) stays in the texts, as run_classifier.py
    # reads it, but is named: it was read silently ('"He said ""hi"""' as a text), or failed on the row a quoted
    # tab split with advice that did not say why.
    import csv
    import warnings

    path = tmp_path / "written.tsv"
    with open(path, "w", newline="") as f:
        csv.writer(f, delimiter="\t").writerows([["text", "label"], ["plain", "x"], ['He said "hi"', "y"]])
    with pytest.warns(UserWarning, match=r"written.tsv, line 3: a field looks quoted by a CSV writer. .*QUOTE_NONE"):
        assert read_classification(str(path)).texts == [line.split("\t")[0] for line in
                                                       path.read_text().splitlines()[1:]]
    with open(path, "w", newline="") as f:
        csv.writer(f, delimiter="\t").writerows([["text", "label"], ["a\ttab", "x"], ["plain", "y"]])
    with pytest.raises(DataFormatError, match=r"line 2: 3 fields .* A field looks quoted by a CSV writer"):
        read_classification(str(path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a text that only opens with a quote is no CSV writer's
        path.write_text('text\tlabel\n"Aspirin" is an NSAID.\tx\n"Unclosed quote\ty\n')
        assert read_classification(str(path)).texts == ['"Aspirin" is an NSAID.', '"Unclosed quote']
    # Comma-separated files (.csv, or a .txt whose header has no tab) still take quoted fields.
    for name in ("data.csv", "commas.txt"):
        path = tmp_path / name
        path.write_text('text,label\n"work, play",x\n"say ""hi""",y\n')
        assert read_classification(str(path), format="csv").texts == ["work, play", 'say "hi"']


def test_official_mrpc_read_as_a_csv():
    """MRPC's train.tsv copied out of its folder (--format csv) gives read_glue's examples; it failed at line 79
    (with on_error="skip", 139 rows were lost while 41 were reported skipped)."""
    path = shared_path("glue", "MRPC", "train.tsv")
    data = read_classification(path, format="csv", text_column="#1 String", text_b_column="#2 String",
                               label_column="Quality")
    glue = read_glue(path)
    assert (data.texts, data.labels, data.label_names, data.skipped) == (glue.texts, glue.labels, glue.label_names, 0)


def test_jsonl_regression_reads_the_scores(tmp_path):
    """read_classification(..., regression=True) on JSON lines gives each line's score (a number, or a number in a
    string), as on a CSV; it gave the class ids of the sorted label strings."""
    import json

    rows = [{"text": "A plane is taking off.", "label": 5.0}, {"text": "A man plays a flute.", "label": "3.8"},
            {"text": "Dogs run.", "label": 0.25}, {"text": "Cats sleep.", "label": 10}]
    path = tmp_path / "sts.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    data = read_classification(str(path), regression=True)
    assert data.labels == [float(row["label"]) for row in rows] and data.label_names is None
    path.write_text(json.dumps({"text": "x", "label": "high"}) + "\n")
    with pytest.raises(DataFormatError, match=r"sts.jsonl, line 1: label 'high' is not a number"):
        read_classification(str(path), regression=True)


def test_a_row_without_a_label_is_refused_not_taught_as_a_class(tmp_path):
    """An empty label cell (or JSON null) became a class named '', a list label the class "['x']", and JSON's 1.0
    another class than 1: a model was fine-tuned on classes nobody named, in silence."""
    path = tmp_path / "notes.csv"
    path.write_text("text,label\nGood drug,pos\nBad drug,neg\nNot labelled yet,\n")
    with pytest.raises(DataFormatError, match=r"notes.csv, line 4: empty label\. Label the row or remove it"):
        read_classification(str(path))
    skipped = read_classification(str(path), on_error="skip")
    assert (skipped.label_names, skipped.labels, skipped.skipped) == (["neg", "pos"], [1, 0], 1)
    path = tmp_path / "notes.jsonl"
    path.write_text('{"text": "a", "label": 1}\n{"text": "b", "label": 1.0}\n{"text": "c", "label": 0}\n')
    data = read_classification(str(path))
    assert (data.label_names, data.labels) == (["0", "1"], [1, 1, 0])
    for label, message in (("null", "empty label"), ('["x", "y"]', r"is a list, not one label\. For any number")):
        path.write_text(f'{{"text": "a", "label": 1}}\n{{"text": "b", "label": {label}}}\n')
        with pytest.raises(DataFormatError, match=rf"notes.jsonl, line 2: .*{message}"):
            read_classification(str(path))


def test_a_csvs_whole_number_written_as_a_float_is_the_integers_class(tmp_path):
    """pandas writes an integer column with a gap as floats: "1.0" beside a hand-written "1" were two classes."""
    path = tmp_path / "edited.csv"
    path.write_text("text,label\na,1.0\nb,0.0\nc,1\nd,2.5\ne,0\n")
    data = read_classification(str(path))
    assert (data.label_names, data.named_labels()) == (["0", "1", "2.5"], ["1", "0", "1", "2.5", "0"])
    # A file of floats alone keeps its names; given names, "1.0" reads as the class "1" (and "1.0" as itself).
    path.write_text("text,label\na,1.0\nb,0.0\n")
    assert read_classification(str(path)).label_names == ["0.0", "1.0"]
    assert read_classification(str(path), label_names=["0", "1"]).labels == [1, 0]
    assert read_classification(str(path), label_names=["1.0", "0"]).labels == [0, 1]


def test_a_label_column_of_texts_is_warned_about(tmp_path):
    """A label column naming the text column (every row a class of its own) trained without a word."""
    path = tmp_path / "reviews.csv"
    rows = [f"review number {i},{'pos' if i % 2 else 'neg'}" for i in range(_MANY)]
    path.write_text("text,label\n" + "\n".join(rows) + "\n")
    with pytest.warns(UserWarning, match=rf"reviews.csv: {_MANY} different labels in {_MANY} examples \(e.g. "
                                         r"'review number 0'\), .*is the label column the right one\?"):
        read_classification(str(path), label_column="text", text_column="label")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(read_classification(str(path)).label_names) == 2


def test_a_dev_file_read_alone_is_scored_by_the_models_label_ids(tmp_path):
    """A reader numbers its own file's labels: a dev set without one of the training labels numbered the others
    otherwise, and a classifier scored (and validated) it by those ids: "c" (dev id 1) counted as the model's "b"."""
    import keras_bert_zoo as kbz
    from tests.conftest import TINY_CHECKPOINT

    (tmp_path / "dev.csv").write_text("text,label\nall work,a\njack,c\nplay,c\n")
    (tmp_path / "tags.csv").write_text("text,label\nall work,\"a,c\"\njack,c\n")
    dev = read_classification(str(tmp_path / "dev.csv"))
    tags = read_classification(str(tmp_path / "tags.csv"), multi_label=True)
    assert (dev.label_names, dev.labels, tags.labels) == (["a", "c"], [0, 1, 1], [[1, 1], [0, 1]])
    for problem_type, names, examples, expected in (
            ("multi_class", ["a", "b", "c"], dev, [0, 2, 2]),
            ("multi_label", ["c", "b", "a"], tags, [[1, 0, 1], [1, 0, 0]])):
        clf = kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=3, label_names=names,
                                             problem_type=problem_type, sequence_length=8)
        texts, labels = clf.standardize_examples(examples)
        assert texts == examples.texts
        assert clf.prepare_labels(labels).tolist() == expected
    clf = kbz.BertClassifier.from_preset(TINY_CHECKPOINT, num_classes=2, label_names=["a", "b"], sequence_length=8)
    with pytest.raises(ValueError, match=r"Example 1's label 'c' is not one of the label_names \['a', 'b'\]"):
        clf.prepare_labels(clf.standardize_examples(dev)[1])


def test_a_header_the_column_flags_cannot_name_says_what_is_wrong(tmp_path):
    """'Name the columns with text_column ...' was the one advice for a header of Excel's ';'-separated CSV (one
    field, 'text;label'), a file without a header (its first example) and an empty file ('in the header None')."""
    for name, content, words in (
            ("semi.csv", "text;label\nGood drug;pos\n", r"in the header \['text;label'\]\. The header is one field: "
                                                        r"the file is read as separated by ',', but the header holds "
                                                        r"';'\. Save it separated by ','\."),
            ("rows.tsv", "great movie\t1\nbad movie\t0\n", r"Name the columns with text_column / text_b_column / "
                                                           r"label_column; a file without a header needs one"),
            ("empty.csv", "", r"empty.csv is empty: a header line naming its columns, then one example per line\.")):
        (tmp_path / name).write_text(content)
        with pytest.raises(DataFormatError, match=words):
            read_classification(str(tmp_path / name))


def test_head_sample_and_split_refuse_counts_and_fractions_that_would_slice_from_the_wrong_end():
    """sample(-1) gave all examples but one and split(1.5) a held-out set of the wrong size, in silence."""
    from keras_bert_zoo.data.classification_examples import ClassificationExamples

    examples = ClassificationExamples([f"text {i}" for i in range(10)], [i % 2 for i in range(10)], ["a", "b"])
    assert [len(examples.head(3)), len(examples.sample(3, seed=1)), len(examples.head(0))] == [3, 3, 0]
    assert sorted(examples.sample(10, seed=1).texts) == sorted(examples.texts)
    assert [len(part) for part in examples.split(0.3)] == [7, 3]
    for method, bad in (("head", -1), ("sample", -1), ("sample", 2.5), ("head", True)):
        with pytest.raises(ValueError, match=rf"{method} takes a whole number of examples, 0 or more; got"):
            getattr(examples, method)(bad)
    for bad in (1.5, -0.5, float("nan"), "0.2"):
        with pytest.raises(ValueError, match="split takes a fraction between 0 and 1 to hold out"):
            examples.split(bad)


# --- Hostile and odd files ---

@pytest.mark.parametrize("name,delimiter", [("long.csv", ","), ("long.tsv", "\t")])
def test_a_field_longer_than_csvs_default_limit_is_read_whole(tmp_path, name, delimiter):
    """csv refuses a field over 131,072 characters by default: a long document (valid input) failed in a bare
    `_csv.Error` naming no file or line."""
    import csv

    document = "word " * 40_000  # 200,000 characters
    path = tmp_path / name
    path.write_text(f"text{delimiter}label\n{document}{delimiter}long\nshort{delimiter}short\n")
    data = read_classification(str(path))
    assert (data.texts, data.named_labels()) == ([document, "short"], ["long", "short"])
    assert csv.field_size_limit() == 131_072  # the process's own limit is left as it was


def _refused_then_skipped(path, message):
    """Check that reading `path` raises a DataFormatError matching `message`; return it read with that row skipped."""
    with pytest.raises(DataFormatError, match=message):
        read_classification(str(path))
    return read_classification(str(path), on_error="skip")


def test_a_line_csv_cannot_parse_is_named_by_file_and_line(tmp_path, monkeypatch):
    """A field past the reader's limit (2**31 - 1 characters; 10 here) is a bad row named by file and line, and
    skipped as one, not a bare `_csv.Error`."""
    from keras_bert_zoo.data import csv_reader

    monkeypatch.setattr(csv_reader, "_LONGEST_FIELD", 10)
    path = tmp_path / "notes.csv"
    path.write_text("text,label\nfine,a\nfar too long a text,b\nfine too,c\n")
    skipped = _refused_then_skipped(path, r"notes.csv, line 3: not readable as ','-separated fields "
                                          r"\(field larger than field limit \(10\)\)\.$")
    assert (skipped.texts, skipped.named_labels(), skipped.skipped) == (["fine", "fine too"], ["a", "c"], 1)
    path.write_text("text,label,a header field far too long\nfine,a\n")
    with pytest.raises(DataFormatError, match=r"notes.csv, line 1: not readable as ','-separated fields"):
        read_classification(str(path), on_error="skip")


def test_json_lines_nested_too_deep_or_numbers_too_long_are_named_by_file_and_line(tmp_path):
    """A line nested 100,000 deep failed in a bare RecursionError, and an integer of 5,000 digits in Python's
    bare ValueError (past its 4,300-digit limit), neither naming file or line."""
    good = '{"text": "fine", "label": "a"}\n'
    path = tmp_path / "odd.jsonl"
    for bad, message in (("[" * 100_000, "JSON nested deeper than Python's reader goes"),
                         ('{"text": "deep", "label": ' + "[" * 100_000 + "}", "JSON nested deeper"),
                         ('{"text": "huge", "label": ' + "7" * 5000 + "}",
                          r"a number of 5000 digits \(777777777777\.\.\.\), more than Python reads as an integer\.$")):
        path.write_text(good + bad + "\n" + good)
        skipped = _refused_then_skipped(path, rf"odd.jsonl, line 2: {message}")
        assert (skipped.texts, skipped.skipped) == (["fine", "fine"], 1)


def test_a_huge_or_not_finite_label_is_named_by_file_line_and_its_first_characters(tmp_path):
    """A 5,000-digit label was printed whole in the message; JSON's NaN (Python's json writes a missing value so)
    and 1e400 (past a float: inf) became classes named 'nan' and 'inf', in silence."""
    huge = "9" * 5000
    shown = "9" * 60 + r"\.\.\. \(5,000 characters\)"
    path = tmp_path / "scores.csv"
    path.write_text(f"text,label\nfine,1.5\nhuge,{huge}\n")
    with pytest.raises(DataFormatError, match=rf"scores.csv, line 3: label '{shown}' is not a finite number "
                                              r"\(regression task\)\.$"):
        read_classification(str(path), regression=True)
    path.write_text(f"text,label\nfine,a\nhuge,{huge}\n")
    with pytest.raises(DataFormatError, match=rf"scores.csv, line 3: unknown label '{shown}'; expected one of "
                                              r"\['a', 'b'\]\.") as caught:
        read_classification(str(path), label_names=["a", "b"])
    assert caught.value.label == huge  # the label itself, for a caller that matches it
    path = tmp_path / "labels.jsonl"
    for label in ("NaN", "1e400", "-Infinity"):
        path.write_text(f'{{"text": "fine", "label": 1}}\n{{"text": "odd", "label": {label}}}\n')
        skipped = _refused_then_skipped(path, r"labels.jsonl, line 2: label -?(nan|inf) is no class but a number "
                                              r"that is not finite: a missing label\? Label the row")
        assert (skipped.named_labels(), skipped.skipped) == (["1"], 1)


def test_a_header_naming_a_read_column_twice_is_refused(tmp_path):
    """csv's DictReader keeps the last of two columns of one name: the second 'text' was read as the text, in
    silence. A repeated column that is not read is harmless."""
    path = tmp_path / "twice.csv"
    path.write_text("text,label,text\nfirst,a,second\n")
    with pytest.raises(DataFormatError, match=r"twice.csv, line 1: the header names 2 columns 'text' \(fields 1, "
                                              r"3\): which to read is no more than a guess\. Rename all but one\.$"):
        read_classification(str(path))
    path.write_text("id,text,id,label\n1,first,2,a\n")
    assert read_classification(str(path)).texts == ["first"]


def test_half_a_surrogate_pair_in_json_is_named_by_file_and_line(tmp_path):
    """JSON's "\\ud83d" without its pair decodes to no character: the text was read, then refused by the
    preprocessor's tensor ("Error converting unicode string"), naming no file or line."""
    path = tmp_path / "emoji.jsonl"
    path.write_text('{"text": "fine \\ud83d\\ude00", "label": "a"}\n{"text": "cut \\ud83d here", "label": "b"}\n')
    kept = _refused_then_skipped(path, r"emoji.jsonl, line 2: 'cut \\ud83d here' holds '\\ud83d' at "
                                       r"character 5: half of a UTF-16 surrogate pair")
    assert (kept.texts, kept.skipped) == (["fine \U0001F600"], 1)  # a pair whole is one emoji
    path.write_text('{"text": "fine", "label": "a"}\n{"text": "fine too", "label": ["a", "\\ude00"]}\n')
    with pytest.raises(DataFormatError, match=r"emoji.jsonl, line 2: '\\ude00' holds '\\ude00' at character 1"):
        read_classification(str(path), multi_label=True)
