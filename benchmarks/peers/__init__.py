"""One module per peer, each with `build(config)` returning a callable step.

A config names the job (`inference`; `train`: a 2-class classifier's
optimizer step; `pretrain`: a masked-LM + next-sentence step with
`MAX_PREDICTIONS_PER_SEQ` masked positions), the model `size`, the
`dtype` (`float32`; `bfloat16` or `float16`: Keras' mixed policy of that
type, torch's weights of that type for inference and autocast for training),
`batch`, `length` and `xla` (TensorFlow peers compile the step with XLA;
torch runs eagerly either way). The step runs one forward pass (or one
optimizer step) and blocks until its result is on the host.

`float32` means IEEE float32 on every peer: on a GPU with TensorFloat-32
(Ampere and later) TensorFlow's default rounds float32 matmul inputs to 10
mantissa bits and torch's does not, so the TensorFlow peers turn it off.
"""

SIZES = {
    "tiny": dict(num_layers=2, num_heads=2, hidden_dim=32, intermediate_dim=64),  # the harness's own tests
    "minilm": dict(num_layers=6, num_heads=12, hidden_dim=384, intermediate_dim=1536),
    "base": dict(num_layers=12, num_heads=12, hidden_dim=768, intermediate_dim=3072),
}
VOCABULARY_SIZE = 30522
MAX_SEQUENCE_LENGTH = 512
LEARNING_RATE = 2e-5
TOTAL_STEPS = 1000
MAX_PREDICTIONS_PER_SEQ = 20
DTYPES = ("float32", "bfloat16", "float16")


def token_inputs(batch, length, seed=0):
    """Ids, segments and a ragged padding mask (lengths half to full), as numpy."""
    import numpy as np

    rng = np.random.default_rng(seed)
    lengths = rng.integers(max(1, length // 2), length + 1, batch)
    lengths[0] = length
    mask = (np.arange(length)[None] < lengths[:, None]).astype("int32")
    ids = rng.integers(1000, VOCABULARY_SIZE - 1, (batch, length)).astype("int32") * mask
    labels = rng.integers(0, 2, batch).astype("int32")
    return ids, np.zeros_like(ids), mask, labels


def masked_positions(batch, length, seed=1):
    """`MAX_PREDICTIONS_PER_SEQ` distinct positions per row inside [1, length - 1), their
    original ids (any real ids: speed does not depend on them) and weights of 1."""
    import numpy as np

    rng = np.random.default_rng(seed)
    positions = np.sort(np.stack([rng.choice(np.arange(1, length // 2), MAX_PREDICTIONS_PER_SEQ, replace=False)
                                  for _ in range(batch)]), axis=1).astype("int32")
    ids = rng.integers(1000, VOCABULARY_SIZE - 1, positions.shape).astype("int32")
    return positions, ids, np.ones(positions.shape, "float32")
