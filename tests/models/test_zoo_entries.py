"""Every zoo entry passes `run_model_test` (tests/model_testing.py): a short real-data run learns, config and
`.keras` round trips give identical outputs, padding changes nothing, and the SavedModel and ONNX exports give
the model's outputs. Parametrized over `keras_match.zoo.names()`: a new family's entries are covered without new
test code."""

import pytest
from model_testing import run_model_test

from keras_match import zoo


@pytest.mark.parametrize("name", zoo.names())
def test_zoo_entry(name, data_dir, tmp_path):
    run_model_test(name, data_dir, tmp_path)
