"""Where Compare-Aggregate's CNN takes its largest values: the paper's Figure 2 as a feature.

Wang & Jiang (ICLR 2017, section 3.3, Figure 2) plot, for one answer, "the largest value of each dimension in
the convolutional layer of CNN": eq. 9 max-pools every dimension of every convolution over the answer's words,
so each dimension's maximum comes from one window, and the words that win many (large) maxima are the words the
model matches. `conv_maxima` computes that for one (question, answer) pair of a trained run; `plot_conv_maxima`
draws it with matplotlib:

- top: the convolution features of the chosen window size, dimensions x answer words (the heat map behind the
  paper's figure), with each dimension's maximum marked;
- bottom: per answer word, the sum of the maxima its windows won (a window is credited to the word it starts
  at, or, with `conv_padding="same"`, the word it is centred on).

    keras-match explain runs/compare_aggregate_mult-wikiqa --question "how are glacier caves formed ?" \\
        --answer "A glacier cave is a cave formed within the ice of a glacier ." --out cave.png
"""

from __future__ import annotations

import numpy as np

from keras_match.encoders import EMBEDDING_LAYER
from keras_match.models.common import describe_output, explained_pair

__all__ = ["conv_maxima", "plot_conv_maxima"]


def _compare_aggregate_layer(model):
    from keras_match.models.compare_aggregate.compare_aggregate import CompareAggregate

    found = [layer for layer in model.layers if isinstance(layer, CompareAggregate)]
    if not found:
        raise ValueError(f"model {model.name!r} has no CompareAggregate layer: explain shows Compare-Aggregate's "
                         "CNN (zoo entries compare_aggregate_*)")
    return found[0]


def conv_maxima(run, question, answer, window=None) -> dict:
    """The CNN's per-word features and each dimension's maximum for one pair of a trained Compare-Aggregate run.

    Args:
        run: a `keras_match.artifacts.runs.Run` (`keras_match.artifacts.runs.load_run(RUN_DIR)`) of a
            `compare_aggregate_*` entry.
        question: the question (premise) text, str.
        answer: the answer (hypothesis) text, str.
        window: the window size whose convolution to show (default: the largest of the model's windows).

    Returns:
        dict with `tokens` (the answer's words after truncation, `[len_a]` str; out-of-vocabulary words keep
        their text), `window`, `features` (float32 `[len_a, filters]`: the window's ReLU convolution at each
        window position, 0 where no window counts), `argmax` (int `[filters]`: the word each dimension's maximum
        comes from), `maxima` (float32 `[filters]`), `credit` (float32 `[len_a]`: the sum of the maxima won by
        windows starting at each word) and `score` (the model's output for the pair).

    Raises:
        ValueError: the run's model is not Compare-Aggregate, `window` is not one of its windows, or the answer
            has no word.
    """
    from keras_match import text
    from keras_match.inputs import pipeline
    from keras_match.models.compare_aggregate.compare_aggregate import CompareAggregate

    layer = _compare_aggregate_layer(run.model)
    config = layer.get_config()
    windows = list(config["windows"])
    window = max(windows) if window is None else window
    if window not in windows:
        raise ValueError(f"window {window!r} is not one of the model's window sizes {windows}")
    inputs = pipeline.encode(run.preprocessor, {"question": [question], "answer": [answer]})
    q_ids, a_ids = inputs["question"][:1], inputs["answer"][:1]
    length = int((a_ids[0] != 0).sum())
    if length == 0:
        raise ValueError("the answer has no word to show (empty after tokenization)")
    tokens = [t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t)
              for t in text.tokenize([answer], lowercase=run.preprocessor.lowercase)[0].numpy().tolist()][:length]

    embedding = run.model.get_layer(EMBEDDING_LAYER)
    probe = CompareAggregate.from_config({**config, "return_word_features": True})
    q, a = embedding(q_ids), embedding(a_ids)
    masks = [q_ids != 0, a_ids != 0]
    probe.build([tuple(q.shape), tuple(a.shape)])
    probe.set_weights(layer.get_weights())
    out = probe([q, a], mask=masks)
    filters = out["word_features"].shape[-1] // len(windows)
    index = windows.index(window)
    features = np.asarray(out["word_features"])[0, :length, index * filters:(index + 1) * filters]
    argmax = features.argmax(axis=0)
    maxima = features.max(axis=0)
    credit = np.zeros(length, np.float32)
    np.add.at(credit, argmax, maxima)
    score = np.asarray(run.model.predict({k: v[:1] for k, v in inputs.items()}, verbose=0))[0]
    return {"tokens": tokens, "window": window, "features": features.astype(np.float32), "argmax": argmax,
            "maxima": maxima.astype(np.float32), "credit": credit, "score": score.tolist()}


def plot_conv_maxima(result, path, question=None):
    """Draws `conv_maxima`'s result (heat map and per-word credit, see the module docstring) as a PNG at `path`.

    Raises:
        keras_match.artifacts.storage.WriteError: the file could not be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_match.artifacts import storage

    tokens, features = result["tokens"], result["features"]
    width = max(5.0, 0.45 * len(tokens) + 2)
    figure, (top, bottom) = plt.subplots(2, 1, figsize=(width, 6.0), sharex=True,
                                         gridspec_kw={"height_ratios": [2, 1]})
    top.imshow(features.T, aspect="auto", cmap="Blues", interpolation="nearest")
    top.scatter(result["argmax"], np.arange(features.shape[1]), s=6, c="#dd8452", label="each dimension's maximum")
    top.set_ylabel(f"dimension (window {result['window']})")
    top.legend(loc="upper right", fontsize=7)
    title = "Largest value of each CNN dimension per answer word (Wang & Jiang 2017, Figure 2)"
    top.set_title(title if question is None else f"{title}\nquestion: {question}", fontsize=9)
    bottom.bar(np.arange(len(tokens)), result["credit"], color="#4c72b0")
    bottom.set_ylabel("sum of maxima won")
    bottom.set_xticks(np.arange(len(tokens)), tokens, rotation=60, ha="right", fontsize=8)
    figure.tight_layout()
    storage.atomic_write(path, lambda staged: figure.savefig(staged, format="png", dpi=120))
    plt.close(figure)


def plot_explanation(run, texts, out, window=None, **options) -> list:
    """`keras-match explain` for a Compare-Aggregate run: plots `conv_maxima` of one pair to the PNG `out` and
    returns the lines to print (the model's output and the five words that win the most CNN maxima).

    Args:
        run: a `keras_match.artifacts.runs.Run` of a `compare_aggregate_*` entry.
        texts: `{"question": [one text], "answer": [one text]}`.
        out: the PNG to write.
        window: the window size to show (default the largest).

    Raises:
        ValueError: as `conv_maxima`; `texts` holds other than one question and one answer; an option this
            explanation does not take.
    """
    question, answer = explained_pair(texts, options, "compare_aggregate", "--window")
    result = conv_maxima(run, question, answer, window=window)
    plot_conv_maxima(result, out, question=question)
    top = sorted(zip(result["credit"].tolist(), result["tokens"]), reverse=True)[:5]
    output = describe_output(result["score"], run.label_names)  # a score, or a probability per label
    return [f"{output}; window {result['window']}: the words that win the most CNN maxima: "
            + ", ".join(f"{word} ({credit:.2f})" for credit, word in top if credit > 0),
            f"plot written to {out}"]
