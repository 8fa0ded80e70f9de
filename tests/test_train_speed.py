"""benchmarks/train_speed.py: the questions-per-second conversion counts what each loss mode's epoch trains on."""

import numpy as np
import pytest
from conftest import benchmark_module

from keras_match.pipeline import Examples

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
    got = module._questions_per_pair(examples, mode, {"batch_size": 4, "list_size": None}, seed=0)
    assert got == pytest.approx(expected)
