"""Training-step time of the CTRN paper's encoders in one matching model: QRNN, CTRN and a Keras LSTM.

The paper reports CTRN at about QRNN's cost (about +10 s per TRAIN-ALL epoch) and 4x faster than an LSTM
(Tay et al. 2018, "Runtime Comparison", Figure 3). This script measures one training step (forward + backward +
Adam update, `model.train_on_batch`) at batch 256 and d = 512 filters / units, on token-id batches whose lengths
are those of real TrecQA TRAIN-ALL pairs (tokenized, truncated to 40 / 60 tokens like the zoo presets, each
batch trimmed to its longest text as training does). Every model is the same `keras_match.models.ctrn` matching
model (300d frozen embeddings, projection, encoder, temporal mean pooling, one dense layer of 128, softmax); only
the encoder differs:

- `qrnn`: `build_qrnn_matcher` (siamese `QRNN`, each text on its own);
- `ctrn`: `build_ctrn` (`CTRN`, both alignments);
- `lstm`: a siamese `keras.layers.LSTM(d, return_sequences=True)` in the same model (`build_recurrent_matcher`).

Models are timed in interleaved rounds (one step of each model per round, the same batch for all), so a load
change on the machine affects them alike; the median over rounds is reported, with the ratios the issue targets
(CTRN <= 1.25x QRNN, CTRN <= 0.5x LSTM). Two clocks: wall time, and the CPU time of this process (all its
threads, `time.process_time`), which other processes on a shared machine disturb much less; the ratios are given
for both.

Usage:
    python benchmarks/recurrence_speed.py [--batch-size 256] [--units 512] [--rounds 15] [--data-dir DIR] \
        > recurrence_speed.json

Prints one JSON object, with its `provenance` (`keras_match.artifacts.provenance`: the command, the code, the versions, the
machine with its load average at the end, the start and end times, the seed, the TrecQA files read with their
sha256, and the load average at the start).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from keras_match import datasets, text, training  # noqa: E402
from keras_match.artifacts import provenance
from keras_match.encoders import WordVectorEncoder  # noqa: E402
from keras_match.models.ctrn import build_ctrn, build_qrnn_matcher, build_recurrent_matcher  # noqa: E402

MAX_QUESTION_LENGTH, MAX_ANSWER_LENGTH = 40, 60


def trecqa_lengths(data_dir, count, seed):
    """Token counts of `count` random TrecQA TRAIN-ALL pairs, truncated like the presets, and the data files read
    (`keras_match.training.data_files`)."""
    dataset = datasets.load("trecqa", variant="raw", data_dir=data_dir)
    pairs = dataset["train"].pairs()
    rows = np.random.default_rng(seed).choice(len(pairs), size=count, replace=False)
    q = text.tokenize(list(pairs.questions[rows])).row_lengths().numpy()
    a = text.tokenize(list(pairs.answers[rows])).row_lengths().numpy()
    return np.minimum(q, MAX_QUESTION_LENGTH), np.minimum(a, MAX_ANSWER_LENGTH), training.data_files(dataset)


def make_batches(q_lengths, a_lengths, batch_size, vocab_size, seed):
    """Random ids with real lengths, 0-padded to the batch's longest text; and random labels."""
    rng = np.random.default_rng(seed)
    batches = []
    for start in range(0, len(q_lengths) - batch_size + 1, batch_size):
        lq, la = q_lengths[start : start + batch_size], a_lengths[start : start + batch_size]
        inputs = {}
        for key, lengths in (("question", lq), ("answer", la)):
            ids = rng.integers(2, vocab_size, size=(batch_size, max(int(lengths.max()), 1))).astype("int32")
            ids[np.arange(ids.shape[1])[None, :] >= lengths[:, None]] = 0
            inputs[key] = ids
        batches.append((inputs, rng.integers(0, 2, size=batch_size).astype("int32")))
    return batches


def build_lstm_matcher(input_encoder, units, **kwargs):
    def encode(q, a, regularizer):
        lstm = keras.layers.LSTM(units, return_sequences=True, kernel_regularizer=regularizer, name="siamese_lstm")
        return lstm(q), lstm(a)

    return build_recurrent_matcher(encode, input_encoder=input_encoder, name="lstm", **kwargs)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--units", type=int, default=512)
    parser.add_argument("--embedding-dim", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--vocab-size", type=int, default=20000)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    started, load_average = time.time(), os.getloadavg()
    q_lengths, a_lengths, data_files = trecqa_lengths(args.data_dir, args.batch_size * (args.rounds + args.warmup),
                                                      args.seed)
    batches = make_batches(q_lengths, a_lengths, args.batch_size, args.vocab_size, args.seed)
    common = dict(projection_dim=None, num_dense_layers=1, dense_units=128, dropout=0.5, l2=4e-6, head="softmax")

    def words():  # frozen random vectors; one encoder per model
        return WordVectorEncoder(args.vocab_size, args.embedding_dim)

    keras.utils.set_random_seed(args.seed)
    models = {
        "qrnn": build_qrnn_matcher(words(), filters=args.units, kernel_size=2, **common),
        "ctrn_stretch": build_ctrn(words(), filters=args.units, kernel_size=2, alignment="stretch", **common),
        "ctrn_index": build_ctrn(words(), filters=args.units, kernel_size=2, alignment="index", **common),
        "lstm": build_lstm_matcher(words(), args.units, **common),
    }
    for model in models.values():
        model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")

    times = {name: [] for name in models}
    cpu_times = {name: [] for name in models}
    for i, (inputs, labels) in enumerate(batches):
        for name, model in models.items():
            start, cpu_start = time.perf_counter(), time.process_time()
            model.train_on_batch(inputs, labels)
            elapsed, cpu_elapsed = time.perf_counter() - start, time.process_time() - cpu_start
            if i >= args.warmup:
                times[name].append(elapsed * 1000.0)
                cpu_times[name].append(cpu_elapsed * 1000.0)

    median = {name: round(statistics.median(values), 1) for name, values in times.items()}
    cpu_median = {name: round(statistics.median(values), 1) for name, values in cpu_times.items()}
    default = keras_match_default_ctrn()

    def ratios(values):
        return {
            "ctrn_over_qrnn": round(values[default] / values["qrnn"], 3),
            "ctrn_over_lstm": round(values[default] / values["lstm"], 3),
            "ctrn_index_over_qrnn": round(values["ctrn_index"] / values["qrnn"], 3),
            "ctrn_stretch_over_qrnn": round(values["ctrn_stretch"] / values["qrnn"], 3),
            "qrnn_over_lstm": round(values["qrnn"] / values["lstm"], 3),
        }

    report = {
        "benchmark": "recurrence_speed",
        "what": "median train_on_batch time (forward + backward + Adam), ms per step",
        "batch_size": args.batch_size,
        "units": args.units,
        "embedding_dim": args.embedding_dim,
        "rounds": len(times["qrnn"]),
        "mean_lengths": {"question": round(float(q_lengths.mean()), 1), "answer": round(float(a_lengths.mean()), 1)},
        "mean_batch_max_lengths": {
            "question": round(float(np.mean([b[0]["question"].shape[1] for b in batches])), 1),
            "answer": round(float(np.mean([b[0]["answer"].shape[1] for b in batches])), 1),
        },
        "median_wall_ms": median,
        "p90_wall_ms": {name: round(float(np.percentile(values, 90)), 1) for name, values in times.items()},
        "median_cpu_ms": cpu_median,
        "trainable_parameters": {
            name: int(sum(np.prod(w.shape) for w in model.trainable_weights)) for name, model in models.items()
        },
        "ratios_wall": ratios(median),
        "ratios_cpu": ratios(cpu_median),
        "targets": {"ctrn_over_qrnn": 1.25, "ctrn_over_lstm": 0.5},
        "default_ctrn": default,
        "provenance": provenance.collect(
            started, seed=args.seed, dataset="trecqa-raw", data_files=data_files,
            load_average_at_start=[round(x, 2) for x in load_average]),
    }
    print(json.dumps(report, indent=2))
    return report


def keras_match_default_ctrn():
    """The model key of the CTRN layer's default alignment."""
    import inspect

    from keras_match.models.ctrn import CTRN

    return "ctrn_" + inspect.signature(CTRN).parameters["alignment"].default


if __name__ == "__main__":
    main()
