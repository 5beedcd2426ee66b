"""Benchmarks: keras_bert_zoo side by side with keras-hub and HF torch.

    python -m benchmarks run      # measure; writes benchmarks/results/*.json
    python -m benchmarks readme   # the README table from the results files

See benchmarks/README.md.
"""
