"""benchmarks/carnn_speed.py at its `--quick` size: the JSON it prints carries its figures and its provenance, and
the iCARNN / sCARNN fast path agrees with the same cell stepped by `keras.layers.RNN` (the script refuses to time
paths that disagree)."""

import contextlib
import io
import json

import pytest
from conftest import benchmark_module

from keras_match.artifacts import provenance

TIMING = {"median_wall_ms", "median_cpu_ms", "p90_wall_ms", "rounds"}


@pytest.fixture(scope="module")
def quick_result():
    """One in-process `--quick` run (4 tiny IWAN models and the layer at lengths 3 and 6), its printed JSON."""
    module = benchmark_module("carnn_speed")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # progress goes to stderr, the JSON alone to stdout
        returned = module.main(["--quick"])
    result = json.loads(out.getvalue())
    assert result == json.loads(json.dumps(returned))
    return module, result


def test_carnn_speed_prints_its_figures_with_provenance(quick_result):
    module, result = quick_result
    assert result["benchmark"] == "carnn_speed" and result["quick"] is True
    found = provenance.check(result, "carnn_speed --quick")
    assert set(provenance.REQUIRED) <= set(found) and found["started"] <= found["finished"]
    assert found["code"]["keras_match"] and found["versions"]["tensorflow"] and found["machine"]["cores"] >= 1
    assert len(found["load_average_at_start"]) == 3 and found["seed"] == 0 and found["cpu_affinity"]

    encoders = result["iwan"]["encoders"]
    assert set(encoders) == set(module.ENTRIES) == {"ncarnn", "icarnn", "scarnn", "bilstm"}
    for encoder, row in encoders.items():
        assert row["entry"] == module.ENTRIES[encoder] and TIMING <= set(row)
        assert row["median_wall_ms"] > 0 and row["rounds"] == 2 and row["trainable_parameters"] > 0
        assert set(row["ratio_to_ncarnn"]) == {"wall", "cpu"} and row["ratio_to_ncarnn"]["wall"] > 0
    assert encoders["ncarnn"]["ratio_to_ncarnn"] == {"wall": 1.0, "cpu": 1.0}
    # sCARNN has no input projection and no recurrent kernel: the smallest of the three CARNN encoders
    assert encoders["scarnn"]["parameters"] < encoders["icarnn"]["parameters"] < encoders["ncarnn"]["parameters"]

    lengths = result["layer"]["lengths"]
    assert set(lengths) == {"3", "6"}
    for row in lengths.values():
        assert set(row) == {"icarnn", "scarnn", "ncarnn_stepped"} and TIMING <= set(row["ncarnn_stepped"])
        for variant in ("icarnn", "scarnn"):
            assert TIMING <= set(row[variant]["fast"]) and TIMING <= set(row[variant]["stepped"])
            assert row[variant]["speedup_wall"] > 0 and row[variant]["speedup_cpu"] > 0
    assert lengths["3"]["scarnn"]["units"] == result["layer"]["dim"]  # sCARNN keeps the input width


def test_carnn_fast_path_agrees_with_the_stepped_cell(quick_result):
    """The fast path (all gates at once, then the gated linear recurrence) is the cell stepped by keras.layers.RNN:
    the same outputs (a quarter of the rows padded) and the same gradients."""
    module, result = quick_result
    layer = result["layer"]
    assert layer["tolerance"] == module.TOLERANCE == 1e-4
    for row in layer["lengths"].values():
        for variant in ("icarnn", "scarnn"):
            assert 0 <= row[variant]["max_abs_difference"] <= 1e-5
            assert 0 <= row[variant]["max_gradient_difference_relative_to_largest"] <= 1e-5
    assert layer["max_abs_difference"] == max(row[v]["max_abs_difference"] for row in layer["lengths"].values()
                                              for v in ("icarnn", "scarnn"))


def test_carnn_speed_refuses_to_time_paths_that_disagree(monkeypatch):
    """A stepped cell that differs from the fast path stops the script before any timing."""
    from keras_match.layers import CARNNCell

    module = benchmark_module("carnn_speed")
    original = CARNNCell.call

    def one_percent_off(self, inputs, states, training=False):  # only the stepped path calls the cell
        h, _ = original(self, inputs, states, training=training)
        return h * 1.01, [h * 1.01]

    monkeypatch.setattr(CARNNCell, "call", one_percent_off)
    with pytest.raises(AssertionError, match="fast and stepped outputs differ"):
        module.layer_paths("i", 4, 5, 6, 5, rounds=1, warmup=0, seed=0)
