"""Downloads from a real HTTP server on 127.0.0.1 serving the data directory (no other host is contacted)."""

import contextlib
import functools
import http.server
import importlib
import os
import pathlib
import shutil
import threading

import pytest

from keras_match import datasets
from keras_match.datasets import ChecksumError, DownloadError
from keras_match.datasets.download import MANIFESTS

dl = importlib.import_module("keras_match.datasets.download")  # the module (datasets.download is the function)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path_factory):
    """No test may download from a mirror configured outside the test, nor write to the real user cache."""
    monkeypatch.delenv("KERAS_MATCH_DATA_URL", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path_factory.mktemp("cache")))


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(directory):
    handler = functools.partial(_QuietHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def mirror(data_dir):
    with serve(data_dir) as url:
        yield url


def all_files(root):
    return sorted(str(p.relative_to(root)) for p in pathlib.Path(root).rglob("*") if p.is_file())


def test_download_then_load_from_cache(mirror, tmp_path, monkeypatch, data_dir):
    monkeypatch.delenv("KERAS_MATCH_DATA", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path))
    monkeypatch.setenv("KERAS_MATCH_DATA_URL", "http://127.0.0.1:9/unused")  # the argument wins
    fetched = datasets.download("wikiqa", base_url=mirror + "/")
    cache = tmp_path / "data"
    assert sorted(str(p.relative_to(cache)) for p in fetched) == sorted(f.path for f in MANIFESTS["wikiqa"])
    assert all_files(cache) == sorted(f.path for f in MANIFESTS["wikiqa"])  # no temporary files left
    for f in MANIFESTS["wikiqa"]:
        assert (cache / f.path).read_bytes() == (data_dir / f.path).read_bytes()
    ds = datasets.load("wikiqa")
    assert ds.metadata["data_dir"] == str(cache)
    assert (ds["dev"].num_questions, ds["test"].num_questions) == (122, 237)
    assert datasets.download("wikiqa", base_url=mirror) == []  # nothing missing, nothing fetched


def test_load_with_download_uses_env_url(mirror, tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_MATCH_DATA_URL", mirror)
    target = tmp_path / "semeval"
    ds = datasets.load("semeval2016", data_dir=target, download=True)
    assert ds["dev"].num_pairs == 2440
    assert all_files(target) == sorted(f.path for f in MANIFESTS["semeval2016"])
    assert len(datasets.verify("semeval2016", target)) == 4


def test_corrupt_file_raises_and_leaves_nothing(data_dir, tmp_path):
    served = tmp_path / "served"
    shutil.copytree(data_dir / "wikiqa", served / "wikiqa")
    corrupt = served / "wikiqa" / "WikiQA-dev-filtered.ref"
    os.chmod(corrupt, 0o644)
    corrupt.write_bytes(corrupt.read_bytes().replace(b"2 0 0 0", b"2 0 0 1", 1))
    target = tmp_path / "target"
    with serve(served) as url, pytest.raises(ChecksumError) as info:
        datasets.download("wikiqa", target, base_url=url)
    entry = next(f for f in MANIFESTS["wikiqa"] if f.path.endswith("WikiQA-dev-filtered.ref"))
    message = str(info.value)
    assert f"{url}/wikiqa/WikiQA-dev-filtered.ref" in message and entry.sha256 in message
    assert dl.sha256_of(corrupt) in message
    files = all_files(target)
    assert "wikiqa/WikiQA-dev-filtered.ref" not in files
    assert not any(".part" in name or name.startswith("wikiqa/.") for name in files)


def test_http_error_names_url(tmp_path):
    with serve(tmp_path / "nothing-here") as url, pytest.raises(DownloadError, match="404") as info:
        datasets.download("semeval2016", tmp_path / "target", base_url=url)
    assert f"{url}/semeval2016_task3_cqa/subtaskA/train-part2.tsv" in str(info.value)
    assert all_files(tmp_path / "target") == []


@pytest.mark.parametrize("name", ["trecqa", "semeval2016"])
def test_derived_files_need_a_mirror(tmp_path, monkeypatch, name):
    calls = []
    monkeypatch.setattr(dl, "fetch", lambda *args: calls.append(args))
    with pytest.raises(DownloadError, match="KERAS_MATCH_DATA_URL"):
        datasets.load(name, data_dir=tmp_path, download=True)
    assert calls == [] and all_files(tmp_path) == []


def test_wikiqa_default_source_is_github_at_pinned_commits(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(dl, "fetch", lambda url, destination, sha256: calls.append((url, destination)))
    datasets.download("wikiqa", tmp_path)  # fetch is replaced: no network access
    urls = {pathlib.Path(destination).name: url for url, destination in calls}
    assert len(urls) == len(MANIFESTS["wikiqa"])
    assert urls["WikiQA-dev.tsv.gz"] == (
        "https://raw.githubusercontent.com/rohantilva/Google-Like-Question-Answering-System/"
        "33b4bc236eebccb53dcfb396bfcccf3f88cf48dd/data/WikiQA/WikiQA-dev.tsv.gz"
    )
    assert urls["WikiQA-test-filtered.ref"] == (
        "https://raw.githubusercontent.com/l11x0m7/Question_Answering_Models/"
        "b53c33db08a51f8e5f8c774eb65ec29c75942c66/cQA/data/WikiQA/raw/WikiQA-test-filtered.ref"
    )


@pytest.mark.parametrize("name", list(MANIFESTS))
def test_manifest_matches_real_data_and_loaders(data_dir, name):
    checked = datasets.verify(name, data_dir)
    assert len(checked) == len(MANIFESTS[name])
    listed = {str(data_dir / f.path) for f in MANIFESTS[name]}
    variants = {"trecqa": [("clean", "train-all"), ("raw", "train")], "wikiqa": [(None, None)],
                "semeval2016": [("official", None), ("filtered", None)]}.get(name, [(None, None)])
    for variant, train_split in variants:
        ds = datasets.load(name, variant, data_dir, train_split=train_split)
        assert {split.source for split in ds.splits.values()} <= listed
        assert set(ds.metadata.get("qrels", {}).values()) <= listed  # ranking sets
        assert set(ds.metadata.get("files", {}).values()) <= listed  # classification sets
