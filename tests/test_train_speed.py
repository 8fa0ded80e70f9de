"""benchmarks/train_speed.py: the questions-per-second conversion counts what each loss mode's epoch trains on; the
printed object carries its provenance, and the table of a file without one is refused."""

import json
import time

import numpy as np
import pytest
from conftest import benchmark_module

from keras_match.inputs.pipeline import Examples
from keras_match.settings import TrainingSettings

# question a: 1 positive of 3; b: no positive (2 candidates); c: 2 positives of 4
GROUPS = np.array(["a"] * 3 + ["b"] * 2 + ["c"] * 4, dtype=object)
LABELS = np.array([1, 0, 0, 0, 0, 1, 1, 0, 0], np.int32)


@pytest.mark.parametrize("mode, expected", [
    ("pointwise", 3 / 9),  # every pair of every question
    ("listwise", 2 / 7),  # b has no positive: 2 lists of 3 + 4 candidates
    ("pairwise", 2 / (2 * (2 + 2))),  # a: 2 negatives, c: 2 negatives, each row scores 2 pairs
])
def test_questions_per_pair_follows_the_epoch_plan_of_the_mode(mode, expected):
    module = benchmark_module("train_speed")
    examples = Examples(texts={}, labels=LABELS, groups=GROUPS, ids=None)
    got = module._questions_per_pair(examples, mode, TrainingSettings(batch_size=4, list_size=None), seed=0)
    assert got == pytest.approx(expected)


MEASURED = {"train_pairs_per_s": {"bucketed": 1002.0, "plain": 464.2},
            "train_questions_per_s": {"bucketed": 100.87, "plain": 46.73}, "score_pairs_per_s": 3490.5,
            "padding_share": {"bucketed": 0.565, "plain": 0.792}, "peak_rss_mb": 1892.5}


def test_the_table_of_a_results_file_has_a_row_per_entry_with_or_without_serving(tmp_path, capsys):
    from keras_match.artifacts import provenance

    module = benchmark_module("train_speed")
    results = {"entries": {"a": dict(MEASURED, saved_model={"pairs_per_s": 2727.4}), "b": MEASURED,
                           "c": {"error": ["OOM"]}},
               "provenance": provenance.collect(time.time(), seed=1234, dataset="wikiqa")}
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(results))
    module.main(["--table", str(path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5
    assert lines[2] == "| `a` | 100.9 / 46.7 | 1002 / 464 | 3490 | 2727 | 0.56 | 1892 |"
    assert lines[3] == "| `b` | 100.9 / 46.7 | 1002 / 464 | 3490 | – | 0.56 | 1892 |"
    assert lines[4].startswith("| `c` | failed: OOM")
    path.write_text(json.dumps({"provenance": results["provenance"]}))  # no entries
    with pytest.raises(SystemExit, match="not a JSON file of this script"):
        module.main(["--table", str(path)])
    path.write_text("not JSON")
    with pytest.raises(SystemExit, match="not a JSON file of this script"):
        module.main(["--table", str(path)])


@pytest.mark.parametrize("results", [
    {"machine": {"cpus": 2}, "entries": {"a": MEASURED}},  # the form before provenance
    {"entries": {"a": MEASURED}, "provenance": {"command": "python benchmarks/train_speed.py"}},  # keys missing
])
def test_the_table_refuses_a_results_file_without_provenance_naming_it(tmp_path, results):
    module = benchmark_module("train_speed")
    path = tmp_path / "old_speed.json"
    path.write_text(json.dumps(results))
    with pytest.raises(SystemExit) as info:
        module.main(["--table", str(path)])
    assert str(info.value).startswith(f"{path}: ") and "provenance" in str(info.value)
    with pytest.raises(SystemExit, match="^results: .*provenance"):
        module.table(results)


def test_the_printed_object_carries_its_provenance_and_what_the_entries_read(tmp_path, capsys):
    from keras_match.artifacts import provenance

    module = benchmark_module("train_speed")
    files = {"train": {"file": "train-all.tsv.gz", "sha256": "ab" * 32}}
    embeddings = {"path": "glove.txt.gz", "sha256": "cd" * 32}
    entries = {"a": dict(MEASURED, data_files=files, embeddings=embeddings),
               "b": dict(MEASURED, data_files=files, embeddings=embeddings), "c": {"error": ["OOM"]}}
    results = json.loads(json.dumps(module.results_object(entries, time.time() - 5, 7, "wikiqa", (1.0, 0.5, 0.25))))
    found = provenance.check(results, "printed")
    assert set(provenance.REQUIRED) <= set(found) and found["started"] <= found["finished"]
    assert found["seed"] == 7 and found["dataset"] == "wikiqa"
    assert found["data_files"] == files and found["embeddings"] == embeddings  # every entry read the same
    assert found["load_average_at_start"] == [1.0, 0.5, 0.25]  # the machine's has the load at the end
    assert "data_files" not in results["entries"]["a"] and results["entries"]["c"] == {"error": ["OOM"]}
    assert "machine" not in results  # the machine is the provenance's
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(results))
    module.main(["--table", str(path)])
    assert len(capsys.readouterr().out.strip().splitlines()) == 5

    # entries that read different files keep their own
    other = dict(files, train={"file": "train.tsv.gz", "sha256": "ef" * 32})
    entries = {"a": dict(MEASURED, data_files=files, embeddings=embeddings),
               "b": dict(MEASURED, data_files=other, embeddings=embeddings)}
    results = module.results_object(entries, time.time(), 7, "trecqa-clean", (0.0, 0.0, 0.0))
    assert "data_files" not in results["provenance"] and results["provenance"]["embeddings"] == embeddings
    assert results["entries"]["b"]["data_files"] == other and "embeddings" not in results["entries"]["b"]
