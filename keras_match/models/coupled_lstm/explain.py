"""What the Coupled-LSTMs grid holds for a pair: the paper's Figure 3 as a feature, and its interpretable neurons.

Liu et al. (EMNLP 2016, section 6.3, Figure 3) plot the activations of chosen neurons of the C-LSTMs over the
`n x m` grid of a sentence pair and observe "interpretable neurons": neurons whose strong activations sit on
word pairs that match. This module gives both for a trained `lc_lstm*` / `tc_lstm*` run:

- `grid_activations(run, question, answer)`: the output of a C-LSTMs block (default the last, after eq. 13's sum
  of the directions) for one pair, `[n, m, channels]`, with the words of both texts;
- `plot_grid_activations(result, path, neurons)`: one heat map per chosen neuron (question words down, answer
  words across), as a PNG;
- `interpretable_neurons(run, questions, answers)`: for every neuron, how often its largest activation over a
  pair's grid falls on a pair of equal words, against the share of such cells (chance);
- `plot_explanation`: `keras-match explain RUN --question ... --answer ... [--neurons K ...]`.

    keras-match explain runs/lc_lstm-trecqa --question "who wrote hamlet ?" \\
        --answer "hamlet was written by shakespeare ." --neurons 3 17 --out hamlet.png
    keras-match explain runs/lc_lstm-trecqa --question ... --answer ... --neurons interpretable
"""

from __future__ import annotations

import numpy as np

from keras_match.models.common import describe_output, explained_pair

__all__ = ["grid_activations", "plot_grid_activations", "interpretable_neurons", "plot_explanation"]

DEFAULT_NEURONS = 4
"""How many neurons `plot_explanation` draws when none are chosen (those of the largest activation)."""


def _blocks(model):
    from keras_match.models.coupled_lstm.coupled_lstm import CoupledLSTM2D

    blocks = [layer for layer in model.layers if isinstance(layer, CoupledLSTM2D)]
    if not blocks:
        raise ValueError(f"model {model.name!r} has no CoupledLSTM2D block: this explanation shows the Coupled-LSTMs "
                         "grid (zoo entries lc_lstm*, tc_lstm*)")
    return blocks


def _grid_model(run, block):
    import keras

    blocks = _blocks(run.model)
    if block is None:
        block = len(blocks)
    if isinstance(block, bool) or not isinstance(block, int) or not 1 <= block <= len(blocks):
        raise ValueError(f"block must be 1 ... {len(blocks)} (the model's C-LSTMs blocks), got {block!r}")
    return keras.Model(run.model.inputs, blocks[block - 1].output), block


def _tokens(run, texts, lengths):
    from keras_match import text

    tokenized = text.tokenize(list(texts), lowercase=run.preprocessor.lowercase).to_list()
    return [[t.decode("utf-8", "replace") if isinstance(t, bytes) else str(t) for t in words[:length]]
            for words, length in zip(tokenized, lengths)]


def _encode(run, questions, answers):
    from keras_match.inputs import pipeline

    inputs = pipeline.encode(run.preprocessor, {"question": list(questions), "answer": list(answers)})
    inputs = {key: np.asarray(value) for key, value in run.preprocessor.trim_padding(inputs).items()}
    lengths = [(inputs["question"] != 0).sum(axis=1), (inputs["answer"] != 0).sum(axis=1)]
    return inputs, lengths


def grid_activations(run, question, answer, block=None) -> dict:
    """The grid of a C-LSTMs block for one pair of a trained Coupled-LSTMs run.

    Args:
        run: a `keras_match.artifacts.runs.Run` (`keras_match.artifacts.runs.load_run(RUN_DIR)`) of an `lc_lstm*` /
            `tc_lstm*` entry.
        question: the question (premise) text, str.
        answer: the answer (hypothesis) text, str.
        block: which block, 1-based (default: the last, the one the dynamic pooling reads).

    Returns:
        dict with `question_tokens` (`[n]` str, the question's words after truncation), `answer_tokens` (`[m]`),
        `grid` (float32 `[n, m, channels]`: `h_{i,j}` summed over the directions, eq. 13; `channels` is `units`
        for TC-LSTMs, `2 * units` for LC-LSTMs, `[h^(1); h^(2)]`), `block` and `score` (the model's output).

    Raises:
        ValueError: the run is not a Coupled-LSTMs run, `block` is not one of its blocks, or a text has no word.
    """
    model, block = _grid_model(run, block)
    inputs, (len_q, len_a) = _encode(run, [question], [answer])
    if len_q[0] == 0 or len_a[0] == 0:
        raise ValueError("the question and the answer need a word each (one is empty after tokenization)")
    grid = np.asarray(model.predict(inputs, verbose=0))[0, : len_q[0], : len_a[0]]
    score = np.asarray(run.model.predict(inputs, verbose=0))[0]
    return {"question_tokens": _tokens(run, [question], len_q)[0], "answer_tokens": _tokens(run, [answer], len_a)[0],
            "grid": grid.astype(np.float32), "block": block, "score": score.tolist()}


def interpretable_neurons(run, questions, answers, block=None, batch_size=64) -> dict:
    """The paper's "interpretable neurons" (section 6.3): the neurons whose largest activation over a pair's grid
    falls on a word pair that matches.

    For each pair with at least one cell `(i, j)` whose words are equal (question word i == answer word j, after
    the run's lowercasing), and each neuron (channel) of the block's grid, the cell of the neuron's largest
    activation within the pair's true lengths is found; a neuron's `match_rate` is the share of those pairs where
    that cell is a matching word pair. `chance` is the mean share of matching cells in those pairs: the rate of
    a neuron that peaks at random cells.

    Args:
        run: a Coupled-LSTMs run (as `grid_activations`).
        questions: a list of texts (e.g. a dev split's questions).
        answers: a list of texts parallel to `questions` (e.g. the dev split's answers).
        block: which block, 1-based (default the last).
        batch_size: pairs per model call.

    Returns:
        dict with `neurons` (list of `{"neuron", "match_rate"}`, highest rate first), `pairs` (the pairs with a
        matching word pair, the denominator), `pairs_read` and `chance`.

    Raises:
        ValueError: not a Coupled-LSTMs run, lists of different lengths, or no pair with a matching word pair.
    """
    if len(questions) != len(answers):
        raise ValueError(f"questions and answers must be parallel lists, got {len(questions)} and {len(answers)}")
    model, block = _grid_model(run, block)
    hits, counted, chance = None, 0, []
    for start in range(0, len(questions), batch_size):
        q_texts, a_texts = questions[start : start + batch_size], answers[start : start + batch_size]
        inputs, (len_q, len_a) = _encode(run, q_texts, a_texts)
        grids = np.asarray(model.predict(inputs, verbose=0))
        q_tokens, a_tokens = _tokens(run, q_texts, len_q), _tokens(run, a_texts, len_a)
        if hits is None:
            hits = np.zeros(grids.shape[-1], np.int64)
        for grid, qw, aw in zip(grids, q_tokens, a_tokens):
            if not qw or not aw:
                continue
            matching = np.asarray(qw, object)[:, None] == np.asarray(aw, object)[None, :]  # [n, m]
            if not matching.any():
                continue
            flat = grid[: len(qw), : len(aw)].reshape(-1, grid.shape[-1])  # [n * m, channels]
            hits += matching.reshape(-1)[flat.argmax(axis=0)]
            counted += 1
            chance.append(float(matching.mean()))
    if not counted:
        raise ValueError("no pair has a word of the question equal to a word of the answer: nothing to match")
    rates = hits / counted
    order = np.argsort(-rates, kind="stable")
    return {"block": block, "neurons": [{"neuron": int(k), "match_rate": round(float(rates[k]), 4)} for k in order],
            "pairs": counted, "pairs_read": len(questions), "chance": round(float(np.mean(chance)), 4)}


def plot_grid_activations(result, path, neurons, question=None):
    """Draws the activations of `neurons` over the grid of `grid_activations`'s `result` (one heat map each,
    question words down, answer words across) as a PNG at `path`.

    Raises:
        ValueError: a neuron is not a channel of the grid.
        keras_match.artifacts.storage.WriteError: the file could not be written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from keras_match.artifacts import storage

    grid, rows, columns = result["grid"], result["question_tokens"], result["answer_tokens"]
    bad = [k for k in neurons if isinstance(k, bool) or not isinstance(k, (int, np.integer))
           or not 0 <= k < grid.shape[-1]]
    if bad or not neurons:
        raise ValueError(f"neurons must be channels 0 ... {grid.shape[-1] - 1} of block {result['block']}, got "
                         f"{list(neurons)!r}")
    cell = 0.38
    width = max(3.0, cell * len(columns) + 2.0)
    height = max(2.5, cell * len(rows) + 1.6)
    figure, axes = plt.subplots(1, len(neurons), figsize=(width * len(neurons), height), squeeze=False)
    for axis, neuron in zip(axes[0], neurons):
        image = axis.imshow(grid[:, :, neuron], cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest")
        axis.set_xticks(np.arange(len(columns)), columns, rotation=70, ha="right", fontsize=7)
        axis.set_yticks(np.arange(len(rows)), rows, fontsize=7)
        axis.set_title(f"neuron {neuron}", fontsize=9)
        figure.colorbar(image, ax=axis, fraction=0.046, pad=0.04)
    title = f"C-LSTMs block {result['block']}: activations over the grid (Liu et al. 2016, Figure 3)"
    figure.suptitle(title if question is None else f"{title}\nquestion: {question}", fontsize=9)
    figure.tight_layout()
    storage.atomic_write(path, lambda staged: figure.savefig(staged, format="png", dpi=120))
    plt.close(figure)


def _dev_pairs(run, data_dir=None):
    from keras_match.datasets.catalog import load_by_name

    spec = run.config.get("dataset")
    if not isinstance(spec, str):
        raise ValueError("--neurons interpretable reads the run's dev split, and this run's config.json names no "
                         "dataset; choose --neurons K [K ...]")
    from keras_match.tasks import task_for

    dataset = load_by_name(spec, data_dir=data_dir)
    texts = task_for(dataset).examples(dataset["dev"]).texts  # a ranking or a classification split alike
    return list(texts["question"]), list(texts["answer"])


def plot_explanation(run, texts, out, neurons=None, data_dir=None, **options) -> list:
    """`keras-match explain` for a Coupled-LSTMs run: plots the grid activations of chosen neurons for one pair to
    the PNG `out` and returns the lines to print.

    Args:
        run: a `keras_match.artifacts.runs.Run` of an `lc_lstm*` / `tc_lstm*` entry.
        texts: `{"question": [one text], "answer": [one text]}`.
        out: the PNG to write.
        neurons: channel numbers (ints or digit strings), `["interpretable"]` (the four of the highest
            `match_rate` on the run's dev split, `interpretable_neurons`), or None (the four of the largest
            activation on this pair).
        data_dir: the benchmark data folder, for `"interpretable"` (default `$KERAS_MATCH_DATA`, then the cache).

    Raises:
        ValueError: as `grid_activations`; `texts` holds other than one question and one answer; an option this
            explanation does not take.
    """
    question, answer = explained_pair(texts, options, "coupled_lstm", "--neurons")
    result = grid_activations(run, question, answer)
    lines = []
    if neurons and list(neurons) == ["interpretable"]:
        found = interpretable_neurons(run, *_dev_pairs(run, data_dir))
        chosen = [row["neuron"] for row in found["neurons"][:DEFAULT_NEURONS]]
        lines.append("interpretable neurons (dev split, {} pairs with a matching word pair; chance {:.3f}): ".format(
            found["pairs"], found["chance"]) + ", ".join(
            f"{row['neuron']} ({row['match_rate']:.3f})" for row in found["neurons"][:DEFAULT_NEURONS]))
    elif neurons:
        try:
            chosen = [int(k) for k in neurons]
        except (TypeError, ValueError):
            raise ValueError(f"--neurons takes channel numbers or the word interpretable, got {list(neurons)!r}")
    else:
        peaks = result["grid"].reshape(-1, result["grid"].shape[-1]).max(axis=0)
        chosen = [int(k) for k in np.argsort(-peaks, kind="stable")[:DEFAULT_NEURONS]]
    plot_grid_activations(result, out, chosen, question=question)
    output = describe_output(result["score"], run.label_names)  # a score, or a probability per label
    grid = result["grid"]
    for k in chosen:
        i, j = np.unravel_index(int(grid[:, :, k].argmax()), grid.shape[:2])
        lines.append(f"neuron {k}: largest activation {grid[i, j, k]:.3f} at "
                     f"({result['question_tokens'][i]!r}, {result['answer_tokens'][j]!r})")
    return [output, *lines, f"plot written to {out}"]
