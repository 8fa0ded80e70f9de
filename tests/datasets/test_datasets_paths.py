"""Data directory resolution: argument, then KERAS_MATCH_DATA, then the user cache."""

import pathlib
import shutil

import pytest

from keras_match import datasets


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    """No test may download from a mirror configured outside the test, nor write to the real user cache."""
    monkeypatch.delenv("KERAS_MATCH_DATA_URL", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path_factory.mktemp("cache")))


def test_precedence(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KERAS_MATCH_DATA", raising=False)
    monkeypatch.delenv("KERAS_MATCH_CACHE", raising=False)
    assert datasets.resolve_data_dir() == tmp_path / "home" / ".cache" / "keras_match" / "data"
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path / "cache"))
    assert datasets.resolve_data_dir() == tmp_path / "cache" / "data"
    monkeypatch.setenv("KERAS_MATCH_DATA", str(tmp_path / "env"))
    assert datasets.resolve_data_dir() == tmp_path / "env"
    assert datasets.resolve_data_dir(tmp_path / "arg") == tmp_path / "arg"
    assert datasets.resolve_data_dir(str(tmp_path / "arg")) == tmp_path / "arg"
    monkeypatch.setenv("KERAS_MATCH_DATA", "")
    assert datasets.resolve_data_dir() == tmp_path / "cache" / "data"
    monkeypatch.setenv("KERAS_MATCH_DATA", "~/data")
    assert datasets.resolve_data_dir() == tmp_path / "home" / "data"


def test_loaders_follow_the_environment(data_dir, tmp_path, monkeypatch):
    semeval = pathlib.Path(data_dir) / "semeval2016_task3_cqa"
    cache = tmp_path / "cache"
    shutil.copytree(semeval, cache / "data" / "semeval2016_task3_cqa")
    monkeypatch.delenv("KERAS_MATCH_DATA", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(cache))
    ds = datasets.load("semeval2016")
    assert ds.metadata["data_dir"] == str(cache / "data") and ds["dev"].num_questions == 244

    monkeypatch.setenv("KERAS_MATCH_DATA", str(data_dir))  # the environment variable beats the cache
    ds = datasets.load("semeval2016")
    assert ds.metadata["data_dir"] == str(data_dir)

    with pytest.raises(FileNotFoundError, match=str(tmp_path / "empty")):  # the argument beats both
        datasets.load("semeval2016", data_dir=tmp_path / "empty")
