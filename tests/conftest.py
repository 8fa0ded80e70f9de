import os
import pathlib

import pytest


def _pin_xdist_worker():
    """Pin this pytest-xdist worker to its own share of the CPUs (worker k of n: CPUs k, k + n, ...), before
    TensorFlow is imported, so that its thread pools are sized for that share (TensorFlow counts the CPUs it may
    run on) and the processes it starts stay on it. Measured against unpinned workers it saves little (CONTRIBUTING.md,
    "Tests": the workers' time is the tests' own work). Nothing is pinned outside xdist, with more workers than
    CPUs, or when `KERAS_MATCH_TEST_PINNING=0`. Returns the CPUs kept."""
    worker, count = os.environ.get("PYTEST_XDIST_WORKER", ""), os.environ.get("PYTEST_XDIST_WORKER_COUNT", "")
    if os.environ.get("KERAS_MATCH_TEST_PINNING", "1") == "0" or not hasattr(os, "sched_setaffinity"):
        return None
    if not (worker.startswith("gw") and worker[2:].isdigit() and count.isdigit()):
        return None
    cpus, k, n = sorted(os.sched_getaffinity(0)), int(worker[2:]), int(count)
    if n > len(cpus):
        return None
    share = set(cpus[k::n])
    os.sched_setaffinity(0, share)
    return share


PINNED_CPUS = _pin_xdist_worker()  # first: nothing above imports TensorFlow

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# Tests never reach the internet: a benchmark missing from the user cache would be fetched from GitHub; here any
# such fetch goes to a closed local port and fails (tests that fetch serve the originals on 127.0.0.1 themselves).
os.environ["KERAS_MATCH_GITHUB_URL"] = "http://127.0.0.1:9/tests-never-reach-github"

REPO = pathlib.Path(__file__).resolve().parents[1]


def _data_dir():
    env = os.environ.get("KERAS_MATCH_DATA")
    if env:
        return pathlib.Path(env)
    return REPO.parent / "shared" / "data"


# Training tests read the data folder's filtered GloVe 6B 50d file (the benchmarks' 71,124 words) rather than the
# full 400,000 words of the `glove` extra, for speed; tests/test_vectors.py reads the package itself.
os.environ.setdefault("KERAS_MATCH_EMBEDDINGS", str(_data_dir() / "glove" / "glove.6B.50d.filtered.txt.gz"))


@pytest.fixture(scope="session")
def data_dir():
    """The real benchmark data (``../shared/data`` or ``$KERAS_MATCH_DATA``); tests skip without it."""
    path = _data_dir()
    if not (path / "trecqa").is_dir():
        pytest.skip(f"benchmark data not found at {path}")
    return path


# Zoo entries over a pretrained backbone (`backbone=minilm-l6`) are built, trained and exported in the zoo-wide
# tests with a tiny random BERT of MiniLM's architecture family and vocabulary (the real WordPiece ids): they test
# the wiring, the data path and the export, not the encoder. The pinned MiniLM itself (its weights, the model card's
# similarities, the state cache's figures) is tested under tests/encoders/ and by tests marked `real_backbone`.
TINY_BACKBONE = {"num_layers": 2, "num_heads": 2, "hidden_dim": 32, "intermediate_dim": 64}


def pytest_configure(config):
    config.addinivalue_line("markers", "real_backbone: build backbone entries with the pinned pretrained weights")
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the file order set below
        config.option.loadscopereorder = False


SUITE_DURATIONS = REPO / "benchmarks" / "results" / "suite_durations"


def file_seconds(folder=SUITE_DURATIONS):
    """Each test file's seconds (`{"tests/test_x.py": s}`) in the newest record of `folder` (by its report's
    timestamp; `benchmarks/suite_durations.py` writes them from a clean-clone CI run), or `{}` without one."""
    import json

    records = [json.loads(path.read_text(encoding="utf-8")) for path in sorted(folder.glob("*.json"))]
    records = [record for record in records if record.get("files") and record.get("report_timestamp")]
    if not records:
        return {}
    newest = max(records, key=lambda record: record["report_timestamp"])
    return {row["file"]: float(row["seconds"]) for row in newest["files"]}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    """Run the test files slowest first, by their seconds in the newest suite-durations record (`file_seconds`;
    files it does not list last, in collection order), keeping each file's own order of tests.

    With `-n 2 --dist loadfile` each file goes whole to the next free worker, in this order (`pytest_configure`
    turns off pytest-xdist's own order, most tests first, which sent files of few but slow tests such as
    `tests/test_tuning_distributed.py` last, where one worker ran them while the other had finished): slowest
    first, the last files to start are short and both workers end close together."""
    seconds = file_seconds()
    if seconds:
        items.sort(key=lambda item: -seconds.get(item.nodeid.split("::", 1)[0], 0.0))


@pytest.fixture(scope="session")
def encoders_dir():
    """The pretrained-encoder folder (`$KERAS_MATCH_ENCODERS`, else `../shared/models`); tests skip without its
    all-MiniLM-L6-v2."""
    env = os.environ.get("KERAS_MATCH_ENCODERS")
    path = pathlib.Path(env) if env else REPO.parent / "shared" / "models"
    if not (path / "all-MiniLM-L6-v2" / "config.json").is_file():
        pytest.skip(f"the pretrained encoders folder is not at {path} (no all-MiniLM-L6-v2/; set "
                    "KERAS_MATCH_ENCODERS)")
    return path


@pytest.fixture(scope="session")
def states_cache(tmp_path_factory):
    """The frozen backbone states' cache of this test session (`keras_match.encoders.state_cache`)."""
    return tmp_path_factory.mktemp("states")


@pytest.fixture(autouse=True)
def tiny_backbones(request, monkeypatch, states_cache):
    from keras_match.encoders import state_cache

    monkeypatch.setattr(state_cache, "states_cache_dir", lambda: states_cache)
    if "real_backbone" in request.keywords or "encoders" in request.path.parts:
        return
    from keras_match.encoders import transformer


    architecture = transformer._architecture
    monkeypatch.setattr(transformer, "_architecture", lambda folder: {**architecture(folder), **TINY_BACKBONE})
    monkeypatch.setattr(transformer.TransformerEncoder, "finish", lambda self, model: None)


# A small MCAN so a real TrecQA run takes seconds; the data, tokenizer, GloVe and code path are the real ones.
SMALL_MCAN = ["--set", "lstm_units=16", "--set", "highway_units=8", "--set", "fm_factors=4"]


def benchmark_module(name):
    """A script of `benchmarks/` imported as a module (they are scripts, not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SMALL_CTRN = ["--set", "filters=16", "--set", "dense_units=8"]
"""A small CTRN (`ctrn_wikiqa`: no pair features, a softmax head trained pointwise, as `mcan_fm`)."""


def train_args(data_dir, run_dir, *extra):
    """`keras-match train` arguments for a short real TrecQA run (12 training questions) of a small `ctrn_wikiqa`.

    The tests of training itself (losses, resuming, crashes, bad input, precision) run it: they test the training
    path, which every entry shares, not a family. `ctrn_wikiqa` (a convolution and a QRNN) traces and runs in half
    the time of `mcan_fm` (MCAN's co-attention casts and LSTM): 12 s against 24 s of CPU for one epoch here."""
    return ["train", "ctrn_wikiqa", "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
            "--max-train-questions", "12", "--run-dir", str(run_dir), *SMALL_CTRN, *extra]


def mcan_train_args(data_dir, run_dir, *extra):
    """`train_args` for a small `mcan_fm` (the run of `trained_run`, whose preset is a MCAN-FM one)."""
    return ["train", "mcan_fm", "--dataset", "trecqa-clean", "--data-dir", str(data_dir),
            "--max-train-questions", "12", "--run-dir", str(run_dir), *SMALL_MCAN, *extra]


@pytest.fixture(scope="session")
def trained_run(data_dir, tmp_path_factory):
    """A finished one-epoch run directory, shared by the training, evaluation and export tests."""
    from keras_match import cli

    run_dir = tmp_path_factory.mktemp("runs") / "mcan_fm"
    assert cli.main(mcan_train_args(data_dir, run_dir, "--epochs", "1")) == 0
    return run_dir
