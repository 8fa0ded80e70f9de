"""The Coupled-LSTMs paper's Figure 3 as a feature (issue 32): grid activations, interpretable neurons and
`keras-match explain` on a Coupled-LSTMs run."""

import re

import keras
import numpy as np
import pytest

from keras_match import cli, zoo
from keras_match.artifacts import runs
from keras_match.models.compare_aggregate import build_compare_aggregate
from keras_match.models.compare_aggregate import explain as compare_aggregate_explain
from keras_match.models.coupled_lstm import build_coupled_lstm
from keras_match.models.coupled_lstm import explain
from keras_match.preprocessors.pair import PairPreprocessor

WORDS = "who wrote hamlet the cat sat on mat shakespeare william play".split()
QUESTION = "who wrote hamlet ?"
ANSWER = "william shakespeare wrote the play hamlet zzqx ."


def _run(coupling="loose", blocks=2):
    keras.utils.set_random_seed(5)
    preprocessor = PairPreprocessor(WORDS, max_question_length=10, max_answer_length=12)
    model = build_coupled_lstm(vocab_size=preprocessor.vocab_size, embedding_dim=6, units=3, dense_units=4,
                               coupling=coupling, blocks=blocks)
    return runs.Run(model=model, preprocessor=preprocessor, config={"zoo": "lc_lstm"})


def _ids(run, questions, answers):
    return {key: np.asarray(value) for key, value in
            run.preprocessor({"question": list(questions), "answer": list(answers)}).items()}


@pytest.mark.parametrize("coupling, channels", [("loose", 6), ("tight", 3)])
def test_the_grid_is_the_blocks_output_for_the_pair(coupling, channels):
    run = _run(coupling)
    result = explain.grid_activations(run, QUESTION, ANSWER)
    assert result["question_tokens"] == ["who", "wrote", "hamlet", "?"]
    assert result["answer_tokens"] == ["william", "shakespeare", "wrote", "the", "play", "hamlet", "zzqx", "."]
    assert result["grid"].shape == (4, 8, channels) and result["block"] == 2
    inputs = _ids(run, [QUESTION], [ANSWER])
    for block in (1, 2):
        probe = keras.Model(run.model.inputs, run.model.get_layer(f"coupled_lstm_{block}").output)
        expected = np.asarray(probe(inputs))[0, :4, :8]
        np.testing.assert_allclose(explain.grid_activations(run, QUESTION, ANSWER, block=block)["grid"], expected,
                                   rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(result["score"], np.asarray(run.model(inputs))[0], rtol=1e-5)


def _reference_neurons(run, questions, answers):
    """The definition, one pair and one neuron at a time."""
    probe = keras.Model(run.model.inputs, run.model.get_layer("coupled_lstm_2").output)
    hits, counted, shares = None, 0, []
    for q, a in zip(questions, answers):
        qw, aw = q.lower().split(), a.lower().split()
        grid = np.asarray(probe(_ids(run, [q], [a])))[0, : len(qw), : len(aw)]
        hits = np.zeros(grid.shape[-1]) if hits is None else hits
        if not any(x == y for x in qw for y in aw):
            continue
        counted += 1
        shares.append(np.mean([[x == y for y in aw] for x in qw]))
        for k in range(grid.shape[-1]):
            i, j = np.unravel_index(np.argmax(grid[:, :, k]), grid.shape[:2])
            hits[k] += qw[i] == aw[j]
    return hits / counted, counted, float(np.mean(shares))


def test_interpretable_neurons_follow_the_definition():
    run = _run()
    questions = ["who wrote hamlet ?", "the cat sat", "who wrote the play", "william play", "mat on mat"]
    answers = ["shakespeare wrote hamlet .", "on the mat", "william shakespeare", "the cat sat on the mat",
               "the cat sat on mat"]
    found = explain.interpretable_neurons(run, questions, answers, batch_size=2)  # batches of different lengths
    rates, counted, chance = _reference_neurons(run, questions, answers)
    assert found["pairs"] == counted == 3 and found["pairs_read"] == 5
    assert found["chance"] == pytest.approx(chance, abs=1e-4)
    assert sorted(row["neuron"] for row in found["neurons"]) == list(range(6))
    for row in found["neurons"]:
        assert row["match_rate"] == pytest.approx(rates[row["neuron"]], abs=1e-4)
    listed = [row["match_rate"] for row in found["neurons"]]
    assert listed == sorted(listed, reverse=True)


def test_what_cannot_be_explained_is_refused(tmp_path):
    run = _run()
    with pytest.raises(ValueError, match=r"block must be 1 \.\.\. 2"):
        explain.grid_activations(run, QUESTION, ANSWER, block=3)
    with pytest.raises(ValueError, match="need a word each"):
        explain.grid_activations(run, "   ", ANSWER)
    with pytest.raises(ValueError, match="no pair has a word of the question equal"):
        explain.interpretable_neurons(run, ["who wrote"], ["the cat"])
    with pytest.raises(ValueError, match="parallel lists"):
        explain.interpretable_neurons(run, ["who wrote"], [])
    result = explain.grid_activations(run, QUESTION, ANSWER)
    with pytest.raises(ValueError, match=r"neurons must be channels 0 \.\.\. 5"):
        explain.plot_grid_activations(result, tmp_path / "x.png", [6])
    with pytest.raises(ValueError, match="takes --neurons, not --window"):
        explain.plot_explanation(run, {"question": [QUESTION], "answer": [ANSWER]}, tmp_path / "x.png", window=2)
    with pytest.raises(ValueError, match="channel numbers or the word interpretable"):
        explain.plot_explanation(run, {"question": [QUESTION], "answer": [ANSWER]}, tmp_path / "x.png",
                                 neurons=["first"])
    preprocessor = PairPreprocessor(WORDS, max_question_length=10, max_answer_length=12)
    mcan = zoo.build(zoo.resolve("mcan_sm", lstm_units=4, highway_units=4, embedding_dim=4),
                     vocab_size=preprocessor.vocab_size)
    with pytest.raises(ValueError, match="has no CoupledLSTM2D block"):
        explain.grid_activations(runs.Run(model=mcan, preprocessor=preprocessor), QUESTION, ANSWER)
    ca = build_compare_aggregate(vocab_size=preprocessor.vocab_size, embedding_dim=6, units=5, windows=[1, 2])
    with pytest.raises(ValueError, match="takes --window, not --neurons"):
        compare_aggregate_explain.plot_explanation(runs.Run(model=ca, preprocessor=preprocessor),
                                                   {"question": [QUESTION], "answer": [ANSWER]},
                                                   tmp_path / "x.png", neurons=["1"])
    assert not (tmp_path / "x.png").exists()


def test_explain_command_on_a_run_trained_on_trecqa(data_dir, tmp_path, capsys):
    run_dir = tmp_path / "run"
    assert cli.main(["train", "lc_lstm", "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
                     "--max-train-questions", "4", "--epochs", "1", "--embeddings", "none", "--run-dir", str(run_dir),
                     "--set", "units=3", "--set", "dense_units=4", "--set", "embedding_dim=8",
                     "--set", "max_question_length=8", "--set", "max_answer_length=10"]) == 0
    capsys.readouterr()
    pair = ["--question", "who wrote hamlet ?", "--answer", "hamlet was written by shakespeare ."]
    out = tmp_path / "hamlet.png"
    assert cli.main(["explain", str(run_dir), *pair, "--out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"score -?\d+\.\d{4}", printed[0])
    assert len([line for line in printed if line.startswith("neuron ")]) == explain.DEFAULT_NEURONS
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    assert cli.main(["explain", str(run_dir), *pair, "--neurons", "5", "0", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert re.search(r"^neuron 5: largest activation -?\d\.\d{3} at \('\w+', '\w+'\)$", printed, re.M)

    assert cli.main(["explain", str(run_dir), *pair, "--neurons", "interpretable", "--data-dir", str(data_dir),
                     "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    found = re.search(r"interpretable neurons \(dev split, (\d+) pairs with a matching word pair; chance (0\.\d+)\)",
                      printed)
    assert found and int(found.group(1)) > 100 and 0 < float(found.group(2)) < 0.5

    assert cli.main(["explain", str(run_dir), *pair, "--window", "2"]) == 2
    assert "takes --neurons, not --window" in capsys.readouterr().err


def test_interpretable_neurons_of_a_classifier_read_its_dev_pairs(data_dir, tmp_path, capsys):
    """A classifier's run (SICK): `--neurons interpretable` reads the premise / hypothesis pairs of its dev split
    (a classification split has no ranking `pairs()`)."""
    run_dir = tmp_path / "sick"
    assert cli.main(["train", "lc_lstm_sick", "--dataset", "sick", "--data-dir", str(data_dir),
                     "--max-train-questions", "40", "--epochs", "1", "--embeddings", "none", "--run-dir",
                     str(run_dir), "--set", "units=3", "--set", "dense_units=4", "--set", "embedding_dim=8",
                     "--set", "max_question_length=8", "--set", "max_answer_length=8"]) == 0
    capsys.readouterr()
    out = tmp_path / "sick.png"
    assert cli.main(["explain", str(run_dir), "--question", "A man is playing a guitar",
                     "--answer", "A man is playing an instrument", "--neurons", "interpretable",
                     "--data-dir", str(data_dir), "--out", str(out)]) == 0
    found = re.search(r"interpretable neurons \(dev split, (\d+) pairs with a matching word pair",
                      capsys.readouterr().out)
    assert found and 300 < int(found.group(1)) <= 500  # SICK's trial split: 500 pairs, most share a word
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
