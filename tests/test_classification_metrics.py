"""GLUE metrics against hand-computed values."""

import pytest

from keras_bert_zoo.metrics import classification_metrics as m


def test_binary_metrics_hand_computed():
    labels = [1, 1, 1, 0, 0, 0, 1, 0]
    preds = [1, 1, 0, 0, 1, 0, 1, 0]
    # tp=3 fp=1 fn=1 tn=3
    assert m.accuracy(labels, preds) == 0.75
    assert m.binary_f1(labels, preds) == pytest.approx(0.75)
    assert m.matthews_corrcoef(labels, preds) == pytest.approx((9 - 1) / 16)


def test_mcc_degenerate_is_zero():
    assert m.matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0


def test_correlations():
    assert m.pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert m.spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    # Ties take their average rank: ranks [0.5, 0.5, 2] vs [0, 1, 2].
    assert m.spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(0.8660254, abs=1e-6)


def test_macro_f1():
    assert m.macro_f1([0, 1, 2, 2], [0, 1, 2, 1], 3) == pytest.approx((1 + 2 / 3 + 2 / 3) / 3)
