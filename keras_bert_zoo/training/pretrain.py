"""Continued pretraining of a preset, or pretraining from scratch, on a corpus.

The workflow BioBERT / ClinicalBERT (continue from BERT) and SciBERT (new
vocabulary, from scratch) used: instances as `create_pretraining_data.py`
makes them, masked-LM + next-sentence training under a `tf.distribute`
strategy, and a preset at the end that every task's `from_preset` accepts.
"""

import json
import os
import random
import sys

import keras

from keras_bert_zoo.data.pretraining_corpus import read_documents
from keras_bert_zoo.data.pretraining_records import dynamic_masking
from keras_bert_zoo.data.pretraining_records import pretraining_batches
from keras_bert_zoo.distribution.get_strategy import get_strategy
from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances
from keras_bert_zoo.training.finetune import BACKUP_DIR
from keras_bert_zoo.training.finetune import METRICS_FILE
from keras_bert_zoo.training.finetune import MODEL_DIR
from keras_bert_zoo.training.finetune import OUTPUTS
from keras_bert_zoo.training.finetune import write_json
from keras_bert_zoo.utils.job_record import content_digest
from keras_bert_zoo.utils.job_record import file_fingerprint
from keras_bert_zoo.utils.job_record import running_job


class _ResumedAt(keras.callbacks.Callback):
    """Records the step training starts from (> 0 after a restore from backup)."""

    step = 0

    def on_train_begin(self, logs=None):
        self.step = int(self.model.optimizer.iterations.numpy())


def _unigram_baseline(train, held):
    """Masked-LM accuracy of always guessing the most frequent masked token of the training set."""
    import numpy as np

    guess = np.bincount(train["mask_ids"][train["mask_weights"] > 0]).argmax()
    return float(np.mean(held["mask_ids"][held["mask_weights"] > 0] == guess))


def _held_out(documents, fraction, seed):
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    count = int(round(len(documents) * fraction)) if len(documents) > 1 else 0
    held = set(order[:count])
    return [d for i, d in enumerate(documents) if i not in held], [d for i, d in enumerate(documents) if i in held]


def _tokenizer(preset, vocabulary, lowercase):
    from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer

    if vocabulary is not None:
        return BertTokenizer(vocabulary, lowercase=lowercase)
    return BertTokenizer.from_preset(preset)


def _model(preset, config, tokenizer):
    from keras_bert_zoo.models.bert_backbone import BertBackbone
    from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer

    if config is not None:
        config = dict(config, vocabulary_size=tokenizer.vocabulary_size())
        return BertPretrainer(BertBackbone(**config))
    model = BertPretrainer.from_preset(preset)
    if model.backbone.vocabulary_size != tokenizer.vocabulary_size():
        raise ValueError(f"The preset's model has {model.backbone.vocabulary_size} token embeddings but the "
                         f"vocabulary has {tokenizer.vocabulary_size()} tokens; a new vocabulary needs a fresh "
                         "model (--config), as SciBERT was trained.")
    return model


def pretrain(output_dir, corpus, preset=None, config=None, vocabulary=None, lowercase=True,
             corpus_format="sentences", data_config=None, dynamic=False, strategy="auto", batch_size=32,
             epochs=1, learning_rate=1e-4, warmup_steps=None, eval_fraction=0.1, checkpoint_every=None,
             mixed_precision=False, verbose=None, overwrite_output_dir=False, claim_output_dir=True):
    """Pretrain with masked-LM + next-sentence prediction and save a preset.

    Args:
        output_dir: gets `model/` (the preset), `metrics.json` (held-out
            masked-LM / NSP loss and accuracy before and after) and `backup/`
            (training state; rerunning resumes from it).
        corpus: corpus file(s).
        preset: continue pretraining this preset (weights and vocabulary).
        config: or a fresh model: `BertBackbone` arguments (its
            `vocabulary_size` is set from the vocabulary).
        vocabulary: a new vocabulary (list or file) for a fresh model;
            default the preset's.
        lowercase: casing of a new vocabulary.
        corpus_format: see `read_documents`.
        data_config: a `PretrainingDataConfig` (`create_pretraining_data.py`'s flags).
        dynamic: draw fresh masks every epoch instead of the static ones.
        strategy: a `get_strategy` kind or a `tf.distribute.Strategy`.
        batch_size: global batch size.
        epochs / learning_rate / warmup_steps: the schedule (AdamW, warm-up
            then linear decay; see `BertPretrainer.compile`).
        eval_fraction: documents held out for the before/after scores.
        checkpoint_every: back up every N steps (default: each epoch); a
            killed run restarted with the same arguments resumes there.
        mixed_precision: train in `mixed_bfloat16`.
        overwrite_output_dir: replace another job's work in `output_dir`
            (else only the same job may continue there; see `job.json`).
        claim_output_dir: False when the caller has already claimed
            `output_dir` (the CLI does, before reading anything).

    Returns:
        The metrics dict written to `metrics.json`.

    Raises:
        OutputDirectoryError: `output_dir` holds a finished model or
            another job's work.
    """
    if (preset is None) == (config is None):
        raise ValueError("Pass a preset to continue pretraining, or a config to pretrain from scratch (not both).")
    data_config = data_config or PretrainingDataConfig()
    if not claim_output_dir:
        return _pretrain(**locals())  # the arguments as given
    corpus_files = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    fingerprint = {
        "corpus": [file_fingerprint(path) for path in corpus_files], "preset": preset, "config": config,
        "vocabulary": file_fingerprint(vocabulary) if isinstance(vocabulary, (str, os.PathLike))
        else content_digest(vocabulary), "lowercase": lowercase, "corpus_format": corpus_format,
        "data_config": vars(data_config), "dynamic": dynamic, "batch_size": batch_size,
        "learning_rate": learning_rate, "warmup_steps": warmup_steps, "eval_fraction": eval_fraction,
        "checkpoint_every": checkpoint_every, "mixed_precision": mixed_precision,
    }
    with running_job(output_dir, "pretrain", fingerprint, owned=OUTPUTS, overwrite=overwrite_output_dir,
                     overwrite_flag="overwrite_output_dir=True"):
        return _pretrain(**locals())


def _pretrain(output_dir, corpus, preset, config, vocabulary, lowercase, corpus_format, data_config, dynamic,
              strategy, batch_size, epochs, learning_rate, warmup_steps, eval_fraction, checkpoint_every,
              mixed_precision, verbose, **unused):
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    tokenizer = _tokenizer(preset, vocabulary, lowercase)
    documents = read_documents(corpus, tokenizer, corpus_format=corpus_format, progress=verbose == 1)
    train_documents, eval_documents = _held_out(documents, eval_fraction, data_config.random_seed)
    train = create_pretraining_instances(train_documents, tokenizer, data_config, progress=verbose == 1)
    steps = len(train["token_ids"]) // batch_size
    if steps == 0:
        raise ValueError(f"{len(train['token_ids'])} training instances make no batch of {batch_size}; "
                         "use more text, a larger dupe_factor or a smaller batch size.")
    remask = dynamic_masking(tokenizer, data_config.masked_lm_prob, data_config.max_predictions_per_seq) \
        if dynamic else None
    # With checkpoint_every, Keras "epochs" are chunks of that many steps over
    # the repeated data, so a restart resumes at the last chunk boundary.
    total_steps = steps * epochs
    chunk = min(checkpoint_every or steps, total_steps)
    train_ds = pretraining_batches(train, batch_size, shuffle_buffer=len(train["token_ids"]),
                                   seed=data_config.random_seed, remask=remask, repeat=bool(checkpoint_every))
    eval_ds = None
    if eval_documents:
        eval_config = PretrainingDataConfig(**{**data_config.__dict__, "dupe_factor": 1})
        # Random next segments need a second document to come from.
        eval_source = eval_documents if len(eval_documents) > 1 else eval_documents + train_documents[:1]
        held = create_pretraining_instances(eval_source, tokenizer, eval_config)
        eval_ds = pretraining_batches(held, min(batch_size, len(held["token_ids"])))
        baseline = _unigram_baseline(train, held)

    if mixed_precision:
        keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        with strategy.scope():
            model = _model(preset, config, tokenizer)
            model.compile(learning_rate=learning_rate, total_steps=total_steps, warmup_steps=warmup_steps)
        metrics = {"train_instances": int(len(train["token_ids"])), "steps": total_steps,
                   "replicas": strategy.num_replicas_in_sync}
        if eval_ds is not None:
            metrics["unigram_baseline_accuracy"] = baseline
            metrics["before"] = model.evaluate(eval_ds, verbose=0, return_dict=True)
        os.makedirs(output_dir, exist_ok=True)
        # double_checkpoint: a kill while the backup is written falls back to the one before.
        backup = keras.callbacks.BackupAndRestore(os.path.join(output_dir, BACKUP_DIR), delete_checkpoint=True,
                                                  double_checkpoint=True)
        resumed = _ResumedAt()
        fit_args = {"epochs": epochs} if not checkpoint_every else {
            "epochs": -(-total_steps // chunk), "steps_per_epoch": chunk}
        history = model.fit(train_ds, callbacks=[backup, resumed], verbose=verbose, shuffle=False, **fit_args)
        metrics["resumed_at_step"] = resumed.step
        metrics["train_loss"] = [float(x) for x in history.history["loss"]]
        if eval_ds is not None:
            metrics["after"] = model.evaluate(eval_ds, verbose=0, return_dict=True)
        model.save_to_preset(os.path.join(output_dir, MODEL_DIR), tokenizer=tokenizer)
    finally:
        if mixed_precision:
            keras.mixed_precision.set_global_policy("float32")
    metrics = json.loads(json.dumps(metrics, default=float))
    write_json(os.path.join(output_dir, METRICS_FILE), metrics)
    return metrics
