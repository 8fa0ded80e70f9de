"""The result tables of README.md and of the docs pages (`docs/*.md`), generated from the committed result files
under `benchmarks/results/` (and the shipped presets' metadata).

Every table a page shows is one entry of `TABLES`: the result files it reads (figures only, never data) and how
it renders them. A result file must say what made it (`keras_match.artifacts.provenance`: the command, the code version, the
package versions, the machine and the time, for the file and for every run in it); a file without that is refused
(exit 1, naming the file), so no table can be made from a figure whose origin is unknown.

    python benchmarks/tables.py                          # the tables and the files each reads, as JSON
    python benchmarks/tables.py ctrn-trecqa              # one table, as markdown
    python benchmarks/tables.py --check README.md docs/*.md   # exit 1 if a page's table differs from its files
    python benchmarks/tables.py --write README.md docs/*.md   # rewrite every page's tables from their files

In a page each generated table sits between two comment lines, `<!-- table NAME -->` and `<!-- end table -->`;
`tests/test_readme_tables.py` fails when one of them differs from what this script makes of the committed files.
"""

from __future__ import annotations

import argparse
import collections
import difflib
import json
import pathlib
import re
import sys

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
sys.path.insert(0, str(HERE))

BEGIN = re.compile(r"^<!-- table ([a-z0-9-]+) -->$")
END = "<!-- end table -->"


class TableError(Exception):
    """A table that cannot be made: a file missing, unreadable or without provenance."""


def _files(pattern):
    paths = sorted(RESULTS.glob(pattern))
    if not paths:
        where = RESULTS.relative_to(ROOT) if RESULTS.is_relative_to(ROOT) else RESULTS
        raise TableError(f"no result file {where / pattern}: run the command that writes it")
    return paths


def _read(path):
    """A reproduce.py / ablation.py result file, its provenance checked (summarize.read)."""
    import summarize

    try:
        return summarize.read(path)
    except summarize.ProvenanceError as error:
        raise TableError(str(error)) from None
    except (OSError, ValueError) as error:
        raise TableError(f"{path}: {error}") from None


def _groups(paths):
    """{(model, label): {"result": the first file's result, "runs": every file's runs}} in the files' order."""
    groups = collections.OrderedDict()
    for path in paths:
        for name, result in _read(path).items():
            group = groups.setdefault((name, result.get("label")), {"result": result, "runs": []})
            group["runs"].extend(result["runs"])
    return groups


def _read_json(path):
    """A benchmark script's JSON file (not reproduce.py's), its provenance checked (`keras_match.artifacts.provenance`)."""
    from keras_match.artifacts import provenance

    try:
        result = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise TableError(f"{path}: {error}") from None
    try:
        provenance.check(result, path)
    except ValueError as error:
        raise TableError(str(error)) from None
    return result


def _bm25(split, dataset):
    """BM25's figures on a dataset's split, from `bm25/<split>.json` (benchmarks/transfer.py without runs)."""
    path = _files(f"bm25/{split}.json")[0]
    result = _read_json(path)
    try:
        return result["bm25"][dataset]
    except (KeyError, TypeError) as error:
        raise TableError(f"{path}: no BM25 figures of {dataset} ({error})") from None


BM25_LABEL = "BM25 (`bm25s`, k1 1.5, b 0.75)"


def _mean(runs, split, figure, digits=3):
    from summarize import cell, figures_on

    return cell([figures_on(r, split)[figure] for r in runs if figure in figures_on(r, split)], digits)


def _seeds(runs):
    return ", ".join(str(r["seed"]) for r in runs)


def ctrn_trecqa():
    """CTRN / QRNN on raw TrecQA (the CTRN paper's Tables 6 and 7): test MAP / MRR without and with the 6 test
    questions that have no correct answer, beside the paper's."""
    lines = ["| model | train on | seeds | dev MAP | test MAP / MRR, `trecqa-raw` (89 q) | "
             "`trecqa-raw-trec-eval` (95 q) | paper, test MAP / MRR |", "|---|---|---|---|---|---|---|"]
    for (name, label), group in _groups(_files("ctrn_trecqa_raw/*-s*.json")).items():
        result, runs = group["result"], group["runs"]
        reported = result.get("reported") or {}
        if result.get("train_split") == "train":
            reported = reported.get("train") or {}
        paper = f"{reported['map']:.4f} / {reported['mrr']:.4f}" if reported.get("map") else "–"
        lines.append(f"| `{name}` | {label.split(', ', 1)[1]} | {_seeds(runs)} | {_mean(runs, 'dev', 'map')} | "
                     f"{_mean(runs, 'test', 'map')} / {_mean(runs, 'test', 'mrr')} | "
                     f"{_mean(runs, 'trecqa-raw-trec-eval', 'map')} / {_mean(runs, 'trecqa-raw-trec-eval', 'mrr')} | "
                     f"{paper} |")
    dev, test = _bm25("dev", "trecqa-raw"), _bm25("test", "trecqa-raw")
    trec_eval = _bm25("test", "trecqa-raw-trec-eval")
    lines.append(f"| {BM25_LABEL} | no training | – | {dev['map']:.3f} | {test['map']:.3f} / {test['mrr']:.3f} | "
                 f"{trec_eval['map']:.3f} / {trec_eval['mrr']:.3f} | – |")
    return "\n".join(lines)


def semeval2016():
    """ctrn_semeval / qrnn_semeval with and without the 2015 threads: chosen on held-out train-part2 questions,
    scored on the official dev split, beside the paper's test figures."""
    lines = ["| entry | training questions | seeds | held-out dev MAP | official dev MAP | MRR | P@1 | "
             "paper (official test) MAP / P@1 |", "|---|---:|---|---|---|---|---|---|"]
    for (name, label), group in _groups(_files("semeval2016/*-s*.json")).items():
        result, runs = group["result"], group["runs"]
        reported = result.get("reported") or {}
        paper = f"{reported['map']:.3f} / {reported['p@1']:.3f}" if reported.get("map") else "–"
        train = f"{result['counts']['train']['questions']} ({result['train_split'].replace('+', ' + ')})"
        lines.append(f"| `{name}` | {train} | {_seeds(runs)} | {_mean(runs, 'dev', 'map')} | "
                     f"{_mean(runs, 'test', 'map')} | {_mean(runs, 'test', 'mrr')} | {_mean(runs, 'test', 'p@1')} | "
                     f"{paper} |")
    bm25 = _bm25("dev", "semeval2016")  # the official dev split, the runs' test split
    lines.append(f"| {BM25_LABEL} | no training | – | – | {bm25['map']:.3f} | {bm25['mrr']:.3f} | "
                 f"{bm25['p@1']:.3f} | – |")
    return "\n".join(lines)


def _plan_rows(folder, splits, rows=None):
    """The rows of an ablation folder (`NN-sSEED.json`, in the plan's order; `rows`: only these row numbers) with
    their figures on `splits`."""
    from summarize import cell

    lines = []
    paths = _files(f"{folder}/*-s*.json")
    if rows is not None:
        paths = [path for path in paths if int(path.name.split("-")[0]) in rows]
        missing = set(rows) - {int(path.name.split("-")[0]) for path in paths}
        if missing:
            raise TableError(f"no result file for row(s) {sorted(missing)} in {RESULTS.name}/{folder}: run the plan")
    for (name, label), group in _groups(paths).items():
        runs = group["runs"]
        cells = [f"`{name}`", label or "", _seeds(runs)]
        for split, figures in splits:
            cells += [_mean(runs, split, figure) for figure in figures]
        cells += [cell([r["epochs_run"] for r in runs], 1), _wall(runs)]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _plan_table(folder, splits, names, rows=None):
    header = ["model", "row", "seeds"] + [f"{split} {names[figure]}" for split, figures in splits
                                         for figure in figures] + ["epochs", "wall s"]
    return "\n".join(["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] +
                     _plan_rows(folder, splits, rows))


RANKING = {"map": "MAP", "mrr": "MRR", "p@1": "P@1", "accuracy": "accuracy", "macro_f1": "macro-F1"}


def mcan_main_job():
    """README's main job (mcan_fm, TrecQA clean) over 3 seeds: 5 epochs, and the preset's 15."""
    return _plan_table("mcan_fm_main_job", [("dev", ["map"]), ("test", ["map", "mrr", "p@1"])], RANKING)


def mcan_finetune_wikiqa():
    """Issue 35's fine-tuning check: mcan_fm on WikiQA from scratch, and fine-tuned from the shipped
    mcan_fm/trecqa-clean preset (benchmarks/ablations/mcan_fm_finetune_wikiqa.json), and the preset as shipped,
    not fine-tuned, scoring WikiQA test (`preset.json`, benchmarks/transfer.py --presets)."""
    table = _plan_table("mcan_fm_finetune_wikiqa", [("dev", ["map"]), ("test", ["map", "mrr", "p@1"])], RANKING)
    path = _files("mcan_fm_finetune_wikiqa/preset.json")[0]
    result = _read_json(path)
    try:
        if result["split"] != "test":
            raise KeyError(f"split {result['split']!r}, not test")
        (name, entry), = result["runs"].items()
        cells = [f"`{entry['zoo']}`", f"`{name}` as shipped, not fine-tuned", str(entry["seed"]), "–"]
        cells += [f"{entry['wikiqa'][figure]:.3f}" for figure in ("map", "mrr", "p@1")] + ["0", "–"]
    except (KeyError, TypeError, ValueError) as error:
        raise TableError(f"{path}: not one preset's WikiQA test figures ({error})") from None
    return table + "\n| " + " | ".join(cells) + " |"


def presets_transfer():
    """Issue 58: every shipped ranking preset scoring every ranking benchmark's test split (SemEval-2016: its
    official dev split) as shipped, no training there, beside BM25 (`transfer/presets-test.json`,
    benchmarks/transfer.py --presets): MAP / MRR per benchmark, the preset's own benchmark (the dataset part of its
    name) in bold, a figure below BM25's MAP there marked with a dagger."""
    path = _files("transfer/presets-test.json")[0]
    result = _read_json(path)
    try:
        if result["split"] != "test":
            raise KeyError(f"split {result['split']!r}, not test")
        names = list(result["bm25"])
        bm25 = {name: result["bm25"][name] for name in names}
        header = ["preset"] + [f"`{name}` MAP / MRR" for name in names]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
                 "| " + " | ".join([BM25_LABEL] + [f"{bm25[n]['map']:.3f} / {bm25[n]['mrr']:.3f}"
                                                   for n in names]) + " |"]
        for preset, entry in sorted(result["runs"].items()):
            own = preset.rpartition("/")[2]
            cells = [f"`{preset}`"]
            for name in names:
                cell = f"{entry[name]['map']:.3f} / {entry[name]['mrr']:.3f}"
                if entry[name]["map"] < bm25[name]["map"]:
                    cell += " †"
                cells.append(f"**{cell}**" if name.partition(":")[0] == own else cell)
            lines.append("| " + " | ".join(cells) + " |")
    except (KeyError, TypeError, ValueError) as error:
        raise TableError(f"{path}: not benchmarks/transfer.py's test figures of presets ({error})") from None
    return "\n".join(lines)


def mcan_dimensions():
    """MCAN (FM) on GloVe 6B 50d projected on its first 25 / 35 / all 50 principal axes, beside the plain 50d
    vectors (rows 13, 14, 15 and 3 of benchmarks/ablations/mcan_fm_trecqa.json)."""
    return _plan_table("mcan_fm_trecqa", [("dev", ["map"]), ("test", ["map", "mrr"]), ("wikiqa", ["map"])], RANKING,
                       rows=(3, 13, 14, 15))


def main_job():
    """README's main job on a fresh machine: wall time, peak memory and figures (benchmarks/fresh_machine.py)."""
    import fresh_machine

    try:
        return fresh_machine.main_job_table(RESULTS / "data" / "fresh_machine.json")
    except (OSError, ValueError) as error:
        raise TableError(str(error)) from None


def compare_aggregate_wikiqa():
    """Compare-Aggregate's six comparison functions and their ablations on WikiQA (the paper's questions), each
    row beside the paper's Table 3 figure of its comparison function."""
    lines = ["| model | row | seeds | dev MAP | test MAP | test MRR | test P@1 | paper, test MAP / MRR | epochs | "
             "wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    from summarize import cell

    for (name, label), group in _groups(_files("compare_aggregate_wikiqa/*-s*.json")).items():
        result, runs = group["result"], group["runs"]
        reported = result.get("reported") or {}
        paper = f"{reported['map']:.4f} / {reported['mrr']:.4f}" if reported.get("map") else "–"
        lines.append(f"| `{name}` | {label} | {_seeds(runs)} | {_mean(runs, 'dev', 'map')} | "
                     f"{_mean(runs, 'test', 'map')} | {_mean(runs, 'test', 'mrr')} | {_mean(runs, 'test', 'p@1')} | "
                     f"{paper} | {cell([r['epochs_run'] for r in runs], 1)} | "
                     f"{_wall(runs)} |")
    return "\n".join(lines)


def compare_aggregate_sick():
    """Compare-Aggregate on SICK entailment, and SNLI as transfer."""
    return _plan_table("compare_aggregate_sick", [("dev", ["accuracy"]), ("test", ["accuracy", "macro_f1"]),
                                                  ("snli:dev", ["accuracy"]), ("snli", ["accuracy"])], RANKING)


def _paper_figures(result):
    """The paper's test MAP / MRR of a ranking row, when the zoo entry's `reported` figures are on the row's
    dataset ("–" otherwise: a WikiQA row of an entry whose paper reports TrecQA)."""
    reported = result.get("reported") or {}
    same_data = str(result.get("dataset", "")).split("-")[0] == str(reported.get("dataset", "")).split("-")[0]
    if not reported.get("map") or not same_data:
        return "–"
    again = reported.get("reimplementation") or {}
    also = f" (re-implemented: {again['map']:.3f} / {again['mrr']:.3f})" if again.get("map") else ""
    return f"{reported['map']:.3f} / {reported['mrr']:.3f}{also}"


def _wall(runs):
    """The wall-time cell: mean (± std) seconds of the runs that trained in one process. A resumed run's
    `wall_time_s` is its last process's time only (its provenance's `resumed_after_epoch`), so it is left out and
    counted."""
    from summarize import cell

    whole = [r["wall_time_s"] for r in runs if not (r.get("provenance") or {}).get("resumed_after_epoch")]
    left = len(runs) - len(whole)
    return (cell(whole, 0) if whole else "–") + (f" ({left} resumed run{'s' if left > 1 else ''} left out)"
                                                 if left else "")


def _ranking_rows_with_paper(folder):
    from summarize import cell

    lines = ["| model | row | seeds | dev MAP | test MAP | test MRR | test P@1 | paper, test MAP / MRR | epochs | "
             "wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (name, label), group in _groups(_files(f"{folder}/*-s*.json")).items():
        result, runs = group["result"], group["runs"]
        lines.append(f"| `{name}` | {label} | {_seeds(runs)} | {_mean(runs, 'dev', 'map')} | "
                     f"{_mean(runs, 'test', 'map')} | {_mean(runs, 'test', 'mrr')} | {_mean(runs, 'test', 'p@1')} | "
                     f"{_paper_figures(result)} | {cell([r['epochs_run'] for r in runs], 1)} | "
                     f"{_wall(runs)} |")
    return "\n".join(lines)


def iwan_trecqa():
    """IWAN and IWAN + CARNN on TrecQA clean (and WikiQA), each row beside its entry's `reported` figures: the
    CARNN paper's Table 3 (IWAN + CARNN, on the CARNN authors' IWAN re-implementation), and for IWAN itself the
    published figure with that re-implementation's in brackets."""
    return _ranking_rows_with_paper("iwan_trecqa")


def iwan_paired():
    """Issue 58: the CARNN paper's claim that CARNN encoders beat IWAN's BiLSTM, seed by seed: each IWAN + CARNN row
    of `benchmarks/ablations/iwan_trecqa.json` minus the BiLSTM row of the same dataset on the seeds both have
    (the same seed: the same data order and initial draws), test MAP and MRR, mean ± standard deviation."""
    rows = _plan_row_groups("iwan_trecqa")
    baselines = {}
    for row, groups in rows:
        if row["model"] == "iwan":
            baselines[row.get("dataset", "trecqa-clean")] = _row_runs(groups)
    lines = ["| dataset | encoder | seeds paired | test MAP minus the BiLSTM's | test MRR minus the BiLSTM's |",
             "|---|---|---|---|---|"]
    for row, groups in rows:
        if row["model"] == "iwan":
            continue
        dataset = row.get("dataset", "trecqa-clean")
        runs = _row_runs(groups)
        base = baselines.get(dataset, [])
        difference, seeds = _paired(runs, base, figure="map")
        mrr, _ = _paired(runs, base, figure="mrr")
        encoder = row["label"].split(",")[0].replace("IWAN + ", "")
        lines.append(f"| {dataset} | {encoder} | {seeds if seeds != '–' else 'none yet'} | {difference} | {mrr} |")
    return "\n".join(lines)


def carnn_dialog_task6():
    """The CARNN dialog entries on dialog bAbI task 6 (the CARNN paper's Table 1, column Babi), each beside its
    entry's `reported` test per-response accuracy, and CARNN voting (benchmarks/dialog_vote.py, `voting/s*.json`)
    beside the paper's voting figure."""
    from summarize import cell

    lines = ["| model | row | seeds | dev per-response | test per-response | test per-dialog | paper, test "
             "per-response | epochs | wall s |", "|---|---|---|---|---|---|---|---|---|"]
    voting_paper = None
    for (name, label), group in _groups(_files("carnn_dialog_task6/*-s*.json")).items():
        result, runs = group["result"], group["runs"]
        reported = result.get("reported") or {}
        voting_paper = voting_paper or reported.get("voting_per_response_accuracy")
        paper = f"{reported['per_response_accuracy']:.3f}" if reported.get("per_response_accuracy") else "–"
        lines.append(f"| `{name}` | {label} | {_seeds(runs)} | {_mean(runs, 'dev', 'per_response_accuracy')} | "
                     f"{_mean(runs, 'test', 'per_response_accuracy')} | {_mean(runs, 'test', 'per_dialog_accuracy')} "
                     f"| {paper} | {cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |")
    votes = [_read_json(path) for path in sorted(RESULTS.glob("carnn_dialog_task6/voting/s*.json"))]
    if votes:
        def figure(split, key):
            return cell([v["splits"][split]["voting"][key] for v in votes if split in v["splits"]], 3)

        members = " + ".join(f"`{m['entry']}`" for m in votes[0]["members"])
        paper = f"{voting_paper:.3f}" if voting_paper else "–"
        lines.append(f"| CARNN voting | {members} | {', '.join(str(v['seed']) for v in votes)} | "
                     f"{figure('dev', 'per_response_accuracy')} | {figure('test', 'per_response_accuracy')} | "
                     f"{figure('test', 'per_dialog_accuracy')} | {paper} | – | – |")
    return "\n".join(lines)


def carnn_dialog_babi():
    """`carnn_dialog_i` on dialog bAbI tasks 1-5 (benchmarks/ablations/carnn_dialog_babi.json): dev, test and the
    task's OOV test split (scored as transfer, without training), per-response and per-dialog accuracy. The CARNN
    paper reports task 6 only, so there is no paper column."""
    from summarize import cell

    lines = ["| model | task | seeds | dev per-response | test per-response | test per-dialog | OOV test per-response "
             "| OOV test per-dialog | epochs | wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (name, label), group in _groups(_files("carnn_dialog_babi/*-s*.json")).items():
        runs = group["runs"]
        oov = sorted({split for r in runs for split in (r.get("transfer") or {}) if split.endswith(":test-oov")})
        if len(oov) != 1:
            raise TableError(f"{name} ({label}): expected one OOV test split among the transfer splits, found {oov}")

        lines.append(f"| `{name}` | {label} | {_seeds(runs)} | {_mean(runs, 'dev', 'per_response_accuracy')} | "
                     f"{_mean(runs, 'test', 'per_response_accuracy')} | {_mean(runs, 'test', 'per_dialog_accuracy')} | "
                     f"{_mean(runs, oov[0], 'per_response_accuracy')} | {_mean(runs, oov[0], 'per_dialog_accuracy')} | "
                     f"{cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |")
    return "\n".join(lines)


def _error_run(result):
    """`carnn_dialog_i`, seed 1234, dialog-babi-task2 test: what a dialog_errors.py file scored, from its run folder's
    name (`<entry>-<dataset>-...-s<seed>`)."""
    folder = pathlib.Path(result["run"]).name
    entry, seed = folder.split(f"-{result['dataset']}-")[0], folder.rsplit("-s", 1)[-1]
    return f"`{entry}`, seed {seed}, {result['dataset']} {result['split']}"


def carnn_dialog_errors():
    """The wrong turns of a dialog bAbI run by the kind of their gold response (benchmarks/dialog_errors.py,
    `carnn_dialog_babi/errors/*.json`): each kind with at least one wrong turn, the other kinds in one row, every
    turn, then the whole dialogs (right at every turn: per-dialog accuracy) and how many of the others are wrong
    only at updated API calls."""
    lines = ["| run | gold response | turns | wrong | accuracy |", "|---|---|---|---|---|"]
    for path in _files("carnn_dialog_babi/errors/*.json"):
        result = _read_json(path)
        run = _error_run(result)
        kinds = result["kinds"]
        right = [kind for kind in kinds if not kind["wrong"]]
        for kind in kinds:
            if kind["wrong"]:
                lines.append(f"| {run} | `{kind['kind']}` | {kind['turns']:,} | {kind['wrong']:,} | "
                             f"{kind['accuracy']:.3f} |")
        if right:
            lines.append(f"| {run} | the other {len(right)} responses | {sum(k['turns'] for k in right):,} | 0 | "
                         "1.000 |")
        turns, wrong = sum(k["turns"] for k in kinds), sum(k["wrong"] for k in kinds)
        lines.append(f"| {run} | every turn | {turns:,} | {wrong:,} | {1 - wrong / turns:.3f} |")
        dialogs = result["dialogs"]
        count, perfect = dialogs["dialogs"], dialogs["right_at_every_turn"]
        lines.append(f"| {run} | whole dialogs (wrong only at an updated `api_call`: "
                     f"{dialogs['wrong_only_at_updated_api_calls']:,}) | {count:,} | {count - perfect:,} | "
                     f"{perfect / count:.3f} |")
    return "\n".join(lines)


def carnn_dialog_update_slots():
    """The slots of a dialog bAbI run's updated API calls (benchmarks/dialog_errors.py, `carnn_dialog_babi/errors/*.json`):
    the slots the user changed since the previous call and the others, by what the chosen call holds there (the
    new value, the previous one, another); calls answered with no API call are not counted."""
    lines = ["| run | slots of the updated API calls | slots | right | previous value | another value |",
             "|---|---|---|---|---|---|"]
    for path in _files("carnn_dialog_babi/errors/*.json"):
        result = _read_json(path)
        run = _error_run(result)
        for change, counts in result["updated_api_call_slots"].items():
            total = sum(counts.values())
            shares = " | ".join(f"{counts[state]:,} ({counts[state] / total:.3f})" if total else "0"
                                for state in ("right", "previous value", "another value"))
            lines.append(f"| {run} | {change} by the user | {total:,} | {shares} |")
    return "\n".join(lines)


def carnn_dialog_history():
    """What the dialog preprocessor's history cut drops from dialog bAbI task 6's histories
    (benchmarks/dialog_history.py, `carnn_dialog_task6/history/cuts.json`): per split, `history_cut` (`oldest`:
    the last `max_turns` texts; `kb_first`: the utterances, then the latest KB lines) and `max_turns`, the share of
    responses whose history is cut, whose cut drops a user utterance, and whose cut drops a KB line. The
    no-cut row (`max_turns` none) is given once per split."""
    result = _read_json(_files("carnn_dialog_task6/history/cuts.json")[0])
    lines = ["| split | responses | history_cut | max_turns | share cut | cut drops a user text | "
             "cut drops a KB line |", "|---|---|---|---|---|---|---|"]
    for split, counted in result["splits"].items():
        uncut = None
        for cut in counted["cuts"]:
            if cut["max_turns"] is None:
                uncut = cut
                continue
            lines.append(f"| {split} | {counted['responses']:,} | {cut.get('history_cut', 'oldest')} | "
                         f"{cut['max_turns']} | {cut['cut']:.3f} | {cut['cut_drops_a_user_text']:.3f} | "
                         f"{cut['cut_drops_a_kb_line']:.3f} |")
        if uncut is not None:
            lines.append(f"| {split} | {counted['responses']:,} | – | none | {uncut['cut']:.3f} | "
                         f"{uncut['cut_drops_a_user_text']:.3f} | {uncut['cut_drops_a_kb_line']:.3f} |")
    return "\n".join(lines)


def _task6_line(label, values, runs, paired):
    """A row of `_task6_variant`'s table: the runs' figures, `paired` (its difference cell), and their epochs and
    wall time ("–" for a vote, which trains nothing)."""
    from summarize import cell

    trained = all("epochs_run" in r for r in runs)
    return (f"| {label} | {' | '.join(map(str, values))} | {_seeds(runs)} | "
            f"{_mean(runs, 'dev', 'per_response_accuracy')} | {_mean(runs, 'test', 'per_response_accuracy')} | "
            f"{_mean(runs, 'test', 'per_dialog_accuracy')} | {paired} | "
            + (f"{cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |" if trained else "– | – |"))


def _task6_variant(plan_folder, columns):
    """Issue 58's CARNN rows on dialog bAbI task 6 that change one thing (`benchmarks/ablations/<plan_folder>.json`),
    beside the rows of `carnn_dialog_task6.json` (the presets: the same entries, settings and seeds) of the models
    the plan trains, with each row's test per-response accuracy minus that of the presets' row of its model, paired
    by seed. `columns`: (heading, the row's value from its `set` settings, the presets' value) for the settings the
    plan changes."""
    variants = _plan_row_groups(plan_folder)
    models = {row["model"] for row, _ in variants}
    baselines = {row["model"]: (row, _row_runs(groups)) for row, groups in _plan_row_groups("carnn_dialog_task6")
                 if row["model"] in models}
    headings = " | ".join(heading for heading, _, _ in columns)
    lines = [f"| row | {headings} | seeds | dev per-response | test per-response | test per-dialog | "
             "test per-response minus the presets (paired seeds) | epochs | wall s |",
             "|---|" + "---|" * (len(columns) + 7)]

    for row, base_runs in baselines.values():
        lines.append(_task6_line(row["label"], [preset for _, _, preset in columns], base_runs, "–"))
    for row, groups in variants:
        values = [value(row.get("set", {})) for _, value, _ in columns]
        runs = _row_runs(groups)
        if not runs:
            lines.append(f"| {row['label']} | {' | '.join(map(str, values))} | not run yet |" + " – |" * 6)
            continue
        lines.append(_task6_line(row["label"], values, runs,
                                 _paired_cell(runs, baselines[row["model"]][1], figure="per_response_accuracy")))
    lines.extend(_task6_votes(plan_folder, variants, columns))
    return "\n".join(lines)


def _vote_runs(plan_folder):
    """The CARNN votes of a task 6 plan (benchmarks/dialog_vote.py, `<plan_folder>/voting/s*.json`), each read as a
    run of its seed whose figures are the vote's (so that `_mean` and `_paired` serve it), with `rows`, the plan
    rows it voted over, and `file`, its path relative to benchmarks/results; [] before a vote has run."""
    votes = [(path, _read_json(path)) for path in sorted(RESULTS.glob(f"{plan_folder}/voting/s*.json"))]
    return [dict({split: scored["voting"] for split, scored in vote["splits"].items()}, seed=vote["seed"],
                 rows=tuple(member["row"] for member in vote["members"]), file=str(path.relative_to(RESULTS)))
            for path, vote in votes]


def _task6_votes(plan_folder, variants, columns):
    """The lines of a `_task6_variant` table for the CARNN votes of the plan's rows (benchmarks/dialog_vote.py,
    `<plan_folder>/voting/s*.json`), after the presets' vote (`carnn_dialog_task6/voting/s*.json`), each vote's
    test per-response accuracy minus the presets' vote of the same seed; none before a vote has run (`_vote_runs`)."""

    votes = _vote_runs(plan_folder)
    if not votes:
        return []
    presets = _vote_runs("carnn_dialog_task6")
    lines = [_task6_line("CARNN voting of the presets' rows", [preset for _, _, preset in columns], presets, "–")] \
        if presets else []
    by_members = {}
    for vote in votes:
        by_members.setdefault(vote["rows"], []).append(vote)
    for rows, group in by_members.items():
        settings = variants[rows[0]][0].get("set", {})
        lines.append(_task6_line("CARNN voting of rows " + ", ".join(map(str, rows)),
                                 [value(settings) for _, value, _ in columns], group,
                                 _paired_cell(group, presets, figure="per_response_accuracy")))
    return lines


def carnn_dialog_task6_history():
    """Issue 58: nCARNN on dialog bAbI task 6 with the history cut changed (`benchmarks/ablations/
    carnn_dialog_task6_history.json`) beside the presets' cut (`_task6_variant`)."""
    return _task6_variant("carnn_dialog_task6_history", [
        ("history_cut", lambda settings: settings.get("history_cut", "oldest"), "oldest"),
        ("max_turns", lambda settings: settings.get("max_turns", 30), 30)])


def carnn_dialog_task6_width():
    """Issue 58: nCARNN on dialog bAbI task 6 at the paper's width and between (`benchmarks/ablations/
    carnn_dialog_task6_width.json`: 512 and 1,024 units) beside the presets' 256 (`_task6_variant`), and the votes of
    its 1,024-unit rows beside the presets' (`_task6_votes`)."""
    return _task6_variant("carnn_dialog_task6_width", WIDTH_COLUMNS)


WIDTH_COLUMNS = [("units", lambda settings: f"{settings.get('units', 256):,}", 256),
                 ("precision", lambda settings: settings.get("precision", "float32"), "float32")]
"""The settings columns of the width tables (`_task6_variant`)."""


def carnn_dialog_task6_width_again():
    """Issue 58: seed 1234's 1,024-unit rows of the width plan trained again in full on one machine
    (`benchmarks/ablations/carnn_dialog_task6_width_again.json`) beside the presets' rows, and their vote beside the
    presets' vote of the seed (`_task6_variant`, the width table's columns)."""
    return _task6_variant("carnn_dialog_task6_width_again", WIDTH_COLUMNS)


def carnn_dialog_task6_lr():
    """Issue 58: nCARNN on dialog bAbI task 6 at the search space's other learning rates (`benchmarks/ablations/
    carnn_dialog_task6_lr.json`: 5e-4 and 3e-4, an epoch cap of 40) beside the presets' 1e-3 (`_task6_variant`)."""
    return _task6_variant("carnn_dialog_task6_lr", [
        ("learning rate", lambda settings: f"{settings.get('learning_rate', 0.001):g}", "0.001"),
        ("epoch cap", lambda settings: settings.get("epochs", 30), 30)])


GRID_DEFAULTS = {"training.precision": "float32", "preprocessing.history_cut": "oldest"}
"""Settings a result file written before they existed did not record, at the value every run had then."""
GRID_IGNORED = ("training.epochs", "training.state_cache")
"""Settings that do not make two trials differ: the epoch cap (a run that stopped on patience before its cap is
the run of any higher cap) and the backbone state cache (a dialog entry has no backbone)."""


GRID_TRAINED_AGAIN = ("carnn_dialog_task6_width_again",)
"""Task 6 plans that train another plan's rows again on the same seed (seed 1234's 1,024-unit rows of the width plan,
for their vote): the search reads the first training of a combination, the one its choice was made with, and says
so where the second differs (docs/carnn-dialog.md, The search)."""


def _trial_settings(run):
    """A run's settings (its provenance's `settings`) as `{"section.key": value}`, `GRID_DEFAULTS` filled in,
    `GRID_IGNORED` and unset (None) settings left out (a file written before a setting existed does not hold it)."""
    recorded = (run.get("provenance") or {}).get("settings") or {}
    flat = dict(GRID_DEFAULTS)
    flat.update({f"{section}.{key}": value for section, values in recorded.items() if isinstance(values, dict)
                 for key, value in values.items()})
    return {key: value for key, value in flat.items() if key not in GRID_IGNORED and value is not None}


def _grid_trial(row, base, candidates):
    """The run of a grid row trained by another plan: of `candidates` (`(path, model, run)`), the run of the row's
    model whose settings are the presets' run's (`base`, `_trial_settings`) with the row's `set` in place, and which
    stopped on patience before its own epoch cap (so a higher cap would not have changed it). `(path, run)`, or None.

    Raises:
        TableError: a `set` key the presets' settings do not hold once, or two runs that match.
    """
    expected = dict(base)
    for key, value in row.get("set", {}).items():
        if key == "epochs":
            continue
        names = [name for name in expected if name.split(".", 1)[1] == key]
        if len(names) != 1:
            raise TableError(f"{row['label']}: the setting {key!r} is not once in the presets' run's settings")
        expected[names[0]] = value
    found = []
    for path, model, run in candidates:
        cap = (run["provenance"].get("settings") or {}).get("training", {}).get("epochs")
        if model == row["model"] and _trial_settings(run) == expected and cap and run["epochs_run"] < cap:
            found.append((path, run))
    if len(found) > 1:
        raise TableError(f"{row['label']}: {len(found)} runs of other plans have its settings: "
                         f"{[str(path.relative_to(RESULTS)) for path, _ in found]}")
    return found[0] if found else None


def _grid_trials():
    """The trials of the task 6 search (`carnn_dialog_task6_grid`, see there), in the plan's order: `[(number, row,
    run or None, the result file relative to benchmarks/results or None)]`, the finished trial with the highest dev
    per-response accuracy (None before any has finished), and whether every combination has finished.

    Raises:
        TableError: a combination's entry without a presets' run of the seed, or two other runs that match it.
    """
    grid = "carnn_dialog_task6_grid"
    seed = _plan(grid)["seeds"][0]
    candidates = [(path, model, run) for path in sorted(RESULTS.glob(f"carnn_dialog_task6*/*-s{seed}.json"))
                  if path.parent.name not in (grid, *GRID_TRAINED_AGAIN)
                  for model, result in _read(path).items() for run in result["runs"]
                  if run["seed"] == seed]  # every other task 6 plan's runs of the seed, each file read once
    bases = {model: run for path, model, run in candidates if path.parent.name == "carnn_dialog_task6"}
    trials = []
    for number, (row, groups) in enumerate(_plan_row_groups(grid)):
        runs = _row_runs(groups)
        if runs:
            trials.append((number, row, runs[0], f"{grid}/{number:02d}-s{seed}.json"))
            continue
        if row["model"] not in bases:
            raise TableError(f"{row['label']}: no presets' run of {row['model']} at seed {seed} in "
                             "carnn_dialog_task6/")
        other = _grid_trial(row, _trial_settings(bases[row["model"]]), candidates)
        trials.append((number, row, other[1], str(other[0].relative_to(RESULTS))) if other
                      else (number, row, None, None))
    finished = [trial for trial in trials if trial[2] is not None]
    best = max(finished, key=lambda trial: trial[2]["dev"]["per_response_accuracy"]) if finished else None
    return trials, best, len(finished) == len(trials)


def carnn_dialog_task6_grid():
    """Issue 58: the search space `tuning/carnn_dialog.json` for nCARNN on dialog bAbI task 6, one trial per
    combination on one seed (`benchmarks/ablations/carnn_dialog_task6_grid.json`), in the space's order. A
    combination another task 6 plan has trained with the same settings (`_grid_trial`) is read from that plan's
    file, named in the last column; the presets' runs (`carnn_dialog_task6/`) give the settings the others are
    compared with. The finished trial with the highest dev per-response accuracy is marked "chosen on dev" ("best so
    far" while trials are left)."""
    trials, best, complete = _grid_trials()
    mark = "chosen on dev" if complete else "best so far"
    lines = ["| learning rate | units | max_turns | precision | dev per-response | test per-response | "
             "test per-dialog | best epoch / epochs | result file |", "|---|---|---|---|---|---|---|---|---|"]
    for number, row, run, path in trials:
        settings = row["set"]
        values = (f"{settings['learning_rate']:g} | {settings['units']:,} | {settings['max_turns']} | "
                  f"{settings['precision']}")
        if run is None:
            lines.append(f"| {values} | not run yet | – | – | – | – |")
            continue
        dev = f"{run['dev']['per_response_accuracy']:.3f}" + (f" ({mark})" if number == best[0] else "")
        lines.append(f"| {values} | {dev} | {run['test']['per_response_accuracy']:.3f} | "
                     f"{run['test']['per_dialog_accuracy']:.3f} | {run['best_epoch']} / {run['epochs_run']} | "
                     f"`{path}` |")
    return "\n".join(lines)


def _search_choice():
    """The task 6 search's combination as the seeds plan trains it (`benchmarks/ablations/
    carnn_dialog_task6_search_seeds.json`; see `carnn_dialog_task6_search_seeds`): its plan row, its row number in
    the search, its runs (seed 1234 from the search's own trial, `_grid_trials`, then the plan's) and their result
    files relative to benchmarks/results.

    Raises:
        TableError: the plan's row is not one of the search's combinations, or is not the one highest on dev once
            every combination has finished.
    """
    (row, groups), = _plan_row_groups("carnn_dialog_task6_search_seeds")
    trials, best, complete = _grid_trials()
    same = [trial for trial in trials if trial[1]["model"] == row["model"] and trial[1]["set"] == row["set"]]
    if not same:
        raise TableError(f"carnn_dialog_task6_search_seeds.json: its row ({row['label']}) is not a combination of "
                         "carnn_dialog_task6_grid.json")
    number, _, trial, trial_path = same[0]
    if complete and best[0] != number:
        raise TableError(f"carnn_dialog_task6_search_seeds.json: its row is the search's row {number}, but the "
                         f"combination chosen on dev is row {best[0]} ({best[1]['label']}): change the plan's row")
    own = _row_runs(groups)
    runs = ([trial] if trial is not None else []) + own
    files = ([trial_path] if trial is not None else []) + [
        f"carnn_dialog_task6_search_seeds/00-s{run['seed']}.json" for run in own]
    return row, number, runs, files


def carnn_dialog_task6_search_seeds():
    """Issue 58: the task 6 search's combination on three seeds (`benchmarks/ablations/
    carnn_dialog_task6_search_seeds.json`: its row is the search's combination, its seeds the two the search does
    not run; seed 1234 is the search's own trial, `_grid_trials`) beside the runs it is paired with seed by seed:
    the presets' nCARNN (`carnn_dialog_task6.json`: 256 units, learning rate 1e-3) and nCARNN at 1,024 units and
    1e-3 (`carnn_dialog_task6_width.json` row 1). Its difference from the first is everything the search changed,
    from the second what it changed beside the width.

    Raises:
        TableError: the plan's row is not one of the search's combinations, or is not the one highest on dev once
            every combination has finished.
    """
    row, number, runs, files = _search_choice()
    files = [f"`{path}`" for path in files]
    base_number, presets = next((k, _row_runs(found)) for k, (base, found)
                                in enumerate(_plan_row_groups("carnn_dialog_task6")) if base["model"] == row["model"])
    width_number = 1  # carnn_dialog_task6_width.json's nCARNN at 1,024 units
    width_row, width_groups = _plan_row_groups("carnn_dialog_task6_width")[width_number]
    wide = _row_runs(width_groups)
    lines = ["| row | learning rate | units | seeds | dev per-response | test per-response | test per-dialog | "
             "test per-response minus the presets' (paired seeds) | minus 1,024 units at 1e-3 (paired seeds) | "
             "epochs | result files |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def line(label, settings, group, against_presets, against_wide, where):
        from summarize import cell

        return (f"| {label} | {settings.get('learning_rate', 0.001):g} | {settings.get('units', 256):,} | "
                f"{_seeds(group)} | {_mean(group, 'dev', 'per_response_accuracy')} | "
                f"{_mean(group, 'test', 'per_response_accuracy')} | {_mean(group, 'test', 'per_dialog_accuracy')} | "
                f"{against_presets} | {against_wide} | {cell([r['epochs_run'] for r in group], 1)} | {where} |")

    lines.append(line("the presets' nCARNN", {}, presets, "–", "–",
                      f"`carnn_dialog_task6/{base_number:02d}-s*.json`"))
    lines.append(line(width_row["label"], width_row["set"], wide,
                      _paired_cell(wide, presets, figure="per_response_accuracy"), "–",
                      f"`carnn_dialog_task6_width/{width_number:02d}-s*.json`"))
    lines.append(line(f"{row['label']} (the search's row {number})", row["set"], runs,
                      _paired_cell(runs, presets, figure="per_response_accuracy"),
                      _paired_cell(runs, wide, figure="per_response_accuracy"), ", ".join(files) or "not run yet"))
    return "\n".join(lines)


TASK6_CHANGES = [("carnn_dialog_task6_history", 0), ("carnn_dialog_task6_history", 1),
                 ("carnn_dialog_task6_width", 0), ("carnn_dialog_task6_width", 1), ("carnn_dialog_task6_width", 2),
                 ("carnn_dialog_task6_width", 3), ("voting", 1024), ("carnn_dialog_task6_lr", 0),
                 ("carnn_dialog_task6_lr", 1), ("search", None)]
"""The rows of `carnn_dialog_task6_changes`, in the order the changes were tried: (plan folder, row number) of a
plan that changes one thing beside the presets; ("voting", units), the CARNN vote of the plans' rows at that width;
("search", None), the task 6 search's combination (`_search_choice`)."""


def _task6_vote_runs(units):
    """The CARNN votes over rows that all train at `units` hidden units, from the width plans
    (`carnn_dialog_task6_width` and `carnn_dialog_task6_width_again`, which trains seed 1234's 1,024-unit rows
    again for its vote), each read as a run (`_vote_runs`).

    Raises:
        TableError: two such votes of one seed.
    """
    runs = []
    for folder in ("carnn_dialog_task6_width", "carnn_dialog_task6_width_again"):
        rows = _plan(folder)["rows"]
        for vote in _vote_runs(folder):
            if all(rows[number].get("set", {}).get("units") == units for number in vote["rows"]):
                if any(run["seed"] == vote["seed"] for run in runs):
                    raise TableError(f"{vote['file']}: a second vote at {units:,} units of seed {vote['seed']} "
                                     f"(the other is {next(r['file'] for r in runs if r['seed'] == vote['seed'])})")
                runs.append(vote)
    return runs


def carnn_dialog_task6_changes():
    """Issue 58: every change tried on dialog bAbI task 6 (`TASK6_CHANGES`), each against the presets' runs of its
    entry on the same seeds (`carnn_dialog_task6.json`, paired by seed): the change's test per-response accuracy,
    its paired difference from the presets', the presets' own spread over those seeds (the standard deviation of
    their test figures), and the share of the distance from the presets' mean on those seeds to the paper's figure
    (the entry's `reported` test per-response accuracy; the vote's `voting_per_response_accuracy`) that the change
    closes. A change that has not run yet is listed as such.

    Raises:
        TableError: a result file missing its provenance, a plan row without a presets' row of its entry, or two
            votes of one seed (`_task6_vote_runs`).
    """
    import statistics

    from summarize import figures_on

    presets, paper = {}, {}
    for row, groups in _plan_row_groups("carnn_dialog_task6"):
        presets[row["model"]] = _row_runs(groups)
        for group in groups.values():
            reported = group["result"].get("reported") or {}
            paper[row["model"]] = reported.get("per_response_accuracy")
            paper["voting"] = paper.get("voting") or reported.get("voting_per_response_accuracy")
    presets["voting"] = _vote_runs("carnn_dialog_task6")
    lines = ["| change | entry | seeds | test per-response | minus the presets (paired seeds) | the presets' spread "
             "on those seeds | share of the distance to the paper closed | result files |",
             "|---|---|---|---|---|---|---|---|"]
    for source, number in TASK6_CHANGES:
        if source == "voting":
            label, model = f"CARNN voting, {number:,} units", "voting"
            runs = _task6_vote_runs(number)
            files = ", ".join(f"`{run['file']}`" for run in runs)
        elif source == "search":
            row, trial, runs, paths = _search_choice()
            label, model = f"{row['label']} (the search's choice, its row {trial})", row["model"]
            files = ", ".join(f"`{path}`" for path in paths)
        else:
            row, groups = _plan_row_groups(source)[number]
            label, model, runs = row["label"], row["model"], _row_runs(groups)
            files = f"`{source}/{number:02d}-s*.json`"
        if model not in presets:
            raise TableError(f"{label}: no row of {model} in carnn_dialog_task6.json to pair it with")
        entry = "`carnn_dialog_n` + `_i` + `_s`" if model == "voting" else f"`{model}`"
        if not runs:
            lines.append(f"| {label} | {entry} | not run yet | – | – | – | – | – |")
            continue
        common = {run["seed"] for run in runs} & {run["seed"] for run in presets[model]}

        def test_figures(group):
            return [figures_on(run, "test")["per_response_accuracy"] for run in group if run["seed"] in common]

        mine, theirs = test_figures(runs), test_figures(presets[model])
        spread = f"± {statistics.stdev(theirs):.3f}" if len(theirs) > 1 else "–"
        share = "–"
        if paper.get(model) and theirs:
            gained = statistics.mean(mine) - statistics.mean(theirs)
            share = f"{100 * gained / (paper[model] - statistics.mean(theirs)):.0f} %"
        lines.append(f"| {label} | {entry} | {_seeds(runs)} | {_mean(runs, 'test', 'per_response_accuracy')} | "
                     f"{_paired_cell(runs, presets[model], figure='per_response_accuracy')} | {spread} | {share} | "
                     f"{files} |")
    return "\n".join(lines)


def _cut_results():
    """The files of benchmarks/dialog_cut_scoring.py for task 6 (`carnn_dialog_task6_grid/cuts/*.json`), read and
    checked once for the three tables that show them."""
    return [_read_json(path) for path in _files("carnn_dialog_task6_grid/cuts/*.json")]


def _cut_run_name(run):
    """A scored run as the cut tables name it: its entry, seed, learning rate, width and the texts it trained on."""
    settings = run["settings"]
    return (f"`{run['zoo']}` seed {run['seed']}, lr {settings['training']['learning_rate']:g}, "
            f"{settings['model']['units']:,} units, trained on {run['trained_max_turns']} texts")


def carnn_dialog_task6_cuts():
    """Issue 58: the search's nCARNN trials on task 6 scored with their history cut at other lengths than they were
    trained with (benchmarks/dialog_cut_scoring.py, `carnn_dialog_task6_grid/cuts/*.json`): for each run, split and
    number of texts read, the per-response accuracy over all responses, over the short histories (every scoring
    reads the same texts) and over the longer ones by whether the texts the longest cut adds hold a user
    utterance."""
    results = _cut_results()
    shortest = {result["short_history_max_texts"] for result in results}
    short = f"at most {shortest.pop()} texts" if len(shortest) == 1 else "at most the shorter cut"
    lines = [f"| run (entry, seed, settings) | split | texts read | per-response | history of {short} | longer: the "
             "added texts hold a user utterance | longer: they hold none |", "|---|---|---|---|---|---|---|"]
    for result in results:
        for run in result["runs"]:
            name = _cut_run_name(run)
            for scoring in run["scorings"]:
                texts = f"{scoring['max_turns']}" + (" (as trained)" if scoring["as_trained"] else "")
                shares = " | ".join("–" if scoring[key] is None else f"{scoring[key]:.3f}" for key in (
                    "all", "short_history", "long_history_adds_a_user_text", "long_history_adds_no_user_text"))
                lines.append(f"| {name} | {result['split']} | {texts} | {shares} |")
    return "\n".join(lines)


def carnn_dialog_task6_cut_changes():
    """Issue 58: of the same files as `carnn_dialog_task6_cuts`, the gold responses whose choice a run's other cut
    changes from its own, by the response's template (its KB words left out, benchmarks/dialog_cut_scoring.py
    `flips`): the three templates with the most changes for each run, split and cut."""
    lines = ["| run (entry, seed, settings) | split | texts read | gold response's template | responses | right at "
             "the run's own cut, wrong here | wrong there, right here |", "|---|---|---|---|---|---|---|"]
    for result in _cut_results():
        for run in result["runs"]:
            name = _cut_run_name(run)
            for scoring in run["scorings"]:
                for row in (scoring.get("changed_from_as_trained") or [])[:3]:
                    lines.append(f"| {name} | {result['split']} | {scoring['max_turns']} | `{row['template']}` | "
                                 f"{row['responses']:,} | {row['right_to_wrong']:,} | {row['wrong_to_right']:,} |")
    return "\n".join(lines)


def carnn_dialog_task6_cut_restaurants():
    """Issue 58: of the same files as `carnn_dialog_task6_cuts`, where the restaurant of each choice that a run's other
    cut changes stands in the response's history (benchmarks/dialog_cut_scoring.py `restaurants_of_changed_choices`,
    its `RESTAURANT_KINDS`): for the responses the other cut makes wrong, the restaurant it chooses instead and the gold
    response's; for those it makes right, the restaurant the run's own cut chose and the gold response's. Files
    written before the script placed them are left out."""
    rows, cuts = [], set()
    for result in _cut_results():
        for run in result["runs"]:
            for scoring in run["scorings"]:
                placed = scoring.get("restaurants_of_changed_choices")
                if placed is None:
                    continue
                for way, who, label in (("right_to_wrong", "chosen", "right → wrong: the choice here"),
                                        ("right_to_wrong", "gold", "right → wrong: the gold response"),
                                        ("wrong_to_right", "chosen_as_trained", "wrong → right: the choice at the "
                                         "run's own cut"),
                                        ("wrong_to_right", "gold", "wrong → right: the gold response")):
                    counts = placed[way][who]
                    cuts.add((result["short_history_max_texts"], result["longest_cut"]))
                    rows.append(f"| {_cut_run_name(run)} | {result['split']} | {scoring['max_turns']} | {label} | "
                                f"{sum(counts.values()):,} | " + " | ".join(f"{count:,}" for count in counts.values())
                                + " |")
    if not rows:
        return "No cut file places its changed choices yet (run benchmarks/dialog_cut_scoring.py again)."
    (shortest, longest), = cuts if len(cuts) == 1 else {("N", "M")}  # files of other cuts: named generically
    header = (f"offered by the bot in the last {shortest} texts", f"offered only in the texts the last {longest} add",
              f"in KB lines of the last {shortest} texts", f"in KB lines only of the texts the last {longest} add",
              f"in none of the last {longest} texts", "names no restaurant")
    return "\n".join([f"| run (entry, seed, settings) | split | texts read | changed choices | responses | "
                      + " | ".join(header) + " |", "|---|---|---|---|---|" + "---|" * len(header), *rows])


def carnn_dialog_task6_templates():
    """Issue 58: how many gold responses of each template (benchmarks/dialog_cut_scoring.py `template_counts`) the
    training, dev and test splits of task 6 hold, for the templates of `carnn_dialog_task6_cut_changes` (the
    training split's counts from any of the files, each other split's from its own)."""
    counts, shown = {}, []
    for result in _cut_results():
        for split, templates in result["template_responses"].items():
            counts[split] = templates
        for run in result["runs"]:
            for scoring in run["scorings"]:
                shown.extend(row["template"] for row in (scoring.get("changed_from_as_trained") or [])[:3])
    splits = [split for split in ("train", "dev", "test") if split in counts]
    lines = ["| gold response's template | " + " | ".join(f"{split} responses" for split in splits) + " |",
             "|---|" + "---|" * len(splits)]
    for template in sorted(set(shown), key=lambda t: (-sum(counts[s].get(t, 0) for s in splits), t)):
        lines.append(f"| `{template}` | " + " | ".join(f"{counts[s].get(template, 0):,}" for s in splits) + " |")
    return "\n".join(lines)


def carnn_dialog_units():
    """Issue 58: one training step of `carnn_dialog_n` on dialog bAbI task 6's real batches at 256, 512 and 1,024
    units, in float32 and mixed bfloat16 (benchmarks/precision.py `--set units=N`,
    `precision/carnn_dialog_n-units*.json`), the process's peak memory, and one epoch's training steps at that
    step time (14,404 responses in batches of 32: 451 steps; without the per-epoch dev / test scoring)."""
    paths = [path for path in RESULTS.glob("precision/carnn_dialog_n-units*.json")
             if path.stem.split("units")[1].isdigit()]
    paths.sort(key=lambda path: int(path.stem.split("units")[1]))
    if not paths:
        raise TableError("no precision/carnn_dialog_n-units*.json: run benchmarks/precision.py carnn_dialog_n "
                         "--set units=N")
    lines = ["| units | step ms float32 | step ms mixed_bfloat16 | float32 / bfloat16 | peak memory GB | "
             "an epoch's 451 steps, min (the faster precision) |", "|---|---|---|---|---|---|"]
    for path in paths:
        (entry,) = _read_json(path)["entries"].values()
        if "error" in entry:
            raise TableError(f"{path.name}: the measurement failed: {entry['error']}")
        steps = entry["step_ms"]
        fastest = min(steps.values())
        lines.append(f"| {entry['settings']['units']:,} | {steps['float32']:.0f} | {steps['mixed_bfloat16']:.0f} | "
                     f"{entry['step_ratio']:.2f} | {entry['peak_rss_mb'] / 1024:.1f} | {451 * fastest / 60000:.0f} |")
    return "\n".join(lines)


def carnn_dialog_history_lengths():
    """Dialog bAbI task 6's history lengths in texts, every text and without the KB lines
    (benchmarks/dialog_history.py, `carnn_dialog_task6/history/cuts.json`)."""
    result = _read_json(_files("carnn_dialog_task6/history/cuts.json")[0])
    lines = ["| split | texts | mean | p50 | p90 | p99 | longest |", "|---|---|---|---|---|---|---|"]
    for split, counted in result["splits"].items():
        for kind, label in (("texts", "every text"), ("texts_without_kb_lines", "without KB lines")):
            d = counted["history"][kind]
            lines.append(f"| {split} | {label} | {d['mean']:.1f} | {d['p50']:.0f} | {d['p90']:.0f} | {d['p99']:.0f} | "
                         f"{d['max']} |")
    return "\n".join(lines)


def _speaker_accuracy(accuracy, alpha):
    """The eq. 12 speaker accuracy cell: `–` without a speaker head; with alpha 1 (eq. 13 without its label term, the
    paper's "w/o latent") the head is built but nothing trains it, so its figure is not shown."""
    if accuracy is None:
        return "–"
    return "– (head not trained: alpha 1)" if alpha == 1 else f"{accuracy:.3f}"


def contextual_lm():
    """The contextual language model of the CARNN paper (section 4.2) against the same model without context and a
    plain LSTM LM, on dialog bAbI task 6's utterances (benchmarks/contextual_lm.py, `contextual_lm/*.json`): test
    perplexity of the epoch with the lowest dev perplexity. Not comparable with the paper's Table 2 (Switchboard,
    Penn Discourse Treebank)."""
    order = {"contextual": 0, "no_context": 1, "lstm": 2}
    results = [(path, _read_json(path)) for path in _files("contextual_lm/*.json")]
    variants = {"n": 0, "i": 1, "s": 2}
    results.sort(key=lambda item: (order.get(item[1].get("model"), 3), variants.get(item[1].get("variant"), 3),
                                   item[1]["settings"].get("seed", 0), item[0].name))
    lines = ["| model | LM unit | alpha | hidden | seed | parameters (unused) | epochs (best) | dev perplexity | "
             "test perplexity | eq. 12 speaker accuracy, test | s / epoch |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    units = {"n": "nCARNN", "i": "iCARNN", "s": "sCARNN"}
    for path, result in results:
        settings, parameters = result["settings"], result["parameters"]
        unit = "LSTM" if result["model"] == "lstm" else units.get(result.get("variant"), "?")
        alpha = settings.get("alpha")
        accuracy = result.get("test_label_accuracy")
        seconds = result.get("epoch_seconds_untraced_median") or result.get("epoch_seconds_median")
        part = f" (first {settings['max_train_dialogs']} training dialogs)" if settings.get("max_train_dialogs") else ""
        lines.append(f"| `{result['model']}`{part} | {unit} | {'–' if alpha is None else alpha} | {settings['hidden']} | "
                     f"{settings.get('seed', 0)} | {parameters['trainable']:,} ({parameters.get('unused', 0):,}) | "
                     f"{len(result['epochs'])} ({result['best_epoch']}) | {result['dev_perplexity']:.2f} | "
                     f"{result['test_perplexity']:.2f} | {_speaker_accuracy(accuracy, alpha)} | "
                     f"{seconds:.0f} |")
    return "\n".join(lines)


def coupled_lstm_ranking():
    """Coupled-LSTMs ranking TrecQA clean (TRAIN) and WikiQA answers (the paper's ranking set is not available)."""
    return _plan_table("coupled_lstm_ranking", [("dev", ["map"]), ("test", ["map", "mrr", "p@1"])], RANKING)


def coupled_lstm_sick():
    """Coupled-LSTMs on SICK entailment, and SNLI as transfer (the paper trains on SNLI, not available here)."""
    return _plan_table("coupled_lstm_sick", [("dev", ["accuracy"]), ("test", ["accuracy", "macro_f1"]),
                                             ("snli:dev", ["accuracy"]), ("snli", ["accuracy"])], RANKING)


def coupled_lstm_sick_lr():
    """Issue 58: the Coupled-LSTMs paper's learning-rate grid on SICK (`benchmarks/ablations/coupled_lstm_sick_lr.json`)
    beside each entry's own rate 0.005 (`coupled_lstm_sick.json`, the same seeds), with each row's test accuracy
    minus its entry's at 0.005, paired by seed."""
    return _rate_grid("coupled_lstm_sick_lr", "coupled_lstm_sick", "0.005 (Table 1)", "accuracy",
                      [("dev", "accuracy"), ("test", "accuracy"), ("test", "macro_f1")],
                      ["dev accuracy", "test accuracy", "test macro-F1"])


def coupled_lstm_ranking_lr():
    """Issue 58: the Coupled-LSTMs paper's learning-rate grid for the ranking entries on WikiQA
    (`benchmarks/ablations/coupled_lstm_ranking_lr.json`) beside each entry's own rate 0.05 (its WikiQA row of
    `coupled_lstm_ranking.json`, the same seeds), with each row's test MAP minus the entry's at 0.05, paired by
    seed."""
    return _rate_grid("coupled_lstm_ranking_lr", "coupled_lstm_ranking", "0.05 (the entries')", "map",
                      [("dev", "map"), ("test", "map"), ("test", "mrr"), ("test", "p@1")],
                      ["dev MAP", "test MAP", "test MRR", "test P@1"])


def _rate_grid(grid_plan, baseline_plan, baseline_rate, paired_figure, columns, headers):
    """The table of a learning-rate grid: each row of `grid_plan` under its entry's run at its own rate
    (`baseline_rate`), the row of `baseline_plan` with the same model and dataset, and the grid row's test
    `paired_figure` minus that run's, paired by seed. `columns`: the (split, figure) cells, `headers` their names
    (the second one the test figure that is paired)."""
    from summarize import cell

    datasets = {plan: _plan(plan)["dataset"] for plan in (grid_plan, baseline_plan)}

    def key(plan, row):
        return row["model"], row.get("dataset", datasets[plan])

    baselines = {key(baseline_plan, row): _row_runs(groups) for row, groups in _plan_row_groups(baseline_plan)}
    lines = [f"| entry | dataset | learning rate | seeds | {' | '.join(headers)} | {headers[1]} minus lr "
             f"{baseline_rate.split()[0]} (paired seeds) | epochs | wall s |",
             "|---|---|---|---|" + "---|" * len(columns) + "---|---|---|"]

    def line(model, dataset, rate, runs, paired):
        cells = " | ".join(_mean(runs, split, figure) for split, figure in columns)
        return (f"| `{model}` | {dataset} | {rate} | {_seeds(runs)} | {cells} | {paired} | "
                f"{cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |")

    rows = _plan_row_groups(grid_plan)
    for entry in dict.fromkeys(key(grid_plan, row) for row, _ in rows):
        model, dataset = entry
        lines.append(line(model, dataset, baseline_rate, baselines.get(entry, []), "–"))
        for row, groups in [(row, groups) for row, groups in rows if key(grid_plan, row) == entry]:
            rate, runs = row["set"]["learning_rate"], _row_runs(groups)
            if not runs:
                lines.append(f"| `{model}` | {dataset} | {rate} | not run yet |" + " – |" * (len(columns) + 3))
                continue
            lines.append(line(model, dataset, rate, runs, _paired_cell(runs, baselines.get(entry, []),
                                                                      figure=paired_figure)))
    return "\n".join(lines)


def shipped_presets():
    """The trained presets shipped in the package (`keras_match/presets/<entry>/<dataset>/metadata.json`, written
    by benchmarks/ship_presets.py): the seed chosen on dev, the shipped weights' figures, the run's own test
    figures beside them (its float32 weights, computed in the precision it trained in, named where not float32)
    and the weights' storage."""
    import keras_match

    root = pathlib.Path(keras_match.__file__).parent / "presets"
    lines = ["| preset | seed | dev MAP / accuracy | test MAP / MRR / P@1, accuracy / macro-F1 or per-response / "
             "per-dialog accuracy | the run's test figures (its float32 weights) | weights | preset on disk |",
             "|---|---|---|---|---|---|---|"]
    paths = sorted(root.glob("*/*/metadata.json"))
    if not paths:
        raise TableError(f"no shipped preset under {root}: benchmarks/ship_presets.py writes them")

    def figures(split, names):
        return " / ".join(f"{split[name]:.4f}" for name in names if name in split)

    for path in paths:
        meta = json.loads(path.read_text(encoding="utf-8"))
        if "provenance" not in meta:
            raise TableError(f"{path}: no provenance")
        shipped = meta["weights"].get("figures") or meta["figures"]
        test = meta["figures"]["test"]
        names = next(names for names in (("map", "mrr", "p@1"), ("accuracy", "macro_f1"),
                                         ("per_response_accuracy", "per_dialog_accuracy")) if names[0] in test)
        size = sum(f.stat().st_size for f in path.parent.iterdir() if f.is_file())
        trained = meta.get("trained_precision", "float32")
        computed = f" (computed in {trained})" if trained != "float32" else ""
        lines.append(f"| `{path.parent.parent.name}/{path.parent.name}` | {meta['seed']} | "
                     f"{figures(shipped['dev'], names[:1])} | {figures(shipped['test'], names)} | "
                     f"{figures(meta['figures']['test'], names)}{computed} | {meta['weights']['dtype']}, "
                     f"{meta['weights']['bytes'] / 1e6:.1f} MB | {size / 1e6:.1f} MB |")
    return "\n".join(lines)


FIGURE_NAMES = {"map": "MAP", "mrr": "MRR", "p@1": "P@1", "accuracy": "accuracy", "macro_f1": "macro-F1",
                "per_response_accuracy": "per-response accuracy"}
"""The figures the zoo table can show, in its order, with their printed names."""


def _short_citation(paper):
    """'Tay, Luu, Hui. Title. KDD 2018.' -> 'Tay et al., KDD 2018' (first author, or both of two; venue, year)."""
    authors, _, rest = (paper or "").partition(". ")
    venue = re.search(r"\b([A-Z][A-Za-z]*(?:-[A-Z]+)? (?:19|20)\d\d)\b", rest)
    names = [name.strip() for name in authors.split(",")]
    first = " and ".join(names) if len(names) == 2 else names[0] + (" et al." if len(names) > 2 else "")
    return f"{first}, {venue.group(1) if venue else '?'}"


def zoo():
    """README's zoo table: every shipped preset's entry, its paper, the benchmark, the preset's test figure beside
    the paper's (`reported` in zoo/<family>/<entry>.json) when the paper reports one on that benchmark."""
    import keras_match
    from keras_match import zoo as zoo_module

    root = pathlib.Path(keras_match.__file__).parent / "presets"
    paths = sorted(root.glob("*/*/metadata.json"))
    if not paths:
        raise TableError(f"no shipped preset under {root}: benchmarks/ship_presets.py writes them")
    lines = ["| entry | paper | benchmark | test: ours (the preset) | test: the paper's | shipped preset |",
             "|---|---|---|---|---|---|"]
    for path in paths:
        meta = json.loads(path.read_text(encoding="utf-8"))
        if "provenance" not in meta:
            raise TableError(f"{path}: no provenance")
        entry, benchmark = path.parent.parent.name, path.parent.name
        preset = zoo_module.describe(entry)
        test = (meta["weights"].get("figures") or meta["figures"])["test"]
        reported = preset.get("reported") or {}
        on_benchmark = reported and benchmark.startswith(str(reported.get("dataset")))
        names = [name for name in FIGURE_NAMES if name in test and (not on_benchmark or name in reported)]
        if not on_benchmark:
            names = names[:2] if names[0] == "map" else names[:1]
        ours = " / ".join(f"{FIGURE_NAMES[name]} {test[name]:.3f}" for name in names)
        if on_benchmark:
            paper = " / ".join(f"{FIGURE_NAMES[name]} {reported[name]:.3f}" for name in names)
            paper += f" ({reported['table'].split(';')[0].split(',')[0]})" if reported.get("table") else ""
        elif reported:
            paper = f"– (the paper's set: {str(reported.get('dataset')).replace(' (', ', ').rstrip(')')})"
        else:
            paper = "– (no experiment on it)"
        if meta.get("holdout_dev"):
            benchmark += " (the official dev split as test)"
        lines.append(f"| `{entry}` | {_short_citation(preset.get('paper'))} | {benchmark} | {ours} | {paper} | "
                     f"`{entry}/{path.parent.name}` |")
    return "\n".join(lines)


def data():
    """The datasets: origin, license, files fetched / built and size on disk (benchmarks/fresh_machine.py)."""
    import fresh_machine

    path = RESULTS / "data" / "fresh_machine.json"
    try:
        return fresh_machine.table(path)
    except (OSError, ValueError) as error:
        raise TableError(str(error)) from None


def precision_steps():
    """float32 against mixed bfloat16: one training step and the 1 x 30 serving latency of each family's main
    entry (benchmarks/precision.py)."""
    import precision

    return precision.table(_read_json(RESULTS / "precision" / "steps.json"))


def precision_scoring():
    """Each shipped preset's test figures scored in float32 and in mixed bfloat16, against the 0.002 bar for
    serving in bfloat16 (benchmarks/precision_scoring.py)."""
    import precision_scoring

    folder = RESULTS / "precision_scoring"
    files = sorted(folder.glob("*.json"))
    if not files:
        raise TableError(f"{folder}: no result file")
    return precision_scoring.table([_read_json(path) for path in files], folder)


PRECISION_PAIRS = (
    ("ctrn_trecqa_raw", 2, 0), ("iwan_trecqa", 1, 1), ("compare_aggregate_wikiqa", 0, 2),
    ("precision_bfloat16", 3, 4),
)
"""(folder of the float32 row, its row, the mixed bfloat16 row of benchmarks/ablations/precision_bfloat16.json)."""


def precision_figures():
    """Issue 55's figures: each entry's float32 row beside the same settings trained in mixed bfloat16
    (benchmarks/ablations/precision_bfloat16.json), and whether bfloat16's test MAP is within one standard deviation
    of float32's seeds."""
    import statistics

    from summarize import cell

    header = ["model", "row", "precision", "seeds", "dev MAP", "test MAP", "test MRR", "epochs", "wall s",
              "bfloat16 within 1 std of float32"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for folder, row, bf16_row in PRECISION_PAIRS:
        maps = {}
        for kind, where, number in (("float32", folder, row), ("mixed_bfloat16", "precision_bfloat16", bf16_row)):
            try:
                paths = [path for path in _files(f"{where}/*-s*.json") if int(path.name.split("-")[0]) == number]
            except TableError:  # the plan's folder holds no result yet
                paths = []
            if not paths:
                lines.append(f"| | row {number} of {where} | {kind} | not run yet | | | | | | |")
                continue
            (name, label), group = next(iter(_groups(paths).items()))
            runs = group["runs"]
            maps[kind] = [r["test"]["map"] for r in runs if "map" in r.get("test", {})]
            verdict = ""
            if kind == "mixed_bfloat16" and len(maps.get("float32", [])) >= 2 and maps[kind]:
                spread = statistics.stdev(maps["float32"])
                gap = statistics.mean(maps[kind]) - statistics.mean(maps["float32"])
                word = "yes" if abs(gap) <= spread else ("no, above" if gap > 0 else "no, below")
                verdict = f"{word} ({gap:+.3f}, std {spread:.3f})"
                if len(maps[kind]) < 3:
                    verdict += f"; {len(maps[kind])} of 3 seeds"
            lines.append("| " + " | ".join([f"`{name}`", label or "", kind, _seeds(runs), _mean(runs, "dev", "map"),
                                            _mean(runs, "test", "map"), _mean(runs, "test", "mrr"),
                                            cell([r["epochs_run"] for r in runs], 1), _wall(runs), verdict]) + " |")
    return "\n".join(lines)


def _zero_shot(dataset):
    """The untrained bi-encoder's figures on `dataset`, by split (`encoder_rankers/zero_shot-<dataset>.json`,
    benchmarks/zero_shot.py)."""
    path = _files(f"encoder_rankers/zero_shot-{dataset}.json")[0]
    result = _read_json(path)
    try:
        return {split: scored["figures"] for split, scored in result["splits"].items()}
    except (KeyError, TypeError, AttributeError) as error:
        raise TableError(f"{path}: no figures by split ({error})") from None


def _paired(runs, baseline, split="test", figure="map"):
    """`runs` minus `baseline` on the seeds both have (the same seed: the same data order): the signed mean
    difference ± its standard deviation, and those seeds; ("–", "–") without a common seed."""
    import statistics

    from summarize import figures_on

    theirs = {r["seed"]: figures_on(r, split).get(figure) for r in baseline}
    differences = [(r["seed"], figures_on(r, split)[figure] - theirs[r["seed"]]) for r in runs
                   if theirs.get(r["seed"]) is not None and figure in figures_on(r, split)]
    if not differences:
        return "–", "–"
    values = [d for _, d in differences]
    spread = f" ± {statistics.stdev(values):.3f}" if len(values) > 1 else ""
    return f"{statistics.mean(values):+.3f}{spread}", ", ".join(str(seed) for seed, _ in differences)


def _paired_cell(runs, baseline, **figure):
    """`_paired` as one table cell: the difference with its seeds in brackets, "–" without a common seed."""
    difference, seeds = _paired(runs, baseline, **figure)
    return difference if seeds == "–" else f"{difference} ({seeds})"


def _plan(name):
    """The plan `benchmarks/ablations/<name>.json`."""
    return json.loads((ROOT / "benchmarks" / "ablations" / f"{name}.json").read_text(encoding="utf-8"))


def _plan_row_groups(plan_folder):
    """Each row of the plan `benchmarks/ablations/<plan_folder>.json` in the plan's order, with the groups
    (`_groups`) of its result files in `benchmarks/results/<plan_folder>/` (none before the row has run):
    `[(row, {(model, label): group})]`."""
    plan = _plan(plan_folder)
    paths = sorted(RESULTS.glob(f"{plan_folder}/*-s*.json"))
    return [(row, _groups([path for path in paths if int(path.name.split("-")[0]) == number]))
            for number, row in enumerate(plan["rows"])]


def _row_runs(groups):
    """Every run of a plan row's groups (`_plan_row_groups`), in order; [] before the row has run."""
    return [run for group in groups.values() for run in group["runs"]]


def _not_run(row, columns):
    """The table line of a plan row without a result file yet: its label, model, "not run yet", `columns` dashes."""
    return f"| {row['label']} | `{row['model']}` | not run yet |" + " – |" * columns


FROZEN_LABEL = "MiniLM frozen"
"""The label of the issue-57 plans' rows over MiniLM's frozen states: each other transformer-input row is paired
with the frozen row of its model (`_encoder_benchmark`)."""


def _encoder_benchmark(plan_folder, dataset, glove, papers, splits=None):
    """Issue 57's table for one benchmark: BM25 and the zero-shot bi-encoder (no training), the families' GloVe
    entries (`glove`: (result folder, row numbers) pairs), every row of the transformer-encoder plan
    (`benchmarks/ablations/<plan_folder>.json`; a row without a result file yet is listed as not run), the papers'
    figures (`papers`: zoo entry files, their `reported`); then each transformer-input family row against the plain
    cross-encoder of the same plan and against its model's frozen-MiniLM row (`FROZEN_LABEL`), paired by seed.
    `splits` maps the runs' dev and test splits to the dataset's splits that BM25 and the zero-shot bi-encoder
    were scored on (None: not scored there); default the same."""
    import statistics

    from summarize import cell

    splits = splits or {"dev": "dev", "test": "test"}
    zero_shot = _zero_shot(dataset)
    try:
        untrained = {"bm25": {split: _bm25(theirs, dataset) if theirs else None for split, theirs in splits.items()},
                     "zero_shot": {split: zero_shot[theirs] if theirs else None for split, theirs in splits.items()}}
    except KeyError as error:
        raise TableError(f"encoder_rankers/zero_shot-{dataset}.json: no {error} split") from None

    def figures(scored):
        dev = f"{scored['dev']['map']:.3f}" if scored["dev"] else "–"
        return f"{dev} | {scored['test']['map']:.3f} | {scored['test']['mrr']:.3f} | {scored['test']['p@1']:.3f}"

    lines = ["| input | model | seeds | dev MAP | test MAP | test MRR | test P@1 | above zero-shot (test MAP) | "
             "epochs | wall s |", "|---|---|---|---|---|---|---|---|---|---|"]
    lines.append(f"| {BM25_LABEL} | – | – | {figures(untrained['bm25'])} | – | 0 | – |")
    lines.append(f"| MiniLM, no training (zero-shot) | `bi_encoder_minilm` | – | {figures(untrained['zero_shot'])} | "
                 f"– | 0 | – |")
    zero_shot_map = untrained["zero_shot"]["test"]["map"]

    def trained(where, name, runs):
        above = "yes" if statistics.mean(r["test"]["map"] for r in runs) > zero_shot_map else "no"
        return (f"| {where} | `{name}` | {_seeds(runs)} | {_mean(runs, 'dev', 'map')} | {_mean(runs, 'test', 'map')} | "
                f"{_mean(runs, 'test', 'mrr')} | {_mean(runs, 'test', 'p@1')} | {above} | "
                f"{cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |")

    for folder, rows in glove:
        paths = [path for path in _files(f"{folder}/*-s*.json") if int(path.name.split("-")[0]) in rows]
        lines += [trained("GloVe 6B 50d (frozen)", name, group["runs"]) for (name, _), group in _groups(paths).items()]
    measured = []
    for row, groups in _plan_row_groups(plan_folder):
        if not groups:
            lines.append(_not_run(row, 7))
        for (name, label), group in groups.items():
            lines.append(trained(label, name, group["runs"]))
            measured.append((name, label, group["runs"]))
    cross = [runs for name, _, runs in measured if name.startswith("cross_encoder")]
    frozen = {name: runs for name, label, runs in measured if label == FROZEN_LABEL}
    families = [(f"`{name}`, {label}", runs, frozen.get(name) if label != FROZEN_LABEL else None)
                for name, label, runs in measured if cross and not name.startswith(("cross_encoder", "bi_encoder"))]
    for paper_entry in papers:
        reported = json.loads((ROOT / "zoo" / paper_entry).read_text(encoding="utf-8"))["reported"]
        given = {figure: f"{reported[figure]:.3f}" if figure in reported else "–" for figure in ("map", "mrr", "p@1")}
        lines.append(f"| the paper ({reported.get('table') or reported['source']}) | "
                     f"`{paper_entry.split('/')[-1][:-5]}` | – | – | {given['map']} | {given['mrr']} | {given['p@1']} | "
                     f"– | – | – |")
    if families:
        lines += ["", "| transformer-input row | minus the cross-encoder, test MAP (paired by seed) | seeds | "
                  "minus the same model over frozen MiniLM, test MAP (paired by seed) | seeds |", "|---|---|---|---|---|"]
        lines += ["| {} | {} | {} | {} | {} |".format(row, *_paired(runs, cross[0]),
                                                     *(_paired(runs, base) if base else ("–", "–")))
                  for row, runs, base in families]
    return "\n".join(lines)


def transformer_encoders_wikiqa():
    """Issue 57 on WikiQA (the paper's 126 / 243 questions): BM25, the zero-shot bi-encoder, Compare-Aggregate
    (MULT) on GloVe (benchmarks/ablations/compare_aggregate_wikiqa.json row 0) and over MiniLM frozen / top-2
    fine-tuned, the cross- and bi-encoder fine-tuned (benchmarks/ablations/transformer_encoders_wikiqa.json), the
    paper."""
    return _encoder_benchmark("transformer_encoders_wikiqa", "wikiqa-answered", [("compare_aggregate_wikiqa", (0,))],
                              ["compare_aggregate/compare_aggregate_mult.json"])


def transformer_encoders_trecqa_clean():
    """Issue 57 on TrecQA clean (TRAIN-ALL): BM25, the zero-shot bi-encoder, MCAN (FM) and IWAN + nCARNN on GloVe
    (benchmarks/ablations/mcan_fm_main_job.json row 1, iwan_trecqa.json row 1) and over MiniLM frozen / top-2
    fine-tuned, the cross- and bi-encoder fine-tuned (benchmarks/ablations/transformer_encoders_trecqa_clean.json),
    the papers."""
    return _encoder_benchmark("transformer_encoders_trecqa_clean", "trecqa-clean",
                              [("mcan_fm_main_job", (1,)), ("iwan_trecqa", (1,))],
                              ["mcan/mcan_fm.json", "iwan/iwan_ncarnn.json"])


def transformer_encoders_trecqa_raw():
    """Issue 57 on TrecQA raw (TRAIN-ALL, CTRN's benchmark): BM25, the zero-shot bi-encoder, CTRN on GloVe
    (benchmarks/ablations/ctrn_trecqa_raw.json row 2) and over MiniLM frozen / top-2 fine-tuned, the cross- and
    bi-encoder fine-tuned (benchmarks/ablations/transformer_encoders_trecqa_raw.json), the paper."""
    return _encoder_benchmark("transformer_encoders_trecqa_raw", "trecqa-raw", [("ctrn_trecqa_raw", (2,))],
                              ["ctrn/ctrn.json"])


def transformer_encoders_semeval2016():
    """Issue 57 on SemEval-2016 3A (trained on train-part2 + the 2015 threads, chosen on 20% of train-part2's
    questions held out, scored on the official dev split as the test split): BM25, the zero-shot bi-encoder (both
    on the official dev split only), CTRN on GloVe (benchmarks/ablations/semeval2016.json row 1) and over MiniLM
    frozen / top-2 fine-tuned, the cross- and bi-encoder fine-tuned
    (benchmarks/ablations/transformer_encoders_semeval2016.json), the paper."""
    return _encoder_benchmark("transformer_encoders_semeval2016", "semeval2016", [("semeval2016", (1,))],
                              ["ctrn/ctrn_semeval.json"], splits={"dev": None, "test": "dev"})


def transformer_encoders_sick():
    """Issue 57 on SICK entailment (three classes, chosen on dev accuracy, scored on test): Compare-Aggregate
    (SUBMULT+NN) on GloVe (benchmarks/ablations/compare_aggregate_sick.json row 0) and over MiniLM frozen / top-2
    fine-tuned, the cross-encoder and the bi-encoder's SBERT classifier fine-tuned
    (benchmarks/ablations/transformer_encoders_sick.json). The paper has no SICK experiment."""
    from summarize import cell

    def row(where, name, runs):
        return (f"| {where} | `{name}` | {_seeds(runs)} | {_mean(runs, 'dev', 'accuracy')} | "
                f"{_mean(runs, 'test', 'accuracy')} | {_mean(runs, 'test', 'macro_f1')} | "
                f"{cell([r['epochs_run'] for r in runs], 1)} | {_wall(runs)} |")

    lines = ["| input | model | seeds | dev accuracy | test accuracy | test macro-F1 | epochs | wall s |",
             "|---|---|---|---|---|---|---|---|"]
    paths = [path for path in _files("compare_aggregate_sick/*-s*.json") if int(path.name.split("-")[0]) == 0]
    lines += [row("GloVe 6B 50d (frozen)", name, group["runs"]) for (name, _), group in _groups(paths).items()]
    for planned, groups in _plan_row_groups("transformer_encoders_sick"):
        lines += [row(label, name, group["runs"]) for (name, label), group in groups.items()] or [
            _not_run(planned, 5)]
    return "\n".join(lines)


def _epoch_seconds(run):
    """A run's mean seconds per epoch: its `epoch_seconds` (training and the dev evaluation), or, in a result file
    written before those were recorded, its `wall_time_s / epochs_run` (None for a resumed run, whose wall time is
    its last process's)."""
    import statistics

    if run.get("epoch_seconds"):
        return statistics.mean(run["epoch_seconds"])
    if (run.get("provenance") or {}).get("resumed_after_epoch") or not run.get("epochs_run"):
        return None
    return run["wall_time_s"] / run["epochs_run"]


def _cpu_name(run):
    """The CPU a run trained on, short (`provenance.machine.cpu` without "(R)", "(TM)" or "Processor": "Intel Xeon",
    "AMD EPYC"), or "CPU not recorded"."""
    cpu = ((run.get("provenance") or {}).get("machine") or {}).get("cpu")
    if not cpu:
        return "CPU not recorded"
    return " ".join(word for word in cpu.replace("(R)", "").replace("(TM)", "").split() if word != "Processor")


def transformer_encoders_speed():
    """Issue 57's speed table (benchmarks/encoder_speed.py, `transformer_encoders_speed/NN-<entry>.json`): each
    transformer-input model beside its GloVe entry, its parameters, preset size, serving latency of 1 question x 30
    candidates through the SavedModel's `rank` signature and ONNX Runtime, and its training seconds per epoch (the
    mean epoch of each run in the row's training result files, over the runs of one CPU: `_epoch_seconds`, one
    figure per CPU, `_cpu_name`), for a top-2 row also with MiniLM's layers at their own learning rate (its
    `train_backbone_rate` result files). A `short_run` row was measured on a model trained one epoch on a few
    questions with the row's settings (`encoder_speed.short_run_folder`): its latency, parameters and preset size
    are the architecture's; its training seconds still come from the row's full runs."""

    import encoder_speed
    from summarize import cell

    lines = ["| benchmark | input | model | parameters (M) | trained (M) | preset MB | train s / epoch (runs, CPU) | "
             "train s / epoch, MiniLM at 2e-5 (runs, CPU) | rank 1 x 30 p50 / p99 ms | ONNX 1 x 30 (SICK: 30 pairs) p50 / p99 ms | "
             "batch 256 pairs / s |", "|---|---|---|---|---|---|---|---|---|---|---|"]

    def train_seconds(where):
        if where is None:
            return "–"
        folder, train_row = where
        runs = _row_runs(_groups(sorted(RESULTS.glob(f"{folder}/{train_row:02d}-s*.json"))))
        by_cpu = {}  # the same work takes other times on another CPU: never averaged across CPUs
        for run in runs:
            seconds = _epoch_seconds(run)
            if seconds is not None:
                by_cpu.setdefault(_cpu_name(run), []).append(seconds)
        return "; ".join(f"{cell(epochs, 0)} ({len(epochs)}, {cpu})" for cpu, epochs in sorted(by_cpu.items())) \
            or "not run yet"

    benchmarks = list(dict.fromkeys(row["benchmark"] for row in encoder_speed.ROWS))  # in first-seen order
    for index, row in sorted(enumerate(encoder_speed.ROWS), key=lambda item: benchmarks.index(item[1]["benchmark"])):
        path = RESULTS / "transformer_encoders_speed" / encoder_speed.output_name(index, row)
        result = _read_json(path) if path.exists() else None
        # a classifier (SICK) has no `rank` signature: 30 of its test pairs a call (export_latency.py)
        classifier = result is not None and "latency_30_pairs" in result
        # a short-run row's model trained one epoch on a few questions: what is measured does not depend on weights
        short = (f" (measured on a 1-epoch run of these settings on the first {row['short_run']} training "
                 f"{'pairs' if classifier else 'questions'})" if "short_run" in row else "")
        head = f"| {row['benchmark']} | {row['label']}{short} | `{row['entry']}` |"
        train = f"{train_seconds(row['train'])} | {train_seconds(row.get('train_backbone_rate'))}"
        if result is None:
            lines.append(f"{head} not measured yet | – | – | {train} | – | – | – |")
            continue
        latency = result.get("latency_1_question_x_30_candidates") or result["latency_30_pairs"]
        rank, onnx = latency.get("savedmodel_rank_text"), latency["onnxruntime_ids"]
        rank = f"{rank['p50_ms']:.0f} / {rank['p99_ms']:.0f}" if rank else "– (a classifier)"
        parameters = result["parameters"]
        lines.append(f"{head} {parameters['total'] / 1e6:.1f} | {parameters['trainable'] / 1e6:.1f} | "
                     f"{result['preset_mb']:.1f} | {train} | {rank} | "
                     f"{onnx['p50_ms']:.0f} / {onnx['p99_ms']:.0f} | "
                     f"{result['throughput_batch_256']['savedmodel_serving_default_text']['pairs_per_s']:.0f} |")
    return "\n".join(lines)


SUITE_FILES = (("shipped presets", "tests/test_shipped_presets.py"), ("zoo entries", "tests/models/test_zoo_entries.py"),
               ("export zoo", "tests/test_export_zoo.py"))
"""The test files whose seconds `suite_durations` shows beside the totals: the three slowest of every record."""


def suite_durations():
    """Issue 56: the clean-clone runs of `.ci/run` summarized by benchmarks/suite_durations.py
    (`suite_durations/<commit>.json`, the file named after the commit that was tested), in the order they ran: wall
    time, pytest's own time, the test time summed over the two workers, the outcomes and the slowest files."""
    records = []
    for path in _files("suite_durations/*.json"):
        result = _read_json(path)
        try:
            files = {row["file"]: row["seconds"] for row in result["files"]}
            outcomes = result["outcomes"]
            records.append((result["report_timestamp"], path.stem, result["wall_seconds"], result["report_seconds"],
                            result["summed_test_seconds"], outcomes, [files.get(file) for _, file in SUITE_FILES]))
        except (KeyError, TypeError) as error:
            raise TableError(f"{path}: not a benchmarks/suite_durations.py summary ({error!r})") from None
    header = ["commit", "started (UTC)", "`.ci/run` s", "pytest s", "test time summed s", "passed / skipped / failed",
              *(f"{name} s" for name, _ in SUITE_FILES)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for stamp, commit, wall, report, summed, outcomes, seconds in sorted(records):
        cells = [commit, stamp[:16].replace("T", " "), _whole(wall), _whole(report), _whole(summed),
                 " / ".join(f"{outcomes.get(kind, 0):,}" for kind in ("passed", "skipped", "failed")),
                 *map(_whole, seconds)]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _whole(seconds):
    """Seconds as a whole number with thousands separators (1,238); – when the record has none."""
    return "–" if seconds is None else f"{round(float(seconds)):,}"


TABLES = {
    "data": data,
    "main-job": main_job,
    "mcan-main-job": mcan_main_job,
    "mcan-finetune-wikiqa": mcan_finetune_wikiqa,
    "presets-transfer": presets_transfer,
    "mcan-dimensions": mcan_dimensions,
    "ctrn-trecqa": ctrn_trecqa,
    "semeval2016": semeval2016,
    "compare-aggregate-wikiqa": compare_aggregate_wikiqa,
    "compare-aggregate-sick": compare_aggregate_sick,
    "coupled-lstm-sick": coupled_lstm_sick,
    "coupled-lstm-ranking": coupled_lstm_ranking,
    "iwan-trecqa": iwan_trecqa,
    "iwan-paired": iwan_paired,
    "carnn-dialog-task6": carnn_dialog_task6,
    "carnn-dialog-babi": carnn_dialog_babi,
    "carnn-dialog-history": carnn_dialog_history,
    "carnn-dialog-history-lengths": carnn_dialog_history_lengths,
    "carnn-dialog-task6-history": carnn_dialog_task6_history,
    "carnn-dialog-task6-width": carnn_dialog_task6_width,
    "carnn-dialog-task6-width-again": carnn_dialog_task6_width_again,
    "carnn-dialog-task6-lr": carnn_dialog_task6_lr,
    "carnn-dialog-task6-grid": carnn_dialog_task6_grid,
    "carnn-dialog-task6-search-seeds": carnn_dialog_task6_search_seeds,
    "carnn-dialog-task6-changes": carnn_dialog_task6_changes,
    "carnn-dialog-task6-cuts": carnn_dialog_task6_cuts,
    "carnn-dialog-task6-cut-changes": carnn_dialog_task6_cut_changes,
    "carnn-dialog-task6-cut-restaurants": carnn_dialog_task6_cut_restaurants,
    "carnn-dialog-task6-templates": carnn_dialog_task6_templates,
    "coupled-lstm-sick-lr": coupled_lstm_sick_lr,
    "coupled-lstm-ranking-lr": coupled_lstm_ranking_lr,
    "carnn-dialog-units": carnn_dialog_units,
    "carnn-dialog-errors": carnn_dialog_errors,
    "carnn-dialog-update-slots": carnn_dialog_update_slots,
    "contextual-lm": contextual_lm,
    "shipped-presets": shipped_presets,
    "precision-steps": precision_steps,
    "precision-figures": precision_figures,
    "precision-scoring": precision_scoring,
    "zoo": zoo,
    "transformer-encoders-wikiqa": transformer_encoders_wikiqa,
    "transformer-encoders-trecqa-clean": transformer_encoders_trecqa_clean,
    "transformer-encoders-trecqa-raw": transformer_encoders_trecqa_raw,
    "transformer-encoders-semeval2016": transformer_encoders_semeval2016,
    "transformer-encoders-sick": transformer_encoders_sick,
    "transformer-encoders-speed": transformer_encoders_speed,
    "suite-durations": suite_durations,
}
"""Every generated table: name -> a function returning its markdown (raises TableError)."""


def make(name):
    """The markdown of table `name`.

    Raises:
        KeyError: no such table.
        TableError: a result file missing or without provenance.
    """
    return TABLES[name]()


def blocks(text):
    """[(name, first line index, end line index, the table's lines)] of the generated tables in a page's text.

    Raises:
        ValueError: a table opened and not closed, or an unknown table name (with the line number).
    """
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        match = BEGIN.match(lines[i].strip())
        if match:
            name = match.group(1)
            if name not in TABLES:
                raise ValueError(f"line {i + 1}: unknown table {name!r} (known: {', '.join(TABLES)})")
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == END), None)
            if end is None:
                raise ValueError(f"line {i + 1}: table {name!r} has no {END!r} line")
            found.append((name, i, end, lines[i + 1:end]))
            i = end
        i += 1
    return found


def differences(text):
    """{name: unified diff} of a page's tables that differ from their regenerated form."""
    differ = {}
    for name, _, _, shown in blocks(text):
        made = make(name).splitlines()
        if shown != made:
            differ[name] = "\n".join(difflib.unified_diff(shown, made, "page", "regenerated", lineterm=""))
    return differ


def rewrite(text):
    """A page's text with every generated table replaced by its regenerated form."""
    lines = text.splitlines()
    for name, begin, end, _ in reversed(blocks(text)):
        lines[begin + 1:end] = make(name).splitlines()
    return "\n".join(lines) + ("\n" if text.endswith("\n") else "")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", nargs="?", help=f"print this table: {', '.join(TABLES)}")
    parser.add_argument("--check", metavar="PAGE", nargs="+", help="exit 1 if a generated table of these files differs")
    parser.add_argument("--write", metavar="PAGE", nargs="+", help="rewrite these files' generated tables")
    args = parser.parse_args(argv)
    try:
        if args.name:
            if args.name not in TABLES:
                parser.error(f"unknown table {args.name!r} (known: {', '.join(TABLES)})")
            print(make(args.name))
        elif args.check:
            failed = False
            for page in args.check:
                try:
                    differ = differences(pathlib.Path(page).read_text(encoding="utf-8"))
                except ValueError as error:
                    raise ValueError(f"{page}: {error}") from None
                for name, diff in differ.items():
                    print(f"{page}: table {name} differs from its result files:\n{diff}", file=sys.stderr)
                failed = failed or bool(differ)
                if not differ:
                    print(f"{page}: every generated table matches its result files")
            if failed:
                raise SystemExit(1)
        elif args.write:
            for page in args.write:
                path = pathlib.Path(page)
                try:
                    text = rewrite(path.read_text(encoding="utf-8"))
                except ValueError as error:
                    raise ValueError(f"{page}: {error}") from None
                path.write_text(text, encoding="utf-8")
        else:
            print(json.dumps({name: function.__doc__.split("\n")[0] for name, function in TABLES.items()}, indent=2))
    except (TableError, ValueError) as error:
        raise SystemExit(str(error)) from None


if __name__ == "__main__":
    main()
