"""The contextual language model of the CARNN paper (Tran et al., NAACL 2018, section 4.2) against the same model
without context and a plain LSTM language model, on dialog bAbI task 6; prints JSON.

The paper's corpora (Switchboard Dialog Act, Penn Discourse Treebank) cannot be obtained here, so these figures are
not comparable with its Table 2: the corpus is dialog bAbI task 6 (DSTC2), every user and bot utterance a sentence,
its previous utterance the context and the speaker (user / bot) the per-sentence label of eq. 12
(`keras_match.models.contextual_lm.data`: KB lines and `<SILENCE>` left out, words seen fewer than `--min-count`
times in train are `[UNK]`, sentences cut to `--max-length` tokens).

Models (`--model`, `keras_match.models.contextual_lm.ContextualLanguageModel`):

- `contextual`: eq. 11-13, the previous sentence encoded by a context-free nCARNN whose last state is the context of
  the sentence's CARNN LM (`--variant n|i|s`), eq. 12's speaker head and eq. 13's loss with alpha = 0.5;
- `no_context`: the same CARNN LM with a zero context (loss: the word log-loss alone);
- `lstm`: a plain LSTM LM, `--hidden` units.

Training: Adam (`--learning-rate`, gradient norm clipped at `--clipnorm`), batches of `--batch-size` sentences of
similar length in random order, `--epochs` epochs; the epoch with the lowest dev perplexity is kept and scored on
test. Perplexity is per token: `exp` of the mean negative log-likelihood (nats) over every real target token (the
words and `</s>`; padding masked), the same for the three models. Per-epoch wall time covers training only (dev
scoring is timed apart); the first epoch a process trains also traces the training step
(`includes_tracing`), so `epoch_seconds_untraced_median` is the steady-state figure.

    python benchmarks/contextual_lm.py --model contextual --variant i --hidden 256 --epochs 10 \\
        --out benchmarks/results/contextual_lm/contextual_i.json

With `--checkpoint-dir DIR` the run saves itself after every epoch and, started again with the same settings,
resumes after the last finished epoch (`--epochs` may be raised to train on). Progress goes to stderr; the JSON (also written to `--out`) holds the settings, parameter counts, per-epoch
losses / dev perplexities / times, the chosen epoch, dev and test perplexity, data counts and `provenance`
(`keras_match.artifacts.provenance`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=("contextual", "no_context", "lstm"), default="contextual")
    parser.add_argument("--variant", choices=("n", "i", "s"), default="i",
                        help="the LM's CARNN unit (ignored by --model lstm)")
    parser.add_argument("--hidden", type=int, default=256, help="hidden size of every recurrent unit")
    parser.add_argument("--embedding-dim", type=int, default=None, help="word-embedding width (default: --hidden)")
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--clipnorm", type=float, default=5.0)
    parser.add_argument("--alpha", type=float, default=0.5, help="eq. 13's mixing weight")
    parser.add_argument("--min-count", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=30)
    parser.add_argument("--max-train-dialogs", type=int, default=None, help="keep the first N training dialogs")
    parser.add_argument("--data-dir", default=None, help="default: $KERAS_MATCH_DATA, then the user cache")
    parser.add_argument("--threads", type=int, default=0, help="TensorFlow intra- and inter-op threads (0: default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="also write the JSON here")
    parser.add_argument("--checkpoint-dir", default=None,
                        help="save the model, its optimizer and the epochs so far after every epoch; a run started "
                             "again with the same settings resumes there (--epochs may grow)")
    args = parser.parse_args(argv)
    if args.hidden < 1 or args.epochs < 1 or args.batch_size < 1:
        parser.error("--hidden, --epochs and --batch-size must be positive")
    return args


def log(message):
    print(f"[contextual_lm {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


RESUME_IGNORES = ("epochs", "out", "threads", "checkpoint_dir")
"""Settings a resumed run may change; every other one must equal the checkpoint's."""


class Checkpoint:
    """`--checkpoint-dir`: `last.keras` (the model and its optimizer after the last finished epoch),
    `best.weights.h5` (the weights of the best dev epoch) and `state.json` (settings, epochs so far, best epoch),
    each written to a temporary name and then renamed, so an interrupted save leaves the previous one."""

    def __init__(self, directory, args):
        self.directory = directory
        self.settings = {k: v for k, v in sorted(vars(args).items()) if k not in RESUME_IGNORES}
        os.makedirs(directory, exist_ok=True)

    def path(self, name):
        return os.path.join(self.directory, name)

    def exists(self):
        return os.path.isfile(self.path("state.json"))

    def restore(self):
        import keras

        with open(self.path("state.json"), encoding="utf-8") as f:
            state = json.load(f)
        if state["settings"] != self.settings:
            differ = sorted(k for k in set(state["settings"]) | set(self.settings)
                            if state["settings"].get(k) != self.settings.get(k))
            raise SystemExit(f"{self.path('state.json')}: the checkpoint was made with other settings ({differ}); "
                             "use another --checkpoint-dir")
        model = keras.saving.load_model(self.path("last.keras"))
        return model, state["epochs"], state["best"]

    def save(self, model, epochs, best, improved):
        if improved:
            model.save_weights(self.path("best.tmp.weights.h5"))
            os.replace(self.path("best.tmp.weights.h5"), self.path("best.weights.h5"))
        model.save(self.path("last.tmp.keras"))
        os.replace(self.path("last.tmp.keras"), self.path("last.keras"))
        with open(self.path("state.tmp.json"), "w", encoding="utf-8") as f:
            json.dump({"settings": self.settings, "epochs": epochs, "best": best}, f, indent=2)
        os.replace(self.path("state.tmp.json"), self.path("state.json"))

    def load_best(self, model):
        model.load_weights(self.path("best.weights.h5"))


def main(argv=None):
    args = parse_args(argv)
    started, load_average = time.time(), os.getloadavg()
    import keras
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from keras_match.artifacts import provenance
    from keras_match.inputs.pipeline import without_autotune
    from keras_match.models.contextual_lm import ContextualLanguageModel, data, evaluate_perplexity
    from keras_match.training.trainer import data_files

    keras.utils.set_random_seed(args.seed)
    log(f"preparing dialog bAbI task 6 (min count {args.min_count}, max length {args.max_length})")
    corpus = data.prepare(args.data_dir, min_count=args.min_count, max_length=args.max_length,
                          max_train_dialogs=args.max_train_dialogs)
    train, dev, test = corpus["train"], corpus["dev"], corpus["test"]
    log(f"vocabulary {corpus.vocabulary_size} ids; sentences train {len(train)}, dev {len(dev)}, test {len(test)}")

    model = ContextualLanguageModel(corpus.vocabulary_size, hidden=args.hidden, kind=args.model,
                                    variant=args.variant, num_labels=corpus.num_labels, alpha=args.alpha,
                                    embedding_dim=args.embedding_dim)
    model.compile(optimizer=keras.optimizers.Adam(args.learning_rate, clipnorm=args.clipnorm))
    parameters = {"total": int(model.count_params()),
                  "trainable": int(sum(int(np.prod(w.shape)) for w in model.trainable_weights)),
                  "unused": model.unused_parameters()}
    parameters["used"] = parameters["total"] - parameters["unused"]
    log(f"{args.model} (variant {args.variant}) hidden {args.hidden}: {parameters['total']:,} parameters")

    spec = tf.TensorSpec([None, None], tf.int32)
    signature = ({"previous": spec, "tokens": spec}, {"next_word": spec, "label": tf.TensorSpec([None], tf.int32)})
    dev_batches = list(dev.batches(256))
    test_batches = list(test.batches(256))
    num_batches = -(-len(train) // args.batch_size)

    class Progress(keras.callbacks.Callback):
        def __init__(self, epoch):
            super().__init__()
            self.epoch = epoch

        def on_train_batch_end(self, batch, logs=None):
            if (batch + 1) % 200 == 0:
                log(f"epoch {self.epoch} batch {batch + 1}/{num_batches} loss {float(logs['loss']):.4f}")

    epochs, best, best_weights = [], None, None
    checkpoint = Checkpoint(args.checkpoint_dir, args) if args.checkpoint_dir else None
    if checkpoint is not None and checkpoint.exists():
        model, epochs, best = checkpoint.restore()
        log(f"resumed from {args.checkpoint_dir} after epoch {len(epochs)} (best so far: epoch {best['epoch']})")
    first_epoch = len(epochs) + 1  # this process's first epoch also traces the training step
    for epoch in range(first_epoch, args.epochs + 1):
        seed = args.seed * 1000 + epoch
        dataset = without_autotune(tf.data.Dataset.from_generator(  # its iterator is deleted after each epoch
            lambda seed=seed: train.batches(args.batch_size, shuffle=True, seed=seed), output_signature=signature
        ).apply(tf.data.experimental.assert_cardinality(num_batches)))
        t0 = time.time()
        history = model.fit(dataset, epochs=1, verbose=0, shuffle=False, callbacks=[Progress(epoch)])
        seconds = time.time() - t0
        t1 = time.time()
        scored = evaluate_perplexity(model, dev_batches)
        row = {"epoch": epoch, "train_loss": float(history.history["loss"][-1]), "seconds": round(seconds, 2),
               "dev_perplexity": scored["perplexity"], "dev_label_accuracy": scored["label_accuracy"],
               "dev_seconds": round(time.time() - t1, 2), "includes_tracing": epoch == first_epoch}
        epochs.append(row)
        log(f"epoch {epoch}: loss {row['train_loss']:.4f}, dev perplexity {row['dev_perplexity']:.3f}, "
            f"{seconds:.1f} s")
        improved = best is None or row["dev_perplexity"] < best["dev_perplexity"]
        if improved:
            best, best_weights = row, model.get_weights()
        if checkpoint is not None:
            checkpoint.save(model, epochs, best, improved)
    if best_weights is not None:
        model.set_weights(best_weights)
    else:  # the best epoch was trained before a resume
        checkpoint.load_best(model)
    dev_final = evaluate_perplexity(model, dev_batches)
    test_final = evaluate_perplexity(model, test_batches)
    log(f"epoch {best['epoch']} chosen: dev perplexity {dev_final['perplexity']:.3f}, "
        f"test perplexity {test_final['perplexity']:.3f}")

    seconds = [row["seconds"] for row in epochs]
    untraced = [row["seconds"] for row in epochs if not row.get("includes_tracing")]
    report = {
        "benchmark": "contextual_lm",
        "what": "per-token perplexity (exp of the mean NLL in nats over real target tokens: words and </s>, "
                "padding masked) of a language model over dialog bAbI task 6 utterances; the paper's datasets "
                "(Switchboard, Penn Discourse Treebank) were not used",
        "model": args.model, "variant": args.variant if args.model != "lstm" else None,
        "settings": {"hidden": args.hidden, "embedding_dim": args.embedding_dim or args.hidden,
                     "epochs": args.epochs, "batch_size": args.batch_size, "learning_rate": args.learning_rate,
                     "clipnorm": args.clipnorm, "alpha": args.alpha if args.model == "contextual" else None,
                     "min_count": args.min_count, "max_length": args.max_length,
                     "max_train_dialogs": args.max_train_dialogs, "seed": args.seed, "threads": args.threads},
        "parameters": parameters,
        "data": {"vocabulary_size": corpus.vocabulary_size, "counts": corpus.metadata["counts"],
                 "labels": corpus.metadata["labels"]},
        "epochs": epochs,
        "best_epoch": best["epoch"],
        "dev_perplexity": dev_final["perplexity"],
        "test_perplexity": test_final["perplexity"],
        "dev_label_accuracy": dev_final["label_accuracy"],
        "test_label_accuracy": test_final["label_accuracy"],
        "test_tokens": test_final["tokens"],
        "epoch_seconds_mean": float(np.mean(seconds)),
        "epoch_seconds_median": float(np.median(seconds)),
        "epoch_seconds_untraced_median": float(np.median(untraced)) if untraced else None,
    }
    report["provenance"] = provenance.collect(
        started, seed=args.seed, dataset=corpus.metadata["dataset"], data_files=data_files(corpus),
        load_average_at_start=[round(v, 2) for v in load_average])
    text = json.dumps(report, indent=2)
    if args.out:
        directory = os.path.dirname(os.path.abspath(args.out))
        os.makedirs(directory, exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text + "\n")
    print(text)
    return report


if __name__ == "__main__":
    main()
