"""Preset specifications, one JSON file per preset (shipped as keras_bert_zoo.preset_files)."""
