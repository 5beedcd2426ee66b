"""Bad input to the data readers, tokenizer, preprocessors and tasks: a clear error at the
boundary (naming the item, line or field and the fix) before any graph work, or the right result.

Numbers refer to the problems of issue 8. Tiny models, no training beyond one step.
"""

import json
import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import keras_bert_zoo as kbz
from keras_bert_zoo.data import DataFormatError
from keras_bert_zoo.data import read_conll
from keras_bert_zoo.data import read_csv
from keras_bert_zoo.data import read_glue
from keras_bert_zoo.data import read_jsonl
from keras_bert_zoo.data import read_squad
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor
from keras_bert_zoo.preprocessing.token_classification_preprocessor import TokenClassificationPreprocessor
from keras_bert_zoo.tasks.bert_question_answerer import _as_examples
from keras_bert_zoo.tasks.class_labels import check_label_tensor
from keras_bert_zoo.tasks.sentence_embedding import encode_texts

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", "the", "cat", "sat", ".", "a",
         "dog", "who", "ran", "ann", "bob", "apc", "##2", "gene", "##s", "x"]
POSITIONS = 32


def _backbone():
    return kbz.BertBackbone(vocabulary_size=len(VOCAB), num_layers=1, num_heads=2, hidden_dim=16,
                            intermediate_dim=32, max_sequence_length=POSITIONS)


@pytest.fixture(scope="module")
def tokenizer():
    return kbz.BertTokenizer(VOCAB)


@pytest.fixture(scope="module")
def preprocessor(tokenizer):
    return BertPreprocessor(tokenizer, sequence_length=8, max_sequence_length=POSITIONS)


@pytest.fixture(scope="module")
def backbone():
    return _backbone()


@pytest.fixture(scope="module")
def classifier(backbone, preprocessor):
    return kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["neg", "pos"])


@pytest.fixture(scope="module")
def ner(backbone, tokenizer):
    pre = TokenClassificationPreprocessor(tokenizer, sequence_length=12, max_sequence_length=POSITIONS)
    return kbz.BertTokenClassifier(backbone, pre, label_names=["O", "B-Gene", "I-Gene"])


@pytest.fixture(scope="module")
def qa(backbone, tokenizer):
    return kbz.BertQuestionAnswerer(backbone, BertPreprocessor(tokenizer, sequence_length=24, max_sequence_length=POSITIONS),
                                    doc_stride=8)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return str(path)


# A context where "ann" lies more than read_squad's 64-character search window from the end.
FAR_CONTEXT = "ann ran. " + "x " * 40 + "bob ran."


# --- 6: QA dict examples are checked against their context, as read_squad checks files ---

def test_qa_dict_answer_not_at_its_answer_start_is_refused(qa):
    bob = FAR_CONTEXT.index("bob")
    examples = [{"id": "q1", "question": "who ran", "context": FAR_CONTEXT,
                 "answers": [{"text": "ann", "answer_start": bob}]}]
    with pytest.raises(DataFormatError, match=rf"QA example 0 \(id 'q1'\), answer 0: the answer 'ann' is not near "
                                              rf"answer_start={bob} .*Fix answer_start"):
        qa.fit(examples, verbose=0)


def test_qa_dict_answer_start_past_the_end_is_refused_not_trained_as_no_answer(qa):
    examples = [{"question": "who ran", "context": FAR_CONTEXT,
                 "answers": [{"text": "ann", "answer_start": len(FAR_CONTEXT)}]}]
    with pytest.raises(DataFormatError, match=rf"QA example 0 \(id 0\), answer 0: the answer 'ann' is not near "
                                              rf"answer_start={len(FAR_CONTEXT)}"):
        qa.fit(examples, verbose=0)


def test_qa_dict_answers_are_repaired_exactly_as_read_squad_repairs_them(tmp_path):
    context = "ann ran. bob ran."
    answers = [{"text": "bob", "answer_start": 7}, {"text": "bob\n", "answer_start": 9}]  # off by 2; stray newline
    examples = _as_examples([{"id": "q", "question": "who ran", "context": context, "answers": answers}])
    path = _write(tmp_path, "s.json", json.dumps({"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "q", "question": "who ran", "answers": answers}]}]}]}))
    from_file = read_squad(path)
    assert examples.answers == from_file.answers == [[("bob", 9), ("bob", 9)]]
    assert examples.relocated == from_file.relocated == 2


def test_qa_v1_fit_refuses_an_example_without_answer(qa):
    with pytest.raises(ValueError, match=r"QA example 1 \(id 'q2'\) has no answer.*version_2_with_negative=True"):
        qa.fit([{"id": "q1", "question": "who", "context": "ann ran.", "answers": [("ann", 0)]},
                {"id": "q2", "question": "who", "context": "ann ran."}], verbose=0)


# --- 7: read_conll keeps the column layout of the file's first token line ---

_FORMAT_ERRORS = [  # (file name, content, reader, the words that must name the problem)
    ("ner.tsv", "-DOCSTART-\tO\n\nBRCA1\tB-Gene\nAPC2\tO\textra\n", read_conll,  # 7: not a new label
     r"ner.tsv:4: expected 2 tab-separated columns \(as on line 3\), found 3: 'APC2\\tO\\textra'"),
    ("ner.tsv", "BRCA1\tB-Gene\nAPC2 gene\tO\n", read_conll,  # 7: the word is not cut
     r"ner.tsv:2: expected one word and one tag, found word 'APC2 gene'"),
    # A line of megabytes was shown whole, twice.
    ("big.tsv", "BRCA1\tB-Gene\n" + "a " * 10 ** 6 + "\tO\n", read_conll,
     r"big.tsv:2: expected one word and one tag, found word '(a )+a\.\.\.( a)+' and tag 'O' \(one token per line, "
     r"without spaces\)\.$"),
    # Said "expected 2 space-separated columns (as on line 1), found 2".
    ("mixed.tsv", "Germline O\nBRCA1\tB-Disease\n", read_conll,
     r"mixed.tsv:2: holds a tab, but line 1 separates its 2 columns by spaces: 'BRCA1\\tB-Disease'\. Separate every "
     r"line's columns alike \(tabs, or spaces\)\.$"),
    ("sciie.txt", "-DOCSTART- NN O O\n\nEnglish NN O I-Material\nis NN O\n", read_conll,
     r"sciie.txt:4: expected 4 space-separated columns \(as on line 3\), found 3"),
    ("MRPC/train.tsv", "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tab\tcd\n0\t3\t4\ta\tb\tc\n", read_glue,
     r"train.tsv, line 3: expected 5 tab-separated columns \(as line 1\), found 6; does a text hold a tab"),
    ("sciie.txt", "English NN O I-Material\nis VB O O\n", lambda p: read_conll(p, tag_column=1),
     r"sciie.txt:1: 'NN' is not an entity tag: is tag_column=1 the column of the tags"),
    # IO data without its I-: the reader asked only whether tag_column was wrong, not how conlleval reads types.
    ("io.tsv", "Ann\tO\nSmith\tPER\n", read_conll,
     r"io.tsv:2: 'PER' is not an entity tag: .* Write an entity type without a prefix \('PER'\) as 'I-PER' on each"),
    ("ner.tsv", "BRCA1\tB-Gene\n", lambda p: read_conll(p, word_column=0, tag_column=-2),
     r"ner.tsv:1: word_column=0 and tag_column=-2 are the same of the 2 columns"),
    # A quote left open took in every line after it: named at its last line, or read as a label of three lines.
    ("open.csv", 'text,label\n"good movie,pos\nbad movie,neg\nfine,pos\n', lambda p: read_csv(p, "text", "label"),
     r"open.csv, line 2: a quote opened on this line is never closed, so lines 2-4 read as one row, and 1 fields but"),
    ("open2.csv", 'text,label\ngood,"pos\nbad,neg\nfine"\nok,neg\n', lambda p: read_csv(p, "text", "label"),
     r"open2.csv, line 2: a quote opened on this line is closed only on line 4, so lines 2-4 read as one row, and "
     r"the label 'label' holds line breaks\. Close the quote"),
    ("r.csv", "text,score\na,0.5\nb,nan\n", lambda p: read_csv(p, "text", "score", regression=True),
     r"r.csv, line 3: label 'nan' is not a finite number \(regression task\)"),
    ("SST-2/train.tsv", "", read_glue, r"train.tsv is empty: a SST-2 file holds a header line, then one example"),
    ("CoLA/train.tsv", "", read_glue, r"train.tsv is empty: a CoLA file holds one example per line"),
    ("a.jsonl", '{"text": "a", "label": "x"}\n5\n', read_jsonl,
     r"a.jsonl, line 2: expected a JSON object \{...\}, found int 5"),
    ("m.jsonl", '{"text": "a", "label": ["x"]}\n{"text": "b", "label": [["x"]]}\n', lambda p: read_jsonl(p, multi_label=True),
     r"m.jsonl, line 2: the labels \[\['x'\]\] hold \['x'\] \(list\); a multi-label row is a list of label names"),
    ("n.jsonl", '{"text": "a", "label": [null]}\n', lambda p: read_jsonl(p, multi_label=True),
     r"n.jsonl, line 1: the labels \[None\] hold None \(NoneType\)"),  # was a class named 'None'
    ("b.jsonl", '{"text": "a", "label": "x"}\n{"text": 7, "label": "y"}\n', read_jsonl,
     r"b.jsonl, line 2: the text 7 \(int\) is not a string"),
]


@pytest.mark.parametrize("name,content,reader,message", _FORMAT_ERRORS, ids=[c[0] + c[3][-12:] for c in _FORMAT_ERRORS])
def test_reader_format_errors_name_file_and_line(tmp_path, name, content, reader, message):
    with pytest.raises(DataFormatError, match=message):
        reader(_write(tmp_path, name, content))


def test_a_quoted_csv_text_may_span_lines(tmp_path):
    data = read_csv(_write(tmp_path, "m.csv", 'text,label\n"a\nmulti-line ""text""",pos\nfine,pos\nok,neg'),
                    "text", "label")
    assert (list(data.texts), data.label_names, list(data.labels)) == (
        ['a\nmulti-line "text"', "fine", "ok"], ["neg", "pos"], [1, 1, 0])


def test_conll_layouts_read_correctly(tmp_path):
    tab = read_conll(_write(tmp_path, "a.tsv", "-DOCSTART-\tO\n\nBRCA1\tB-Gene\nis\tO\n\nAPC2\tB-Gene\n"))
    assert (tab.words, tab.tags, tab.label_names) == ([["BRCA1", "is"], ["APC2"]], [["B-Gene", "O"], ["B-Gene"]],
                                                      ["O", "B-Gene"])
    spaced = read_conll(_write(tmp_path, "b.txt", "English NN O I-M\nis  VB O O\n"))
    assert (spaced.words, spaced.tags) == ([["English", "is"]], [["I-M", "O"]])
    # Trailing tabs: an empty last column, read as the tag (tag '' refused).
    trailing = read_conll(_write(tmp_path, "c.tsv", "BRCA1\tB-Gene\t\nis\tO\t\t\n\t\nAPC2\tB-Gene\t\r\n"))
    assert (trailing.words, trailing.tags) == ([["BRCA1", "is"], ["APC2"]], [["B-Gene", "O"], ["B-Gene"]])


def test_a_byte_order_mark_and_blank_lines_at_the_end_are_not_data(tmp_path):
    """Windows editors start a file with U+FEFF and leave blank lines at its end: the mark stayed in the first
    word or text (and shifted NER offsets), and a GLUE TSV with two newlines at its end was refused."""
    bom = "\ufeff"
    conll = read_conll(_write(tmp_path, "a.tsv", bom + "BRCA1\tB-Gene\nis\tO\n"))
    assert conll.words == [["BRCA1", "is"]]
    lines = read_jsonl(_write(tmp_path, "a.jsonl", bom + '{"text": "a", "label": "x"}\n{"text": "b", "label": "y"}\n'))
    assert list(lines.texts) == ["a", "b"]
    vocab = kbz.BertTokenizer(_write(tmp_path, "vocab.txt", bom + "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\nfilm\n"))
    assert vocab.get_vocabulary()[0] == "[PAD]" and vocab("film").numpy().tolist() == [5]
    glue = read_glue(_write(tmp_path, "SST-2/train.tsv", "sentence\tlabel\na film\t1\ndull\t0\n\n\r\n \n"))
    assert (list(glue.texts), list(glue.labels)) == (["a film", "dull"], [1, 0])
    with pytest.raises(DataFormatError, match=r"train.tsv, line 3: expected at least 2 tab-separated columns"):
        read_glue(_write(tmp_path, "SST-2/train.tsv", "sentence\tlabel\na film\t1\n\ndull\t0\n"))


# --- 8: class labels are checked before any graph is traced ---

@pytest.mark.parametrize("labels, error, message", [
    ([0.7, 1], ValueError, r"Example 0's label is 0.7, not a whole class id in \[0, 2\)"),
    ([0, 5], ValueError, r"Example 1's label is 5, outside the classes \[0, 2\)"),
    ([-1, 0], ValueError, r"Example 0's label is -1, outside the classes \[0, 2\)"),
    # An integer past int()'s 4300-digit limit:
    ([0, 10 ** 5000], ValueError, r"Example 1's label is <an integer of 16610 bits>, outside"),
    ([0, float("nan")], ValueError, r"Example 1's label is nan, not a whole class id"),
    (["neg", "pso"], ValueError, r"Example 1's label 'pso' is not one of the label_names \['neg', 'pos'\]"),
    ([0, None], TypeError, r"Example 1's label is None \(NoneType\)"),
    ([[0, 1], [1, 0]], ValueError, r"Example 0's label is a sequence .*problem_type='multi_label'"),
    ([[0], [1, [0]]], ValueError, r"Example 1's label is a sequence \(\[1, \[0\]\]\)"),  # ragged: was numpy's message
])
def test_bad_class_labels_are_named_before_training(classifier, labels, error, message):
    with pytest.raises(error, match=message):
        classifier.fit(["the cat", "a dog"], labels, verbose=0)


def test_string_labels_without_label_names_are_refused(backbone, preprocessor):
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2)
    with pytest.raises(ValueError, match=r"Example 0's label 'pos' is not a class id 0..1 \(the classifier has no "
                                         r"label_names\): give class ids, or give the classifier label_names=\[...\]"):
        clf.evaluate(["the cat"], ["pos"], verbose=0)
    assert clf.prepare_labels(["1", "0"]).tolist() == [1, 0]  # ids written as text, as a file holds them


def test_labels_are_mapped_through_label_names_and_whole_floats_accepted(classifier):
    labels = classifier.prepare_labels(["pos", "neg", 1.0, np.int64(0), [1]])
    assert labels.tolist() == [1, 0, 1, 0, 1] and labels.dtype == np.int32


def test_multi_label_and_regression_labels(backbone, preprocessor):
    tags = kbz.BertClassifier(backbone, preprocessor, num_classes=2, problem_type="multi_label",
                              label_names=["warm", "vehicle"])
    assert tags.prepare_labels([[1, 0], ["vehicle"], []]).tolist() == [[1, 0], [0, 1], [0, 0]]
    with pytest.raises(ValueError, match=r"Example 1's label has 3 values; multi_label takes num_classes=2"):
        tags.fit(["a", "b"], [[1, 0], [1, 0, 1]], verbose=0)
    with pytest.raises(ValueError, match=r"Example 0's label holds 0.5; multi-hot values must be 0 or 1"):
        tags.fit(["a"], [[0.5, 1]], verbose=0)
    score = kbz.BertClassifier(backbone, preprocessor, num_classes=1, problem_type="regression")
    assert score.prepare_labels([1, 2.5]).tolist() == [1.0, 2.5]
    with pytest.raises(ValueError, match=r"Example 1's label is '2.5'; regression targets must be finite numbers"):
        score.fit(["a", "b"], [1.0, "2.5"], verbose=0)
    with pytest.raises(ValueError, match=r"Example 0's label is inf; regression targets"):
        score.fit(["a"], [float("inf")], verbose=0)


def test_tf_data_labels_are_checked_as_they_stream(classifier):
    ds = tf.data.Dataset.from_tensor_slices((["the cat", "a dog"], [0, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"A class label is >= num_classes=2"):
        list(classifier.make_dataset(ds, batch_size=2))
    ds = tf.data.Dataset.from_tensor_slices((["the cat", "a dog"], ["pos", "neg"]))
    _, labels = next(iter(classifier.make_dataset(ds, batch_size=2)))
    assert labels.numpy().tolist() == [1, 0]


def test_tf_data_label_widths_and_tag_counts_are_checked_as_they_stream(backbone, preprocessor, ner):
    tags = kbz.BertClassifier(backbone, preprocessor, num_classes=2, problem_type="multi_label")
    list(tags.make_dataset(["the cat", "a dog"], [[1, 0], [0, 1]], batch_size=2))
    ds = tf.data.Dataset.from_tensor_slices((["the cat", "a dog"], [[1.0], [0.0]]))
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError), match=r"multi_label labels have"):
        list(tags.make_dataset(ds, batch_size=2))
    # A function traced for labels of any width (the packing function, after several inputs) checks the width
    # as the batch is read.
    check = tf.function(lambda y: check_label_tensor(y, "multi_label", 2),
                        input_signature=[tf.TensorSpec([None, None], tf.float32)])
    assert check(tf.constant([[1.0, 0.0]])).numpy().tolist() == [[1.0, 0.0]]
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"another number of values per example than "
                                                             r"num_classes=2"):
        check(tf.constant([[1.0], [0.0]]))
    words = tf.ragged.constant([["a", "gene"], ["apc2"]])
    for tag_ids in ([[0], [1, 2]], [[0, 1, 2], [1]]):  # as many tags in all as words, or more
        ds = tf.data.Dataset.from_tensor_slices((words, tf.ragged.constant(tag_ids)))
        with pytest.raises(tf.errors.InvalidArgumentError, match=r"another number of tags than words"):
            list(ner.make_dataset(ds, batch_size=2))


# --- 9: one class with softmax predicts 1.0 for everything ---

def test_num_classes_1_multi_class_is_refused(backbone, preprocessor):
    with pytest.raises(ValueError, match=r"num_classes=1 with problem_type='multi_class'.*num_classes=2.*"
                                         r"problem_type='regression'.*problem_type='multi_label'"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=1)


# --- 13: structural problems of SQuAD files name the file and the JSON path ---

@pytest.mark.parametrize("document, message", [
    ({"data": [{"paragraphs": []}, {"title": "x"}]}, r"data\[1\] has no 'paragraphs'"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, r"data\[0\].paragraphs\[0\] has no 'context'"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": {"id": 1}}]}]},
     r"data\[0\].paragraphs\[0\].qas should be list; found dict"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "q", "question": "?",
                                                         "answers": [{"text": "abc", "answer_start": "0"}]}]}]}]},
     r"data\[0\].paragraphs\[0\].qas\[0\].answers\[0\].answer_start should be int; found str '0'"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "q", "answers": []}]}]}]},
     r"data\[0\].paragraphs\[0\].qas\[0\] has no 'question'"),
    ({"version": "1.1"}, r"the top level has no 'data'"),
])
def test_squad_structure_errors_name_file_and_json_path(tmp_path, document, message):
    path = _write(tmp_path, "bad.json", json.dumps(document))
    with pytest.raises(DataFormatError, match=r"bad.json: " + message):
        read_squad(path)


# --- 14: an empty list gives an empty result of the right shape; training on nothing is refused ---

def test_empty_predictions_have_the_right_shape(classifier, ner, qa, backbone, preprocessor):
    probabilities = classifier.predict_proba([])
    assert probabilities.shape == (0, 2)
    assert classifier.predict_labels([]) == []
    regression = kbz.BertClassifier(backbone, preprocessor, num_classes=1, problem_type="regression")
    assert regression.predict_labels([]).shape == (0,)
    assert qa.predict_answers([]) == []
    assert ner.predict_entities([]) == [] and ner.predict_tags([]) == []
    vectors = encode_texts([], backbone=backbone, preprocessor=preprocessor)
    assert vectors.shape == (0, 16) and vectors.dtype == np.float32


def test_training_on_no_examples_is_refused(classifier, qa):
    with pytest.raises(ValueError, match="No examples: the input list is empty"):
        classifier.evaluate([], [], verbose=0)
    with pytest.raises(ValueError, match="No examples: the input list is empty"):
        qa.fit([], verbose=0)
    with pytest.raises(ValueError, match="No examples: the input list is empty"):
        qa.evaluate_squad([])


# --- 15: a non-string in a text batch is named by index and type, at every entry point ---

def test_bad_text_items_are_named_at_every_entry_point(classifier, preprocessor, tokenizer):
    with pytest.raises(TypeError, match=r"Text 1 is None \(NoneType\); every text must be a string"):
        preprocessor(["the cat", None])
    with pytest.raises(TypeError, match=r"Text 2 is 7 \(int\)"):
        classifier.predict_proba(["a", "b", 7])
    with pytest.raises(TypeError, match=r"Text 1 is None"):
        classifier.fit(["a", None], [0, 1], verbose=0)
    with pytest.raises(TypeError, match=r"text_b of pair 0 is None"):
        classifier.predict([("a", None)])
    with pytest.raises(TypeError, match=r"Text 0 is 3.5 \(float\)"):
        tokenizer([3.5])
    # Checked before the (here non-existent) preset would be loaded.
    with pytest.raises(TypeError, match=r"Text 1 is None"):
        encode_texts(["a", None], preset="/no/such/preset")


def test_utf8_bytes_are_texts_and_other_bytes_are_refused(preprocessor):
    as_bytes = preprocessor([b"the cat", "a dog"])["token_ids"].numpy()
    as_str = preprocessor(["the cat", "a dog"])["token_ids"].numpy()
    np.testing.assert_array_equal(as_bytes, as_str)
    with pytest.raises(ValueError, match=r"Text 1 is bytes that are not UTF-8 .*decode it"):
        preprocessor(["ok", b"caf\xe9"])


# --- 16: NER sentences: empty ones, length mismatches, unknown tags ---

def test_empty_ner_sentence_is_skipped_with_a_warning(ner):
    with pytest.warns(UserWarning, match=r"Skipped 1 empty sentence\(s\) \(the first is sentence 0\)"):
        ds = ner.make_dataset([[], ["apc2", "gene"]], [[], ["B-Gene", "I-Gene"]], batch_size=4)
    _, labels, weights = next(iter(ds))
    # [CLS] apc ##2 gene [SEP]: tags on first pieces only.
    assert labels.numpy()[:, :5].tolist() == [[0, 1, 1, 2, 0]]
    assert weights.numpy()[:, :5].tolist() == [[0, 1, 0, 1, 0]]


def test_ner_tag_problems_are_named(ner):
    with pytest.raises(ValueError, match=r"Sentence 1 has 2 words but 1 tags"):
        ner.fit([["a"], ["apc2", "gene"]], [["O"], ["B-Gene"]], verbose=0)
    with pytest.raises(ValueError, match=r"Unknown tag\(s\) \['B-Disease'\] at sentence 1, word 0; the model's "
                                         r"labels are \['O', 'B-Gene', 'I-Gene'\]"):
        ner.fit([["a"], ["gene"]], [["O"], ["B-Disease"]], verbose=0)
    with pytest.raises(ValueError, match=r"Unknown tag\(s\) \[3\] at sentence 0, word 1"):
        ner.evaluate([["a", "gene"]], [[0, 3]], verbose=0)
    with pytest.raises(ValueError, match=r"No sentences: all 2 are empty"):
        ner.fit([[], []], [[], []], verbose=0)


# --- 17: detokenize ---

def test_detokenize_joins_word_pieces(tokenizer):
    ids = tokenizer(["Unaffable cat sat.", "the CATS", "zebra dog"])
    assert ids.to_list() == [[5, 6, 7, 9, 10, 11], [8, 9, 21], [1, 13]]
    assert tokenizer.detokenize(ids).numpy().tolist() == [b"unaffable cat sat .", b"the cats", b"[UNK] dog"]
    assert tokenizer.detokenize([5, 6, 7]).numpy() == b"unaffable"
    # Special tokens and padding come back as written; a leading suffix piece keeps its ##.
    assert tokenizer.detokenize(tf.constant([[2, 5, 6, 7, 3, 0]])).numpy().tolist() == [b"[CLS] unaffable [SEP] [PAD]"]
    assert tokenizer.detokenize([[21, 9]]).numpy().tolist() == [b"##s cat"]


# --- Further cases ---

def test_csv_rows_with_more_or_fewer_fields_than_the_header(tmp_path):
    path = _write(tmp_path, "c.csv", "text,label\nhi,1\nhello, world,0\n")
    with pytest.raises(DataFormatError, match=r"c.csv, line 3: 3 fields but the header has 2"):
        read_csv(path, "text", "label")
    path = _write(tmp_path, "d.csv", "text,label\nhi,1\nhello\n")
    with pytest.raises(DataFormatError, match=r"d.csv, line 3: 1 fields but the header has 2"):
        read_csv(path, "text", "label")


def test_duplicate_label_names_are_refused(tmp_path, backbone, preprocessor):
    with pytest.raises(ValueError, match=r"label_names must be distinct; \['a'\] appear more than once"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["a", "a"])
    path = _write(tmp_path, "e.csv", "text,label\nhi,1\n")
    with pytest.raises(ValueError, match=r"label_names must be distinct; \['1'\]"):
        read_csv(path, "text", "label", label_names=["1", "1"])


def test_qa_example_missing_keys_and_non_string_question(qa):
    with pytest.raises(ValueError, match=r"Example 0 is not a dict with 'question' and 'context' "
                                         r"\(found \['answers', 'question'\]\)"):
        qa.predict_answers([{"question": "who", "answers": []}])
    with pytest.raises(TypeError, match=r"QA example 1 \(id 'b'\): 'question' is 5 \(int\)"):
        qa.predict_answers([{"question": "who", "context": "ann"}, {"id": "b", "question": 5, "context": "ann"}])


def test_qa_answers_malformed_and_hf_style(qa):
    with pytest.raises(ValueError, match=r"QA example 0 \(id 0\): answer 0 is \{'text': 'ann'\}; give"):
        qa.fit([{"question": "who", "context": "ann ran.", "answers": [{"text": "ann"}]}], verbose=0)
    # HF datasets' layout: a dict of lists.
    examples = _as_examples([{"question": "who", "context": "ann ran.", "answers": {"text": ["ran"], "answer_start": [4]}}])
    assert examples.answers == [[("ran", 4)]]


def test_evaluate_glue_says_how_it_takes_labels(classifier):
    """`evaluate_glue((texts, labels))` was refused as taking "(texts, labels) or a reader's result"."""
    texts, labels = ["the cat sat .", "a dog ran ."], ["pos", "neg"]
    for x, extra in (((texts, labels), "A tuple (texts, labels) as x is not unpacked"), (texts, None),
                     (("the cat sat .", "a dog ran ."), None)):
        with pytest.raises(ValueError, match=re.escape("evaluate_glue needs the labels: pass them as y, "
                                                       "evaluate_glue(texts, labels)")) as error:
            classifier.evaluate_glue(x)
        assert "(texts, labels) or a reader's result" not in str(error.value)
        assert (extra in str(error.value)) if extra else "tuple" not in str(error.value)
    with pytest.raises(ValueError, match=r"for a tf\.data\.Dataset, use evaluate\(\)"):
        classifier.evaluate_glue(tf.data.Dataset.from_tensor_slices((texts, [1, 0])))
    assert set(classifier.evaluate_glue(texts, labels)) == {"accuracy", "f1", "macro_f1", "mcc"}
    assert set(classifier.evaluate_glue(tuple(texts), labels)) == {"accuracy", "f1", "macro_f1", "mcc"}


def test_pairs_of_the_wrong_arity_are_named(classifier):
    with pytest.raises(ValueError, match=r"Text 1 is a 3-item tuple; a pair must be exactly \(text_a, text_b\)"):
        classifier.fit([("a", "b"), ("a", "b", "c")], [0, 1], verbose=0)


def test_preprocessor_that_does_not_fit_the_backbone_is_refused(backbone, tokenizer):
    with pytest.raises(ValueError, match=r"sequence_length=64 tokens but the backbone has 32 positions"):
        kbz.BertClassifier(backbone, BertPreprocessor(tokenizer, sequence_length=64), num_classes=2)
    bigger = kbz.BertTokenizer(VOCAB + ["extra"])
    with pytest.raises(ValueError, match=r"tokenizer has 24 tokens but the backbone embeds only 23"):
        kbz.BertClassifier(backbone, BertPreprocessor(bigger, sequence_length=8), num_classes=2)


def test_numpy_object_array_with_a_missing_value(classifier):
    with pytest.raises(TypeError, match=r"Text 1 is a missing value \(float NaN\)"):
        classifier.predict_labels(np.array(["the cat", np.nan], dtype=object))
    assert len(classifier.predict_labels(np.array(["the cat", "a dog"], dtype=object))) == 2


def test_packed_inputs_with_unknown_or_missing_keys(classifier):
    packed = {name: np.zeros((1, 8), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
    with pytest.raises(ValueError, match=r"unknown: \['attention_mask'\]"):
        classifier.predict({**packed, "attention_mask": packed["padding_mask"]})
    with pytest.raises(ValueError, match=r"missing: \['segment_ids'\]"):
        classifier.predict({k: v for k, v in packed.items() if k != "segment_ids"})


def test_detokenize_out_of_vocabulary_id(tokenizer):
    with pytest.raises(ValueError, match=r"Token id 99 is not in the vocabulary \(ids run from 0 to 22\)"):
        tokenizer.detokenize([5, 99])


def test_ner_sentence_given_as_a_string_or_with_a_none_word(ner, classifier):
    with pytest.raises(TypeError, match=r"Sentence 0 is a string; give each sentence as a list of words"):
        ner.predict_tags(["apc2 gene"])
    # One string was read as sentences of one letter each ("Sentence 0" was 'a').
    with pytest.raises(TypeError, match=r"Expected a batch of sentences, got one str \('apc2 gene'\): .*"
                                        r"\[text.split\(\)\] for one"):
        ner.predict_tags("apc2 gene")
    # Word lists into predict_entities: not texts with a wrong item, but the other method's input.
    with pytest.raises(TypeError, match=r"Text 0 is a list of words; predict_entities reads raw texts .* tag word "
                                        r"lists with predict_tags"):
        ner.predict_entities([["apc2", "gene"]])
    with pytest.raises(TypeError, match=r"Sentence 0, word 1 is None"):
        ner.predict_tags([["apc2", None]])
    with pytest.raises(TypeError, match=r"Text 1 is 3 \(int\)"):
        ner.predict_entities(["apc2 gene", 3])
    # One kind of example at a time: a pair among single texts became the pair's... nothing TensorFlow could stack.
    with pytest.raises(ValueError, match=r"Text 1 is a pair but text 0 is a single text: give a task one kind"):
        classifier.predict(["apc2 gene", ("a", "b")])
    # One string, not a batch: it was read character by character (29 "texts" of one letter each).
    with pytest.raises(TypeError, match=r"Expected a batch of texts, got one str \('apc2 gene'\): pass a list"):
        ner.predict_entities("apc2 gene")


def test_conll_tag_column_outside_the_layout(tmp_path):
    path = _write(tmp_path, "ner.tsv", "\nBRCA1\tB-Gene\n")
    with pytest.raises(DataFormatError, match=r"ner.tsv:2: tag_column=3 is not among the 2 tab-separated column"):
        read_conll(path, tag_column=3)


def test_labels_as_a_column_vector_are_accepted(classifier):
    assert classifier.prepare_labels(np.array([[0], [1], [1]])).tolist() == [0, 1, 1]
    with pytest.raises(ValueError, match=r"2 examples but 3 labels"):
        classifier.fit(["the cat", "a dog"], np.array([[0], [1], [1]]), verbose=0)


# --- text that is not UTF-8 is named by file, line and byte (Python's codec message named neither) ---

_LATIN1 = [  # (file name, lines before the bad one, the bad line's prefix, a reader)
    ("SST-2/train.tsv", "sentence\tlabel\ngood\t1\n", b"caf", read_glue),
    ("a.csv", "text,label\ngood,1\n", b"caf", lambda p: read_csv(p, "text", "label")),
    ("a.jsonl", '{"text": "a", "label": "x"}\n{"text": "b", "label": "y"}\n', b'{"text": "caf', read_jsonl),
    ("ner.tsv", "BRCA1\tB-Gene\nis\tO\n", b"caf", read_conll),
    ("squad.json", '{"version": "1.1",\n"data": []\n', b'"x": "caf', read_squad),
    ("vocab.txt", "[PAD]\n[UNK]\n", b"caf", kbz.BertTokenizer),
]


@pytest.mark.parametrize("name,before,bad,reader", _LATIN1, ids=[c[0] for c in _LATIN1])
def test_text_that_is_not_utf8_is_named_by_file_line_and_byte(tmp_path, name, before, bad, reader):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(before.encode() + bad + b"\xe9 au lait\n")
    column = len(bad) + 1
    with pytest.raises(ValueError, match=rf"{re.escape(name)}, line 3: byte 0xe9 \(byte {column} of the line\) is not "
                                         r"UTF-8 text: save the file as UTF-8"):
        reader(str(path))


def test_utf16_and_compressed_files_are_told_apart_from_latin1(tmp_path):
    """Excel's "Unicode Text" is UTF-16 and a .tsv.gz is gzip: the Latin-1 advice (iconv -f latin1) made
    mojibake of the one and nothing of the other."""
    import gzip

    utf16 = tmp_path / "SST-2" / "train.tsv"
    utf16.parent.mkdir()
    utf16.write_bytes("sentence\tlabel\ncafé\t1\n".encode("utf-16"))
    with pytest.raises(ValueError, match=r"train.tsv, line 1: byte 0xff \(byte 1 of the line\) is not UTF-8 text: "
                                         r"it is UTF-16 .*iconv -f utf-16 -t utf-8"):
        read_glue(str(utf16))
    packed = tmp_path / "ner.tsv.gz"
    packed.write_bytes(gzip.compress(b"BRCA1\tB-Gene\n" * 50))
    with pytest.raises(ValueError, match=r"ner.tsv.gz, line 1: .* is not UTF-8 text: it is gzip-compressed: "
                                         r"decompress it first"):
        read_conll(str(packed))


def test_text_lines_and_corpora_that_are_not_utf8_are_named(tmp_path, default_preset_dir):
    from keras_bert_zoo.cli.text_lines import read_text_lines
    from keras_bert_zoo.data.pretraining_corpus import read_documents

    path = tmp_path / "in.txt"
    path.write_bytes(b"one\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"in.txt, line 2: byte 0xe9 \(byte 4 of the line\)"):
        read_text_lines(str(path), "--input_file")
    with pytest.raises(ValueError, match=r"in.txt, line 2: byte 0xe9"):
        read_documents([str(path)], kbz.BertTokenizer.from_preset(default_preset_dir))


# --- a `tokenizer` argument that is not a BertTokenizer is named where it is passed, not deep inside ---

def _instances():
    from keras_bert_zoo.preprocessing.pretraining_instances import FEATURES

    return {name: np.zeros((2,) if name == "next_sentence_label" else (2, 4), "int32") for name in FEATURES}


def _tokenizer_entry_points(tmp_path):
    """{name the error gives: a call taking the tokenizer}, every public function and class that takes one."""
    from keras_bert_zoo.data import read_documents
    from keras_bert_zoo.data import write_pretraining_records
    from keras_bert_zoo.data.pretraining_records import check_record_vocabulary
    from keras_bert_zoo.data.pretraining_records import dynamic_masking

    corpus = _write(tmp_path, "corpus.txt", "the cat sat.\n\nthe dog ran.\n")
    records = str(tmp_path / "out.tfrecord")
    return {
        "write_pretraining_records": lambda t: write_pretraining_records(_instances(), records, tokenizer=t),
        "read_documents": lambda t: read_documents(corpus, t),
        "create_pretraining_instances": lambda t: kbz.create_pretraining_instances([[[8, 9]], [[12, 13]]], t),
        "check_record_vocabulary": lambda t: check_record_vocabulary(records, t),
        "dynamic_masking": lambda t: dynamic_masking(t),
        "BertPreprocessor": lambda t: BertPreprocessor(t, sequence_length=8),
        "TokenClassificationPreprocessor": lambda t: TokenClassificationPreprocessor(t, sequence_length=8),
        "BertBackbone.save_to_preset": lambda t: _backbone().save_to_preset(str(tmp_path / "preset"), tokenizer=t),
        "BertPretrainer.save_to_preset": lambda t: kbz.BertPretrainer(_backbone()).save_to_preset(
            str(tmp_path / "preset"), tokenizer=t),
    }


def _keras_hub_tokenizer():
    import keras_hub

    return keras_hub.tokenizers.WordPieceTokenizer(vocabulary=VOCAB, lowercase=True)


@pytest.mark.parametrize("bad, got, hint", [
    ("vocab.txt", r"the str 'vocab.txt'", r" A path or preset name is not loaded for you: build the BertTokenizer"),
    (_keras_hub_tokenizer, r"a keras_hub\.src\.tokenizers\.word_piece_tokenizer\.WordPieceTokenizer",
     r" Another library's tokenizer \(keras-hub's\) is not one: build a BertTokenizer from its vocabulary, "
     r"BertTokenizer\(tokenizer.get_vocabulary\(\), lowercase=\.\.\.\)\."),
    (None, "None", ""),
], ids=["path", "keras_hub", "None"])
def test_a_tokenizer_that_is_not_a_bert_tokenizer_is_named_at_the_boundary(tmp_path, bad, got, hint):
    bad = bad() if callable(bad) else bad
    for name, call in _tokenizer_entry_points(tmp_path).items():
        if bad is None and name in ("write_pretraining_records", "BertBackbone.save_to_preset",
                                    "BertPretrainer.save_to_preset"):
            continue  # optional there
        with pytest.raises(TypeError, match=rf"^{re.escape(name)}: tokenizer must be a keras_bert_zoo BertTokenizer; "
                                            rf"got {got}\. Pass BertTokenizer\.from_preset\(preset\) \(the model's "
                                            rf"own\) or BertTokenizer\('vocab.txt', lowercase=\.\.\.\)\.{hint}"):
            call(bad)
    assert not os.path.exists(tmp_path / "out.tfrecord") and not os.path.exists(tmp_path / "preset")


def test_the_tokenizer_check_lets_a_bert_tokenizer_and_an_optional_none_through(tmp_path, tokenizer):
    from keras_bert_zoo.data import write_pretraining_records

    assert write_pretraining_records(_instances(), str(tmp_path / "tagged.tfrecord"), tokenizer=tokenizer) == 2
    assert write_pretraining_records(_instances(), str(tmp_path / "untagged.tfrecord"), tokenizer=None) == 2
    _backbone().save_to_preset(str(tmp_path / "preset"), tokenizer=None)
    assert kbz.BertBackbone.from_preset(str(tmp_path / "preset")).vocabulary_size == len(VOCAB)


@pytest.mark.parametrize("label_names, message", [
    ("OBI", "got 'OBI'"),  # was read as its characters: tags O, B and I
    (3, "got 3"),  # was "'int' object is not iterable"
    (["O", ["B"], "I"], r"\['B'\] is neither"),  # was "unhashable type: 'list'"
    (["O", 1.5, "I"], "1.5 is neither"),
])
def test_label_names_that_are_no_list_of_names_are_refused_by_what_they_are(backbone, preprocessor, tokenizer,
                                                                              label_names, message):
    with pytest.raises(TypeError, match=rf"label_names must be a list of names, e.g. .*{message}"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=3, label_names=label_names)
    ner_preprocessor = TokenClassificationPreprocessor(tokenizer, sequence_length=12, max_sequence_length=POSITIONS)
    with pytest.raises(TypeError, match=rf"label_names must be a list of names, e.g. .*{message}"):
        kbz.BertTokenClassifier(backbone, ner_preprocessor, label_names=label_names)
    # Names as numbers, numpy's included, stay names.
    assert kbz.BertClassifier(backbone, preprocessor, num_classes=3,
                              label_names=np.array([0, 1, 2])).label_names == [0, 1, 2]


def test_text_labels_follow_names_that_are_numbers(backbone, preprocessor):
    from keras_bert_zoo.data.classification_examples import ClassificationExamples

    # Names that are whole numbers (label_names=[1, 0]) read a file's "1" / "0" by name: a reader's result (GLUE's
    # names "0", "1") was refused ("'0' is not one of the label_names [1, 0]"), as were a Dataset's strings.
    ints = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=[1, 0])
    glue = ClassificationExamples(["the cat", "a dog", "a cat"], [0, 1, 1], ["0", "1"])
    assert ints.prepare_labels(ints.standardize_examples(glue)[1]).tolist() == [1, 0, 0]
    assert ints.prepare_labels(["1", "0", b"1"]).tolist() == [0, 1, 0]
    dataset = tf.data.Dataset.from_tensor_slices((["the cat", "a dog"], ["0", "1"])).batch(2)
    assert np.isfinite(ints.evaluate(dataset, verbose=0)[0])
    # Names written as floats ("1.0", "0.0": a file exported with floats) are numbers too: a file's "1" was read as
    # the class id 1, the class named "0.0", in silence. A whole number is read in each way it is written.
    floats = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["1.0", "0.0"])
    for spelling in (["1.0", "0.0"], ["1", "0"], ["1.00", "0.00"], ["1.000000", "0.000000"]):
        assert floats.prepare_labels(spelling).tolist() == [0, 1]
        assert ints.prepare_labels(spelling).tolist() == [0, 1]
    floats_as_text = tf.data.Dataset.from_tensor_slices((["the cat", "a dog"], tf.strings.as_string([1.0, 0.0])))
    assert np.concatenate([y for _, y in floats.make_dataset(floats_as_text, batch_size=2)]).tolist() == [0, 1]
    with pytest.raises(ValueError, match=r"Example 0's label '1.5' is not one of the label_names \['1.0', '0.0'\] "
                                         r"\(which name"):
        floats.prepare_labels(["1.5", "0"])


def test_a_readers_class_ids_as_text_are_class_ids_to_a_classifier_without_names(backbone, preprocessor, tmp_path):
    # A reader's ids count the names of its one file, sorted as text: to a classifier without label_names a file's
    # "2" was class 4 among "0".."11" ("10", "11" sort first), and class 1 of a held-out file without a "1": in
    # silence, the scores of another labelling than training's.
    train = tmp_path / "train.csv"
    train.write_text("text,label\n" + "".join(f"the cat {i},{i}\n" for i in range(12)))
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=12)
    examples = read_csv(str(train), "text", "label")
    assert clf.prepare_labels(clf.standardize_examples(examples)[1]).tolist() == list(range(12))
    dev = tmp_path / "dev.csv"
    dev.write_text("text,label\nthe cat,0\na dog,2\n")
    three = kbz.BertClassifier(backbone, preprocessor, num_classes=3)
    assert three.prepare_labels(three.standardize_examples(read_csv(str(dev), "text", "label"))[1]).tolist() == [0, 2]
    assert np.isfinite(three.evaluate(read_csv(str(dev), "text", "label"), verbose=0)[0])
    # An id beyond the classes is refused, not read by its place in the file's names.
    with pytest.raises(ValueError, match=r"Example 1's label '2' is not a class id 0..1"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=2).evaluate(read_csv(str(dev), "text", "label"))
    # Names that are no ids keep the reader's ids: the classifier has no names to match them to.
    named = tmp_path / "named.csv"
    named.write_text("text,label\nthe cat,pos\na dog,neg\n")
    two = kbz.BertClassifier(backbone, preprocessor, num_classes=2)
    assert two.prepare_labels(two.standardize_examples(read_csv(str(named), "text", "label"))[1]).tolist() == [1, 0]


def test_a_multi_label_readers_rows_still_fit_a_classifier_without_names(backbone, preprocessor, tmp_path):
    data = tmp_path / "tags.csv"
    data.write_text('text,label\nthe cat,"0,2"\na dog,\nthe dog,1\n')
    examples = read_csv(str(data), "text", "label", multi_label=True)
    tags = kbz.BertClassifier(backbone, preprocessor, num_classes=3, problem_type="multi_label")
    assert tags.prepare_labels(tags.standardize_examples(examples)[1]).tolist() == \
        [[1, 0, 1], [0, 0, 0], [0, 1, 0]]


def test_a_readers_result_unpacked_is_read_as_it_is_whole(backbone, preprocessor, tmp_path):
    # Unpacked (texts, labels = read_glue(path)), the labels were the reader's own ids, which count one file's
    # names sorted as text (or its GLUE task's): fit(texts, labels) and evaluate(texts, examples.y) scored other
    # classes than fit(examples) against names in another order, in silence. They are the names now.
    glue = read_glue(_write(tmp_path, "SST-2/dev.tsv", "sentence\tlabel\nthe cat\t0\na dog\t1\na cat\t1\n"))
    dev = read_csv(_write(tmp_path, "dev.csv", "text,label\nthe cat,a\na dog,c\n"), "text", "label")
    for names, examples, expected in ((["1", "0"], glue, [1, 0, 0]), (["c", "b", "a"], dev, [2, 0])):
        clf = kbz.BertClassifier(backbone, preprocessor, num_classes=len(names), label_names=names)
        texts, labels = examples
        assert (texts, labels) == (examples.x, examples.y) == (examples.texts, examples.named_labels())
        assert clf.prepare_labels(labels).tolist() == expected
        assert clf.prepare_labels(clf.standardize_examples(examples)[1]).tolist() == expected
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["1", "0"])
    assert clf.evaluate(*glue, verbose=0) == pytest.approx(clf.evaluate(glue, verbose=0))
    # Names that are no class ids, to a classifier without names, are refused unpacked, naming the fix (whole,
    # the reader's ids are its only labelling).
    named = read_csv(_write(tmp_path, "named.csv", "text,label\nthe cat,pos\na dog,neg\n"), "text", "label")
    with pytest.raises(ValueError, match=r"Example 0's label 'pos' is not a class id 0..1 \(the classifier has no "
                                         r"label_names\): give class ids, or give the classifier label_names="):
        kbz.BertClassifier(backbone, preprocessor, num_classes=2).fit(*named, verbose=0)


def test_a_multi_label_readers_class_ids_as_text_are_class_ids_to_a_classifier_without_names(
        backbone, preprocessor, tmp_path):
    # The reader's multi-hot rows count the names of its one file, sorted as text: a row "2" among "0".."11" was
    # class 4 ("10", "11" sort first), in silence. Names that are class ids are those ids, as for one label each.
    rows = "".join(f"the cat {i},{i}\n" for i in range(12)) + 'a dog,"10,2"\n'
    examples = read_csv(_write(tmp_path, "tags.csv", "text,label\n" + rows), "text", "label", multi_label=True)
    tags = kbz.BertClassifier(backbone, preprocessor, num_classes=12, problem_type="multi_label")
    expected = np.eye(12, dtype=int).tolist() + [[int(i in (2, 10)) for i in range(12)]]
    assert tags.prepare_labels(tags.standardize_examples(examples)[1]).tolist() == expected
    assert tags.prepare_labels(list(examples)[1]).tolist() == expected  # unpacked, as whole
    with pytest.raises(ValueError, match=r"Example 0's label lists '1' twice; a list of names names each class once"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=3, problem_type="multi_label").prepare_labels(
            [["1", "0", "1"]])


def test_class_weight_keys_as_text_are_read_as_labels_as_text_are(backbone, preprocessor):
    # class_weight read its keys its own way: {"0": 2.0} was refused by a classifier without names, and by one with
    # names that are no numbers, which read a label "0" as class 0.
    for names, key, expected in ((None, "1", [1.0, 2.0]), (["neg", "pos"], "0", [2.0, 1.0]),
                                 (["neg", "pos"], "pos", [1.0, 2.0]), (["1", "0"], "1", [2.0, 1.0])):
        clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=names)
        assert clf.class_weights({key: 2.0}) == expected
        assert clf.prepare_labels([key]).tolist() == [expected.index(2.0)]  # as a label of that text is read
    with pytest.raises(ValueError, match=r"class_weight names '2', which is no class of this model: give class ids"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=2).class_weights({"2": 2.0})


def test_number_labels_against_names_that_are_other_numbers_are_refused_as_ambiguous(backbone, preprocessor):
    # Names in the order pandas' unique() meets them ([1, 0]) beside the data's own 0/1 labels: label 1 was read as
    # class id 1, the class named 0, and the classifier learnt the classes swapped, in silence. Read as names
    # instead, the model's own ids (argmax) would be swapped: a number is refused, text is read by name.
    texts = [f"text {i}" for i in range(4)]
    labels = np.array([1, 0, 0, 1])
    for names in ([np.int64(1), np.int64(0)], [1, 0], ["1", "0"], ["1.0", "0.0"]):
        clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=names)
        for given in (labels, labels.astype("float32"), labels.tolist()):
            with pytest.raises(ValueError, match=r"Example 0's label, the number 1(\.0)?, is refused: the "
                                                 r"label_names .* name classes by numbers other than their class "
                                                 r"ids \(class id 0 is "
                                                 r"named '?1.*so a number could be either. If the labels are the "
                                                 r"names, write them as text.*astype\(str\).*; if they are class ids "
                                                 r".*\[label_names\[i\] for i in ids\].*or its `\.y`\)\.$"):
                clf.prepare_labels(given)
        for as_text in (labels.astype(str), labels.astype("float32").astype(str)):  # "1", "1.0": by name, class 0
            assert clf.prepare_labels(as_text).tolist() == [0, 1, 1, 0]
        with pytest.raises(ValueError, match=r"A label of the Dataset, a number \(int64\), is refused.*"
                                             r"tf.strings.as_string\(y\), \*w"):
            clf.make_dataset(tf.data.Dataset.from_tensor_slices((texts, labels)), batch_size=2)
        named = tf.data.Dataset.from_tensor_slices((texts, labels.astype(str)))
        assert np.concatenate([y for _, y in clf.make_dataset(named, batch_size=2)]).tolist() == [0, 1, 1, 0]
        with pytest.raises(ValueError, match=r"class_weight's key 1 is refused.*\{'1': 2.0\}"):
            clf.class_weights({1: 3.0})
        assert clf.class_weights({"1": 3.0}) == [3.0, 1.0]
    # Star ratings 1..3: class id 2 is "3"; label 3 was refused as an id, 1 trained the class named "2".
    stars = kbz.BertClassifier(backbone, preprocessor, num_classes=3, label_names=["1", "2", "3"])
    with pytest.raises(ValueError, match=r"Example 0's label, the number 3, is refused.*class id 0 is named '1'"):
        stars.prepare_labels([3, 1])
    assert stars.prepare_labels(["3", "1"]).tolist() == [2, 0]
    # Names that are their own ids, or no numbers, keep number labels as class ids, as Keras reads them.
    for names in ([0, 1], ["0", "1"], ["neg", "pos"], ["neg", "1"]):
        clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=names)
        assert clf.prepare_labels(labels).tolist() == labels.tolist()
        assert clf.class_weights({1: 3.0}) == [1.0, 3.0]
    # numpy's names are Python's, whole floats (pandas' unique() of a column that held a NaN) whole numbers: in the
    # config, messages and predicted labels.
    for names in (np.array([1, 0]), [1.0, 0.0], np.array([1.0, 0.0])):
        clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=names)
        assert clf.get_config()["label_names"] == [1, 0] and type(clf.label_names[0]) is int
    with pytest.raises(TypeError, match=r"each a string or a whole number; 0.5 is neither"):
        kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=[1, 0.5])
    # A Dataset of packed inputs: its labels were never read, so [1, 0] numbers trained the classes swapped, and
    # names as text failed as the graph ran ("Cast string to float is not supported").
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=[1, 0])
    packed = {k: v.numpy() for k, v in preprocessor(texts).items()}
    with pytest.raises(ValueError, match=r"A label of the Dataset, a number \(int64\), is refused"):
        clf.evaluate(tf.data.Dataset.from_tensor_slices((packed, labels)).batch(2), verbose=0)
    with pytest.raises(ValueError, match=r"^A label of the Dataset, a number \(int64\), is refused"):  # no trace
        clf.fit(tf.data.Dataset.from_tensor_slices((packed, labels)), batch_size=2, verbose=0)
    # Labels in a structure pass as Keras reads them.
    ids = kbz.BertClassifier(backbone, preprocessor, num_classes=2)
    ids.compile()
    assert np.isfinite(ids.fit(tf.data.Dataset.from_tensor_slices((packed, (labels,))).batch(2),
                               verbose=0).history["loss"][0])
    as_text = tf.data.Dataset.from_tensor_slices((packed, labels.astype(str))).batch(2)
    assert clf.evaluate(as_text, verbose=0)[0] == pytest.approx(clf.evaluate(packed, labels.astype(str),
                                                                              verbose=0)[0], rel=1e-5)


def test_f1_of_two_classes_is_that_of_the_class_named_1(backbone, preprocessor):
    # GLUE's f1 (MRPC, QQP) is the positive class's, labelled 1: against names ["1", "0"] that is class id 0.
    texts = ["a", "b", "c", "d", "e"]
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["1", "0"])
    gold = ["1", "1", "0", "0", "0"]
    predicted = clf.predict_proba(texts).argmax(-1)  # class ids: 0 is "1"
    gold_ids, positive = np.array([0, 0, 1, 1, 1]), predicted == 0
    tp = float((positive & (gold_ids == 0)).sum())
    expected = 0.0 if tp == 0 else 2 * tp / (positive.sum() + (gold_ids == 0).sum())
    assert clf.evaluate_glue(texts, gold)["f1"] == pytest.approx(expected)
    ids = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["neg", "pos"])
    predicted = ids.predict_proba(texts).argmax(-1)
    tp = float(((predicted == 1) & (gold_ids == 1)).sum())
    expected = 0.0 if tp == 0 else 2 * tp / ((predicted == 1).sum() + (gold_ids == 1).sum())
    assert ids.evaluate_glue(texts, gold_ids.tolist())["f1"] == pytest.approx(expected)


def test_packed_inputs_labelled_by_names_that_are_numbers_fit_with_validation_data(backbone, preprocessor):
    # Keras' fit scores validation data through evaluate, which read the class ids fit had prepared a second time,
    # as labels: against names that are other numbers, they were refused (or, read as names, swapped).
    clf = kbz.BertClassifier(backbone, preprocessor, num_classes=2, label_names=["1", "0"])
    clf.compile(optimizer=keras.optimizers.SGD(0.0))  # weights stay: the scores compare
    packed = {k: v.numpy() for k, v in preprocessor(["the cat", "a dog", "a cat", "the dog"]).items()}
    labels = np.array(["1", "0", "0", "1"])
    history = clf.fit(packed, labels, validation_data=(packed, labels), batch_size=2, verbose=0)
    assert history.history["val_loss"][0] == pytest.approx(clf.evaluate(packed, labels, verbose=0)[0], rel=1e-5)
    probabilities = clf.predict_proba(["the cat", "a dog", "a cat", "the dog"])
    expected = -np.mean(np.log(probabilities[np.arange(4), [0, 1, 1, 0]]))  # "1" is class id 0
    assert history.history["val_loss"][0] == pytest.approx(expected, rel=1e-4)
