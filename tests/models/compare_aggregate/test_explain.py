"""The Compare-Aggregate paper's Figure 2 as a feature (issue 10): `keras_match.explain` and `keras-match explain`."""

import re

import keras
import numpy as np
import pytest

from keras_match import cli, zoo
from keras_match.artifacts import runs
from keras_match.models.compare_aggregate import explain  # the module
from keras_match.models.compare_aggregate import build_compare_aggregate
from keras_match.preprocessors.pair import PairPreprocessor

WORDS = "who wrote hamlet the cat sat on mat shakespeare william play".split()
QUESTION = "who wrote hamlet ?"
ANSWER = "william shakespeare wrote the play hamlet zzqx ."


def _run(comparison="mult", windows=(1, 2, 3)):
    keras.utils.set_random_seed(3)
    preprocessor = PairPreprocessor(WORDS, max_question_length=10, max_answer_length=12)
    model = build_compare_aggregate(vocab_size=preprocessor.vocab_size, embedding_dim=6, units=5,
                                    windows=list(windows), comparison=comparison)
    return runs.Run(model=model, preprocessor=preprocessor, config={"zoo": f"compare_aggregate_{comparison}"})


def test_the_maxima_are_the_models_max_pooled_features_and_each_word_is_credited(tmp_path):
    run = _run()
    result = explain.conv_maxima(run, QUESTION, ANSWER, window=2)
    assert result["tokens"] == ["william", "shakespeare", "wrote", "the", "play", "hamlet", "zzqx", "."]
    features = result["features"]
    assert features.shape == (8, 5) and result["window"] == 2
    np.testing.assert_array_equal(features[7], 0.0)  # no window of 2 words starts at the last word
    # the maxima are exactly eq. 9's max-pooled r of the model itself, for the window-2 block
    inputs = {"question": run.preprocessor({"question": [QUESTION], "answer": [ANSWER]})["question"].numpy(),
              "answer": run.preprocessor({"question": [QUESTION], "answer": [ANSWER]})["answer"].numpy()}
    r_model = keras.Model(run.model.inputs, run.model.get_layer("compare_aggregate").output)
    r = np.asarray(r_model(inputs, training=False))[0]
    np.testing.assert_allclose(result["maxima"], r[5:10], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result["maxima"], features[result["argmax"], np.arange(5)])
    assert result["credit"].shape == (8,)
    np.testing.assert_allclose(result["credit"].sum(), result["maxima"].sum(), rtol=1e-5)
    np.testing.assert_allclose(result["score"], np.asarray(run.model(inputs, training=False))[0], rtol=1e-5)
    assert explain.conv_maxima(run, QUESTION, ANSWER)["window"] == 3  # default: the widest window

    path = tmp_path / "figure2.png"
    explain.plot_conv_maxima(result, path, question=QUESTION)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_window_the_model_lacks_another_model_or_an_empty_answer_is_refused():
    run = _run()
    with pytest.raises(ValueError, match=r"window 4 is not one of the model's window sizes \[1, 2, 3\]"):
        explain.conv_maxima(run, QUESTION, ANSWER, window=4)
    with pytest.raises(ValueError, match="the answer has no word"):
        explain.conv_maxima(run, QUESTION, "   ")
    preprocessor = PairPreprocessor(WORDS, max_question_length=10, max_answer_length=12)
    mcan = zoo.build(zoo.resolve("mcan_sm", lstm_units=4, highway_units=4, embedding_dim=4),
                     vocab_size=preprocessor.vocab_size)
    with pytest.raises(ValueError, match="has no CompareAggregate layer"):
        explain.conv_maxima(runs.Run(model=mcan, preprocessor=preprocessor), QUESTION, ANSWER)


def test_explain_command_on_a_run_trained_on_wikiqa(data_dir, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", "compare_aggregate_mult", "--dataset", "wikiqa", "--data-dir", str(data_dir),
                     "--max-train-questions", "8", "--epochs", "1", "--embeddings", "none", "--run-dir", str(run_dir),
                     "--set", "units=4", "--set", "windows=[1,2]"]) == 0
    capsys.readouterr()
    out = tmp_path / "cave.png"
    assert cli.main(["explain", str(run_dir), "--question", "how are glacier caves formed ?", "--answer",
                     "A glacier cave is a cave formed within the ice of a glacier .", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "window 2: the words that win the most CNN maxima:" in printed and f"plot written to {out}" in printed
    assert re.match(r"score -?\d+\.\d{4}; window 2", printed)  # the ranker's score as a number, not a list
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
