"""Fetching the benchmarks from their public originals and building the derived files, against a real HTTP server
on 127.0.0.1 laid out as GitHub's raw files (`OWNER/REPO/COMMIT/PATH`), made from the data folder (gunzipped where
the data folder gzip'd an original). No other host is contacted."""

import hashlib
import importlib
import pathlib
import re
import shutil

import pytest
from conftest import benchmark_module

from keras_match import cli, datasets
from keras_match.datasets import ChecksumError, MissingDataError, sources
from keras_match.datasets.download import OK, check_intact, sha256_of, verify

dl = importlib.import_module("keras_match.datasets.download")  # the module (datasets.download is the function)


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path):
    """No test may read the data folder through $KERAS_MATCH_DATA unless it says so, reach GitHub, or write to the
    real user cache."""
    monkeypatch.delenv("KERAS_MATCH_DATA", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", "http://127.0.0.1:9/nothing-listens-here")


def github_mirror(data_dir, names=None):
    """`benchmarks/github_mirror.py`'s server: `(url, handler)`; `handler.faults[path]` breaks one file."""
    return benchmark_module("github_mirror").serve(data_dir, names)


@pytest.fixture(scope="module")
def mirror(data_dir):
    with github_mirror(data_dir) as served:
        yield served


def all_files(root):
    return sorted(str(p.relative_to(root)) for p in pathlib.Path(root).rglob("*") if p.is_file())


def entry_of(name, suffix):
    return next(entry for entry in sources.source(name).originals if entry.path.endswith(suffix))


# ---- the tables ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(sources.SOURCES))
def test_every_file_of_the_tables_is_in_the_data_folder_with_its_digest(data_dir, name):
    rows = verify(name, data_dir)
    assert rows and [state for _, state, _ in rows] == [OK] * len(rows), [r for r in rows if r[1] != OK]


def test_origins_are_raw_github_urls_at_pinned_commits(monkeypatch):
    monkeypatch.delenv("KERAS_MATCH_GITHUB_URL")
    entry = entry_of("trecqa", "jacana/TRAIN.xml")
    assert entry.url() == ("https://raw.githubusercontent.com/castorini/data/"
                           "056cbbcbf997cc0b35032430110c5e5e5525700a/TrecQA/data/TRAIN.xml")
    for source in sources.SOURCES.values():
        for original in source.originals:
            assert re.fullmatch(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+",
                                original.url()), original
    monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", "http://mirror.example/raw/")
    assert entry.url().startswith("http://mirror.example/raw/castorini/data/056cbbc")


def test_every_loader_reads_only_files_of_the_tables(data_dir):
    listed = {str(data_dir / form) for source in sources.SOURCES.values() for entry in source.files
              for form, _ in entry.forms()}
    for name, options in (("trecqa", {}), ("trecqa", {"variant": "raw", "train_split": "train"}), ("wikiqa", {}),
                          ("semeval2016", {"train_split": "train-part2+train-2015"}), ("sick", {}), ("snli", {}),
                          ("msrp", {})):
        ds = datasets.load(name, data_dir=data_dir, **options)
        read = {source for split in ds.splits.values() for source in split.source.split(" + ")}
        qrels = ds.metadata.get("qrels", {}).values()
        read |= {path for value in qrels for path in ([value] if isinstance(value, str) else value)}
        read |= set(ds.metadata.get("files", {}).values())
        assert read and read <= listed, read - listed


# ---- the fresh machine: fetch the originals, build, train ------------------------------------------------------


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    """TrecQA and SemEval-2016 fetched and built into an empty folder."""
    url, handler = mirror
    root = tmp_path_factory.mktemp("built")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERAS_MATCH_GITHUB_URL", url)
        reports = {name: datasets.download(name, root) for name in ("trecqa", "semeval2016")}
    return root, reports


@pytest.mark.parametrize("name", ["trecqa", "semeval2016"])
def test_build_from_originals_is_byte_exact(built, name):
    root, reports = built
    source = sources.source(name)
    assert [pathlib.Path(p) for p in reports[name]["built"]] == [root / entry.path for entry in source.derived]
    assert len(reports[name]["fetched"]) == len(source.originals)
    for entry in source.files:
        assert hashlib.sha256((root / entry.path).read_bytes()).hexdigest() == entry.sha256, entry.path
    assert [state for _, state, _ in verify(name, root)] == [OK] * len(source.files)


def test_build_leaves_nothing_else(built):
    root, _ = built
    expected = sorted(entry.path for name in ("trecqa", "semeval2016") for entry in sources.source(name).files)
    assert all_files(root) == expected  # no staging folder, no temporary file


def test_built_folder_loads_like_the_data_folder(built, data_dir):
    root, _ = built
    for name, options in (("trecqa", {}), ("trecqa", {"variant": "raw"}),
                          ("semeval2016", {"train_split": "train-part2+train-2015"})):
        ours, theirs = (datasets.load(name, data_dir=folder, **options) for folder in (root, data_dir))
        assert ours.counts() == theirs.counts()
        for split in ours.splits:
            assert ours[split].pairs().answers.tolist() == theirs[split].pairs().answers.tolist()


def test_a_present_intact_dataset_is_not_fetched_again(built, mirror):
    root, _ = built
    url, handler = mirror
    before = len(handler.requests)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KERAS_MATCH_GITHUB_URL", url)
        report = datasets.download("trecqa", root)
    assert report["fetched"] == [] and report["built"] == [] and len(handler.requests) == before


def test_first_use_fetches_into_the_user_cache_and_trains_through_the_cli(mirror, tmp_path, monkeypatch, capsys):
    """README's two commands on a machine without the data folder (the local server stands in for GitHub)."""
    url, _ = mirror
    monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", url)
    status = cli.main(["train", "mcan_fm", "--dataset", "trecqa-clean", "--epochs", "1", "--max-train-questions",
                       "12", "--embeddings", "none", "--run-dir", str(tmp_path / "run"), "--set", "lstm_units=8",
                       "--set", "highway_units=8", "--set", "fm_factors=2"])
    out = capsys.readouterr().out
    cache = tmp_path / "cache" / "data"
    assert status == 0
    assert f"trecqa: fetching 9 original file(s) into {cache}" in out
    assert "built trecqa/tsv/train-all.tsv (53,417 rows)" in out and "built trecqa/qrels/clean-test.qrels" in out
    assert f"trecqa: 21 files ready in {cache} (9 fetched" in out
    assert re.search(r"^test: MAP 0\.\d+", out, re.M)
    assert all_files(cache) == sorted(entry.path for entry in sources.source("trecqa").files)


# ---- a failed transfer: one line naming file and URL, nothing kept, the next command retries -----------------


@pytest.mark.parametrize("fault,reason", [("damage", "damaged or truncated"), ("truncate", "retrieval incomplete"),
                                          ("404", "404")])
def test_failed_transfer_names_file_and_url_keeps_nothing_and_the_next_run_retries(
        data_dir, tmp_path, monkeypatch, capsys, fault, reason):
    entry = entry_of("semeval2016", "SemEval2016-Task3-CQA-QL-dev.xml")
    with github_mirror(data_dir, ["semeval2016"]) as (url, handler):
        monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", url)
        handler.faults[f"/{entry.repo}/{entry.commit}/{entry.origin_path}"] = fault
        root = tmp_path / "data"
        status = cli.main(["data", "download", "semeval2016", "--data-dir", str(root)])
        err = capsys.readouterr().err
        assert status == 1
        assert err.count("\n") == 1 and err.startswith("keras-match data: error: ")
        assert entry.path in err and entry.url() in err and reason in err
        # the file fetched before the failure is intact and kept; the failed one and any partial bytes are not
        assert all_files(root) == [entry_of("semeval2016", "train-part2.xml").path]
        handler.faults.clear()
        assert cli.main(["data", "download", "semeval2016", "--data-dir", str(root)]) == 0
    assert [state for _, state, _ in verify("semeval2016", root)] == [OK] * 10


def test_refused_connection_says_how_to_point_at_a_mirror(tmp_path, monkeypatch, capsys):
    port = benchmark_module("github_mirror").unused_port()
    monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", f"http://127.0.0.1:{port}")
    assert cli.main(["data", "download", "msrp", "--data-dir", str(tmp_path / "data")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"http://127.0.0.1:{port}/lanwuwei/SPM_toolkit/" in err and "refused" in err.lower()
    assert "KERAS_MATCH_GITHUB_URL" in err and "--data-dir" in err
    assert all_files(tmp_path / "data") == []


# ---- what a loader and the CLI say about missing or damaged data ------------------------------------------------


def test_missing_dataset_in_an_explicit_folder_names_it_and_the_command(tmp_path, capsys):
    with pytest.raises(MissingDataError) as info:
        datasets.load("trecqa", data_dir=tmp_path)
    assert isinstance(info.value, FileNotFoundError)
    assert info.value.filename == str(tmp_path / "trecqa/tsv/train-all.tsv")
    assert str(info.value) == (f"trecqa is missing from {tmp_path} (no trecqa/tsv/train-all.tsv); fetch it with "
                               f"`keras-match data download trecqa --data-dir {tmp_path}`")
    assert all_files(tmp_path) == []  # an explicit folder is not written to unasked
    assert cli.main(["evaluate", str(tmp_path / "no-run"), "--dataset", "wikiqa"]) in (1, 2)
    capsys.readouterr()
    status = cli.main(["train", "mcan_fm", "--dataset", "semeval2016", "--data-dir", str(tmp_path),
                       "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == 1 and err.count("\n") == 1
    assert f"semeval2016 is missing from {tmp_path}" in err and f"--data-dir {tmp_path}`" in err


def test_settings_are_checked_before_any_data_is_fetched(tmp_path, capsys):
    status = cli.main(["train", "mcan_fm", "--dataset", "trecqa-clean", "--set", "learning_rate=-1",
                       "--run-dir", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert status == 2 and "learning_rate" in err and "fetch" not in err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "run").exists()
    status = cli.main(["train", "ctrn_semeval", "--dataset", "semeval2016", "--train-split", "train-2016"])
    err = capsys.readouterr().err
    assert status == 2 and "train-part2+train-2015" in err and not (tmp_path / "cache").exists()


def damaged_copy(data_dir, root, name):
    """A copy of a dataset's files in which the last data line of one file is dropped (it still parses)."""
    for entry in sources.source(name).files:
        for form, _ in entry.forms():
            if (data_dir / form).is_file():
                (root / form).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(data_dir / form, root / form)
    target = root / "semeval2016_task3_cqa/subtaskA/dev.tsv"
    lines = target.read_bytes().splitlines(keepends=True)
    target.write_bytes(b"".join(lines[:-10]))  # the last thread's ten comments: a complete, well-formed file
    return target


def test_a_damaged_file_is_named_and_repaired_by_download(data_dir, tmp_path, mirror, monkeypatch, capsys):
    root = tmp_path / "data"
    target = damaged_copy(data_dir, root, "semeval2016")
    with pytest.raises(ChecksumError) as info:
        datasets.load("semeval2016", data_dir=root)
    assert str(info.value) == (f"{target} is damaged: its content differs from the pinned file (sha256); restore "
                               f"it with `keras-match data download semeval2016 --data-dir {root}`")
    assert cli.main(["data", "verify", "semeval2016", "--data-dir", str(root)]) == 1
    captured = capsys.readouterr()
    assert "damaged  semeval2016_task3_cqa/subtaskA/dev.tsv" in captured.out
    assert "9 OK, 0 missing, 1 damaged" in captured.out
    url, _ = mirror
    monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", url)
    assert cli.main(["data", "download", "semeval2016", "--data-dir", str(root)]) == 0
    assert "built semeval2016_task3_cqa/subtaskA/dev.tsv (2,440 rows)" in capsys.readouterr().out
    assert datasets.load("semeval2016", data_dir=root)["dev"].num_pairs == 2440


def test_check_intact_accepts_the_gzip_copies_of_the_data_folder(data_dir):
    check_intact("trecqa", data_dir, ["trecqa/tsv/train-all.tsv", "trecqa/jacana/TRAIN.xml"])
    assert sha256_of(data_dir / "trecqa/tsv/train-all.tsv.gz") == sources.source("trecqa").derived[0].gzip_sha256


def test_data_verify_all_on_the_data_folder(data_dir, capsys):
    assert cli.main(["data", "verify", "all", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    total = sum(len(source.files) for source in sources.SOURCES.values())
    assert out.splitlines()[-1] == f"{total} OK, 0 missing, 0 damaged"


def test_unknown_dataset_for_data_command(capsys):
    assert cli.main(["data", "download", "insuranceqa"]) == 2
    assert "valid: ['trecqa'" in capsys.readouterr().err


def test_semeval_with_the_2015_threads(data_dir):
    both = datasets.load("semeval2016", data_dir=data_dir, train_split="train-part2+train-2015")
    alone = datasets.load("semeval2016", data_dir=data_dir)
    assert (alone["train"].num_questions, both["train"].num_questions) == (379, 985)
    assert both["train"].num_pairs == 3790 + 3347
    assert both["train"].questions[:379] == alone["train"].questions
    assert both["dev"].counts() == alone["dev"].counts()
    assert both.metadata["qrels"]["train"][1].endswith("subtaskA/train-2015.qrels")
    with pytest.raises(ValueError, match="train-part2\\+train-2015"):
        datasets.load("semeval2016", data_dir=data_dir, train_split="train-2015")


def test_holdout_chooses_on_the_same_train_part2_questions_with_or_without_the_2015_threads(data_dir):
    from conftest import benchmark_module

    holdout_dev = benchmark_module("reproduce").holdout_dev
    alone = holdout_dev(datasets.load("semeval2016", data_dir=data_dir), 0.2)
    both = holdout_dev(datasets.load("semeval2016", data_dir=data_dir, train_split="train-part2+train-2015"), 0.2)
    assert alone["dev"].questions == both["dev"].questions and alone["dev"].num_questions == 76
    assert alone["train"].num_questions == 303 and both["train"].num_questions == 303 + 606
    assert both["train"].questions[:303] == alone["train"].questions
    assert {q.qid for q in both["train"]}.isdisjoint(q.qid for q in both["dev"])
    assert both["test"].counts() == alone["test"].counts() and both["test"].num_questions == 244


def test_a_build_that_gives_other_bytes_names_the_file_and_writes_nothing(built, tmp_path, monkeypatch):
    from keras_match.datasets.builders import semeval as semeval_builder

    root = tmp_path / "data"
    for entry in sources.source("semeval2016").originals:  # the intact originals, nothing built yet
        (root / entry.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0] / entry.path, root / entry.path)
    real = semeval_builder.build

    def variant(read):
        files = real(read)
        files["semeval2016_task3_cqa/subtaskA/dev.tsv"] += b"an extra line\n"
        return files

    monkeypatch.setattr(semeval_builder, "build", variant)
    with pytest.raises(ChecksumError) as info:
        datasets.download("semeval2016", root)
    assert str(info.value).startswith("semeval2016: the built semeval2016_task3_cqa/subtaskA/dev.tsv differs from "
                                      "the pinned file")
    assert not (root / "semeval2016_task3_cqa/subtaskA").exists()  # not even the files that were right
    (root / sources.source("semeval2016").originals[0].path).unlink()
    with pytest.raises(MissingDataError, match="the original semeval2016_task3_cqa/xml/SemEval2016-Task3-CQA-QL-"
                                               "train-part2.xml is missing or damaged"):
        dl.build("semeval2016", root)

