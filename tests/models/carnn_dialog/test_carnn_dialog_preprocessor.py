"""`DialogPreprocessor`: the last history turns kept, truncation and padding, the candidate set asset, the saved
assets' round trip, and a real dialog bAbI split through `pipeline.encode`."""

import numpy as np
import pytest
import tensorflow as tf

from keras_match import preprocessors, tasks, text
from keras_match.inputs import pipeline
from keras_match.preprocessors import Preprocessor
from keras_match.preprocessors.dialog import CANDIDATES_FILE
from keras_match.preprocessors.dialog import DialogPreprocessor
from keras_match.preprocessors.dialog import DialogSettings
from keras_match.preprocessors.dialog import is_kb_line
from keras_match.preprocessors.dialog import kept_turns
from keras_match.preprocessors.dialog import last_turns

CANDIDATES = ["hello what can i help you with today", "i'm on it", "any preference on a type of cuisine",
              "api_call italian paris six cheap"]
WORDS = ("t1 t2 t3 t4 t5 t6 hi hello what can i help you with today book a table for six in paris please "
         "italian cheap any preference on type of cuisine api_call 'm it").split()


def make(max_turns=3, max_turn_length=4, max_context_length=5, max_candidate_length=4, history_cut="oldest"):
    return DialogPreprocessor(WORDS, CANDIDATES, max_turns=max_turns, max_turn_length=max_turn_length,
                              max_context_length=max_context_length, max_candidate_length=max_candidate_length,
                              history_cut=history_cut)


def ids(words):
    encoder = text.TextEncoder(WORDS)
    return encoder.lookup(tf.constant(words)).numpy().tolist()


HISTORY = np.array([["t1", "t2", "t3", "t4", "t5"],          # 5 turns: the last 3 are kept
                    ["t1 t2", "", "", "", ""],                 # 1 turn
                    ["", "", "", "", ""],                      # no turn (a dialog's first response)
                    ["t1", "", "t3 t4 t5 t6 hi", "", ""]],     # an empty real turn inside, a long turn
                   dtype=object)
CONTEXT = np.array(["book a table for six in paris please", "hi", "", "t6"], dtype=object)


def test_the_last_turns_are_kept_in_order_and_padded_at_the_end():
    out = make()({"history": HISTORY, "context": CONTEXT})
    history = out["history"].numpy()
    assert history.shape == (4, 3, 4) and history.dtype == np.int32
    t = {w: i for w, i in zip(WORDS, ids(WORDS))}
    np.testing.assert_array_equal(history[0], [[t["t3"], 0, 0, 0], [t["t4"], 0, 0, 0], [t["t5"], 0, 0, 0]])
    np.testing.assert_array_equal(history[1], [[t["t1"], t["t2"], 0, 0], [0] * 4, [0] * 4])
    np.testing.assert_array_equal(history[2], np.zeros((3, 4)))
    # the empty turn between t1 and the long turn is a real (empty) turn: kept in its place; 4 tokens kept
    np.testing.assert_array_equal(history[3], [[t["t1"], 0, 0, 0], [0] * 4, [t["t3"], t["t4"], t["t5"], t["t6"]]])
    context = out["context"].numpy()
    assert context.shape == (4, 5)
    np.testing.assert_array_equal(context[0], [t[w] for w in "book a table for six".split()])
    np.testing.assert_array_equal(context[2], [0] * 5)
    np.testing.assert_array_equal(context[3], [t["t6"], 0, 0, 0, 0])


def test_last_turns_with_fewer_columns_than_kept_turns_and_none_at_all():
    np.testing.assert_array_equal(last_turns(tf.constant([["a", "b"]]), 4).numpy(), [[b"a", b"b", b"", b""]])
    empty = tf.zeros([2, 0], tf.string)
    np.testing.assert_array_equal(last_turns(empty, 2).numpy(), [[b"", b""], [b"", b""]])


KB = ["resto_a R_cuisine italian", "resto_a R_phone resto_a_phone", "api_call no result", "resto_b R_price cheap"]


def kb_first_reference(row, max_turns):
    """The `kb_first` cut from its definition, one row at a time: the real turns end at the last non-empty text;
    keep the last `min(u, max_turns)` utterances and the last `max(max_turns - u, 0)` KB lines, in dialog order."""
    count = max([i + 1 for i, t in enumerate(row) if t] or [0])
    real = list(row[:count])
    kb = [t in KB for t in real]
    utterances = [i for i, k in enumerate(kb) if not k]
    kb_lines = [i for i, k in enumerate(kb) if k]
    slots = max(max_turns - len(utterances), 0)
    kept = sorted(utterances[-max_turns:] + (kb_lines[-slots:] if slots else []))
    return [real[i] for i in kept] + [""] * (max_turns - len(kept))


def test_kb_first_matches_its_reference_on_random_histories():
    rng = np.random.default_rng(0)
    texts = KB + ["t1", "t2 t3", "hi", "", "api_call italian paris six cheap", "api_call R_cuisine west moderate"]
    for width in (0, 1, 4, 9):
        rows = rng.choice(np.array(texts, object), size=(40, width)) if width else np.zeros((40, 0), object)
        for i, length in enumerate(rng.integers(0, width + 1, size=40)):
            rows[i, length:] = ""  # padding at the end
        for max_turns in (1, 2, 3, 6, 12):
            got = kept_turns(tf.constant(rows.tolist(), tf.string) if width else tf.zeros([40, 0], tf.string),
                             max_turns, "kb_first").numpy().astype(str).tolist()
            assert got == [kb_first_reference(list(row), max_turns) for row in rows], (width, max_turns)
            oldest = kept_turns(tf.constant(rows.tolist(), tf.string) if width else tf.zeros([40, 0], tf.string),
                                max_turns, "oldest")
            np.testing.assert_array_equal(oldest.numpy(), last_turns(rows.tolist() if width else
                                                                     tf.zeros([40, 0], tf.string), max_turns))


def test_both_cuts_give_max_turns_columns_in_a_graph_of_unknown_width():
    for cut in ("oldest", "kb_first"):
        traced = tf.function(lambda h, cut=cut: kept_turns(h, 3, cut), input_signature=[tf.TensorSpec([None, None],
                                                                                                       tf.string)])
        assert traced.get_concrete_function().structured_outputs.shape.as_list() == [None, 3], cut


def test_kb_first_keeps_the_user_turns_the_oldest_cut_drops():
    history = np.array([["book a table", "any preference on a type of cuisine", *KB[:2], "italian", KB[3]]], object)
    np.testing.assert_array_equal(kept_turns(history, 3, "oldest").numpy().astype(str),
                                  [[KB[1], "italian", KB[3]]])
    np.testing.assert_array_equal(kept_turns(history, 4, "kb_first").numpy().astype(str),
                                  [["book a table", "any preference on a type of cuisine", "italian", KB[3]]])
    np.testing.assert_array_equal(kept_turns(history, 2, "kb_first").numpy().astype(str),
                                  [["any preference on a type of cuisine", "italian"]])
    preprocessor = make(max_turns=4, history_cut="kb_first")
    out = preprocessor({"history": history, "context": np.array(["hi"], object)})["history"].numpy()
    np.testing.assert_array_equal(out[0, 0], ids("book a table".split()) + [0])
    with pytest.raises(ValueError, match="history_cut='newest': must be one of oldest, kb_first"):
        kept_turns(history, 2, "newest")


def test_is_kb_line_tells_kb_lines_from_api_calls():
    texts = KB + ["api_call italian paris six cheap", "api_call R_cuisine west moderate", "hi", "",
                  "resto_a R_phone", "i want R_cuisine food please"]
    np.testing.assert_array_equal(is_kb_line(texts).numpy(), [True] * 4 + [False] * 6)  # a fact has a value


def test_is_kb_line_agrees_with_every_dialog_bAbI_file(data_dir):
    from keras_match.datasets import dialog_babi

    for task in dialog_babi.TASKS:
        dataset = dialog_babi.load(task, data_dir=data_dir)
        for split in dataset.splits:
            dialogs = dataset[split].dialogs
            texts = [t for dialog in dialogs for t in dialog.texts]
            speakers = np.array([s for dialog in dialogs for s in dialog.speakers])
            np.testing.assert_array_equal(is_kb_line(texts).numpy(), speakers == dialog_babi.KB,
                                          err_msg=f"task {task} {split}")


def test_it_maps_over_a_tf_data_dataset_in_graph_mode():
    preprocessor = make()
    eager = preprocessor({"history": HISTORY, "context": CONTEXT})
    dataset = tf.data.Dataset.from_tensor_slices({"history": tf.constant(HISTORY.tolist()),
                                                  "context": tf.constant(CONTEXT.tolist())})
    batches = list(dataset.batch(3).map(preprocessor))
    for key in ("history", "context"):
        np.testing.assert_array_equal(np.concatenate([b[key].numpy() for b in batches]), eager[key].numpy())


def test_the_candidate_set_is_encoded_once():
    preprocessor = make(max_candidate_length=4)
    candidate_ids = preprocessor.candidate_ids
    assert candidate_ids.dtype == np.int32 and candidate_ids.shape == (4, 4)  # cut at 4 tokens
    np.testing.assert_array_equal(candidate_ids[0], ids("hello what can i".split()))
    wide = make(max_candidate_length=30).candidate_ids
    assert wide.shape == (4, 8)  # cut to the longest candidate, "hello what can i help you with today"
    arguments = preprocessor.model_arguments()
    assert arguments["vocab_size"] == len(WORDS) + 2 and arguments["candidate_ids"] is candidate_ids
    assert preprocessor.num_candidates == 4


def test_from_training_reads_the_candidates_column_once_and_builds_the_vocabulary():
    texts = {"history": HISTORY, "context": CONTEXT,
             "candidates": np.broadcast_to(np.array(CANDIDATES, object), (4, 4))}
    settings = DialogSettings(max_turns=2, max_turn_length=7, max_context_length=9, max_candidate_length=6)
    preprocessor = DialogPreprocessor.from_training(texts, settings)
    assert preprocessor.candidates == CANDIDATES
    assert (preprocessor.max_turns, preprocessor.max_turn_length, preprocessor.max_context_length,
            preprocessor.max_candidate_length) == (2, 7, 9, 6)
    vocabulary = set(preprocessor.encoder.vocabulary)
    assert {"t5", "paris", "cuisine", "api_call"} <= vocabulary  # history, context and candidate words
    assert 1 not in preprocessor.candidate_ids  # every candidate word is known
    with pytest.raises(ValueError, match="candidate set"):
        DialogPreprocessor.from_training({"history": HISTORY, "context": CONTEXT}, settings)
    explicit = DialogPreprocessor.from_training({"history": HISTORY, "context": CONTEXT}, settings,
                                                candidates=CANDIDATES[:2])
    assert explicit.candidates == CANDIDATES[:2]


@pytest.mark.parametrize("history_cut", ["oldest", "kb_first"])
def test_assets_round_trip(tmp_path, history_cut):
    preprocessor = make(history_cut=history_cut)
    preprocessor.save(tmp_path / "saved")
    lines = (tmp_path / "saved" / CANDIDATES_FILE).read_text(encoding="utf-8").split("\n")
    assert lines == CANDIDATES + [""]
    assert (tmp_path / "saved" / "vocabulary.txt").read_text(encoding="utf-8").split() == WORDS
    loaded = Preprocessor.load(tmp_path / "saved")
    assert isinstance(loaded, DialogPreprocessor) and loaded.get_config() == preprocessor.get_config()
    assert loaded.history_cut == history_cut
    assert loaded.candidates == CANDIDATES
    np.testing.assert_array_equal(loaded.candidate_ids, preprocessor.candidate_ids)
    for key, value in loaded({"history": HISTORY, "context": CONTEXT}).items():
        np.testing.assert_array_equal(value.numpy(), preprocessor({"history": HISTORY, "context": CONTEXT})[key])
    assert preprocessors.get("dialog") is DialogPreprocessor
    (tmp_path / "saved" / CANDIDATES_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="candidates.txt"):
        Preprocessor.load(tmp_path / "saved")


def test_bad_arguments():
    with pytest.raises(ValueError, match="max_turns"):
        DialogPreprocessor(WORDS, CANDIDATES, max_turns=0)
    with pytest.raises(ValueError, match="one line"):
        DialogPreprocessor(WORDS, ["a\nb"])
    with pytest.raises(ValueError, match="empty"):
        DialogPreprocessor(WORDS, [])
    with pytest.raises(ValueError, match="no candidate set"):
        DialogPreprocessor(WORDS)({"history": HISTORY, "context": CONTEXT})
    with pytest.raises(ValueError, match=r"lacks \['context'\]"):
        make()({"history": HISTORY})
    with pytest.raises(ValueError, match="settings? max_turns=0"):
        DialogSettings(max_turns=0)
    with pytest.raises(ValueError, match="history_cut='last'"):
        DialogPreprocessor(WORDS, CANDIDATES, history_cut="last")
    with pytest.raises(ValueError, match='history_cut="last": must be one of oldest, kb_first'):
        DialogSettings(history_cut="last")


def test_a_real_split_through_pipeline_encode(data_dir):
    from keras_match.datasets import load

    dataset = load("dialog-babi-task1", data_dir=data_dir)
    task = tasks.task_for(dataset)
    assert task.text_fields == ("history", "context")
    task.check_preprocessor(DialogPreprocessor, "carnn_dialog_i")
    examples = task.examples(dataset["train"].head(20))
    preprocessor = DialogPreprocessor.from_training(examples.texts, DialogSettings(max_turns=4))
    assert preprocessor.candidates == dataset.candidates.texts.tolist()
    inputs = pipeline.encode(preprocessor, examples.texts)  # the candidates column is not encoded
    n = len(examples)
    assert set(inputs) == {"history", "context"}
    assert inputs["history"].shape == (n, 4, 20) and inputs["context"].shape == (n, 20)
    turns = np.count_nonzero(inputs["history"].max(axis=-1), axis=1)
    np.testing.assert_array_equal(turns, np.minimum(examples.history_lengths, 4))
    row = int(np.argmax(examples.history_lengths))  # its last 4 turns, in order
    last = examples.texts["history"][row][examples.history_lengths[row] - 4: examples.history_lengths[row]]
    np.testing.assert_array_equal(inputs["history"][row],
                                  preprocessor.encoder.encode(list(last), 20).numpy())
