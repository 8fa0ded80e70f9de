"""The benchmark scripts print one JSON object that says what made it (`keras_match.artifacts.provenance`), and their
markdown tables refuse a result without one. No training and no timing here: the heavy parts are replaced."""

import gzip
import json
import re
import sys
import types

import pytest
from conftest import REPO, benchmark_module

from keras_match.artifacts import provenance
from keras_match.datasets.download import sha256_of


def assert_provenance(result):
    found = provenance.check(result, "printed")
    assert set(provenance.REQUIRED) <= set(found) and found["started"] <= found["finished"]
    assert found["code"]["keras_match"] and found["versions"]["python"] and found["machine"]["cores"] >= 1
    return found


# ---- transfer.py ---------------------------------------------------------------------------------------------

TRANSFER = {"bm25": {"trecqa-clean": {"map": 0.68, "mrr": 0.75, "p@1": 0.6}},
            "runs": {f"runs/ctrn-s{seed}": {"zoo": "ctrn", "seed": seed, "trained_on": "trecqa-raw",
                                            "overlap_features": True, "bm25_feature": False,
                                            "trecqa-clean": {"map": value, "mrr": value + 0.05, "p@1": 0.5}}
                     for seed, value in ((1, 0.70), (2, 0.72))}}


def test_transfer_table_refuses_a_result_without_provenance_naming_the_file(tmp_path, capsys):
    module = benchmark_module("transfer")
    path = tmp_path / "transfer.json"
    path.write_text(json.dumps(TRANSFER))
    with pytest.raises(SystemExit) as info:
        module.main(["--table", str(path)])
    assert str(info.value).startswith(f"{path}: no provenance")
    with pytest.raises(SystemExit, match="^result: no provenance"):
        module.table(TRANSFER)


def test_transfer_without_runs_scores_bm25_on_the_chosen_split(data_dir, capsys):
    """The BM25 rows of the docs' tables (`benchmarks/results/bm25/`): no run folders, `--split dev`."""
    module = benchmark_module("transfer")
    module.main(["--datasets", "trecqa-raw", "--split", "dev", "--data-dir", str(data_dir)])
    result = json.loads(capsys.readouterr().out)
    assert result["runs"] == {} and result["split"] == "dev" and result["provenance"]["datasets"] == ["trecqa-raw"]
    # raw TrecQA dev: 78 questions with a relevant answer (3 without are dropped); deterministic (bm25s, k1 1.5, b 0.75)
    assert result["bm25"]["trecqa-raw"]["num_questions"] == 78
    assert result["bm25"]["trecqa-raw"]["map"] == pytest.approx(0.7506891840030974, abs=1e-9)
    with pytest.raises(SystemExit, match="semeval2016 has no test split"):
        module.main(["--datasets", "semeval2016", "--data-dir", str(data_dir)])


def test_transfer_prints_json_with_provenance_and_its_table_on_request(tmp_path, data_dir, monkeypatch, capsys):
    from keras_match import training
    from keras_match.artifacts import presets

    module = benchmark_module("transfer")
    figures = TRANSFER["runs"]["runs/ctrn-s1"]["trecqa-clean"]

    class FakeRun:  # a trained run's config and figures, without a model
        def __init__(self, run_dir):
            self.config = {"zoo": "ctrn", "seed": int(str(run_dir)[-1]), "dataset": "trecqa-raw",
                           "settings": {"preprocessing": {"overlap_features": True}}}

        def evaluate(self, split, task=None):
            return figures

    loaded_presets = []

    def fake_preset(name):  # a shipped preset is read by presets.load_preset, never as a run folder
        loaded_presets.append(name)
        return FakeRun("preset-s7")

    monkeypatch.setattr(training, "load_run", FakeRun)
    monkeypatch.setattr(presets, "load_preset", fake_preset)
    monkeypatch.setattr(module, "bm25_figures", lambda split, rule: TRANSFER["bm25"]["trecqa-clean"])
    module.main(["runs/ctrn-s1", "runs/ctrn-s2", "--presets", "ctrn/trecqa-raw", "--datasets", "trecqa-clean",
                 "--data-dir", str(data_dir)])
    out = capsys.readouterr().out
    result = json.loads(out)  # one JSON object, nothing else on stdout
    found = assert_provenance(result)
    assert found["datasets"] == ["trecqa-clean"]
    assert {"dev", "test"} <= set(found["data_files"]["trecqa-clean"])
    assert all(len(f["sha256"]) == 64 for f in found["data_files"]["trecqa-clean"].values())
    assert result["runs"]["runs/ctrn-s2"]["seed"] == 2 and result["bm25"] == TRANSFER["bm25"]
    assert loaded_presets == ["ctrn/trecqa-raw"] and result["runs"]["ctrn/trecqa-raw"]["preset"] == "ctrn/trecqa-raw"
    assert result["runs"]["ctrn/trecqa-raw"]["seed"] == 7 and result["runs"]["runs/ctrn-s1"]["preset"] is None

    path = tmp_path / "transfer.json"
    path.write_text(out)
    module.main(["--table", str(path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "| model | pair features | seeds | trecqa-clean MAP | trecqa-clean MRR |"
    assert lines[2] == "| BM25 | – | – | 0.680 | 0.750 |"
    assert lines[3] == "| ctrn | overlap_features | 1, 2 | 0.700 ± 0.000 | 0.750 ± 0.000 |"
    assert lines[4] == "| ctrn (preset ctrn/trecqa-raw) | overlap_features | 7 | 0.700 | 0.750 |"


# ---- text_coverage.py ----------------------------------------------------------------------------------------

def _write_tsv(path, header, rows):
    path.parent.mkdir(parents=True, exist_ok=True)
    content = "\n".join("\t".join(row) for row in [header, *rows]) + "\n"
    if path.suffix == ".gz":
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(content)
    else:
        path.write_text(content, encoding="utf-8")


def tiny_data(root):
    """A data folder of the files text_coverage.py reads, a few lines each, and a 50d GloVe file of 4 words."""
    trec = [["q1", "who wrote hamlet ?", "shakespeare wrote hamlet .", "1"],
            ["q1", "who wrote hamlet ?", "the play is long .", "0"]]
    for name in ("train-all.tsv.gz", "clean-dev.tsv", "clean-test.tsv"):
        _write_tsv(root / "trecqa" / "tsv" / name, ["qid", "question", "answer", "label"], trec)
    wiki = [["Q1", "how old is the moon", "the moon is old .", "1"], ["Q1", "how old is the moon", "it rains .", "0"]]
    for name in ("WikiQA-train.tsv.gz", "WikiQA-dev.tsv.gz", "WikiQA-test.tsv.gz"):
        _write_tsv(root / "wikiqa" / name, ["QuestionID", "Question", "Sentence", "Label"], wiki)
    (root / "glove").mkdir()
    with gzip.open(root / "glove" / "glove.6B.50d.filtered.txt.gz", "wt", encoding="utf-8") as f:
        for i, word in enumerate(["the", "moon", "hamlet", "wrote"]):
            f.write(word + " " + " ".join("1" if j == i else "0" for j in range(50)) + "\n")
    return root


def test_text_coverage_table_refuses_a_result_without_provenance():
    module = benchmark_module("text_coverage")
    with pytest.raises(SystemExit, match="^coverage.json: no provenance"):
        module.table({"texts": {}, "coverage": {}}, "coverage.json")


def test_text_coverage_prints_json_with_provenance_by_default_and_markdown_with_table(tmp_path, capsys):
    module = benchmark_module("text_coverage")
    data = tiny_data(tmp_path / "data")
    module.main(["--data", str(data)])
    result = json.loads(capsys.readouterr().out)
    found = assert_provenance(result)
    assert found["data_dir"] == str(data) and len(found["data_files"]) == 6
    assert found["data_files"]["trecqa/tsv/clean-dev.tsv"]["sha256"] == sha256_of(
        data / "trecqa" / "tsv" / "clean-dev.tsv")
    assert found["embeddings"]["path"].endswith("glove.6B.50d.filtered.txt.gz")
    assert set(result["coverage"]) == set(module.RULES) and result["texts"] == {"TrecQA": 3, "WikiQA": 3}
    chosen = result["coverage"]["glove_ptb (chosen: text.tokenize)"]
    assert 0 < chosen["TrecQA"]["token_coverage"] < 1 and chosen["TrecQA"]["types"] > 0
    assert result["ranking"]["questions"] == {"TrecQA": 2, "WikiQA": 2}
    assert result["ranking"]["rules"]["whitespace"]["WikiQA"]["map"] == pytest.approx(1.0)

    module.main(["--data", str(data), "--table", "--no-ranking"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "Distinct texts: TrecQA 3, WikiQA 3"
    assert lines[2].startswith("| rule | TrecQA token | TrecQA type | TrecQA types | TrecQA tok/text | WikiQA token")
    assert len(lines) == 4 + len(module.RULES) and not any("MAP" in line for line in lines)
    assert lines[7].startswith("| punct (\\w+ \\| one symbol) | ")  # a '|' in a rule's name is escaped


# ---- short_runs.py -------------------------------------------------------------------------------------------

def test_short_runs_writes_its_provenance_and_compares_older_files(tmp_path, monkeypatch, capsys):
    module = benchmark_module("short_runs")
    monkeypatch.setattr(module, "run_one", lambda name, out, seed: {"name": name, "dev": {"map": 0.5}})
    monkeypatch.setattr(sys, "argv", ["benchmarks/short_runs.py", "--only", "ctrn-trecqa-raw"])
    monkeypatch.setenv("KERAS_MATCH_EMBEDDINGS", "glove.txt.gz")
    written = tmp_path / "after.json"
    assert module.main(["--only", "ctrn-trecqa-raw", "--json", str(written), "--seed", "3"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == json.loads(written.read_text())
    found = assert_provenance(printed)
    assert found["command"] == "python benchmarks/short_runs.py --only ctrn-trecqa-raw"
    assert found["seed"] == 3 and found["embeddings"] == "glove.txt.gz"
    assert printed["runs"] == [{"name": "ctrn-trecqa-raw", "dev": {"map": 0.5}}]
    assert "commit" not in printed and "versions" not in printed  # the provenance's now

    results = REPO / "benchmarks" / "results" / "zoo_shape"  # files from before the provenance still compare
    assert module.main(["--compare", str(results / "before-1e260b4.json"), str(results / "after-2e8702e.json")]) == 0
    assert capsys.readouterr().out.startswith("identical")


# ---- recurrence_speed.py, export_latency.py, fit_overhead.py: they time models, so only their parts -------------

def test_recurrence_speed_lengths_come_with_the_files_read(data_dir):
    module = benchmark_module("recurrence_speed")
    q, a, files = module.trecqa_lengths(str(data_dir), 16, seed=0)
    assert len(q) == len(a) == 16 and q.max() <= module.MAX_QUESTION_LENGTH
    assert "train" in files and len(files["train"]["sha256"]) == 64


def test_export_latency_names_the_vectors_of_the_model_it_exports(monkeypatch):
    module = benchmark_module("export_latency")
    from keras_match.artifacts import runs

    monkeypatch.setattr(runs, "load_run", lambda run_dir: types.SimpleNamespace(run_dir=run_dir))
    run, description, vectors = module.build_run("runs/x", None)
    assert run.run_dir == "runs/x" and description == "run runs/x" and vectors is None


@pytest.mark.parametrize("name", ["train_speed", "export_latency", "recurrence_speed", "fit_overhead", "short_runs",
                                  "transfer", "vocabulary_coverage", "text_coverage", "ship_presets"])
def test_every_benchmark_script_collects_provenance_and_says_so(name):
    source = (REPO / "benchmarks" / f"{name}.py").read_text(encoding="utf-8")
    docstring = source.split('"""')[1]
    assert re.search(r"provenance\.collect\(\s*started", source) and "provenance" in docstring


# ---- precision_scoring.py ------------------------------------------------------------------------------------

def test_precision_scoring_table_gives_the_verdict_and_refuses_a_result_without_provenance(tmp_path, capsys):
    module = benchmark_module("precision_scoring")
    result = {"preset": "mcan_fm/trecqa-clean", "benchmark": "trecqa-clean", "pairs": 1442,
              "figures": {"float32": {"map": 0.7782, "mrr": 0.8376}, "mixed_bfloat16": {"map": 0.7808, "mrr": 0.8450}},
              "difference": {"map": 0.0026, "mrr": 0.0074}, "within_tolerance": False,
              "seconds": {"float32": 15.2, "mixed_bfloat16": 14.5}}
    with pytest.raises(SystemExit, match="no provenance"):
        module.table([result])
    result["provenance"] = provenance.collect(0.0)
    (tmp_path / module.file_name(result["preset"])).write_text(json.dumps(result))
    assert module.main(["--out", str(tmp_path), "--table"]) == 0
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row == "| `mcan_fm/trecqa-clean` | 1,442 | map | 0.7782 | 0.7808 | +0.0026 | no | 15 / 14 |"
