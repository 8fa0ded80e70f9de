"""Every zoo entry passes `run_model_test` (tests/model_testing.py): a short real-data run learns, config and
`.keras` round trips give identical outputs, padding changes nothing. Every entry's SavedModel and ONNX exports
are checked by `tests/test_export_zoo.py` (parametrized over the same names), so they are not exported a second
time here. Parametrized over `keras_match.zoo.names()`: a new family's entries are covered without new test
code."""

import pytest
from model_testing import run_model_test

from keras_match import zoo


@pytest.mark.parametrize("name", zoo.names())
def test_zoo_entry(name, data_dir, tmp_path):
    run_model_test(name, data_dir, tmp_path, exports=False)
