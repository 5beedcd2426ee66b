"""keras_bert_zoo, keras-hub and the matmul-only chain, on TensorFlow."""

import tensorflow as tf

from keras_bert_zoo.layers.bert_encoder_layer import ALL_HEADS_MAX_SCORES

from benchmarks.peers import (LEARNING_RATE, MAX_SEQUENCE_LENGTH, SIZES, TOTAL_STEPS, VOCABULARY_SIZE, masked_positions,
                              token_inputs)


# TensorFloat-32 off: float32 means float32 on every peer (see benchmarks.peers).
tf.config.experimental.enable_tensor_float_32_execution(False)


def _policy(dtype):
    return "float32" if dtype == "float32" else f"mixed_{dtype}"


def _xla(config):
    return config.get("xla", False)


def _inputs(config):
    ids, segments, mask, labels = token_inputs(config["batch"], config["length"])
    return {"token_ids": tf.constant(ids), "segment_ids": tf.constant(segments), "padding_mask": tf.constant(mask)}, \
        tf.constant(labels)


def _steps(backbone, model, config):
    inputs, labels = _inputs(config)
    if config["job"] == "inference":
        forward = tf.function(lambda x: backbone(x, training=False)["sequence_output"], jit_compile=_xla(config))
        return lambda: forward(inputs).numpy()
    weights = None
    if config["job"] == "pretrain":
        positions, ids, weights = (tf.constant(a) for a in masked_positions(config["batch"], config["length"]))
        inputs = dict(inputs, mask_positions=positions)
        if isinstance(model.output, dict):  # ours: masked LM + next sentence
            labels = {"masked_lm_logits": ids, "next_sentence_logits": labels}
            weights = {"masked_lm_logits": weights, "next_sentence_logits": tf.ones([config["batch"]])}
        else:  # keras-hub's BertMaskedLM: masked LM only
            labels = ids
    model.train_on_batch(inputs, labels, sample_weight=weights)  # builds the optimizer, traces the step
    return lambda: model.train_on_batch(inputs, labels, sample_weight=weights)


def _vocabulary():
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(VOCABULARY_SIZE - 5)]


def build_keras_bert_zoo(config):
    import keras_bert_zoo as kbz

    backbone = kbz.BertBackbone(vocabulary_size=VOCABULARY_SIZE, max_sequence_length=MAX_SEQUENCE_LENGTH,
                                dtype=_policy(config["dtype"]), **SIZES[config["size"]])
    model = None
    if config["job"] == "train":
        # Packed inputs go straight to the backbone; the preprocessor is only carried.
        preprocessor = kbz.BertPreprocessor(kbz.BertTokenizer(_vocabulary()), sequence_length=config["length"])
        model = kbz.BertClassifier(backbone, preprocessor, num_classes=2)
        model.compile(optimizer=kbz.bert_adamw(LEARNING_RATE, total_steps=TOTAL_STEPS), jit_compile=_xla(config))
    elif config["job"] == "pretrain":
        model = kbz.BertPretrainer(backbone)
        model.compile(learning_rate=LEARNING_RATE, total_steps=TOTAL_STEPS, jit_compile=_xla(config))
    return _steps(backbone, model, config)


def build_keras_hub(config):
    import keras
    import keras_hub

    from keras_bert_zoo.optimization.bert_adamw import NO_DECAY_NAMES
    from keras_bert_zoo.optimization.warmup_linear_decay import WarmupLinearDecay

    backbone = keras_hub.models.BertBackbone(vocabulary_size=VOCABULARY_SIZE, max_sequence_length=MAX_SEQUENCE_LENGTH,
                                             dtype=_policy(config["dtype"]), **SIZES[config["size"]])
    model = None
    # Keras' own AdamW with ours' recipe (schedule, decay exclusions, clipping), as a keras-hub user writes it.
    optimizer = keras.optimizers.AdamW(WarmupLinearDecay(LEARNING_RATE, TOTAL_STEPS, TOTAL_STEPS // 10),
                                       weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=NO_DECAY_NAMES)
    if config["job"] == "train":
        model = keras_hub.models.BertTextClassifier(backbone, num_classes=2, preprocessor=None)
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      jit_compile=_xla(config))
    elif config["job"] == "pretrain":
        model = keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
        model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                      weighted_metrics=[], jit_compile=_xla(config))
    return _steps(backbone, model, config)


def matmul_chain_function(config):
    """Only the encoder's matrix products, with its exact shapes: the bound.

    Per layer: the query, key and value projections, the two attention
    products of each head, the output projection and the two feed-forward
    products, on activations in the compute dtype. No bias, softmax, GELU
    or LayerNorm.
    """
    if config["job"] != "inference":
        raise ValueError("the matmul chain is an inference bound only")
    size = SIZES[config["size"]]
    batch, length = config["batch"], config["length"]
    hidden, heads, intermediate = size["hidden_dim"], size["num_heads"], size["intermediate_dim"]
    dtype = tf.as_dtype(config["dtype"])

    def weight(*shape):
        return tf.cast(tf.random.normal(shape, stddev=0.02), dtype)

    weights = [([weight(hidden, hidden) for _ in "qkv"], weight(hidden, hidden), weight(hidden, intermediate),
                weight(intermediate, hidden)) for _ in range(size["num_layers"])]
    start = tf.cast(tf.random.normal([batch * length, hidden]), dtype)
    # Attention's products as the encoder runs them at this size: all heads at once, or head by head.
    all_heads = heads * batch * length * length <= ALL_HEADS_MAX_SCORES

    @tf.function(jit_compile=_xla(config))
    def chain():
        x = start
        for qkv_kernels, output_kernel, up, down in weights:
            # The transposes, the mask's column and the concat are layout only: the bound keeps the encoder's
            # attention products.
            query, key, value = (tf.transpose(tf.reshape(tf.matmul(x, kernel), [batch, length, heads, hidden // heads]),
                                              [2, 0, 1, 3]) for kernel in qkv_kernels)
            # The encoder's query-key product carries the padding mask as one more column (fused_ops.split_heads).
            query, key = (tf.pad(t, [[0, 0], [0, 0], [0, 0], [0, 1]]) for t in (query, key))
            if all_heads:
                context = tf.transpose(tf.matmul(tf.matmul(query, key, transpose_b=True), value), [1, 2, 0, 3])
            else:
                context = tf.concat([tf.matmul(tf.matmul(q, k, transpose_b=True), v)
                                     for q, k, v in zip(tf.unstack(query), tf.unstack(key), tf.unstack(value))], -1)
            context = tf.reshape(context, [batch * length, hidden])
            x = tf.matmul(tf.matmul(tf.matmul(context, output_kernel), up), down)
        return x

    return chain


def build_matmul_chain(config):
    chain = matmul_chain_function(config)
    return lambda: chain().numpy()
