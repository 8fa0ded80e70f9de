"""Trained runs scored on other benchmarks' test splits (transfer, no training there), beside BM25.

For each run folder (from `keras-match train` or benchmarks/reproduce.py) and each dataset, the run scores the
dataset's test split as it is (its vocabulary, its features' document frequencies: nothing is refitted) and the
benchmark's own convention picks the questions (WikiQA: those with a correct and an incorrect answer). The BM25
row ranks each question's candidates by `bm25s` (k1 1.5, b 0.75, Lucene IDF) over the split's distinct
candidate texts, tokenized as the models tokenize. Prints one JSON object (every figure, and its `provenance`,
`keras_match.artifacts.provenance`: the command, the code, the versions, the machine, the start and end times, the datasets
and their data files with their sha256). `--table FILE` prints such a file as a markdown table instead: one row
per (model, pair features) with the mean and standard deviation over its runs (seeds); a file without provenance
is refused.

    KERAS_MATCH_DATA=../shared/data python benchmarks/transfer.py runs/ablation/runs/*-s* \
        --datasets trecqa-clean wikiqa > transfer.json
    python benchmarks/transfer.py --table transfer.json

Shipped presets (or preset folders) score the same way with `--presets NAME ...`, keyed by the preset's name: the
fine-tuning check's row "the preset, no fine-tuning" (`benchmarks/results/mcan_fm_finetune_wikiqa/preset.json`):

    python benchmarks/transfer.py --presets mcan_fm/trecqa-clean --datasets wikiqa \
        > benchmarks/results/mcan_fm_finetune_wikiqa/preset.json

Without run folders or presets it scores BM25 alone; `--split dev` scores the datasets' dev splits instead of their test
splits (README's BM25 rows: `benchmarks/results/bm25/`):

    python benchmarks/transfer.py --datasets trecqa-raw semeval2016 trecqa-clean wikiqa wikiqa-answered --split dev \
        > benchmarks/results/bm25/dev.json

`DATASET:SPLIT` scores that split of one dataset whatever `--split` says (the name stays the figures' key, as
benchmarks/reproduce.py's `--transfer`): SemEval-2016 has no test split, and its shipped preset's test figures are
on the official dev split. Every shipped ranking preset on every ranking benchmark (`docs/presets.md`, table
`presets-transfer`; benchmarks/transfer_causes.py measures why a preset falls below BM25):

    python benchmarks/transfer.py --presets compare_aggregate_mult/wikiqa-answered \
        compare_aggregate_mult_minilm/wikiqa-answered ctrn/trecqa-raw ctrn_semeval/semeval2016 \
        iwan_ncarnn/trecqa-clean iwan_ncarnn_minilm/trecqa-clean lc_lstm/trecqa-clean mcan_fm/trecqa-clean \
        --datasets trecqa-raw trecqa-clean wikiqa wikiqa-answered semeval2016:dev \
        > benchmarks/results/transfer/presets-test.json
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import time

from keras_match.artifacts import provenance

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FIGURES = ("map", "mrr", "p@1")


def bm25_figures(split, no_positive):
    """MAP / MRR / P@1 of BM25 on a split: each question against its candidates, statistics over the split's
    distinct candidate texts."""
    from keras_match import metrics

    return metrics.evaluate_split(split, bm25_scores(split), metrics=FIGURES, no_positive=no_positive)


def bm25_scores(split):
    """BM25's score of every pair of a split, float32 `[pairs]` in `split.pairs()` order: each question against
    its candidates, statistics over the split's distinct candidate texts."""
    import bm25s
    import numpy as np

    from keras_match import text

    pairs = split.pairs()
    corpus = sorted(set(pairs.answers.tolist()))
    position = {answer: i for i, answer in enumerate(corpus)}

    def tokens(texts):
        return [[t.decode("utf-8") for t in row] for row in text.tokenize(list(texts)).to_list()]

    index = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    index.index(tokens(corpus), show_progress=False)
    scores = np.zeros(len(pairs), np.float32)
    cache = {}
    for row, (question, answer) in enumerate(zip(pairs.questions.tolist(), pairs.answers.tolist())):
        if question not in cache:
            query = [t for t in dict.fromkeys(tokens([question])[0]) if t in index.vocab_dict]
            cache[question] = index.get_scores(query) if query else np.zeros(len(corpus), np.float32)
        scores[row] = cache[question][position[answer]]
    return scores


def _variant(config):
    features = [name for name in ("overlap_features", "bm25_feature") if config.get(name)]
    model = config.get("zoo", "?") + (f" (preset {config['preset']})" if config.get("preset") else "")
    return model, "+".join(features) or "none"


def _cell(values):
    if not values:
        return "–"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}"


def table(result, where="result") -> str:
    """The markdown table of a result object of this script: BM25's row, then one row per (model, pair features)
    with the mean and standard deviation over its runs (seeds), MAP and MRR on each dataset.

    Raises:
        SystemExit: `result` (read from `where`) has no provenance.
    """
    provenance.require(result, where)
    splits = list(result["bm25"])
    grouped = collections.defaultdict(list)
    for entry in result["runs"].values():
        grouped[_variant(entry)].append(entry)
    header = ["model", "pair features", "seeds"] + [f"{n} {f.upper()}" for n in splits for f in ("map", "mrr")]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines.append("| " + " | ".join(["BM25", "–", "–"] + [f"{result['bm25'][n][f]:.3f}" for n in splits
                                                          for f in ("map", "mrr")]) + " |")
    for (model, features), entries in sorted(grouped.items()):
        cells = [model, features, ", ".join(str(e["seed"]) for e in entries)]
        cells += [_cell([e[n][f] for e in entries]) for n in splits for f in ("map", "mrr")]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runs", nargs="*", help="finished run folders")
    parser.add_argument("--presets", nargs="+", default=[], metavar="PRESET",
                        help="shipped presets (e.g. mcan_fm/trecqa-clean) or preset folders to score as well")
    parser.add_argument("--datasets", nargs="+", default=["trecqa-clean", "wikiqa"],
                        help="dataset names; DATASET:SPLIT scores that split of it whatever --split says")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--split", default="test", choices=("test", "dev"),
                        help="the split of each dataset to score (default test)")
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="print the markdown table of a JSON file this script wrote (with its provenance), "
                             "and stop")
    args = parser.parse_args(argv)
    if args.table:
        provenance.print_table(args.table, table)  # SystemExit when unreadable or without provenance
        return
    from keras_match import tasks, training
    from keras_match.artifacts import presets
    from keras_match.datasets.catalog import load_by_name

    started = time.time()
    splits, data_files = {}, {}
    for name in args.datasets:
        dataset_name, _, split = name.partition(":")
        split = split or args.split
        dataset = load_by_name(dataset_name, data_dir=args.data_dir)
        if split not in dataset:
            raise SystemExit(f"transfer.py: {dataset_name} has no {split} split (it has "
                             f"{', '.join(sorted(dataset.splits))}; DATASET:SPLIT picks one)")
        splits[name] = (dataset[split], tasks.task_for(dataset).no_positive)
        data_files[name] = training.data_files(dataset)
    result = {"bm25": {name: bm25_figures(split, rule) for name, (split, rule) in splits.items()}, "runs": {}}
    sources = [(str(run_dir), None) for run_dir in args.runs] + [(name, name) for name in args.presets]
    for run_dir, preset in sources:
        run = presets.load_preset(preset) if preset else training.load_run(run_dir)
        preprocessing = run.config.get("settings", {}).get("preprocessing", {})
        entry = {"zoo": run.config.get("zoo"), "seed": run.config.get("seed"), "preset": preset,
                 "trained_on": run.config.get("dataset"),
                 "overlap_features": bool(preprocessing.get("overlap_features")),
                 "bm25_feature": bool(preprocessing.get("bm25_feature"))}
        for name, (split, rule) in splits.items():
            entry[name] = run.evaluate(split, task=tasks.RankingTask(rule))
        result["runs"][run_dir] = entry
        print(f"{run_dir}: " + ", ".join(f"{n} MAP {entry[n]['map']:.3f}" for n in splits), file=sys.stderr,
              flush=True)
    result["split"] = args.split
    result["provenance"] = provenance.collect(started, datasets=args.datasets, data_files=data_files)
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
