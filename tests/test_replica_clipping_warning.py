"""`Task.compile` warns that Keras' own optimizers clip each replica's gradient apart, exactly where that makes
several replicas train differently from one device (checked by stepping each optimizer both ways)."""

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "tests", "clipping_warning_runner.py")


@pytest.fixture(scope="module")
def cases():
    result = subprocess.run([sys.executable, "-m", "tests.clipping_warning_runner"], cwd=ROOT, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.subprocess
def test_the_warning_appears_exactly_where_replicas_step_apart_from_one_device(cases):
    stepped = {name: case for name, case in cases.items() if case["differs"] is not None}
    assert {name for name, case in stepped.items() if case["differs"]} == {
        "keras_global_clipnorm_two", "keras_clipnorm_two", "keras_clipvalue_two"}
    for name, case in stepped.items():
        assert len(case["warnings"]) == (1 if case["differs"] else 0), (name, case["warnings"])


@pytest.mark.subprocess
def test_the_warning_names_the_optimizer_its_clipping_and_the_fix_at_the_callers_line(cases):
    for name, clipping in [("keras_global_clipnorm_two", "global_clipnorm=1.0"), ("keras_clipnorm_two", "clipnorm=1.0"),
                           ("keras_loss_scaled_two", "global_clipnorm=1.0"),
                           ("tagger_keras_global_clipnorm_two", "global_clipnorm=1.0")]:
        (warning,) = cases[name]["warnings"]
        assert f"AdamW({clipping})" in warning["message"], warning
        assert "2 replicas" in warning["message"] and "MirroredStrategy" in warning["message"]
        assert "kbz.bert_adamw" in warning["message"] and "no clipping" in warning["message"]
        assert warning["filename"] == RUNNER, warning  # the line that compiled, past BertTokenClassifier.compile
