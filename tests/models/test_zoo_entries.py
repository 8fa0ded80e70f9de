"""Every zoo entry passes `run_model_test` (tests/model_testing.py): a short real-data run learns, config and
`.keras` round trips give identical outputs, padding changes nothing. The SavedModel and ONNX exports of every
entry whose family reads the pair preprocessor are checked by `tests/test_export_zoo.py` (its tricky texts are
question / answer pairs), so they are not exported a second time here; the other entries (the dialog models)
are exported and checked here (`run_model_test(exports=True)`). Parametrized over `keras_match.zoo.names()`: a
new family's entries are covered without new test code. Entries over a pretrained backbone (`backbone`) train
over the pinned MiniLM itself, frozen, its states computed once per text (`state_cache`): over the tiny random
backbone of the other tests (`tests/conftest.py`) one epoch need not learn."""

import pytest
from model_testing import run_model_test
from model_testing import skip_pretrained_backbone

from keras_match import zoo


def is_pair_entry(name):
    """Whether the entry's family reads the pair preprocessor (`tests/test_export_zoo.py` exports those)."""
    return zoo.family_of(name).preprocessor == "pair"


def _param(name):
    backbone = zoo.describe(name)["model"].get("backbone")
    return pytest.param(name, marks=pytest.mark.real_backbone) if backbone else name


@pytest.mark.parametrize("name", [_param(name) for name in zoo.names()])
def test_zoo_entry(name, data_dir, tmp_path):
    skip_pretrained_backbone(name, "the short run and round trips")
    run_model_test(name, data_dir, tmp_path, exports=not is_pair_entry(name))
