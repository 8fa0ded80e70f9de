"""benchmarks/train_speed.py: the questions-per-second conversion counts what each loss mode's epoch trains on."""

import json

import numpy as np
import pytest
from conftest import benchmark_module

from keras_match.pipeline import Examples
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


def test_the_table_of_a_results_file_has_a_row_per_entry_with_or_without_serving(tmp_path, capsys):
    from conftest import benchmark_module

    module = benchmark_module("train_speed")
    measured = {"train_pairs_per_s": {"bucketed": 1002.0, "plain": 464.2},
                "train_questions_per_s": {"bucketed": 100.87, "plain": 46.73}, "score_pairs_per_s": 3490.5,
                "padding_share": {"bucketed": 0.565, "plain": 0.792}, "peak_rss_mb": 1892.5}
    results = {"command": "...", "machine": {}, "entries": {
        "a": dict(measured, saved_model={"pairs_per_s": 2727.4}), "b": measured, "c": {"error": ["OOM"]}}}
    path = tmp_path / "speed.json"
    path.write_text(json.dumps(results))
    module.main(["--table", str(path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 5
    assert lines[2] == "| `a` | 100.9 / 46.7 | 1002 / 464 | 3490 | 2727 | 0.56 | 1892 |"
    assert lines[3] == "| `b` | 100.9 / 46.7 | 1002 / 464 | 3490 | – | 0.56 | 1892 |"
    assert lines[4].startswith("| `c` | failed: OOM")
    path.write_text("{}")
    with pytest.raises(SystemExit, match="not a JSON file of this script"):
        module.main(["--table", str(path)])
