"""The tasks: Keras models with heads on `BertBackbone` that take raw text.

Each task class is imported here so that it is in Keras' serialization
registry whenever any task is used: `Task.from_preset` finds the class a
saved preset names there.
"""

from keras_bert_zoo.tasks.bert_classifier import BertClassifier  # noqa: F401
from keras_bert_zoo.tasks.bert_pretrainer import BertPretrainer  # noqa: F401
from keras_bert_zoo.tasks.bert_question_answerer import BertQuestionAnswerer  # noqa: F401
from keras_bert_zoo.tasks.bert_token_classifier import BertTokenClassifier  # noqa: F401
from keras_bert_zoo.tasks.task import Task  # noqa: F401
