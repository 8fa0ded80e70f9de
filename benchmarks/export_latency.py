"""Export cost and serving latency of a zoo model: SavedModel (raw text) and ONNX (ids); prints JSON.

Trains nothing. With `--run-dir` the run's model is exported (and written as a preset, whose size is
reported); with `--preset` a trained preset's (a shipped name or a folder). Without either, the zoo entry `--model` (default
mcan_fm) gets random weights and either the paper's sizes (mcan_fm: 300d embeddings, 300 LSTM units, highway
200, FM factors 10; another entry: its preset's) with a TrecQA TRAIN-ALL vocabulary, or, with `--vectors
glove-6b-50d [--max-vocabulary N]`, its zoo preset with those frozen vectors and the vocabulary `keras-match
train` builds (the TRAIN-ALL words, then the vector file's words). Then:

- export: wall time of `keras_match.serving.export.saved_model` (SavedModel + warmup file) and of `to_onnx`
  (conversion + onnxruntime check), and their sizes on disk;
- latency of ranking one question against 30 candidate answers (real TrecQA test questions; candidates cycled
  to 30), p50 / p99 over `--queries` calls: through the loaded SavedModel's `rank` and `serving_default`
  signatures (raw text, tokenized in the graph) and through onnxruntime (ids tokenized beforehand, trimmed to
  the group's longest text as the graph does, and the overlap features of `ctrn` / `qrnn` runs computed
  beforehand; tokenization and features not timed); for a classifier (a SICK model, whose export has no `rank`
  signature) the latency of classifying 30 consecutive SICK test pairs through `serving_default` and onnxruntime
  (`latency_30_pairs`), and SICK test pairs below;
- throughput at batch 256 (TrecQA test pairs), pairs per second, through `serving_default` and onnxruntime;
- one batch of 3000 pairs through `serving_default` (time, finite scores, the process' peak RSS before/after);
- the model's parameters (total, trainable) and, for a run or a preset, the preset's size on disk (float32
  weights; a preset over a pretrained encoder stores only the parts that trained).

    KERAS_MATCH_DATA=../shared/data python benchmarks/export_latency.py [--run-dir RUN] > export_latency.json
    KERAS_MATCH_DATA=../shared/data python benchmarks/export_latency.py --vectors glove-6b-50d --max-vocabulary 0

Numbers are from whatever CPU runs it, with TensorFlow's and onnxruntime's default thread pools. The JSON's
`provenance` (`keras_match.artifacts.provenance`) records the command, the code, the versions (and onnxruntime's), the
machine (with its load average at the end), the start and end times, the run or the vectors exported, the TrecQA
data files with their sha256, and the load average at the start, so that a busy machine shows.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def _log(*args):
    print(*args, file=sys.stderr, flush=True)


def _size_mb(path):
    path = pathlib.Path(path)
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return round(sum(p.stat().st_size for p in files) / 2**20, 2)


def _percentiles(seconds):
    import numpy as np

    ms = 1000 * np.asarray(seconds)
    return {"p50_ms": round(float(np.percentile(ms, 50)), 2), "p99_ms": round(float(np.percentile(ms, 99)), 2),
            "mean_ms": round(float(ms.mean()), 2), "calls": len(ms)}


def _timed(fn, repeats, warmup):
    for _ in range(warmup):
        fn(0)
    seconds = []
    for i in range(repeats):
        start = time.perf_counter()
        fn(i)
        seconds.append(time.perf_counter() - start)
    return seconds


def build_run(run_dir, data_dir, vectors=None, max_vocabulary=None, model_name="mcan_fm"):
    """The run to export: a trained run directory, or zoo entry `model_name` with random weights: with `vectors`,
    its zoo preset with those frozen vectors and the vocabulary `keras-match train` gives it (the TRAIN-ALL words,
    then the vector file's words, `max_vocabulary` of them); without, the paper's sizes and a TRAIN-ALL
    vocabulary.

    Returns:
        `(run, description, vectors)`: `vectors` is `{"path", "sha256"}` of the vectors read, or None.
    """
    from keras_match import zoo
    from keras_match.artifacts import runs
    from keras_match.training.recipe import Recipe

    if run_dir:
        return runs.load_run(run_dir), f"run {run_dir}", None
    if vectors:  # as `keras-match train` prepares it (the recipe), without the training
        recipe = Recipe.prepare(model_name, "trecqa-clean", data_dir=data_dir, embeddings=vectors,
                                max_vocabulary=max_vocabulary)
        preprocessor = recipe.preprocessor()
        model, _ = recipe.model(preprocessor)
        description = (f"{model_name} zoo preset, random weights, vectors {vectors}, max_vocabulary {max_vocabulary} "
                       f"({preprocessor.vocab_size} ids)")
        source = {"path": recipe.vectors.source, "sha256": recipe.vectors.sha256}
    else:  # the paper's sizes with random (frozen) embeddings over the training words
        recipe = Recipe.prepare(model_name, "trecqa-clean", data_dir=data_dir, embeddings=None, max_vocabulary=0)
        preprocessor = recipe.preprocessor()
        model = zoo.build(recipe.settings, **preprocessor.model_arguments())
        description = (f"{model_name} paper settings, random weights, TrecQA train-all vocabulary "
                       f"({preprocessor.vocab_size} ids)")
        source = None
    return runs.Run(model=model, preprocessor=preprocessor, config={"zoo": model_name}), description, source


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run-dir", default=None, help="a finished run; default: --model, random weights")
    parser.add_argument("--preset", default=None, help="a trained preset (shipped name or folder) instead of a run")
    parser.add_argument("--model", default="mcan_fm", help="without --run-dir: the zoo entry (default mcan_fm)")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--out", default=None, help="export folder (default: a temporary folder, removed)")
    parser.add_argument("--queries", type=int, default=200, help="timed 1 x 30 ranking calls per path")
    parser.add_argument("--batches", type=int, default=20, help="timed batch-256 calls per path")
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--vectors", default=None,
                        help="without --run-dir: the zoo preset with these frozen vectors (e.g. glove-6b-50d)")
    parser.add_argument("--max-vocabulary", type=int, default=None,
                        help="with --vectors: how many of the vector file's words join the vocabulary (default all)")
    args = parser.parse_args(argv)

    import numpy as np
    import onnxruntime
    import tensorflow as tf

    from keras_match import heads, training
    from keras_match.artifacts import presets, provenance
    from keras_match.inputs import pipeline
    from keras_match.serving import export, signatures
    from keras_match.datasets.catalog import load_by_name

    started, load_average = time.time(), os.getloadavg()
    out = pathlib.Path(args.out) if args.out else pathlib.Path(tempfile.mkdtemp(prefix="export_latency_"))
    preset_mb = None
    if args.preset:
        run, description, vectors = presets.load_preset(args.preset), f"preset {args.preset}", None
        preset_mb = _size_mb(presets.preset_dir(args.preset))
    else:
        run, description, vectors = build_run(args.run_dir, args.data_dir, args.vectors, args.max_vocabulary,
                                              args.model)
    try:
        if args.run_dir:
            preset_mb = _size_mb(presets.write_preset(args.run_dir, out / "preset"))
        _log("exporting", description)
        start = time.perf_counter()
        version_dir = export.saved_model(run, out / run.config.get("zoo", "model"))
        export_seconds = time.perf_counter() - start
        start = time.perf_counter()
        converted = export.to_onnx(version_dir)
        onnx_seconds = time.perf_counter() - start

        classifier = heads.head_of(run.model) == "classification"
        dataset_name = "sick" if classifier else "trecqa-clean"
        dataset = load_by_name(dataset_name, data_dir=args.data_dir)
        k = args.candidates
        if classifier:  # 30 consecutive SICK test pairs a call, its batches of 256 pairs
            first = [str(text) for text in dataset["test"].first]
            second = [str(text) for text in dataset["test"].second]
            groups = [(first[i:i + k], second[i:i + k]) for i in range(0, len(first) - k + 1, k)]
        else:  # one TrecQA test question and its candidates, cycled to 30
            groups = []
            for question in dataset["test"]:
                answers = [c.text for c in question.candidates]
                groups.append(([question.text] * k, [answers[i % len(answers)] for i in range(k)]))
            pairs = dataset["test"].pairs()
            first, second = pairs.questions.tolist(), pairs.answers.tolist()
        n = args.batch_size
        batches = [(first[i:i + n], second[i:i + n]) for i in range(0, len(first) - n + 1, n)]

        start = time.perf_counter()
        loaded = tf.saved_model.load(str(version_dir))
        load_seconds = time.perf_counter() - start
        text_sig = loaded.signatures["serving_default"]
        metadata = export.read_metadata(version_dir)
        served_name = next(iter(metadata["outputs"]["serving_default"]))  # score, or a classifier's probabilities
        onnx_name = next(iter(metadata["outputs"][signatures.IDS_SIGNATURE]))
        session = onnxruntime.InferenceSession(str(converted.path), providers=["CPUExecutionProvider"])
        def ids_of(questions, answers):
            ids = pipeline.encode(run.preprocessor, {"question": questions, "answer": answers})
            return {k: np.asarray(v) for k, v in run.preprocessor.trim_padding(ids).items()}

        group_ids = [ids_of(q, a) for q, a in groups]
        batch_ids = [ids_of(q, a) for q, a in batches]
        pair_tensors = [(tf.constant(q), tf.constant(a)) for q, a in groups]
        batch_tensors = [(tf.constant(q), tf.constant(a)) for q, a in batches]

        # the paths agree (a benchmark of a wrong model is worth nothing)
        q, a = groups[0]
        reference = run.predict(q, a) if classifier else run.score(q, a)
        via_text = text_sig(question=pair_tensors[0][0], answer=pair_tensors[0][1])[served_name].numpy()
        via_onnx = session.run([onnx_name], group_ids[0])[0]
        agreement = {"serving_default_vs_keras": float(np.abs(via_text - reference).max()),
                     "onnx_vs_keras": float(np.abs(via_onnx - reference).max()),
                     "keras_score_range": [float(reference.min()), float(reference.max())]}

        g = len(groups)
        _log("timing", "pairs of" if classifier else "1 x", k)
        latency = {
            "savedmodel_serving_default_text": _percentiles(_timed(
                lambda i: text_sig(question=pair_tensors[i % g][0], answer=pair_tensors[i % g][1]),
                args.queries, 10)),
            "onnxruntime_ids": _percentiles(_timed(
                lambda i: session.run([onnx_name], group_ids[i % g]), args.queries, 10)),
        }
        if not classifier:  # a classifier's export has no `rank` signature
            rank = loaded.signatures["rank"]
            group_tensors = [(tf.constant(q[0]), tf.constant(a)) for q, a in groups]
            via_rank = rank(question=group_tensors[0][0], answers=group_tensors[0][1])["scores"].numpy()
            agreement["rank_vs_keras"] = float(np.abs(via_rank - reference).max())
            latency["savedmodel_rank_text"] = _percentiles(_timed(
                lambda i: rank(question=group_tensors[i % g][0], answers=group_tensors[i % g][1]), args.queries, 10))
        _log("timing batch", n)
        b = len(batches)

        def throughput(fn):
            seconds = _timed(fn, args.batches, 2)
            return {"pairs_per_s": round(n * len(seconds) / sum(seconds), 1), **_percentiles(seconds)}

        batch = {
            "savedmodel_serving_default_text": throughput(
                lambda i: text_sig(question=batch_tensors[i % b][0], answer=batch_tensors[i % b][1])),
            "onnxruntime_ids": throughput(lambda i: session.run([onnx_name], batch_ids[i % b])),
        }
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        many_q = (first * 4)[:3000]
        many_a = (second * 4)[:3000]
        start = time.perf_counter()
        many = text_sig(question=tf.constant(many_q), answer=tf.constant(many_a))[served_name].numpy()
        many_seconds = time.perf_counter() - start

        trainable = sum(int(np.prod(w.shape)) for w in run.model.trainable_weights)
        result = {
            "model": description,
            "parameters": {"total": int(run.model.count_params()), "trainable": trainable},
            "preset_mb": preset_mb,
            "export": {
                "saved_model_seconds": round(export_seconds, 2),
                "saved_model_mb": _size_mb(version_dir),
                "saved_model_variables_mb": _size_mb(version_dir / "variables"),
                "onnx_seconds_with_verification": round(onnx_seconds, 2),
                "onnx_mb": _size_mb(converted.path),
                "onnx_opset": converted.opset,
                "onnx_max_abs_diff_vs_tf": converted.max_abs_diff,
                "saved_model_load_seconds": round(load_seconds, 2),
            },
            "agreement_max_abs_diff": agreement,
            (f"latency_{k}_pairs" if classifier else f"latency_1_question_x_{k}_candidates"): latency,
            f"throughput_batch_{n}": batch,
            "batch_3000_serving_default": {
                "seconds": round(many_seconds, 2),
                "all_finite": bool(np.isfinite(many).all()),
                "peak_rss_mb_before": round(rss_before, 1),
                "peak_rss_mb_after": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            },
            "provenance": provenance.collect(
                started, run_dir=args.run_dir, preset=args.preset, embeddings=vectors,
                max_vocabulary=args.max_vocabulary if args.vectors else None, dataset=dataset_name,
                data_files=training.data_files(dataset), onnxruntime=onnxruntime.__version__,
                load_average_at_start=[round(x, 2) for x in load_average]),
        }
        print(json.dumps(result, indent=2))
        return result
    finally:
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
