"""`classify` / `classify_pairs`: raw text in, probabilities and label names out."""

import tensorflow as tf

from keras_bert_zoo.export.request_inputs import checked_request
from keras_bert_zoo.export.request_inputs import pack_texts
from keras_bert_zoo.export.row_chunks import run_model
from keras_bert_zoo.export.serving_signature import ServingSignature

_TEXT = tf.TensorSpec([None], tf.string, name="text")
_TEXT_B = tf.TensorSpec([None], tf.string, name="text_b")


def classifier_signatures(classifier):
    """Signatures of a `BertClassifier`.

    Outputs, per text: multi-class `probabilities` `[batch, classes]`,
    `label_ids` and `labels` (names); multi-label `probabilities`,
    `label_ids` (0/1 per class) and `labels` (names over the threshold,
    comma-joined); regression `predictions`. Every signature also returns
    `truncated`: the text was cut to the model's `sequence_length`.

    A classifier fine-tuned on single texts exports `classify` alone, one
    fine-tuned on pairs `classify_pairs` alone (see `text_pairs`): a client
    asking for the other form gets an unknown signature, not answers that
    mean nothing.
    """
    # Strings whatever their type, as labels.txt lists them: int names were served as int32, and failed multi-label.
    names = [str(name) for name in (classifier.label_names or range(classifier.num_classes))]
    if classifier.problem_type == "multi_label":
        joined = [name for name in names if "," in name]
        if joined:  # a client splitting `labels` on commas would read other classes
            raise ValueError(f"Cannot export multi-label names that hold a comma ({joined}): the served `labels` "
                             "joins each text's names with commas. Rename those classes (label_names=...).")
    names = tf.constant(names)
    logits_spec = tf.TensorSpec([None, classifier.num_classes], tf.float32)

    def outputs(inputs, truncated):
        logits = run_model(classifier, inputs, logits_spec)
        if classifier.problem_type == "regression":
            return {"predictions": logits, "truncated": truncated}
        if classifier.problem_type == "multi_label":
            probabilities = tf.sigmoid(logits)
            chosen = probabilities >= classifier.threshold
            all_names = tf.broadcast_to(names, tf.shape(probabilities))
            labels = tf.strings.reduce_join(tf.ragged.boolean_mask(all_names, chosen), axis=-1, separator=",")
            return {"probabilities": probabilities, "label_ids": tf.cast(chosen, tf.int32), "labels": labels,
                    "truncated": truncated}
        probabilities = tf.nn.softmax(logits, axis=-1)
        label_ids = tf.argmax(probabilities, axis=-1, output_type=tf.int32)
        return {"probabilities": probabilities, "label_ids": label_ids, "labels": tf.gather(names, label_ids),
                "truncated": truncated}

    @tf.function(input_signature=[_TEXT])
    def classify(text):
        return outputs(*pack_texts(classifier.preprocessor, *checked_request(text=text)))

    @tf.function(input_signature=[_TEXT, _TEXT_B])
    def classify_pairs(text, text_b):
        return outputs(*pack_texts(classifier.preprocessor, *checked_request(text=text, text_b=text_b)))

    signatures = {
        False: ServingSignature("classify", classify, {"text": ["A warm, funny film."]}),
        True: ServingSignature("classify_pairs", classify_pairs,
                               {"text": ["He said hi."], "text_b": ["He greeted them."]}),
    }
    if classifier.text_pairs is None:
        return [signatures[False], signatures[True]]
    return [signatures[classifier.text_pairs]]
