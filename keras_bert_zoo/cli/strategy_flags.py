"""`--strategy` and `--tpu`, the flags of the commands that train (`pretrain`, `finetune`)."""

from keras_bert_zoo.cli.library_defaults import library_constant


def add_strategy_arguments(parser):
    parser.add_argument("--strategy", choices=library_constant("distribution.get_strategy", "KINDS"), default="auto",
                        help="Where to train: auto (a TPU given by --tpu or TPU_NAME, else the workers of TF_CONFIG, "
                             "else a TPU of this host, else all its GPUs, else the CPU), tpu, gpus (all of them), cpu "
                             "(no distribution: TensorFlow's default device, a GPU where there is one) or multiworker "
                             "(the cluster of TF_CONFIG). The batch must be a multiple of the replicas.")
    parser.add_argument("--tpu", help="TPU name or grpc:// address (strategy tpu/auto).")


def strategy_from_flags(args):
    """The `tf.distribute.Strategy` that `--strategy` / `--tpu` name (TensorFlow loads here)."""
    from keras_bert_zoo.distribution.get_strategy import get_strategy

    return get_strategy(args.strategy, tpu=args.tpu)
