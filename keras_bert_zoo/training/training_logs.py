"""Read a run's TensorBoard logs back, and draw them, without TensorBoard.

`finetune` and `pretrain` write `OUTPUT/logs/{train,validation}/` with
Keras' `TensorBoard` callback: `epoch_<metric>` per epoch, the learning
rate too, and `global_step`: the optimizer's step count at each epoch's end.
"""

import glob
import math
import os
import warnings

from keras_bert_zoo.utils.atomic import atomic_file

LOGS_DIR = "logs"
# What `report` draws a run's curves to: an output of the run, replaced with it.
CURVES_FILE = "curves.png"
# Not an `epoch_` metric: curves and final metrics leave it out.
STEP_TAG = "global_step"


def tensorboard_callback(output_dir):
    """Keras' `TensorBoard` callback writing into `output_dir/logs`, once per epoch, with the step count.

    Per-epoch only: with a step frequency, Keras drops an epoch's summaries
    whenever the epoch does not end on a multiple of that frequency. The
    optimizer's step count at each epoch's end (`STEP_TAG`) says which steps
    an epoch's values cover where epochs are not all alike (a resumed run's
    last chunk cut short, then extended).
    """
    import keras

    class TensorBoard(keras.callbacks.TensorBoard):
        def on_epoch_end(self, epoch, logs=None):
            super().on_epoch_end(epoch, logs)
            # Keras' own writer and summary module: one events file per run, as before.
            with self._train_writer.as_default():
                self.summary.scalar(STEP_TAG, int(keras.ops.convert_to_numpy(self.model.optimizer.iterations)),
                                    step=epoch)

    return TensorBoard(os.path.join(output_dir, LOGS_DIR))


def read_training_logs(run_dir):
    """`{split: {tag: [(step, value), ...]}}` from `run_dir/logs` (`split`: "train", "validation").

    Raises:
        FileNotFoundError: `run_dir` holds no TensorBoard logs.
    """
    import tensorflow as tf

    logs, event_files = {}, 0
    for split in ("train", "validation"):
        for path in sorted(glob.glob(os.path.join(run_dir, LOGS_DIR, split, "events.out.tfevents.*"))):
            event_files += 1
            try:
                for record in tf.data.TFRecordDataset(path):
                    event = tf.compat.v1.Event.FromString(record.numpy())
                    for value in event.summary.value:
                        if value.metadata.plugin_data.plugin_name != "scalars":
                            continue  # the model's config, written as text
                        number = float(tf.make_ndarray(value.tensor))
                        logs.setdefault(split, {}).setdefault(value.tag, []).append((int(event.step), number))
            except tf.errors.DataLossError:
                # A run killed while writing leaves its last record cut short, which TensorFlow's reader raises on
                # (report's traceback): the records before it are read, as TensorBoard reads them.
                warnings.warn(f"{path} ends in a record cut short or damaged (a run killed while writing it): its "
                              "values are read up to that record.", stacklevel=2)
    if not logs and event_files:
        raise FileNotFoundError(f"{run_dir} holds TensorBoard logs but no finished epoch in them: the run stopped "
                                f"before its first epoch ended ({run_dir}/job.json says how it ended).")
    if not logs:
        raise FileNotFoundError(f"{run_dir} holds no training logs ({LOGS_DIR}/train/events.out.tfevents.*): "
                                "pass the output directory of a finetune or pretrain run.")
    # A resumed run writes its epochs again: the last value of a step wins.
    return {split: {tag: sorted(dict(points).items()) for tag, points in tags.items()} for split, tags in logs.items()}


def train_losses(run_dir):
    """`(losses, steps)`: the training loss of every epoch in `run_dir`'s logs, in order, across the runs of a
    job resumed or extended (each run logs its own epochs; an epoch trained again counts once, as last trained),
    and the global step each epoch ended at (None where a version before it was logged wrote the epoch). Each
    loss is Keras' mean over its epoch's steps. Empty where the run logged no epoch."""
    try:
        logs = read_training_logs(run_dir).get("train", {})
    except FileNotFoundError:
        return [], []
    steps = dict(logs.get(STEP_TAG, []))
    epochs = logs.get("epoch_loss", [])
    return [loss for _, loss in epochs], [None if epoch not in steps else int(steps[epoch]) for epoch, _ in epochs]


def final_metrics(logs):
    """`{"train_loss": ..., "validation_accuracy": ...}`: the last epoch's value of every epoch-level metric."""
    return {f"{split}_{tag[len('epoch_'):]}": points[-1][1] for split, tags in logs.items()
            for tag, points in sorted(tags.items()) if tag.startswith("epoch_")}


def plot_training_logs(run_dir, output_file):
    """Draw every epoch-level metric of a run (train and validation, one panel each) to a PNG.

    Returns:
        `final_metrics` of the run.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only, no display needed
        from matplotlib import pyplot
        from matplotlib.ticker import MaxNLocator
    except ImportError as e:
        raise ImportError("Drawing training curves needs matplotlib: pip install matplotlib") from e
    logs = read_training_logs(run_dir)
    names = sorted({tag for tags in logs.values() for tag in tags if tag.startswith("epoch_")})
    columns = min(3, len(names))
    rows = math.ceil(len(names) / columns)
    figure, axes = pyplot.subplots(rows, columns, figsize=(4.5 * columns, 3.2 * rows), squeeze=False)
    for axis, name in zip(axes.flat, names):
        for split, tags in sorted(logs.items()):
            if name in tags:
                steps, values = zip(*tags[name])
                axis.plot([s + 1 for s in steps], values, marker="o", label=split)
        axis.set_title(name[len("epoch_"):])
        axis.set_xlabel("epoch")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # epochs are whole: no 0.96, 1.02 ticks
        axis.legend()
    for axis in list(axes.flat)[len(names):]:
        axis.set_visible(False)
    figure.suptitle(os.path.basename(os.path.normpath(run_dir)))
    figure.tight_layout()
    with atomic_file(output_file, "wb") as f:
        figure.savefig(f, format="png", dpi=100)
    pyplot.close(figure)
    return final_metrics(logs)
