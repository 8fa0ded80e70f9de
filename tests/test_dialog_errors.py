"""benchmarks/dialog_errors.py: a response-selection run's errors counted by the kind of the gold response (first
and updated API calls apart), the wrong slots of API calls, and the dialogs wrong only at updated calls."""

import dataclasses
import json

import pytest
from conftest import benchmark_module

SEED = 5


@pytest.fixture(scope="module")
def errors():
    return benchmark_module("dialog_errors")


def test_the_slots_of_a_wrong_api_call_are_named(errors):
    assert errors.wrong_slots("api_call italian paris six cheap", "api_call italian rome six expensive") == [
        "location", "price"]
    assert errors.wrong_slots("api_call italian paris six cheap", "i'm on it") == ["not an api_call"]
    assert errors.wrong_slots("api_call italian paris six", "api_call italian paris six cheap") == ["price"]


def test_errors_are_counted_by_kind_with_updated_api_calls_apart(errors):
    # dialog a: greeting, first call, updated call (wrong: another price); dialog b: first call wrong (location),
    # then right; dialog c: right at every turn; turns given out of order must be read in turn order
    rows = [("a", 1, "hello", "hello"), ("a", 3, "api_call french rome two cheap", "api_call french rome two moderate"),
            ("a", 2, "api_call french rome two expensive", "api_call french rome two expensive"),
            ("b", 1, "api_call thai paris four cheap", "api_call thai london four cheap"), ("b", 2, "hello", "hello"),
            ("c", 1, "api_call thai paris four cheap", "api_call thai paris four cheap"),
            ("c", 2, "api_call thai paris six cheap", "api_call thai paris six cheap")]
    dialogs, turns, gold, chosen = zip(*rows)
    counted = errors.error_kinds(list(gold), list(chosen), list(dialogs), list(turns))
    kinds = {row["kind"]: (row["turns"], row["wrong"]) for row in counted["kinds"]}
    assert kinds == {"hello": (2, 0), "api_call (first)": (3, 1), "api_call (updated)": (2, 1)}
    assert counted["api_call_wrong_slots"] == {"price": 1, "location": 1}
    assert counted["updated_api_calls_answered_with_the_previous_call"] == 0  # a's wrong update names another price
    # dialog d: the updated call answered with the call before the update (the user's change ignored)
    stale = rows + [("d", 1, "api_call thai paris four cheap", "api_call thai paris four cheap"),
                    ("d", 2, "api_call thai rome four cheap", "api_call thai paris four cheap")]
    with_d = errors.error_kinds(*[list(column) for column in zip(*[(g, c, d, t) for d, t, g, c in stale])])
    assert with_d["updated_api_calls_answered_with_the_previous_call"] == 1
    # a: price changed (expensive -> cheap), moderate chosen; c: party size changed, right; d: location changed,
    # the previous value chosen; every unchanged slot right
    assert with_d["updated_api_call_slots"] == {
        "changed": {"right": 1, "previous value": 1, "another value": 1},
        "unchanged": {"right": 9, "previous value": 0, "another value": 0}}
    assert counted["dialogs"] == {"dialogs": 3, "right_at_every_turn": 1, "wrong_only_at_updated_api_calls": 1,
                                  "wrong_at_an_updated_api_call": 1}
    assert counted["wrong"] == [1, 3]  # dialog a's turn 3, dialog b's turn 1
    with pytest.raises(ValueError, match="same non-zero length"):
        errors.error_kinds(["hello"], [], ["a"], [1])


@pytest.fixture(scope="module")
def task2_run(data_dir, tmp_path_factory):
    """A one-epoch iCARNN on a cut dialog bAbI task 2, and the cut dataset."""
    from keras_match import train
    from keras_match.datasets import load

    full = load("dialog-babi-task2", data_dir=data_dir)
    dataset = dataclasses.replace(full, splits={name: full[name].head(n) for name, n in
                                                (("train", 40), ("dev", 10), ("test", 12))})
    run_dir = tmp_path_factory.mktemp("task2") / "run"
    report = train("carnn_dialog_i", dataset, embeddings_path=None, epochs=1, seed=SEED, verbose=0, units=8,
                   batch_size=16, run_dir=run_dir)
    return {"run_dir": run_dir, "dataset": dataset, "report": report}


def test_a_runs_errors_add_up_to_its_figures_and_keep_wrong_examples(errors, task2_run):
    result = errors.analyse(task2_run["run_dir"], task2_run["dataset"], "test", examples_kept=4)
    figures = result["figures"]
    expected = task2_run["report"]["test"]
    assert figures["per_response_accuracy"] == pytest.approx(expected["per_response_accuracy"], abs=1e-9)
    assert figures["per_dialog_accuracy"] == pytest.approx(expected["per_dialog_accuracy"], abs=1e-9)
    n = figures["num_examples"]
    assert sum(row["turns"] for row in result["kinds"]) == n
    wrong = sum(row["wrong"] for row in result["kinds"])
    assert wrong == round((1 - figures["per_response_accuracy"]) * n)
    assert result["dialogs"]["dialogs"] == figures["num_dialogs"] == 12
    assert result["dialogs"]["right_at_every_turn"] == round(figures["per_dialog_accuracy"] * 12)
    kinds = {row["kind"] for row in result["kinds"]}
    assert {"api_call (first)", "api_call (updated)"} <= kinds  # task 2's users update their calls
    assert 0 < len(result["examples"]) <= 4 and all(e["gold"] != e["chosen"] for e in result["examples"])


def test_the_command_writes_its_result_with_provenance_and_names_a_bad_run(errors, task2_run, data_dir, tmp_path,
                                                                           capsys, monkeypatch):
    analyse = errors.analyse  # on the cut dataset, not the whole split
    monkeypatch.setattr(errors, "analyse", lambda run, dataset, split, examples_kept: analyse(
        run, task2_run["dataset"], split, examples_kept=examples_kept))
    out = tmp_path / "errors.json"
    assert errors.main([str(task2_run["run_dir"]), "--dataset", "dialog-babi-task2", "--data-dir", str(data_dir),
                        "--examples", "2", "--out", str(out)]) == 0
    written = json.loads(out.read_text())
    assert written["dataset"] == "dialog-babi-task2" and written["split"] == "test" and len(written["examples"]) <= 2
    assert written["provenance"]["code"]["keras_match"] and written["kinds"]
    capsys.readouterr()
    assert errors.main([str(tmp_path / "no-run"), "--dataset", "dialog-babi-task2", "--data-dir", str(data_dir),
                        "--out", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("dialog_errors: ") and "no-run" in err[0]
    assert not (tmp_path / "x.json").exists()
