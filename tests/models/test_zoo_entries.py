"""Every zoo entry passes `run_model_test` (tests/model_testing.py): a short real-data run learns, config and
`.keras` round trips give identical outputs, padding changes nothing. The SavedModel and ONNX exports of every
entry whose family reads the pair preprocessor are checked by `tests/test_export_zoo.py` (its tricky texts are
question / answer pairs), so they are not exported a second time here; the other entries (the dialog models)
are exported and checked here (`run_model_test(exports=True)`). Parametrized over `keras_match.zoo.names()`: a
new family's entries are covered without new test code."""

import pytest
from model_testing import run_model_test

from keras_match import zoo


def is_pair_entry(name):
    """Whether the entry's family reads the pair preprocessor (`tests/test_export_zoo.py` exports those)."""
    return zoo.family_of(name).preprocessor == "pair"


@pytest.mark.parametrize("name", zoo.names())
def test_zoo_entry(name, data_dir, tmp_path):
    run_model_test(name, data_dir, tmp_path, exports=not is_pair_entry(name))
