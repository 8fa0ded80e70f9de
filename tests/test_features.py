import math
import unicodedata

import numpy as np
import pytest
import tensorflow as tf

from keras_match import datasets
from keras_match.text.features import FEATURE_NAMES
from keras_match.text.features import STOP_WORDS
from keras_match.text.features import OverlapFeatures
from keras_match.text import tokenize


# ---- a plain-Python reference, written from Severyn & Moschitti's definitions --------------------------------
def _tokens(texts):
    return [[t.decode("utf-8") for t in row] for row in tokenize(list(texts)).to_list()]


def _is_stop(token):
    return token in STOP_WORDS or all(unicodedata.category(c)[0] in "PS" for c in token)


def reference_features(questions, answers, documents):
    df = {}
    for doc in _tokens(documents):
        for word in set(doc):
            df[word] = df.get(word, 0) + 1
    n = len(documents)

    def idf(word):
        return math.log(n / df.get(word, 1))

    rows = []
    for q, a in zip(_tokens(questions), _tokens(answers)):
        row = []
        for drop_stop in (False, True):
            q_set = {w for w in q if not (drop_stop and _is_stop(w))}
            a_set = {w for w in a if not (drop_stop and _is_stop(w))}
            shared = q_set & a_set
            total = len(q_set) + len(a_set)
            row += [len(shared) / total, sum(idf(w) for w in shared) / total] if total else [0.0, 0.0]
        rows.append(row)
    return np.array(rows)


@pytest.fixture(scope="module")
def trecqa_rows(data_dir):
    data = datasets.load("trecqa", variant="clean", train_split="train", data_dir=data_dir)
    train = data["train"].head(12).pairs()
    dev = data["dev"].head(4).pairs()
    documents = list(np.unique(train.questions)) + list(train.answers)
    questions = np.concatenate([train.questions[:40], dev.questions])
    answers = np.concatenate([train.answers[:40], dev.answers])
    return documents, questions, answers


def test_matches_python_reference_on_trecqa(trecqa_rows):
    documents, questions, answers = trecqa_rows
    features = OverlapFeatures.build(documents)
    out = features(questions, answers).numpy()
    expected = reference_features(questions, answers, documents)
    assert out.shape == (len(questions), 4) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    # The dev rows hold words never seen in the training documents, and every feature varies.
    assert all(np.ptp(out[:, j]) > 0 for j in range(4))
    assert features.num_documents == len(documents)


def test_a_hand_computed_pair():
    features = OverlapFeatures.build(["what is a cat ?", "a cat is a small feline .", "dogs bark"])
    out = features(["What is a cat ?", "", "the the"], ["The cat sat , a cat .", "x", "the"]).numpy()
    log15, log3 = math.log(3 / 2), math.log(3)
    # Q = {what, is, a, cat, ?}, A = {the, cat, sat, ",", a, "."}: shared {a, cat}; without stop words and
    # punctuation Q = {cat}, A = {cat, sat}.
    np.testing.assert_allclose(out[0], [2 / 11, 2 * log15 / 11, 1 / 3, log15 / 3], rtol=1e-6)
    np.testing.assert_array_equal(out[1], np.zeros(4))  # an empty question: nothing shared, no NaN
    # Sets, not counts; "the" is unseen in the documents (idf log N) and a stop word.
    np.testing.assert_allclose(out[2], [0.5, log3 / 2, 0.0, 0.0], rtol=1e-6)
    assert FEATURE_NAMES == ("overlap", "idf_overlap", "overlap_no_stop", "idf_overlap_no_stop")


def test_idf_is_log_n_over_df():
    features = OverlapFeatures.build(["cat dog", "cat fish", "cat fish", "cat"])
    np.testing.assert_allclose(
        features.idf(["cat", "dog", "fish", "never"]).numpy(), [0.0, math.log(4), math.log(2), math.log(4)],
        rtol=1e-6,
    )


def test_stop_words_follow_the_tokenizer():
    features = OverlapFeatures.build(["x"])
    tokens = tokenize(["He didn't say: \"It's the end ... -- 100 % over!\""]).flat_values
    stop = dict(zip([t.decode() for t in tokens.numpy()], features.is_stop_word(tokens).numpy()))
    assert stop["n't"] and stop["'s"] and stop["the"] and stop["..."] and stop["--"] and stop["%"]
    assert not stop["say"] and not stop["end"] and not stop["100"]


def test_save_and_from_file(tmp_path):
    features = OverlapFeatures.build(["a b c", "b c", "c d"])
    path = features.save(tmp_path / "idf.tsv")
    restored = OverlapFeatures.from_file(path)
    pairs = (["b c d e", "a"], ["c e", "a a"])
    np.testing.assert_array_equal(restored(*pairs).numpy(), features(*pairs).numpy())
    assert restored.num_documents == 3
    (tmp_path / "bad.tsv").write_text("a\t1\n")
    with pytest.raises(ValueError, match="line 1"):
        OverlapFeatures.from_file(tmp_path / "bad.tsv")


def test_in_tf_data_and_in_a_saved_model(tmp_path):
    source = tmp_path / "source"
    source.mkdir()
    path = OverlapFeatures.build(["a b c", "b c", "c d"]).save(source / "idf.tsv")
    features = OverlapFeatures.from_file(path)
    questions = np.array(["b c d e", "a", "c ?"], dtype=object)
    answers = np.array(["c e", "a a", "? d"], dtype=object)
    expected = features(questions, answers).numpy()

    ds = tf.data.Dataset.from_tensor_slices((questions, answers)).batch(2).map(features)
    np.testing.assert_allclose(np.concatenate([b.numpy() for b in ds]), expected, rtol=1e-6)

    module = tf.Module()
    module.features = features
    module.serve = tf.function(
        lambda q, a: {"features": features(q, a)},
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "export"), signatures={"serving_default": module.serve})
    assert (tmp_path / "export" / "assets" / "idf.tsv").exists()
    (source / "idf.tsv").unlink()  # the SavedModel carries its own copy
    loaded = tf.saved_model.load(str(tmp_path / "export"))
    serve = loaded.signatures["serving_default"]
    out = serve(q=tf.constant(questions.tolist()), a=tf.constant(answers.tolist()))
    np.testing.assert_allclose(out["features"].numpy(), expected, rtol=1e-6)


def test_bad_inputs():
    with pytest.raises(ValueError, match="empty"):
        OverlapFeatures.build([])
    with pytest.raises(TypeError):
        OverlapFeatures.build("a text")
    features = OverlapFeatures.build(["a b"])
    with pytest.raises(tf.errors.InvalidArgumentError, match="batch size"):
        features(["a", "b"], ["a"])
