"""The zero-shot bi-encoder (`bi_encoder_minilm`, all-MiniLM-L6-v2 untrained) on the ranking benchmarks, and with
`--quick` the cross-encoder's training speed; writes / prints JSON.

Zero-shot: for each dataset the zoo entry `bi_encoder_minilm` is made by the recipe of a training run
(`keras_match.training.recipe.Recipe.prepare(..., backbone_trainable="frozen")`, its preprocessor and
`Recipe.fitting`: the model `keras-match train` would fit, with the pretrained weights and the head starting at
20 x cosine), and its dev and test splits are scored without any training by the functions
`Fitting.evaluate` calls (`Recipe.encode`, `keras_match.inputs.pipeline.predict`, the task's `evaluate`): the
figures `keras-match train` reports, as it would report them before its first epoch (its settings refuse
`epochs=0`). The same scores are checked against trec_eval (`pytrec_eval`, with the qrels of the split's labels;
questions without a correct answer left out, or counted as 0 where the task's rule says so, SemEval-2016's):
`trec_eval` in each result. The
ranking does not depend on the training split (the vocabulary is the encoder's, no pair features), so the recipe
reads one training question only. One JSON file per dataset, `--out DIR/zero_shot-<dataset>.json`, with its
`provenance` (`keras_match.artifacts.provenance`: command, code, versions, machine, times; the data files and the
encoder's files with their sha256):

    KERAS_MATCH_DATA=../shared/data KERAS_MATCH_ENCODERS=../shared/models python benchmarks/zero_shot.py \
        --out benchmarks/results/encoder_rankers

`wikiqa` scores the 237 test questions of WikiQA's filtered qrels (a correct and an incorrect answer), and
`wikiqa-answered` the 243 with a correct answer (the figure sentence-transformers' own evaluation gave, 0.722 /
0.736 MAP / MRR on test).

`--quick` prints one JSON object instead, the cross-encoder's (`cross_encoder_minilm`) training speed: seconds per
training step (`train_on_batch`, batch `--batch-size` 32 pointwise pairs of real TrecQA clean TRAIN-ALL pairs, the
recipe's own length-bucketed batches) with the backbone frozen and with every layer trained, the median of
`--steps` steps after two warm-up steps (and their mean), and the same over WikiQA's training split, with the
epoch estimated as the mean step times the epoch's batches (`steps_per_epoch`; not a whole measured epoch):

    python benchmarks/zero_shot.py --quick
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

from keras_match.artifacts import provenance  # noqa: E402

ENTRY = "bi_encoder_minilm"
CROSS_ENCODER = "cross_encoder_minilm"
DATASETS = ("trecqa-clean", "trecqa-raw", "wikiqa", "wikiqa-answered", "semeval2016")
SPLITS = ("dev", "test")
"""The splits scored, those of them the dataset has (`semeval2016` has no test split: the zoo scores its
official dev split as its test)."""
TREC_MEASURES = {"map": "map", "mrr": "recip_rank", "p@1": "P_1"}


def trec_eval_figures(examples, scores, no_positive="skip") -> dict:
    """MAP / MRR / P@1 of `scores` by trec_eval (`pytrec_eval`): qrels from the examples' labels, the run from the
    scores; questions without a relevant candidate left out (`no_positive="skip"`) or kept, where trec_eval counts
    them as 0 (`"zero"`: SemEval-2016's rule), as the task's rule says."""
    import pytrec_eval

    qrels, run = {}, {}
    for qid, aid, label, score in zip(examples.groups, examples.ids, examples.labels, scores):
        qrels.setdefault(str(qid), {})[str(aid)] = int(label)
        run.setdefault(str(qid), {})[str(aid)] = float(score)
    if no_positive == "skip":
        qrels = {qid: judged for qid, judged in qrels.items() if max(judged.values()) >= 1}
        run = {qid: ranked for qid, ranked in run.items() if qid in qrels}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES.values())).evaluate(run)
    figures = {key: float(np.mean([values[measure] for values in per_query.values()]))
               for key, measure in TREC_MEASURES.items()}
    return dict(figures, num_questions=len(per_query))


def cut_shares(preprocessor, examples) -> dict:
    """The share of the split's questions and answers whose WordPiece pieces do not all fit the preprocessor's
    lengths (`[CLS]` and `[SEP]` take two ids of each)."""
    shares = {}
    for key, limit in preprocessor.sequence_lengths().items():
        texts = list(examples.texts[key])
        pieces = preprocessor.encoder.tokenize(texts).row_lengths().numpy()
        shares[key] = round(float(np.mean(pieces > limit - 2)) if len(texts) else 0.0, 4)
    return shares


def encoder_files():
    """The pretrained encoder's pinned files with their sha256 (checked when the encoder was located)."""
    from keras_match.encoders import pretrained

    entry = pretrained.pretrained("minilm-l6")
    return {"name": entry.name, "repo": entry.repo, "revision": entry.revision,
            "files": {file.origin_path: file.sha256 for file in entry.files
                      if file.origin_path in ("config.json", "model.safetensors", "vocab.txt")}}


def zero_shot(dataset, data_dir=None, seed=1234, overrides=None) -> dict:
    """The zero-shot figures of `bi_encoder_minilm` on a dataset's dev and test splits, ours and trec_eval's
    (`overrides`: settings by name, e.g. longer truncation lengths)."""
    from keras_match import heads, training
    from keras_match.inputs import pipeline
    from keras_match.training.recipe import Recipe

    started = time.time()
    settings = {"backbone_trainable": "frozen", **(overrides or {})}
    recipe = Recipe.prepare(ENTRY, dataset, data_dir=data_dir, seed=seed, max_train_questions=1, **settings)
    preprocessor = recipe.preprocessor()
    fitting = recipe.fitting(preprocessor)
    model, task = fitting.model, recipe.task
    result = {"zoo": ENTRY, "dataset": dataset, "settings": recipe.settings.to_dict(), "splits": {}}
    for name in (split for split in SPLITS if split in recipe.dataset):
        examples = recipe.dev_examples if name == "dev" else task.examples(recipe.dataset[name])
        inputs = recipe.encode(preprocessor, examples)
        split_started = time.time()
        outputs = pipeline.predict(model, inputs, preprocessor.SEQUENCE_INPUTS)  # as Fitting.evaluate scores
        seconds = time.time() - split_started
        figures = task.evaluate(heads.head_of(model), outputs, examples)
        scores = np.asarray(heads.ranking_score(heads.head_of(model), outputs), np.float64)
        result["splits"][name] = {"figures": figures, "trec_eval": trec_eval_figures(examples, scores, task.no_positive),
                                  "num_pairs": len(scores), "scoring_seconds": round(seconds, 1),
                                  "cut": cut_shares(preprocessor, examples),
                                  "summary": task.summary(figures)}
        print(f"{dataset} {name}: {task.summary(figures)} ({len(scores)} pairs, {seconds:.0f} s)", file=sys.stderr,
              flush=True)
    result["provenance"] = provenance.collect(started, dataset=dataset, seed=seed, overrides=settings,
                                              data_files=training.data_files(recipe.dataset),
                                              encoder=encoder_files())
    return result


def _step_times(fitting, steps):
    """Seconds of `steps` training steps (`train_on_batch`) on the fitting's own first batches (a random sample
    of the epoch's length-bucketed batches), after two warm-up steps (tracing); and the epoch's batches."""
    batches = fitting.batches()
    iterator = iter(batches.dataset)
    for _ in range(2):
        x, y = next(iterator)[:2]
        fitting.fit_model.train_on_batch(x, y)
    seconds = []
    for _ in range(steps):
        x, y = next(iterator)[:2]
        started = time.perf_counter()
        fitting.fit_model.train_on_batch(x, y)
        seconds.append(time.perf_counter() - started)
    return seconds, batches.steps_per_epoch


def speed(args) -> dict:
    """The cross-encoder's step times, frozen and fine-tuned whole, on TrecQA clean and WikiQA training pairs."""
    import keras

    from keras_match.training.recipe import Recipe

    started = time.time()
    report = {"zoo": CROSS_ENCODER, "batch_size": args.batch_size, "steps": args.steps, "runs": {}}
    for dataset in ("trecqa-clean", "wikiqa"):
        for trainable in ("frozen", "all"):
            recipe = Recipe.prepare(CROSS_ENCODER, dataset, data_dir=args.data_dir, seed=args.seed,
                                    backbone_trainable=trainable, batch_size=args.batch_size)
            keras.utils.set_random_seed(args.seed)
            fitting = recipe.fitting(recipe.preprocessor())
            seconds, steps_per_epoch = _step_times(fitting, args.steps)
            report["runs"][f"{dataset}/{trainable}"] = {
                "dataset": dataset, "backbone_trainable": trainable, "train_pairs": len(recipe.train_examples),
                "step_s": round(statistics.median(seconds), 3), "step_s_mean": round(statistics.mean(seconds), 3),
                "step_s_all": [round(s, 3) for s in seconds], "steps_per_epoch": int(steps_per_epoch),
                "epoch_s_estimate": round(statistics.mean(seconds) * steps_per_epoch, 1),
            }
            print(f"{dataset} {trainable}: {report['runs'][f'{dataset}/{trainable}']}", file=sys.stderr,
                  flush=True)
    report["provenance"] = provenance.collect(started, seed=args.seed, encoder=encoder_files())
    return report


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--data-dir", default=None, help="the benchmark data folder (default $KERAS_MATCH_DATA)")
    parser.add_argument("--out", default=None, help="folder of the result files (default: print them)")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting of the entry (JSON value, else text), e.g. max_answer_length=256")
    parser.add_argument("--tag", default=None,
                        help="with --set: the result files are zero_shot-<dataset>-<tag>.json")
    parser.add_argument("--quick", action="store_true",
                        help="print the cross-encoder's training speed (frozen / all layers) instead")
    parser.add_argument("--batch-size", type=int, default=32, help="--quick: pairs per training step")
    parser.add_argument("--steps", type=int, default=10, help="--quick: steps timed per configuration")
    args = parser.parse_args(argv)
    if args.quick:
        print(json.dumps(speed(args), indent=1))
        return
    overrides = {}
    for item in args.set:
        key, _, value = item.partition("=")
        try:
            overrides[key] = json.loads(value)
        except ValueError:
            overrides[key] = value
    if overrides and args.out is not None and args.tag is None:
        parser.error("--set with --out needs --tag (the preset's figures keep the untagged files)")
    for dataset in args.datasets:
        result = zero_shot(dataset, args.data_dir, args.seed, overrides)
        if args.out is None:
            print(json.dumps(result, indent=1))
            continue
        path = pathlib.Path(args.out) / f"zero_shot-{dataset}{'-' + args.tag if args.tag else ''}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
