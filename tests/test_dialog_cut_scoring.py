"""benchmarks/dialog_cut_scoring.py: response-selection runs scored with their history cut at other lengths than
they were trained with, by history length, and two runs that differ only in `max_turns` compared."""

import dataclasses
import json

import numpy as np
import pytest
from conftest import benchmark_module

SEED = 3


@pytest.fixture(scope="module")
def cuts():
    return benchmark_module("dialog_cut_scoring")


@pytest.fixture(scope="module")
def pair(data_dir, tmp_path_factory):
    """Two one-epoch nCARNNs on a cut dialog bAbI task 1, keeping the last 2 and the last 4 history texts, and the
    cut dataset."""
    from keras_match import train
    from keras_match.datasets import load

    full = load("dialog-babi-task1", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 30), ("dev", 8), ("test", 10))})
    folder = tmp_path_factory.mktemp("cuts")
    made = {}
    for turns in (2, 4):
        made[turns] = {"run_dir": folder / f"turns{turns}", "report": train(
            "carnn_dialog_n", dataset, embeddings_path=None, epochs=1, seed=SEED, verbose=0, units=8, batch_size=16,
            max_turns=turns, run_dir=folder / f"turns{turns}")}
    return {"runs": made, "dataset": dataset}


def _config(**changes):
    config = {"zoo": "carnn_dialog_n", "dataset": "dialog-babi-task6", "seed": 1234,
              "settings": {"model": {"units": 256}, "preprocessing": {"max_turns": 20, "history_cut": "oldest"}}}
    for key, value in changes.items():
        if "." in key:
            group, name = key.split(".")
            config["settings"][group] = dict(config["settings"][group], **{name: value})
        else:
            config[key] = value
    return config


def test_a_pair_must_differ_in_max_turns_only(cuts):
    assert cuts.check_pair(_config(), _config(**{"preprocessing.max_turns": 30})) == (20, 30)
    with pytest.raises(ValueError, match=r"differ in seed \(1234 and 1\)"):
        cuts.check_pair(_config(), _config(seed=1, **{"preprocessing.max_turns": 30}))
    with pytest.raises(ValueError, match=r"differ in model\.units \(256 and 512\)"):
        cuts.check_pair(_config(), _config(**{"model.units": 512, "preprocessing.max_turns": 30}))
    with pytest.raises(ValueError, match=r"preprocessing\.history_cut"):
        cuts.check_pair(_config(), _config(**{"preprocessing.max_turns": 30, "preprocessing.history_cut": "kb_first"}))
    with pytest.raises(ValueError, match="both runs keep 20 texts"):
        cuts.check_pair(_config(), _config())


def test_accuracies_and_comparisons_split_by_history_length(cuts):
    right = np.array([True, False, True, True])
    other = np.array([False, False, True, False])
    short = np.array([True, True, False, False])
    assert cuts.accuracies(right, short) == {"all": 0.75, "short_history": 0.5, "long_history": 1.0, "right": 3,
                                             "right_short_history": 1, "right_long_history": 2}
    assert cuts.accuracies(right, np.ones(4, bool))["long_history"] is None
    assert cuts.compare(right, other, short) == {"first_only": 2, "second_only": 0, "first_only_short_history": 1,
                                                 "second_only_short_history": 0, "first_only_long_history": 1,
                                                 "second_only_long_history": 0}


def test_changed_choices_are_counted_by_the_template_of_the_gold_response(cuts, data_dir):
    from keras_match.datasets import load

    # task 6's test file opens with a KB of `the_hotpot R_location north`, `the_hotpot R_price expensive` ...
    words = cuts.kb_words(load("dialog-babi-task6", data_dir=data_dir)["test"])
    assert {"the_hotpot", "the_hotpot_phone", "north", "chinese", "expensive", "9"} <= words
    assert not {"R_location", "is", "the", "api_call"} & words
    entity_words = {"the_hotpot", "north", "chinese"}
    assert cuts.response_template("the_hotpot is a nice place in the north of town serving tasty chinese food",
                                  entity_words) == "<kb> is a nice place in the <kb> of town serving tasty <kb> food"
    templates = ["a", "b", "a", "c", "b", "a"]
    before = np.array([True, True, False, True, False, True])
    after = np.array([False, True, True, True, False, False])
    assert cuts.flips(before, after, templates) == [
        {"template": "a", "responses": 3, "right_to_wrong": 2, "wrong_to_right": 1}]
    assert cuts.flips(before, ~before, templates, shown=2) == [
        {"template": "a", "responses": 3, "right_to_wrong": 2, "wrong_to_right": 1},
        {"template": "b", "responses": 2, "right_to_wrong": 1, "wrong_to_right": 1}]


def test_a_choices_restaurant_is_placed_where_the_history_names_it(cuts, data_dir):
    from types import SimpleNamespace

    from keras_match.datasets import load

    names = cuts.restaurant_names(load("dialog-babi-task6", data_dir=data_dir)["test"])
    assert "the_hotpot" in names and not {"north", "the_hotpot_phone", "R_location", "api_call"} & names
    texts = ["r0 R_price cheap", "r5 R_price cheap", "r1 R_location south", "r6 please",
             "what do you think of this option: r2", "r4 R_location west", "what do you think of this option: r5"]
    speakers = ["kb", "kb", "kb", "user", "bot", "kb", "bot"]
    restaurants = {f"r{k}" for k in range(8)}
    kinds = cuts.RESTAURANT_KINDS
    # shortest 2: texts 5-6 kept; longest 5: texts 2-4 added; texts 0-1 read by neither
    for response, kind in (("r5 is a nice place", kinds[0]), ("what about r2 and r5", kinds[1]),
                           ("r4 serves food", kinds[2]), ("r1 is in the south", kinds[3]),
                           ("r0 is cheap", kinds[4]), ("r6 is great", kinds[4]),  # a user's text is no offer
                           ("r7 is great", kinds[4]), ("you are welcome", kinds[5])):
        assert cuts.restaurant_kind(response, texts, speakers, 2, 5, restaurants) == kind, response
    split = SimpleNamespace(dialogs=[SimpleNamespace(texts=texts, speakers=speakers)], dialog_index=[0, 0, 0],
                            history_length=[7, 3, 7])
    candidates = ["r1 is in the south", "you are welcome"]
    counts = cuts.choice_kinds(split, candidates, np.array([0, 0, 1]), np.array([True, True, False]), 2, 5,
                               restaurants)
    # the second response's history is the first 3 texts: r1's KB line is among its last 2
    assert counts == dict(dict.fromkeys(kinds, 0), **{kinds[3]: 1, kinds[2]: 1})


def test_a_runs_own_cut_scores_as_it_was_scored_and_a_shorter_cut_changes_only_long_histories(cuts, pair):
    test = pair["dataset"]["test"]
    four = pair["runs"][4]
    examples, own, _ = cuts.right_choices(four["run_dir"], test)
    _, cut, _ = cuts.right_choices(four["run_dir"], test, max_turns=2)
    lengths = np.asarray(examples.history_lengths)
    assert (lengths <= 2).any() and (lengths > 2).any()
    # softmax scores over 4,212 candidates (about 2e-4 each): compared relative to their size
    np.testing.assert_allclose(cut[lengths <= 2], own[lengths <= 2], rtol=1e-4, atol=0)  # the same texts
    assert (np.abs(cut[lengths > 2] / own[lengths > 2] - 1).max(axis=1) > 1e-3).all()  # fewer texts, other scores

    result = cuts.analyse([pair["runs"][2]["run_dir"], four["run_dir"]], pair["dataset"], max_turns=[3],
                          progress=lambda line: None)
    assert result["short_history_max_texts"] == 2 and result["responses"] == len(examples)
    assert result["short_history_responses"] == int((lengths <= 2).sum())
    for run, turns in zip(result["runs"], (2, 4)):
        assert run["zoo"] == "carnn_dialog_n" and run["seed"] == SEED and run["settings"]["model"]["units"] == 8
        assert [(s["max_turns"], s["as_trained"]) for s in run["scorings"]] == sorted(
            [(turns, True), (3, False)])
        trained = next(s for s in run["scorings"] if s["as_trained"])
        expected = pair["runs"][turns]["report"]["test"]["per_response_accuracy"]
        assert trained["all"] == pytest.approx(expected, abs=1e-9)
        # every scoring reads the same texts of a short history
        assert len({s["right_short_history"] for s in run["scorings"]}) == 1
    # the texts 4 keeps and 2 drops: none for a short history, a user utterance (task 1 has no KB line) for every
    # history of 4 texts or more; the long histories' accuracy is that of both groups together
    added = cuts.added_speakers(test, 2, 4)
    assert all(not speakers for speakers, h in zip(added, lengths) if h <= 2)
    assert all("user" in speakers for speakers, h in zip(added, lengths) if h >= 4)
    users = result["long_history_responses_whose_longest_cut_adds_a_user_text"]
    assert users == sum("user" in speakers for speakers in added) and 0 < users < len(lengths)
    long_count = int((lengths > 2).sum())
    for run in result["runs"]:
        for scoring in run["scorings"]:
            parts = users * scoring["long_history_adds_a_user_text"] + (long_count - users) * (
                scoring["long_history_adds_no_user_text"] or 0.0)
            assert parts == pytest.approx(scoring["right_long_history"], abs=1e-9)
    counts = result["template_responses"]
    assert list(counts) == ["train", "test"]
    assert sum(counts["test"].values()) == len(examples) and sum(counts["train"].values()) == len(
        pair["dataset"]["train"])
    assert list(counts["test"].values()) == sorted(counts["test"].values(), reverse=True)
    for run in result["runs"]:
        for scoring in run["scorings"]:
            changed = scoring.get("changed_from_as_trained")
            assert (changed is None) == scoring["as_trained"]
            for row in changed or []:
                assert 0 < row["right_to_wrong"] + row["wrong_to_right"] <= row["responses"]
                assert row["responses"] == counts["test"][row["template"]]
    for run in result["runs"]:  # every changed choice is placed once, the new choice and the gold response alike
        own = next(s for s in run["scorings"] if s["as_trained"])
        for scoring in run["scorings"]:
            placed = scoring.get("restaurants_of_changed_choices")
            assert (placed is None) == scoring["as_trained"]
            if placed is None:
                continue
            worse, better = (sum(placed[way][who].values()) for way, who in (("right_to_wrong", "chosen"),
                                                                              ("wrong_to_right", "gold")))
            assert worse - better == own["right"] - scoring["right"]
            assert worse == sum(placed["right_to_wrong"]["gold"].values())
            assert better == sum(placed["wrong_to_right"]["chosen_as_trained"].values())
            assert worse + better == sum(row["right_to_wrong"] + row["wrong_to_right"] for row in
                                         scoring["changed_from_as_trained"]) or len(
                scoring["changed_from_as_trained"]) == 5  # `flips` shows at most 5 templates
    compared = result["as_trained_compared"]
    right = [next(s for s in run["scorings"] if s["as_trained"])["right"] for run in result["runs"]]
    assert right[0] - right[1] == compared["first_only"] - compared["second_only"]


def test_the_command_writes_its_result_with_provenance_and_names_a_bad_run(cuts, pair, data_dir, tmp_path, capsys,
                                                                           monkeypatch):
    analyse = cuts.analyse  # on the cut dataset, not the whole split
    monkeypatch.setattr(cuts, "analyse", lambda runs, dataset, max_turns, split, progress: analyse(
        runs, pair["dataset"], max_turns, split, progress=progress))
    out = tmp_path / "cuts.json"
    assert cuts.main([str(pair["runs"][2]["run_dir"]), "--max-turns", "4", "--dataset", "dialog-babi-task1",
                      "--data-dir", str(data_dir), "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["split"] == "test" and written["max_turns"] == [4] and len(written["runs"][0]["scorings"]) == 2
    assert written["provenance"]["code"]["keras_match"] and "as_trained_compared" not in written
    capsys.readouterr()
    assert cuts.main([str(tmp_path / "no-run"), "--dataset", "dialog-babi-task1", "--data-dir", str(data_dir),
                      "--out", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dialog_cut_scoring: ") and "no-run" in err[0]
    assert not (tmp_path / "x.json").exists()
    with pytest.raises(SystemExit):
        cuts.main([str(pair["runs"][2]["run_dir"]), "--max-turns", "0", "--dataset", "dialog-babi-task1",
                   "--out", str(tmp_path / "y.json")])
    assert not (tmp_path / "y.json").exists()


def test_a_shipped_preset_is_scored_at_other_cuts_by_its_name(cuts, data_dir):
    from keras_match.artifacts import presets
    from keras_match.datasets import load

    name = "carnn_dialog_i/dialog-babi-task6"
    if name not in presets.trained():
        pytest.skip(f"the package does not ship {name}")
    full = load("dialog-babi-task6", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={"train": full["train"].head(5), "test": full["test"].head(12)})
    result = cuts.analyse([name], dataset, max_turns=[10], progress=lambda line: None)
    (run,) = result["runs"]
    assert run["zoo"] == "carnn_dialog_i" and run["trained_max_turns"] == 30
    own = next(s for s in run["scorings"] if s["as_trained"])
    expected = presets.load_preset(name).evaluate(dataset["test"])["per_response_accuracy"]
    assert own["all"] == pytest.approx(expected, abs=1e-9)
    assert [s["max_turns"] for s in run["scorings"]] == [10, 30] and result["short_history_max_texts"] == 10
    with pytest.raises(FileNotFoundError, match="no-such/preset"):
        cuts.analyse(["no-such/preset"], dataset, progress=lambda line: None)


def test_a_run_is_scored_in_the_precision_it_trained_in(cuts, pair, tmp_path):
    """A mixed bfloat16 run's own cut scores as the run scored itself: in bfloat16, not in float32 (`load_run`'s
    default), which gave other choices on task 6 (0.469 against the run's own 0.470 on test)."""
    from keras_match import train
    from keras_match.artifacts import runs

    dataset, run_dir = pair["dataset"], tmp_path / "bf16"
    report = train("carnn_dialog_n", dataset, embeddings_path=None, epochs=1, seed=SEED, verbose=0, units=8,
                   batch_size=16, max_turns=4, precision="mixed_bfloat16", run_dir=run_dir)
    _, scores, right = cuts.right_choices(run_dir, dataset["test"])
    assert right.mean() == pytest.approx(report["test"]["per_response_accuracy"], abs=1e-9)
    for precision, same in (("mixed_bfloat16", True), ("float32", False)):
        run = runs.load_run(run_dir, precision=precision)
        examples, outputs = run.outputs(dataset["test"])
        theirs = np.asarray(run.task.scores(run.head, outputs, len(examples), len(examples.candidates)))
        assert np.array_equal(scores, theirs) == same, precision
