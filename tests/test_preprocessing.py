"""Tests for keras_match.preprocessors.pair: `PairPreprocessor` and `trim_padding`.

Modelled on keras-hub's preprocessor tests (`keras_hub/src/tests/test_case.py`, `run_preprocessor_test`): the
same output called directly and mapped over a `tf.data` dataset, config round trips, plus the asset files
(`save` / `load`), the ids contract (0 padding, 1 OOV, truncation), the overlap features and the errors. The
vocabulary and document frequencies are built from real TrecQA text.
"""

import gc
import json
import os
import pathlib
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match import datasets, text
from keras_match.text.features import FEATURE_NAMES, OverlapFeatures
from keras_match.preprocessors.base import CONFIG_FILE, trim_padding
from keras_match.preprocessors.pair import (
    FREQUENCIES_FILE,
    VOCABULARY_FILE,
    PairPreprocessor,
)

SEQUENCE_INPUTS = PairPreprocessor.SEQUENCE_INPUTS  # the token-id inputs trim_padding cuts

MAX_Q = 12
MAX_A = 30
NUM_TRAIN_ANSWERS = 300  # answers the vocabulary is built from; later answers hold out-of-vocabulary words


# ---------------------------------------------------------------------------------------------------------------
# Fixtures: real TrecQA text
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def pairs(data_dir):
    return datasets.load("trecqa", "clean", data_dir)["train"].head(20).pairs()


@pytest.fixture(scope="module")
def training_texts(pairs):
    questions = list(dict.fromkeys(pairs.questions.tolist()))  # the distinct questions, in order
    return questions + pairs.answers[:NUM_TRAIN_ANSWERS].tolist()


@pytest.fixture(scope="module")
def encoder(training_texts):
    return text.TextEncoder.build(training_texts)


@pytest.fixture(scope="module")
def overlap(training_texts):
    return OverlapFeatures.build(training_texts)


@pytest.fixture(scope="module")
def sample(pairs):
    """14 real held-out pairs (spread over the later questions) plus an empty question and a blank answer:
    texts, labels and sample weights."""
    index = np.linspace(NUM_TRAIN_ANSWERS, len(pairs) - 1, 14).astype(int)
    questions = pairs.questions[index].tolist() + ["", pairs.questions[0]]
    answers = pairs.answers[index].tolist() + [pairs.answers[0], " \t\n "]
    labels = np.concatenate([pairs.labels[index], [1, 0]]).astype("int32")
    weights = np.linspace(0.5, 2.0, len(labels)).astype("float32")
    return {"question": questions, "answer": answers}, labels, weights


EMPTY_QUESTION_ROW = -2  # rows of `sample` with an empty question / a blank answer
BLANK_ANSWER_ROW = -1


def make_preprocessor(encoder, overlap, overlap_features, **kwargs):
    return PairPreprocessor(
        encoder,
        max_question_length=MAX_Q,
        max_answer_length=MAX_A,
        overlap_features=overlap_features,
        document_frequencies=overlap if overlap_features else None,
        **kwargs,
    )


# ---------------------------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------------------------


def to_numpy(structure):
    return keras.tree.map_structure(lambda t: None if t is None else np.asarray(t), structure)


def assert_same(actual, expected):
    """Same nesting, shapes and dtypes; ids equal, floats equal up to 1e-6."""
    actual, expected = to_numpy(actual), to_numpy(expected)
    keras.tree.assert_same_structure(actual, expected)
    for a, e in zip(keras.tree.flatten(actual), keras.tree.flatten(expected)):
        assert a.shape == e.shape and a.dtype == e.dtype, f"{a.shape} {a.dtype} != {e.shape} {e.dtype}"
        if a.dtype.kind in "iub":
            np.testing.assert_array_equal(a, e)
        else:
            np.testing.assert_allclose(a, e, atol=1e-6, rtol=0)


def element(x, labels, weights, kind):
    """The (x[, y[, sample_weight]]) structure for `kind` in none / y / y_sw."""
    if kind == "none":
        return (x,)
    if kind == "y":
        return x, labels
    return x, labels, weights


def as_tensors(x):
    return {key: tf.constant(value, dtype=tf.string) for key, value in x.items()}


def concatenate(batches):
    return keras.tree.map_structure(lambda *parts: np.concatenate(parts, axis=0), *[to_numpy(b) for b in batches])


def stack(rows):
    return keras.tree.map_structure(lambda *parts: np.stack(parts, axis=0), *[to_numpy(r) for r in rows])


def reference_ids(encoder, texts, max_length):
    """Ids from the tokens and the word list in plain Python: word i -> i + 2, unknown -> 1, pad 0 at the end."""
    index = {word: i + 2 for i, word in enumerate(encoder.vocabulary)}
    rows = []
    for tokens in text.tokenize(list(texts)).to_list():
        ids = [index.get(token.decode("utf-8"), 1) for token in tokens][:max_length]
        rows.append(ids + [0] * (max_length - len(ids)))
    return np.array(rows, dtype=np.int32)


# ---------------------------------------------------------------------------------------------------------------
# Direct call == tf.data map
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
@pytest.mark.parametrize("kind", ["none", "y", "y_sw"])
def test_direct_call_equals_batched_dataset_map(encoder, overlap, sample, overlap_features, kind):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, labels, weights = sample
    args = element(x, labels, weights, kind)
    direct = preprocessor(*args)

    # the structure of keras.utils.pack_x_y_sample_weight: inputs, (inputs, y), (inputs, y, sample_weight)
    expected_keys = {"question", "answer"} | ({"features"} if overlap_features else set())
    if kind == "none":
        assert isinstance(direct, dict) and set(direct) == expected_keys
        inputs = direct
    else:
        assert isinstance(direct, tuple) and len(direct) == len(args)
        inputs = direct[0]
        assert set(inputs) == expected_keys
        np.testing.assert_array_equal(np.asarray(direct[1]), labels)
        if kind == "y_sw":
            np.testing.assert_array_equal(np.asarray(direct[2]), weights)
    assert inputs["question"].dtype == tf.int32 and tuple(inputs["question"].shape) == (len(labels), MAX_Q)
    assert inputs["answer"].dtype == tf.int32 and tuple(inputs["answer"].shape) == (len(labels), MAX_A)
    if overlap_features:
        assert inputs["features"].dtype == tf.float32 and tuple(inputs["features"].shape) == (len(labels), 4)

    tensors = (as_tensors(x),) + args[1:]
    dataset = tf.data.Dataset.from_tensor_slices(tensors if kind != "none" else tensors[0])
    for batch_size in (5, len(labels)):  # a ragged last batch, and one batch
        mapped = dataset.batch(batch_size).map(preprocessor)
        assert_same(concatenate(list(mapped)), direct)


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_unbatched_dataset_map_raises_a_clear_error(encoder, overlap, sample, overlap_features):
    """Unbatched elements are scalar strings: the layer takes batches `[batch]` only and says so.

    (keras-hub's preprocessors also take scalars; this one does not. `batch(1)` ... `unbatch()` is the way to
    preprocess element by element, and gives the rows of the direct call.)
    """
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, labels, _ = sample
    dataset = tf.data.Dataset.from_tensor_slices((as_tensors(x), labels))
    with pytest.raises(ValueError, match=r"shape \[batch\], got shape \(\)"):
        dataset.map(preprocessor)
    with pytest.raises(ValueError, match=r"shape \[batch\]"):
        preprocessor({"question": tf.constant("what ?"), "answer": tf.constant("that .")})
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        preprocessor({"question": "what ?", "answer": "that ."})

    rows = list(dataset.batch(1).map(preprocessor).unbatch())
    assert_same(stack(rows), preprocessor(x, labels))


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_tf_function_with_text_input_specs(encoder, overlap, sample, overlap_features):
    """In a graph with the raw-text signature (as the exported signatures call it), outputs match the eager
    call and the model input specs, before and after `trim_padding`."""
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, _, _ = sample
    fn = tf.function(lambda texts: preprocessor(texts), input_signature=[preprocessor.text_input_specs()])
    graph = fn(as_tensors(x))
    assert_same(graph, preprocessor(x))
    specs = preprocessor.model_input_specs()
    assert set(graph) == set(specs)
    for key, spec in specs.items():
        assert spec.is_compatible_with(graph[key]), (key, spec, graph[key])
        assert spec.is_compatible_with(preprocessor.trim_padding(graph)[key])
        assert spec.is_compatible_with(trim_padding(graph, SEQUENCE_INPUTS)[key])


# ---------------------------------------------------------------------------------------------------------------
# The ids and the features
# ---------------------------------------------------------------------------------------------------------------


def test_ids_padding_oov_and_truncation_on_real_text(encoder, overlap, sample):
    preprocessor = make_preprocessor(encoder, overlap, False)
    x, _, _ = sample
    out = to_numpy(preprocessor(x))
    for key, max_length in (("question", MAX_Q), ("answer", MAX_A)):
        ids = out[key]
        np.testing.assert_array_equal(ids, reference_ids(encoder, x[key], max_length))
        assert ids.min() >= 0 and ids.max() < encoder.vocab_size
        # padding only at the end of a row
        real = ids != 0
        assert np.all(real == (np.arange(max_length)[None, :] < real.sum(axis=1, keepdims=True)))
    # the held-out answers have out-of-vocabulary words (id 1), and some are longer than MAX_A
    assert (out["answer"] == text.OOV_ID).any()
    for key, max_length in (("question", MAX_Q), ("answer", MAX_A)):  # truncated and padded rows both occur
        lengths = [len(tokens) for tokens in text.tokenize(x[key]).to_list()]
        assert max(lengths) > max_length and min(lengths) < max_length

    # a longer maximum keeps more tokens, and the same first ones
    longer = PairPreprocessor(encoder, max_question_length=MAX_Q + 20, max_answer_length=MAX_A + 40)
    wide = to_numpy(longer(x))
    np.testing.assert_array_equal(wide["question"][:, :MAX_Q], out["question"])
    np.testing.assert_array_equal(wide["answer"][:, :MAX_A], out["answer"])
    assert (wide["question"][:, MAX_Q:] != 0).any() and (wide["answer"][:, MAX_A:] != 0).any()


def test_small_vocabulary_ids_by_hand():
    preprocessor = PairPreprocessor(["cat", "sat", "mat"], max_question_length=3, max_answer_length=5)
    out = to_numpy(preprocessor({"question": ["The cat SAT on the mat", ""],
                                 "answer": ["a cat", "mat mat mat mat mat mat mat"]}))
    np.testing.assert_array_equal(out["question"], [[1, 2, 3], [0, 0, 0]])
    np.testing.assert_array_equal(out["answer"], [[1, 2, 0, 0, 0], [4, 4, 4, 4, 4]])
    assert preprocessor.vocab_size == 5
    assert preprocessor.num_features == 0


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_empty_and_blank_texts_give_all_padding_rows(encoder, overlap, sample, overlap_features):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, _, _ = sample
    out = to_numpy(preprocessor(x))
    assert not out["question"][EMPTY_QUESTION_ROW].any()
    assert not out["answer"][BLANK_ANSWER_ROW].any()
    assert out["answer"][EMPTY_QUESTION_ROW].any() and out["question"][BLANK_ANSWER_ROW].any()
    assert out["question"][:EMPTY_QUESTION_ROW].any(axis=1).all()  # the real rows are not affected
    assert out["answer"][:EMPTY_QUESTION_ROW].any(axis=1).all()
    if overlap_features:
        np.testing.assert_array_equal(out["features"][[EMPTY_QUESTION_ROW, BLANK_ANSWER_ROW]], 0.0)
        assert np.all(np.isfinite(out["features"]))
    # a whole batch of empty texts
    empty = to_numpy(preprocessor({"question": ["", " "], "answer": ["\n", ""]}))
    assert not empty["question"].any() and not empty["answer"].any()
    assert empty["question"].shape == (2, MAX_Q) and empty["answer"].shape == (2, MAX_A)
    if overlap_features:
        np.testing.assert_array_equal(empty["features"], np.zeros((2, 4), np.float32))


def test_overlap_features_column_equals_overlap_features_of_the_truncated_texts(encoder, overlap, sample):
    preprocessor = make_preprocessor(encoder, overlap, True)
    x, _, _ = sample
    out = to_numpy(preprocessor(x))
    expected = overlap(x["question"], x["answer"], MAX_Q, MAX_A).numpy()
    np.testing.assert_allclose(out["features"], expected, atol=1e-6, rtol=0)
    assert out["features"].shape == (len(x["question"]), len(FEATURE_NAMES))
    assert (out["features"][:, 0] > 0).any()  # real pairs share words
    # truncation matters: the features of the whole texts differ for some long answer
    assert not np.allclose(out["features"], overlap(x["question"], x["answer"]).numpy())
    # without overlap_features there is no features column even if frequencies are given
    plain = PairPreprocessor(encoder, MAX_Q, MAX_A, document_frequencies=overlap)
    assert set(plain(x)) == {"question", "answer"}


# ---------------------------------------------------------------------------------------------------------------
# Config and assets
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_get_config_from_config_and_load_assets_round_trip(encoder, overlap, sample, overlap_features, tmp_path):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features, lowercase=True, name="pairs")
    x, _, _ = sample
    config = preprocessor.get_config()
    assert config["vocabulary"] is None and config["document_frequencies"] is None
    assert config["max_question_length"] == MAX_Q and config["max_answer_length"] == MAX_A
    assert config["lowercase"] is True and config["overlap_features"] is overlap_features
    assert config["name"] == "pairs"
    json.dumps(config, default=str)  # plain data

    restored = PairPreprocessor.from_config(config)
    assert restored.get_config() == config
    with pytest.raises(ValueError, match="load_assets"):
        restored(x)
    preprocessor.save_assets(tmp_path)
    expected_files = {VOCABULARY_FILE} | ({FREQUENCIES_FILE} if overlap_features else set())
    assert {p.name for p in tmp_path.iterdir()} == expected_files
    restored.load_assets(tmp_path)
    assert_same(restored(x), preprocessor(x))
    assert restored.vocab_size == preprocessor.vocab_size

    # the registered Keras serialization path too
    revived = keras.layers.deserialize(keras.layers.serialize(preprocessor))
    assert type(revived) is PairPreprocessor and revived.get_config() == config
    revived.load_assets(tmp_path)
    assert_same(revived(x), preprocessor(x))


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_save_and_load_round_trip(encoder, overlap, sample, overlap_features, tmp_path):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, labels, weights = sample
    saved = tmp_path / "nested" / "preprocessor"  # created by save
    preprocessor.save(saved)
    expected_files = {CONFIG_FILE, VOCABULARY_FILE} | ({FREQUENCIES_FILE} if overlap_features else set())
    assert {p.name for p in saved.iterdir()} == expected_files  # no staged .tmp files left
    config = json.loads((saved / CONFIG_FILE).read_text(encoding="utf-8"))
    assert config["class_name"] == "PairPreprocessor"
    assert config["config"]["vocabulary"] is None
    assert config["config"]["overlap_features"] is overlap_features
    vocabulary_lines = (saved / VOCABULARY_FILE).read_text(encoding="utf-8").splitlines()
    assert vocabulary_lines == encoder.vocabulary
    files = {name: (saved / name).read_bytes() for name in expected_files}

    loaded = PairPreprocessor.load(saved)
    assert isinstance(loaded, PairPreprocessor)
    assert loaded.get_config() == preprocessor.get_config()
    assert_same(loaded(x, labels, weights), preprocessor(x, labels, weights))

    # load_assets copied the files: the loaded tables do not read the saved directory
    assert saved not in pathlib.Path(loaded.encoder.vocabulary_path).parents
    if overlap_features:
        assert saved not in pathlib.Path(loaded.overlap.path).parents

    # saving over the directory it was loaded from keeps the same files
    loaded.save(saved)
    assert {name: (saved / name).read_bytes() for name in expected_files} == files


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_loaded_preprocessor_works_after_the_saved_directory_is_deleted(
    encoder, overlap, sample, overlap_features, tmp_path
):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    x, _, _ = sample
    saved = tmp_path / "saved"
    preprocessor.save(saved)
    files = {p.name: p.read_bytes() for p in saved.iterdir()}
    loaded = PairPreprocessor.load(saved)
    shutil.rmtree(saved)
    gc.collect()

    assert_same(loaded(x), preprocessor(x))
    fn = tf.function(lambda texts: loaded(texts), input_signature=[loaded.text_input_specs()])
    assert_same(fn(as_tensors(x)), preprocessor(x))
    assert os.path.isfile(loaded.encoder.vocabulary_path)
    if overlap_features:
        assert os.path.isfile(loaded.overlap.path)
    # and it can be saved again, the same files
    again = tmp_path / "again"
    loaded.save(again)
    assert {p.name: p.read_bytes() for p in again.iterdir()} == files
    assert_same(PairPreprocessor.load(again)(x), preprocessor(x))


def test_loaded_document_frequencies_outlive_the_vocabulary(encoder, overlap, sample, tmp_path):
    preprocessor = make_preprocessor(encoder, overlap, True)
    x, _, _ = sample
    saved = tmp_path / "saved"
    preprocessor.save(saved)
    loaded = PairPreprocessor.load(saved)
    loaded.set_vocabulary(encoder.vocabulary)  # a new encoder, the same words: the old table is dropped
    gc.collect()
    assert os.path.isfile(loaded.overlap.path), f"{loaded.overlap.path} was deleted"
    loaded.save(tmp_path / "again")  # FileNotFoundError today
    assert_same(PairPreprocessor.load(tmp_path / "again")(x), preprocessor(x))


def test_document_frequencies_lowercase_mismatch_is_refused_or_round_trips(training_texts, sample, tmp_path):
    cased_encoder = text.TextEncoder.build(training_texts, lowercase=False)
    uncased_overlap = OverlapFeatures.build(training_texts, lowercase=True)
    x, _, _ = sample
    try:
        preprocessor = PairPreprocessor(cased_encoder, MAX_Q, MAX_A, lowercase=False, overlap_features=True,
                                        document_frequencies=uncased_overlap)
    except ValueError:
        return  # refused, as a mismatching encoder is
    preprocessor.save(tmp_path)
    assert_same(PairPreprocessor.load(tmp_path)(x), preprocessor(x))


# ---------------------------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------------------------


def test_call_without_vocabulary_names_load_assets(sample):
    x, _, _ = sample
    with pytest.raises(ValueError, match="load_assets"):
        PairPreprocessor()(x)
    with pytest.raises(ValueError, match="load_assets"):
        PairPreprocessor().vocab_size


def test_overlap_features_without_frequencies(encoder, sample):
    x, _, _ = sample
    preprocessor = PairPreprocessor(encoder, overlap_features=True)
    with pytest.raises(ValueError, match="document frequencies"):
        preprocessor(x)
    with pytest.raises(ValueError, match="document frequencies"):
        preprocessor.save_assets("unused")


def test_a_tuple_is_refused(encoder, sample):
    x, _, _ = sample
    with pytest.raises(TypeError, match="dict"):
        PairPreprocessor(encoder)((x["question"], x["answer"]))


@pytest.mark.parametrize("missing", ["question", "answer"])
def test_a_missing_text_is_named(encoder, sample, missing):
    x, _, _ = sample
    partial = {key: value for key, value in x.items() if key != missing}
    with pytest.raises(ValueError, match=missing):
        PairPreprocessor(encoder)(partial)


@pytest.mark.parametrize("argument", ["max_question_length", "max_answer_length"])
@pytest.mark.parametrize("value", [0, -1, True, 2.5, "8", None])
def test_bad_max_lengths(encoder, argument, value):
    with pytest.raises(ValueError, match=argument):
        PairPreprocessor(encoder, **{argument: value})


def test_encoder_lowercase_mismatch(training_texts):
    with pytest.raises(ValueError, match="lowercase"):
        PairPreprocessor(text.TextEncoder.build(training_texts[:50], lowercase=False), lowercase=True)


def test_load_without_config_file(tmp_path):
    with pytest.raises(FileNotFoundError, match=CONFIG_FILE):
        PairPreprocessor.load(tmp_path)
    with pytest.raises(FileNotFoundError, match=CONFIG_FILE):
        PairPreprocessor.load(tmp_path / "does_not_exist")


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        "",
        "[1, 2]",
        '{"class_name": "Dense", "module": "keras.layers", "config": {"units": 2}}',
        '{"module": "keras_match.preprocessors.pair", "class_name": "PairPreprocessor", '
        '"registered_name": "keras_match>PairPreprocessor", "config": {"max_question_length": 0}}',
    ],
    ids=["not-json", "empty", "a-list", "another-layer", "bad-length"],
)
def test_malformed_config_file_is_named(encoder, overlap, content, tmp_path):
    make_preprocessor(encoder, overlap, False).save(tmp_path)
    (tmp_path / CONFIG_FILE).write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=CONFIG_FILE):
        PairPreprocessor.load(tmp_path)


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_missing_asset_files_are_named(encoder, overlap, overlap_features, tmp_path):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    preprocessor.save(tmp_path)
    missing = FREQUENCIES_FILE if overlap_features else VOCABULARY_FILE
    (tmp_path / missing).unlink()
    with pytest.raises(FileNotFoundError, match=missing):
        PairPreprocessor.load(tmp_path)
    with pytest.raises(FileNotFoundError, match=missing):
        PairPreprocessor.from_config(preprocessor.get_config()).load_assets(tmp_path)


def test_missing_vocabulary_file_is_named(encoder, overlap, tmp_path):
    make_preprocessor(encoder, overlap, True).save(tmp_path)
    (tmp_path / VOCABULARY_FILE).unlink()
    with pytest.raises(FileNotFoundError, match=VOCABULARY_FILE):
        PairPreprocessor.load(tmp_path)


# ---------------------------------------------------------------------------------------------------------------
# Signatures
# ---------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_input_specs(encoder, overlap, overlap_features):
    preprocessor = make_preprocessor(encoder, overlap, overlap_features)
    text_specs = preprocessor.text_input_specs()
    assert list(text_specs) == ["question", "answer"]
    for key, spec in text_specs.items():
        assert spec == tf.TensorSpec([None], tf.string, name=key)

    specs = preprocessor.model_input_specs()
    expected = {key: tf.TensorSpec([None, None], tf.int32, name=key) for key in ("question", "answer")}
    if overlap_features:
        expected["features"] = tf.TensorSpec([None, 4], tf.float32, name="features")
    assert specs == expected
    assert preprocessor.num_features == (4 if overlap_features else 0)
    # the specs do not need the assets
    assert PairPreprocessor(overlap_features=overlap_features).model_input_specs() == expected


# ---------------------------------------------------------------------------------------------------------------
# trim_padding
# ---------------------------------------------------------------------------------------------------------------


def test_trim_padding_rank_2():
    features = np.arange(8, dtype=np.float32).reshape(2, 4)
    inputs = {
        "question": np.array([[5, 6, 7, 0, 0], [8, 0, 0, 0, 0]], np.int32),
        "answer": tf.constant([[1, 0, 0, 0], [0, 0, 0, 0]], tf.int32),
        "features": features,
    }
    out = trim_padding(inputs, SEQUENCE_INPUTS)
    np.testing.assert_array_equal(out["question"], [[5, 6, 7], [8, 0, 0]])
    np.testing.assert_array_equal(out["answer"], [[1], [0]])
    assert out["features"] is features  # other inputs untouched
    assert set(out) == set(inputs)
    assert inputs["question"].shape == (2, 5)  # the input dict is not modified
    # nothing to trim: the same ids
    full = {"question": np.array([[1, 2]], np.int32), "answer": np.array([[3]], np.int32)}
    out = trim_padding(full, SEQUENCE_INPUTS)
    np.testing.assert_array_equal(out["question"], full["question"])
    np.testing.assert_array_equal(out["answer"], full["answer"])


def test_trim_padding_rank_3_cuts_to_the_longest_row_of_any_list():
    rng = np.random.default_rng(0)
    lengths = np.array([[1, 4, 2], [0, 3, 1]])
    ids = rng.integers(2, 50, size=(2, 3, 9)).astype(np.int32)
    ids[np.arange(9)[None, None, :] >= lengths[..., None]] = 0
    answers = np.zeros((2, 3, 6), np.int32)
    answers[1, 2, :2] = 7
    out = trim_padding({"question": ids, "answer": answers, "qid": ["a", "b"]}, SEQUENCE_INPUTS)
    np.testing.assert_array_equal(out["question"], ids[..., :4])
    np.testing.assert_array_equal(out["answer"], answers[..., :2])
    assert out["qid"] == ["a", "b"]


def test_trim_padding_keeps_one_column():
    out = trim_padding({"question": tf.zeros([0, 7], tf.int32), "answer": tf.zeros([0, 3, 5], tf.int32)},
                       SEQUENCE_INPUTS)
    assert tuple(out["question"].shape) == (0, 1)
    assert tuple(out["answer"].shape) == (0, 3, 1)
    out = trim_padding({"question": np.zeros((3, 4), np.int32), "answer": np.zeros((2, 2, 6), np.int32)},
                       SEQUENCE_INPUTS)
    assert tuple(out["question"].shape) == (3, 1) and tuple(out["answer"].shape) == (2, 2, 1)


def test_trim_padding_in_a_dataset_loses_no_token(encoder, overlap, sample):
    preprocessor = make_preprocessor(encoder, overlap, True)
    x, labels, _ = sample
    direct = to_numpy(preprocessor(x))
    dataset = tf.data.Dataset.from_tensor_slices((as_tensors(x), labels)).batch(4).map(preprocessor)
    for (inputs, _), start in zip(dataset.map(lambda inputs, y: (preprocessor.trim_padding(inputs), y)),
                                  range(0, 16, 4)):
        for key in ("question", "answer"):
            trimmed = inputs[key].numpy()
            full = direct[key][start : start + 4]
            width = trimmed.shape[1]
            assert 1 <= width <= full.shape[1]
            np.testing.assert_array_equal(trimmed, full[:, :width])
            assert not full[:, width:].any()  # only padding was cut
            assert width == max(1, int((full != 0).sum(axis=1).max()))
        np.testing.assert_array_equal(inputs["features"].numpy(), direct["features"][start : start + 4])


# ---------------------------------------------------------------------------------------------------------------
# The WordPiece tokenizer (`tokenizer="minilm-l6"`): the same contract (direct call == dataset map == graph)
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def wordpiece_encoder():
    """all-MiniLM-L6-v2's WordPiece vocabulary, from `$KERAS_MATCH_ENCODERS` (default `../shared/models`)."""
    from keras_match.encoders import pretrained

    shared = pathlib.Path(__file__).resolve().parents[2] / "shared" / "models"
    encoders = os.environ.get(pretrained.ENV_ENCODERS) or shared
    try:
        return text.WordPieceEncoder.from_pretrained("minilm-l6", encoders)
    except FileNotFoundError as error:
        pytest.skip(f"the pretrained encoder is not available: {error}")


@pytest.mark.parametrize("overlap_features", [False, True], ids=["ids", "features"])
def test_wordpiece_direct_call_equals_dataset_map_and_graph(wordpiece_encoder, overlap, sample, overlap_features):
    preprocessor = make_preprocessor(wordpiece_encoder, overlap, overlap_features, tokenizer="minilm-l6")
    x, labels, weights = sample
    direct = preprocessor(x, labels, weights)
    inputs = direct[0]
    assert tuple(inputs["question"].shape) == (len(labels), MAX_Q) and inputs["question"].dtype == tf.int32
    assert (inputs["question"].numpy()[:, 0] == 101).all()  # [CLS], also before an empty question
    assert inputs["question"].numpy()[EMPTY_QUESTION_ROW, :3].tolist() == [101, 102, 0]
    dataset = tf.data.Dataset.from_tensor_slices((as_tensors(x), labels, weights))
    for batch_size in (5, len(labels)):
        assert_same(concatenate(list(dataset.batch(batch_size).map(preprocessor))), direct)
    fn = tf.function(lambda texts: preprocessor(texts), input_signature=[preprocessor.text_input_specs()])
    assert_same(fn(as_tensors(x)), direct[0])
    if overlap_features:  # the word-level features of the word preprocessor
        words = make_preprocessor(text.TextEncoder.build(["a"]), overlap, True)
        np.testing.assert_array_equal(inputs["features"].numpy(), words(x)["features"].numpy())
