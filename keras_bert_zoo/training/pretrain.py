"""Continued pretraining of a preset, or pretraining from scratch, on a corpus.

The workflow BioBERT / ClinicalBERT (continue from BERT) and SciBERT (new
vocabulary, from scratch) used: instances as `create_pretraining_data.py`
makes them, masked-LM + next-sentence training under a `tf.distribute`
strategy, and a preset at the end that every task's `from_preset` accepts.
"""

import inspect
import json
import os
import random
import re
import sys
import warnings

import keras
import tensorflow as tf

from keras_bert_zoo.data.pretraining_corpus import read_documents
from keras_bert_zoo.data.pretraining_records import check_first_records
from keras_bert_zoo.data.pretraining_records import check_record_vocabulary
from keras_bert_zoo.data.pretraining_records import dynamic_masking
from keras_bert_zoo.data.pretraining_records import pretraining_batches
from keras_bert_zoo.data.pretraining_records import pretraining_batches_by_pass
from keras_bert_zoo.data.pretraining_records import read_pretraining_records
from keras_bert_zoo.data.pretraining_records import record_errors_named
from keras_bert_zoo.data.pretraining_records import record_files
from keras_bert_zoo.data.pretraining_records import record_shapes
from keras_bert_zoo.distribution.chief import chief_output_dir
from keras_bert_zoo.distribution.chief import claimed_by_chief
from keras_bert_zoo.distribution.chief import is_chief
from keras_bert_zoo.distribution.chief import save_preset_in_chief
from keras_bert_zoo.distribution.get_strategy import check_global_batch_size
from keras_bert_zoo.distribution.get_strategy import get_strategy
from keras_bert_zoo.models.bert_backbone import BertBackbone
from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig
from keras_bert_zoo.presets.loader import load_backbone_config
from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances
from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer
from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer
from keras_bert_zoo.training.atomic_backup_and_restore import AtomicBackupAndRestore
from keras_bert_zoo.training.finetune import BACKUP_DIR
from keras_bert_zoo.training.finetune import METRICS_FILE
from keras_bert_zoo.training.finetune import MODEL_DIR
from keras_bert_zoo.training.finetune import OUTPUTS
from keras_bert_zoo.training.finetune import write_json
from keras_bert_zoo.training.training_logs import tensorboard_callback
from keras_bert_zoo.training.training_logs import train_losses
from keras_bert_zoo.utils.job_record import content_digest
from keras_bert_zoo.utils.job_record import file_fingerprint
from keras_bert_zoo.utils.job_record import running_job
from keras_bert_zoo.utils.packed_length import packed_length
from keras_bert_zoo.utils.whole_numbers import positive_whole_number


class _ResumedAt(keras.callbacks.Callback):
    """Records the step training starts from (> 0 after a restore from backup)."""

    step = 0

    def on_train_begin(self, logs=None):
        self.step = int(self.model.optimizer.iterations.numpy())


class _ChunkProgress(keras.callbacks.ProgbarLogger):
    """Keras' progress bar, the last chunk shown as long as it runs.

    `_StopAt` cuts the last chunk of `steps_per_epoch` steps short, and Keras
    would show it full (60 steps in chunks of 25: "25/25" three times).
    """

    def __init__(self, total_steps, first_epoch=0, first_step=0):
        super().__init__()
        self.total_steps, self.first_epoch, self.first_step = total_steps, first_epoch, first_step

    def set_params(self, params):
        super().set_params(params)
        self.chunk = self.target

    def on_epoch_begin(self, epoch, logs=None):
        done = self.first_step + (epoch - self.first_epoch) * self.chunk
        self.target = min(self.chunk, self.total_steps - done)
        super().on_epoch_begin(epoch, logs)


class _StopAt(keras.callbacks.Callback):
    """Stops training after `steps` optimizer steps (the last backup chunk may be cut short)."""

    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def on_train_batch_end(self, batch, logs=None):
        if int(self.model.optimizer.iterations.numpy()) >= self.steps:
            self.model.stop_training = True


def _unigram_baseline(train, held):
    """Masked-LM accuracy of always guessing the most frequent masked token of the training set."""
    import numpy as np

    guess = np.bincount(train["mask_ids"][train["mask_weights"] > 0]).argmax()
    return float(np.mean(held["mask_ids"][held["mask_weights"] > 0] == guess))


def _held_out(documents, fraction, seed):
    """`(train, held out)`: `fraction` of the documents, at random by `seed`. Never one: its random segments B
    would come from itself (wrong next-sentence labels) or from the training text (scored as held out): two at
    least, and two left to train on, where a fraction holds any. Where none is held out, a warning says why."""
    order = list(range(len(documents)))
    random.Random(seed).shuffle(order)
    count = int(round(len(documents) * fraction))
    count = min(max(count, 2), len(documents) - 2) if count and len(documents) >= 4 else 0
    if fraction and not count:
        warnings.warn(f"eval_fraction={fraction} of the {len(documents)} document(s) holds out none (scores need two "
                      "held-out documents, and two left to train on): no before/after scores in metrics.json. Give "
                      "more documents (a blank line ends one), or another eval_fraction.", stacklevel=3)
    held = set(order[:count])
    return [d for i, d in enumerate(documents) if i not in held], [d for i, d in enumerate(documents) if i in held]


def _tokenizer(preset, vocabulary, lowercase):
    if vocabulary is not None:
        return BertTokenizer(vocabulary, lowercase=lowercase)
    return BertTokenizer.from_preset(preset)


def _positions(preset, config):
    """The positions of the model to pretrain: a fresh one's (its config's, else `BertBackbone`'s default), or
    the preset's."""
    if config is not None:
        return config.get("max_sequence_length") or \
            inspect.signature(BertBackbone).parameters["max_sequence_length"].default
    return load_backbone_config(preset)["max_sequence_length"]


def _model(preset, config, tokenizer, dtype=None):
    """The pretrainer to train, its preprocessor on `tokenizer` (which the preset it is saved as holds).

    `dtype` is given to the backbone, whether fresh or a preset's: a preset's config names its own policy
    (float32), which a global mixed policy does not override."""
    dtype = {"dtype": dtype} if dtype else {}
    if config is not None:
        model = BertPretrainer(BertBackbone(**dict(config, vocabulary_size=tokenizer.vocabulary_size(), **dtype)))
    else:
        model = BertPretrainer.from_preset(preset, **dtype)
        if model.backbone.vocabulary_size != tokenizer.vocabulary_size():
            raise ValueError(f"The preset's model has {model.backbone.vocabulary_size} token embeddings but the "
                             f"vocabulary has {tokenizer.vocabulary_size()} tokens; a new vocabulary needs a fresh "
                             "model (--config), as SciBERT was trained.")
    positions = model.backbone.max_sequence_length
    model.preprocessor = model.make_preprocessor(
        tokenizer, packed_length(None, model.default_sequence_length, positions), positions)
    return model


# A run of num_train_steps keeps its final backup (weights, optimizer, step count), as run_pretraining.py keeps its
# checkpoints: the same job asked for more steps trains on from it (`running_job`'s extension).
EXTENDABLE = {"extendable": ("num_train_steps",), "training_state": BACKUP_DIR}


# keras-hub's generator picks single pieces; whole-word masking would be dropped in silence.
DYNAMIC_WHOLE_WORDS = ("{dynamic} redraws the masks piece by piece (keras-hub's MaskedLMMaskGenerator), so it cannot "
                       "keep {whole_words}: pass one of them (whole-word masks are the static ones, drawn "
                       "dupe_factor times).")


def pretrain(output_dir, corpus, preset=None, config=None, vocabulary=None, lowercase=True,
             corpus_format="sentences", data_config=None, dynamic=False, strategy="auto", batch_size=32,
             epochs=1, learning_rate=1e-4, warmup_steps=None, eval_fraction=0.1, checkpoint_every=None,
             mixed_precision=False, verbose=None, overwrite_output_dir=False, claim_output_dir=True,
             num_train_steps=None, bias_correction=True):
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
        data_config: a `PretrainingDataConfig` (`create_pretraining_data.py`'s
            flags), used as it is; or a dict of the fields given, the rest
            fitted to the model (`PretrainingDataConfig.for_positions`: its
            `max_seq_length` cut to the model's positions); None: none given.
        dynamic: draw fresh masks every epoch instead of the static ones
            (piece by piece: not with `data_config.do_whole_word_mask`).
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
        num_train_steps: stop after this many steps (the data repeats as
            needed) instead of after `epochs`. The final backup is kept: the
            same job rerun with more steps trains on from it (see `_fit`).
        bias_correction: Adam's bias correction (Keras'); False steps as
            run_pretraining.py's `AdamWeightDecayOptimizer` (see `bert_adamw`).

    Returns:
        The metrics dict written to `metrics.json`.

    Raises:
        OutputDirectoryError: `output_dir` holds a finished model or
            another job's work.
    """
    if (preset is None) == (config is None):
        raise ValueError("Pass a preset to continue pretraining, or a config to pretrain from scratch (not both).")
    epochs, num_train_steps, checkpoint_every = _check_length_of_training(epochs, num_train_steps, checkpoint_every)
    if isinstance(eval_fraction, bool) or not isinstance(eval_fraction, (int, float)) or \
            not 0 <= eval_fraction < 1:
        # -0.1 held out all documents but 3 of 30 in silence (a negative slice); 10 (per cent) every one.
        raise ValueError(f"eval_fraction must be a fraction of the documents from 0 (none held out) to below 1; got "
                         f"{eval_fraction!r}" + (f": {eval_fraction}% is {eval_fraction / 100}."
                                                 if isinstance(eval_fraction, (int, float)) and 1 <= eval_fraction
                                                 < 100 else "."))
    positions = _positions(preset, config)
    if not isinstance(data_config, PretrainingDataConfig):
        data_config = PretrainingDataConfig.for_positions(positions, **(data_config or {}))
    if data_config.max_seq_length > positions:
        # Else TensorFlow's InvalidArgumentError from the position embedding's Slice, in the first step.
        where = f"the preset {preset}" if preset is not None else "the model config"
        raise ValueError(f"data_config's max_seq_length {data_config.max_seq_length} is more than the {positions} "
                         f"positions of {where}: pass max_seq_length={positions} or less (or a dict data_config "
                         "without it: the length is then fitted to the model).")
    if dynamic and data_config.do_whole_word_mask:
        raise ValueError(DYNAMIC_WHOLE_WORDS.format(dynamic="dynamic=True",
                                                    whole_words="data_config.do_whole_word_mask"))
    # First: a multi-worker strategy configures TensorFlow's collectives before any op runs, and names the worker
    # that writes output_dir.
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    check_global_batch_size(batch_size, strategy)
    if not claim_output_dir:
        return _pretrain(**locals())  # the arguments as given
    corpus_files = [corpus] if isinstance(corpus, (str, os.PathLike)) else list(corpus)
    fingerprint = {
        "corpus": [file_fingerprint(path) for path in corpus_files], "preset": preset, "config": config,
        "vocabulary": file_fingerprint(vocabulary) if isinstance(vocabulary, (str, os.PathLike))
        else content_digest(vocabulary), "lowercase": lowercase, "corpus_format": corpus_format,
        "data_config": vars(data_config), "dynamic": dynamic, "batch_size": batch_size,
        "learning_rate": learning_rate, "warmup_steps": warmup_steps, "eval_fraction": eval_fraction,
        "checkpoint_every": checkpoint_every, "mixed_precision": mixed_precision, "epochs": epochs,
    }
    if num_train_steps is not None:  # only then: jobs recorded before it existed still resume
        fingerprint["num_train_steps"] = num_train_steps
    if not bias_correction:  # likewise
        fingerprint["bias_correction"] = False
    with claimed_by_chief(strategy, running_job(
            output_dir, "pretrain", fingerprint, owned=OUTPUTS, overwrite=overwrite_output_dir,
            overwrite_flag="overwrite_output_dir=True", added_items=("epochs",), chief=is_chief(strategy),
            **EXTENDABLE)):
        return _pretrain(**locals())


def _pretrain(output_dir, corpus, preset, config, vocabulary, lowercase, corpus_format, data_config, dynamic,
              strategy, batch_size, epochs, learning_rate, warmup_steps, eval_fraction, checkpoint_every,
              mixed_precision, verbose, num_train_steps=None, bias_correction=True, **unused):
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
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
    # Keras "epochs" are chunks of checkpoint_every steps (default: one pass) over the passes, so a restart
    # resumes at the last chunk boundary, on the batches an uninterrupted run trains on there.
    total_steps = num_train_steps or steps * epochs

    def train_from(step):
        return pretraining_batches_by_pass(train, batch_size, data_config.random_seed, step, remask)

    eval_ds = baseline = None
    metrics = {"train_instances": int(len(train["token_ids"]))}
    if eval_documents:
        eval_config = PretrainingDataConfig(**{**data_config.__dict__, "dupe_factor": 1})
        held = create_pretraining_instances(eval_documents, tokenizer, eval_config)
        eval_batch = _eval_batch_size(batch_size, len(held["token_ids"]), strategy)
        eval_ds = pretraining_batches(held, eval_batch)
        baseline = _unigram_baseline(train, held)
        metrics["eval_instances"] = _scored(len(held["token_ids"]), eval_batch)
    return _fit(output_dir, lambda dtype: _model(preset, config, tokenizer, dtype), train_from, total_steps,
                checkpoint_every or steps, eval_ds, baseline, strategy, learning_rate, warmup_steps, mixed_precision,
                verbose, metrics, keep_state=num_train_steps is not None, bias_correction=bias_correction)


def _scored(count, batch_size, steps=None):
    """How many of the `count` held-out instances the scores are of: whole batches of `batch_size` (one shape, as
    a TPU compiles it), `steps` of them at most. A remainder left out is warned of (it changed the scores with the
    batch size, in silence)."""
    whole = count // batch_size
    if count > whole * batch_size and (steps is None or steps >= whole):
        warnings.warn(f"{count - whole * batch_size} of the {count} held-out instances are left unscored: the scores "
                      f"are of whole batches of {batch_size} (one shape, as a TPU compiles it).", stacklevel=3)
    return min(whole, steps or whole) * batch_size


def _check_length_of_training(epochs, num_train_steps, checkpoint_every, required=False):
    """`(epochs, num_train_steps, checkpoint_every)` as ints, each a positive whole number (`num_train_steps`
    None where not `required`, `checkpoint_every` where not given). A num_train_steps of 0 trained `epochs` passes
    in silence (0 read as not given), as a checkpoint_every of 0 backed up at the default; 2.0 failed with
    TensorFlow's "Cannot convert 0.0 to EagerTensor of dtype int64"; -3, or epochs=0, named `total_steps`, an
    argument nobody passed, after the corpus was read."""
    if num_train_steps is not None or required:
        num_train_steps = positive_whole_number(num_train_steps, "num_train_steps")
    if checkpoint_every is not None:
        checkpoint_every = positive_whole_number(checkpoint_every, "checkpoint_every")
    return positive_whole_number(epochs, "epochs"), num_train_steps, checkpoint_every


def _eval_batch_size(batch_size, count, strategy):
    """The held-out batch: the training one, or as many of the `count` instances as the replicas share equally
    where they are fewer (a TPU compiles one shape for every core)."""
    replicas = strategy.num_replicas_in_sync
    size = min(batch_size, count) // replicas * replicas
    if not size:
        raise ValueError(f"The {count} held-out instance(s) are fewer than the {replicas} replicas that share a "
                         "batch: hold out more text (or none).")
    return size


def _from_step(batches, step):
    """The global `batches` from those of step `step` on, each worker of a strategy taking its share of each.

    `batches`: a Dataset of the global batches (those before `step` skipped), or a function of the first step
    that gives them from there (`pretraining_batches_by_pass`).

    Every worker (a host of a TPU pod) reads all the data and keeps its share of every global batch (tf.data's
    DATA sharding): skipping global batches before Keras distributes them then skips exactly the steps trained,
    on any number of workers, and a run trains on the global batches of a one-worker run. Sharded by file,
    TensorFlow's choice for records, each of W workers splits the global batches of its own files over W steps,
    and skipped W times the records it had trained on.
    """
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    batches = batches(step) if callable(batches) else batches.skip(step)
    return batches.with_options(options)


def _fit(output_dir, make_model, train_ds, total_steps, chunk, eval_ds, baseline, strategy,
         learning_rate, warmup_steps, mixed_precision, verbose, metrics, eval_steps=None, keep_state=False,
         bias_correction=True):
    """Compile, score before, fit (backed up every `chunk` steps), score after, save.

    `train_ds`: as `_from_step` takes it. `make_model(dtype)` builds the model in the dtype policy given (None:
    float32). `keep_state`: keep the final backup, for a rerun with more steps to train on from.

    The learning rate follows the schedule of `total_steps` at the optimizer's step count, restored from the
    backup: a job extended from N to M steps (its backup kept at step N) trains steps N+1..M at the rates a run
    of M steps has there (linear decay over M, warm-up by default 10% of M), as run_pretraining.py does pointed
    at its output_dir with a larger num_train_steps. Its first N steps were at the rates of the N-step run."""
    backup = AtomicBackupAndRestore(os.path.join(output_dir, BACKUP_DIR), keep=keep_state)
    with strategy.scope():
        with warnings.catch_warnings():
            if backup.completed_steps() is not None or backup.completed_epochs():
                # A resumed or extended run's heads come from its backup, not fresh: the preset's warning misleads.
                warnings.filterwarnings("ignore", message=".*" + re.escape(BertPretrainer.fresh_heads_warning))
            model = make_model("mixed_bfloat16" if mixed_precision else None)
        model.compile(learning_rate=learning_rate, total_steps=total_steps, warmup_steps=warmup_steps,
                      bias_correction=bias_correction)
        # Built before fit: slots created inside the first step's trace make TF trace the step twice.
        model.optimizer.build(model.trainable_variables)
    metrics = {**metrics, "steps": total_steps, "replicas": strategy.num_replicas_in_sync}
    if eval_ds is not None:
        if baseline is not None:
            metrics["unigram_baseline_accuracy"] = baseline
        metrics["before"] = model.evaluate(eval_ds, steps=eval_steps, verbose=0, return_dict=True)
    chief = chief_output_dir(strategy, output_dir)
    resumed = _ResumedAt()
    chunk = min(chunk or total_steps, total_steps)
    done_epochs = backup.completed_epochs()
    # The step count says where the backup is when its last chunk was cut short (a finished run extended);
    # a backup without it holds whole chunks.
    done_steps = backup.completed_steps()
    done_steps = done_epochs * chunk if done_steps is None else done_steps
    # Keras numbers epochs on from the backup's count: chunks of the steps left follow it.
    fit_args = {"epochs": done_epochs + -(-max(total_steps - done_steps, 0) // chunk), "steps_per_epoch": chunk}
    # The repeated data resume where the backup's steps end: read from their start again, a resumed job
    # trained on its first batches again (killed every k steps, it never saw more than k batches).
    train_ds = _from_step(train_ds, done_steps)
    callbacks = [backup, resumed, _StopAt(total_steps)] + ([tensorboard_callback(output_dir)] if chief else [])
    if verbose:
        callbacks.append(_ChunkProgress(total_steps, done_epochs, done_steps))
    model.fit(train_ds, callbacks=callbacks, verbose=verbose, shuffle=False, **fit_args)
    metrics["resumed_at_step"] = resumed.step
    metrics["global_step"] = int(model.optimizer.iterations.numpy())
    if chief:
        # The whole job's, from the logs of every run of it: this run's history starts where it resumed.
        metrics["train_loss"], metrics["train_loss_steps"] = train_losses(output_dir)
    if eval_ds is not None:
        metrics["after"] = model.evaluate(eval_ds, steps=eval_steps, verbose=0, return_dict=True)
    metrics = json.loads(json.dumps(metrics, default=float))
    save_preset_in_chief(model, os.path.join(output_dir, MODEL_DIR), chief)
    if chief:
        write_json(os.path.join(output_dir, METRICS_FILE), metrics)
    return metrics


def pretrain_from_records(output_dir, input_file, num_train_steps=100_000, preset=None, config=None, vocabulary=None,
                          lowercase=True, eval_input_file=None, max_eval_steps=100, max_seq_length=None,
                          max_predictions_per_seq=None, batch_size=32, learning_rate=1e-4, warmup_steps=None,
                          checkpoint_every=1000, shuffle_buffer=10_000, seed=12345, strategy="auto",
                          mixed_precision=False, verbose=None, overwrite_output_dir=False, claim_output_dir=True,
                          bias_correction=True):
    """Pretrain on the TFRecords `create-pretraining-data` writes (google-research's `run_pretraining.py`).

    The records stream from disk (shuffled, repeated), so the corpus need not
    fit in memory; training stops after `num_train_steps`.

    Args:
        output_dir: gets `model/` (a preset), `metrics.json` and `backup/`
            (rerunning resumes from the last backup; kept at the end).
        input_file: TFRecord files: comma-separated globs, or a list.
        num_train_steps: steps to train (run_pretraining.py's default 100,000).
            The same job rerun with more trains on from the finished run's
            kept backup, at the larger schedule's learning rates (see `_fit`).
        preset / config / vocabulary / lowercase: as in `pretrain`; the
            records must have been written with this vocabulary (the
            preset's, or `vocabulary` for a fresh `config`).
        eval_input_file: held-out records: masked-LM and next-sentence
            accuracy (and loss) before and after training go to
            `metrics.json` (`before`, `after`).
        max_eval_steps: evaluation batches at most (None: all records).
        max_seq_length / max_predictions_per_seq: what the records hold,
            named as run_pretraining.py's flags and the `PretrainingDataConfig`
            that wrote them; default read from the first record (a given
            value that differs is an error).
        batch_size / learning_rate / warmup_steps: the schedule (see
            `BertPretrainer.compile`).
        checkpoint_every: back up every N steps (run_pretraining.py's
            save_checkpoints_steps, 1000).
        shuffle_buffer / seed: instance shuffling.
        strategy / mixed_precision / verbose / overwrite_output_dir /
            claim_output_dir / bias_correction: as in `pretrain`.

    Returns:
        The metrics dict written to `metrics.json`.
    """
    if (preset is None) == (config is None):
        raise ValueError("Pass a preset to continue pretraining, or a config to pretrain from scratch (not both).")
    _, num_train_steps, checkpoint_every = _check_length_of_training(1, num_train_steps, checkpoint_every,
                                                                     required=True)
    if config is not None and vocabulary is None:
        raise ValueError("A fresh model (config) needs the vocabulary the records were written with: "
                         "pass vocabulary (the vocab file given to create-pretraining-data).")
    # First: a multi-worker strategy configures TensorFlow's collectives before any op runs, and names the worker
    # that writes output_dir.
    strategy = get_strategy(strategy) if isinstance(strategy, str) else strategy
    check_global_batch_size(batch_size, strategy)
    files = record_files(input_file)
    eval_files = record_files(eval_input_file) if eval_input_file else []
    if not claim_output_dir:
        return _pretrain_from_records(**locals())
    fingerprint = {
        "input_file": [file_fingerprint(path) for path in files],
        "eval_input_file": [file_fingerprint(path) for path in eval_files], "preset": preset, "config": config,
        "vocabulary": file_fingerprint(vocabulary) if isinstance(vocabulary, (str, os.PathLike))
        else content_digest(vocabulary), "lowercase": lowercase, "max_seq_length": max_seq_length,
        "max_predictions_per_seq": max_predictions_per_seq, "batch_size": batch_size,
        "learning_rate": learning_rate, "warmup_steps": warmup_steps, "checkpoint_every": checkpoint_every,
        "num_train_steps": num_train_steps, "shuffle_buffer": shuffle_buffer, "seed": seed,
        "mixed_precision": mixed_precision,
    }
    if not bias_correction:  # only then: jobs recorded before it existed still resume
        fingerprint["bias_correction"] = False
    with claimed_by_chief(strategy, running_job(
            output_dir, "pretrain", fingerprint, owned=OUTPUTS, overwrite=overwrite_output_dir,
            overwrite_flag="overwrite_output_dir=True", chief=is_chief(strategy), **EXTENDABLE)):
        return _pretrain_from_records(**locals())


def _pretrain_from_records(output_dir, files, eval_files, num_train_steps, preset, config, vocabulary, lowercase,
                           max_eval_steps, max_seq_length, max_predictions_per_seq, batch_size, learning_rate,
                           warmup_steps, checkpoint_every, shuffle_buffer, seed, strategy, mixed_precision, verbose,
                           bias_correction=True, **unused):
    if verbose is None:
        verbose = 1 if sys.stdout.isatty() else 2
    length, predictions = record_shapes(files, max_seq_length, max_predictions_per_seq)
    if eval_files and (held_shape := record_shapes(eval_files)) != (length, predictions):
        raise ValueError(f"The evaluation records ({eval_files[0]} ...) were written with max_seq_length "
                         f"{held_shape[0]}, max_predictions_per_seq {held_shape[1]}, the training records with "
                         f"{length}, {predictions}: write both with the same flags.")
    tokenizer = _tokenizer(preset, vocabulary, lowercase)
    check_record_vocabulary(files + eval_files, tokenizer, casing_given=vocabulary is not None)
    # The files in a new order each pass, as run_pretraining.py trains (one corpus written by several runs mixes
    # from the first batch); the seed gives every worker the same order, which `_from_step`'s sharding needs.
    records = read_pretraining_records(files, length, predictions, vocabulary_size=tokenizer.vocabulary_size(),
                                       shuffle_files=True, seed=seed)
    check_first_records(records, files)
    train_ds = pretraining_batches(records, batch_size, shuffle_buffer=shuffle_buffer, seed=seed, repeat=True)
    eval_ds, eval_steps = None, max_eval_steps
    metrics = {"train_files": len(files), "max_seq_length": length, "max_predictions_per_seq": predictions}
    if eval_files:
        held = read_pretraining_records(eval_files, length, predictions, vocabulary_size=tokenizer.vocabulary_size())
        check_first_records(held, eval_files)
        with record_errors_named(eval_files):  # past the first records checked
            count = int(held.reduce(0, lambda n, _: n + 1))
        if count == 0:
            raise ValueError(f"The evaluation records ({eval_files[0]} ...) hold no instances.")
        eval_batch = _eval_batch_size(batch_size, count, strategy)
        eval_ds = pretraining_batches(held, eval_batch)
        # No more steps than the records fill: Keras would warn that the input ran out.
        eval_steps = min(max_eval_steps or count, count // eval_batch)
        metrics["eval_instances"] = _scored(count, eval_batch, eval_steps)

    def make_model(dtype):
        model = _model(preset, config, tokenizer, dtype)
        positions = model.backbone.max_sequence_length
        if length > positions:
            raise ValueError(f"The records hold sequences of {length} pieces but the model has {positions} "
                             "positions: write the records with a smaller --max_seq_length.")
        return model

    with record_errors_named(files + eval_files):  # a record past the first ones checked
        return _fit(output_dir, make_model, train_ds, num_train_steps, checkpoint_every or num_train_steps,
                    eval_ds, None, strategy, learning_rate, warmup_steps, mixed_precision, verbose, metrics,
                    eval_steps=eval_steps, keep_state=True, bias_correction=bias_correction)
