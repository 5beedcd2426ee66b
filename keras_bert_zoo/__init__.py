"""keras_bert_zoo: the BERT family for Keras 3 and TensorFlow.

Text flows one way: `BertTokenizer` -> `BertPreprocessor` -> `BertBackbone`
-> task heads. Every model and tokenizer has `from_preset`.
"""

import os

# TensorFlow's C++ start-up chatter is noise for users of a model zoo.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from keras_bert_zoo import data  # noqa: E402,F401 (kbz.data.read_glue, read_conll, read_squad, ...)
from keras_bert_zoo import distribution  # noqa: E402,F401 (kbz.distribution.get_strategy)
from keras_bert_zoo import export  # noqa: E402,F401 (kbz.export.export_for_serving, load_export)
from keras_bert_zoo.layers.activations import gelu_tanh  # noqa: E402
from keras_bert_zoo.layers.bert_embedding import BertEmbedding  # noqa: E402
from keras_bert_zoo.models.bert_backbone import BertBackbone  # noqa: E402
from keras_bert_zoo.preprocessing.bert_preprocessor import BertPreprocessor  # noqa: E402
from keras_bert_zoo.presets.errors import CheckpointError  # noqa: E402
from keras_bert_zoo.presets.errors import NetworkUnreachableError  # noqa: E402
from keras_bert_zoo.presets.errors import PresetError  # noqa: E402
from keras_bert_zoo.presets.errors import PresetNotFoundError  # noqa: E402
from keras_bert_zoo.presets.errors import UnsafeCheckpointError  # noqa: E402
from keras_bert_zoo.presets.loader import convert_checkpoint  # noqa: E402
from keras_bert_zoo.presets.registry import list_presets  # noqa: E402
from keras_bert_zoo.optimization.bert_adamw import bert_adamw  # noqa: E402
from keras_bert_zoo.tasks.bert_classifier import BertClassifier  # noqa: E402
from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer  # noqa: E402
from keras_bert_zoo.tasks.bert_question_answerer import BertQuestionAnswerer  # noqa: E402
from keras_bert_zoo.tasks.bert_token_classifier import BertTokenClassifier  # noqa: E402
from keras_bert_zoo.tasks.sentence_embedding import encode_texts  # noqa: E402
from keras_bert_zoo.tokenizers.bert_tokenizer import BertTokenizer  # noqa: E402
from keras_bert_zoo.tokenizers.vocabulary_learner import learn_vocabulary  # noqa: E402
from keras_bert_zoo.preprocessing.pretraining_instances import PretrainingDataConfig  # noqa: E402
from keras_bert_zoo.preprocessing.pretraining_instances import create_pretraining_instances  # noqa: E402
from keras_bert_zoo.training.finetune import finetune  # noqa: E402
from keras_bert_zoo.training.pretrain import pretrain  # noqa: E402
from keras_bert_zoo.version import __version__  # noqa: E402

DEFAULT_PRESET = "minilm_l6_h384_en_uncased"

__all__ = [
    "BertBackbone",
    "BertClassifier",
    "BertEmbedding",
    "BertPreprocessor",
    "BertPretrainer",
    "BertQuestionAnswerer",
    "BertTokenClassifier",
    "BertTokenizer",
    "CheckpointError",
    "DEFAULT_PRESET",
    "NetworkUnreachableError",
    "PresetError",
    "PresetNotFoundError",
    "PretrainingDataConfig",
    "UnsafeCheckpointError",
    "bert_adamw",
    "convert_checkpoint",
    "create_pretraining_instances",
    "encode_texts",
    "finetune",
    "gelu_tanh",
    "learn_vocabulary",
    "list_presets",
    "pretrain",
    "__version__",
]
