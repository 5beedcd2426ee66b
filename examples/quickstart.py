"""Quick start on the offline default preset: tokenize, encode, compare.

    python examples/quickstart.py
"""

import numpy as np

import keras_bert_zoo as kbz

PRESET = kbz.DEFAULT_PRESET  # shipped on PyPI: loads offline

backbone = kbz.BertBackbone.from_preset(PRESET)
preprocessor = kbz.BertPreprocessor.from_preset(PRESET, sequence_length=128)

inputs = preprocessor(["The patient was given aspirin.", ("Is it?", "Yes it is.")])
outputs = backbone(inputs)
print("token_ids[0]:", inputs["token_ids"][0, :12].numpy().tolist())
print({name: tuple(value.shape) for name, value in outputs.items()})

sentences = [
    "The patient was given aspirin for the headache.",
    "An analgesic was administered to relieve the pain.",
    "Mutations in BRCA1 raise the risk of breast cancer.",
    "The stock market fell sharply on Monday.",
]
vectors = kbz.encode_texts(sentences, backbone=backbone, preprocessor=preprocessor, normalize=True)
similarity = vectors @ vectors.T
print("\nCosine similarity (mean-pooled, as sentence-transformers):")
for i, sentence in enumerate(sentences):
    print(f"  {' '.join(f'{x:5.2f}' for x in similarity[i])}  {sentence}")
closest = int(np.argsort(-similarity[0])[1])
print(f"\nClosest to the first sentence: {sentences[closest]!r}")
