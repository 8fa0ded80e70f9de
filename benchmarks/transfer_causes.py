"""Why a shipped preset ranks another benchmark's test split worse than BM25 (issue 58): what the preset relies on
that does not carry, measured on the target's test split beside the preset's own test split. Prints JSON.

For the preset and each of the two splits (the target's test split; the preset's own benchmark's test split, as
its figures see it: `keras_match.artifacts.presets.benchmark_dataset`), with the same definitions on both:

- `figures`: the preset's and BM25's MAP / MRR / P@1 (benchmarks/transfer.py's BM25);
- `vocabulary`: the share of tokens and of distinct words outside the preset's vocabulary (id 1, what the model
  sees as out of vocabulary), and outside the words of its training split (which a trained embedding moved;
  frozen-vector presets keep GloVe's vector for the rest), over the split's distinct questions and distinct
  answers, each text once;
- `truncation`: the share of questions / answers longer than the preset's `max_question_length` /
  `max_answer_length` (tokens), and of the tokens cut;
- `correlations`: the mean over questions of the Spearman rank correlation, among a question's candidates, of the
  model's scores (and, for reference, of the labels and of BM25's scores) with the answer's length in tokens and
  with its overlap (the share of the question's distinct words, stop words and punctuation left out as in
  `keras_match.text.features`, found in the answer);
- `oov_halves`: the model's and BM25's MAP on the questions whose texts (the question and its candidates) have an
  out-of-vocabulary token share at or below the split's median, and above it; `overlap_halves`: the same on the
  questions whose labels follow the overlap (Spearman's rho of labels with overlap among the question's
  candidates) at most as much as the split's median question, and more (questions where it is undefined left
  out): where relevance is word overlap, and where it is not;
- `interventions`: the same preset scoring the split with a change that tests one hypothesis: `lengths_raised`
  (truncation lengths raised to the split's longest question and answer), `oov_dropped` (out-of-vocabulary tokens
  removed from the ids, as if absent) and, for a preset with trained embeddings, `oov_glove` (each word of the
  split the vocabulary lacks appended with its GloVe vector: the row it would have kept had training's vocabulary
  held it, since a row no training text reads gets no gradient; the trained rows unchanged); and, with the
  model's scores as they are, `length_removed` (within each question, the scores' least-squares line on the
  answer's length taken out, no label used: what the ranking is without its preference for longer or shorter
  answers).

With trained embeddings, `embeddings` says how far training moved the vectors from the GloVe vectors they started
from (L2 distance, relative to the GloVe vector's norm, and cosine), by the word's count in the training split, and
the norm of the out-of-vocabulary row. The JSON's `provenance` (`keras_match.artifacts.provenance`) records the
command, the code, the versions, the machine, the start and end times, the datasets and their data files with their
sha256. Only presets of the word tokenizer (not WordPiece) are measured.

    KERAS_MATCH_DATA=../shared/data python benchmarks/transfer_causes.py lc_lstm/trecqa-clean wikiqa \\
        > benchmarks/results/transfer/causes-lc_lstm-wikiqa.json
    KERAS_MATCH_DATA=../shared/data python benchmarks/transfer_causes.py compare_aggregate_mult/wikiqa-answered \\
        trecqa-clean > benchmarks/results/transfer/causes-compare_aggregate_mult-trecqa-clean.json
    KERAS_MATCH_DATA=../shared/data python benchmarks/transfer_causes.py ctrn_semeval/semeval2016 trecqa-clean \\
        > benchmarks/results/transfer/causes-ctrn_semeval-trecqa-clean.json
    KERAS_MATCH_DATA=../shared/data python benchmarks/transfer_causes.py ctrn_semeval/semeval2016 wikiqa \\
        > benchmarks/results/transfer/causes-ctrn_semeval-wikiqa.json

The presets below BM25 on another benchmark are those of `docs/presets.md`'s table `presets-transfer`; each file
is named `causes-<zoo entry>-<dataset>.json`.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import json
import os
import pathlib
import sys
import time
import unicodedata

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))  # benchmarks/transfer.py

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

FIGURES = ("map", "mrr", "p@1")
COUNT_BUCKETS = ((1, 1), (2, 4), (5, 19), (20, None))
"""Training-count buckets of the embedding movement: (least, most) occurrences in the training texts."""


# ---- tokens, vocabulary, truncation ---------------------------------------------------------------------------

def tokens_of(texts, lowercase=True) -> list:
    """Each text's tokens (`keras_match.text.tokenize`, the preprocessor's rule), as lists of str."""
    from keras_match import text

    if not len(texts):
        return []
    return [[t.decode("utf-8") for t in row] for row in text.tokenize(list(texts), lowercase=lowercase).to_list()]


def oov_shares(token_lists, vocabulary) -> dict:
    """The tokens and distinct words of `token_lists` that `vocabulary` (a set of words) lacks.

    Returns:
        `{"tokens", "oov_tokens", "token_share", "words", "oov_words", "word_share"}`: counts, and the shares
        (0 for no tokens).
    """
    counts = collections.Counter(token for tokens in token_lists for token in tokens)
    tokens = sum(counts.values())
    missing = {word: n for word, n in counts.items() if word not in vocabulary}
    oov_tokens = sum(missing.values())
    return {"tokens": tokens, "oov_tokens": oov_tokens, "token_share": oov_tokens / tokens if tokens else 0.0,
            "words": len(counts), "oov_words": len(missing),
            "word_share": len(missing) / len(counts) if counts else 0.0}


def truncation(token_lists, max_length) -> dict:
    """How the texts fare under a truncation length: `{"texts", "cut", "share_cut", "tokens_cut_share",
    "mean_length", "longest", "max_length"}` (`cut`: texts longer than `max_length`; `tokens_cut_share`: the
    share of all their tokens past it)."""
    lengths = np.array([len(tokens) for tokens in token_lists], np.int64)
    total = int(lengths.sum())
    cut = int((lengths > max_length).sum())
    beyond = int(np.maximum(lengths - max_length, 0).sum())
    return {"texts": int(len(lengths)), "cut": cut, "share_cut": cut / len(lengths) if len(lengths) else 0.0,
            "tokens_cut_share": beyond / total if total else 0.0,
            "mean_length": float(lengths.mean()) if len(lengths) else 0.0,
            "longest": int(lengths.max()) if len(lengths) else 0, "max_length": int(max_length)}


@functools.lru_cache(maxsize=1)
def _stop_words() -> frozenset:
    from keras_match.text.features import STOP_WORDS

    return frozenset(STOP_WORDS)


def _content(token) -> bool:
    """A token the overlap counts: not a stop word, not made only of punctuation or symbols
    (`keras_match.text.features`' rule)."""
    return token not in _stop_words() and not all(unicodedata.category(c)[0] in "PS" for c in token)


def overlap(question_tokens, answer_tokens) -> float:
    """The share of the question's distinct content words (`_content`) found in the answer (0 for none)."""
    words = {t for t in question_tokens if _content(t)}
    return len(words & set(answer_tokens)) / len(words) if words else 0.0


# ---- rank correlations, subsets --------------------------------------------------------------------------------

def spearman(x, y):
    """Spearman's rho of two sequences (`scipy.stats.spearmanr`, ties at their mean rank); None when either is
    constant (or shorter than 2)."""
    from scipy import stats

    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
    if len(x) < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return None
    return float(stats.spearmanr(x, y).statistic)


def spearman_by_question(groups, x, y) -> dict:
    """`{question id: Spearman's rho of x with y among its candidates}`, for the questions where both vary."""
    groups, x, y = np.asarray(groups, dtype=object), np.asarray(x, np.float64), np.asarray(y, np.float64)
    found = {}
    for group in dict.fromkeys(groups.tolist()):
        rows = groups == group
        rho = spearman(x[rows], y[rows])
        if rho is not None:
            found[group] = rho
    return found


def mean_spearman_by_question(groups, x, y) -> dict:
    """The mean over questions (rows grouped by `groups`) of Spearman's rho of `x` with `y` among the question's
    candidates: `{"rho": mean or None, "questions": questions where both vary}`."""
    values = list(spearman_by_question(groups, x, y).values())
    return {"rho": float(np.mean(values)) if values else None, "questions": len(values)}


def without_length(groups, scores, lengths):
    """The scores with their linear dependence on answer length taken out question by question: within each
    question's candidates, the residual of the least-squares line of the scores on the lengths (the scores as
    they are where the lengths do not vary). Uses no labels."""
    groups = np.asarray(groups, dtype=object)
    scores, lengths = np.asarray(scores, np.float64), np.asarray(lengths, np.float64)
    out = scores.copy()
    for group in dict.fromkeys(groups.tolist()):
        rows = groups == group
        x = lengths[rows]
        if rows.sum() > 1 and x.std() > 0:
            slope = np.cov(x, scores[rows], bias=True)[0, 1] / x.var()
            out[rows] = scores[rows] - slope * (x - x.mean())
    return out


def figures_on(examples, scores, no_positive, questions=None) -> dict:
    """MAP / MRR / P@1 of `scores` over the examples, or over the questions in `questions` only."""
    from keras_match import metrics

    keep = np.ones(len(scores), bool) if questions is None else np.isin(
        np.asarray(examples.groups, dtype=object), np.asarray(sorted(questions), dtype=object))
    return metrics.evaluate_ranking(np.asarray(examples.groups)[keep], np.asarray(examples.ids)[keep],
                                    np.asarray(scores)[keep], np.asarray(examples.labels)[keep],
                                    metrics=FIGURES, no_positive=no_positive)


def halves(examples, values, scores, no_positive) -> dict:
    """The questions split at the median of `values` (`{question id: value}`): `{"low": ..., "high": ...}`, each
    `{"median", "questions", "model": figures, "bm25": figures}` (`scores`: `{"model": ..., "bm25": ...}`); the
    low half holds the questions at or below the median."""
    median = float(np.median(list(values.values())))
    found = {}
    for name, chosen in (("low", {g for g, v in values.items() if v <= median}),
                         ("high", {g for g, v in values.items() if v > median})):
        found[name] = {"median": median, "questions": len(chosen),
                       **{key: figures_on(examples, value, no_positive, chosen) if chosen else None
                          for key, value in scores.items()}}
    return found


def question_oov_shares(examples, question_tokens, answer_tokens, vocabulary) -> dict:
    """`{question id: OOV token share of the question and its candidates}`, the question's text counted once."""
    totals = collections.defaultdict(lambda: [0, 0])
    seen = set()
    for group, q, a in zip(examples.groups, question_tokens, answer_tokens):
        texts = [a] if group in seen else [q, a]
        seen.add(group)
        for tokens in texts:
            totals[group][0] += sum(t not in vocabulary for t in tokens)
            totals[group][1] += len(tokens)
    return {group: (oov / n if n else 0.0) for group, (oov, n) in totals.items()}


# ---- scoring, interventions ------------------------------------------------------------------------------------

def scores_of(run, examples, change=None):
    """The run's ranking scores of the examples, float32 `[n]`; `change(inputs)` edits the encoded inputs first."""
    from keras_match import heads
    from keras_match.inputs import pipeline

    inputs = pipeline.encode(run.preprocessor, examples.texts)
    if change is not None:
        inputs = change(inputs)
    outputs = pipeline.predict(run.model, inputs, run.preprocessor.SEQUENCE_INPUTS)
    return np.asarray(heads.ranking_score(run.head, outputs), np.float32)


def drop_ids(inputs, drop_id, keys=("question", "answer")) -> dict:
    """The inputs with every `drop_id` removed from the token rows of `keys` (the rest moved left, padded with 0
    at the end: a row reads as if those tokens were absent)."""
    changed = dict(inputs)
    for key in keys:
        rows = np.asarray(inputs[key])
        out = np.zeros_like(rows)
        for i, row in enumerate(rows):
            kept = row[(row != drop_id) & (row != 0)]
            out[i, :len(kept)] = kept
        changed[key] = out
    return changed


@contextlib.contextmanager
def lengths(preprocessor, max_question_length, max_answer_length):
    """The preprocessor with other truncation lengths while the block runs (restored after)."""
    before = preprocessor.max_question_length, preprocessor.max_answer_length
    preprocessor.max_question_length, preprocessor.max_answer_length = int(max_question_length), int(max_answer_length)
    try:
        yield preprocessor
    finally:
        preprocessor.max_question_length, preprocessor.max_answer_length = before


def with_vector_rows(run, words, vectors):
    """A copy of a trained-embedding run whose vocabulary also holds `words` (those it lacks and `vectors` has),
    each with its vector; every other weight, and every trained row, the run's. Returns `(run, words added)`.

    Raises:
        ValueError: the run's embeddings are frozen (its vocabulary holds the vectors' words already).
    """
    from keras_match import families as zoo
    from keras_match.artifacts import preset_loader, runs
    from keras_match.training import finetune

    settings = preset_loader._settings(run.config)
    if not settings.model.get("trainable_embeddings"):
        raise ValueError("the run's embeddings are frozen: its vocabulary holds the vectors' words already")
    known = set(run.preprocessor.encoder.vocabulary)
    added = [word for word in dict.fromkeys(words) if word not in known and word in vectors.index]
    with_words = run.preprocessor.encoder.vocabulary + added
    preprocessor = type(run.preprocessor).from_config(run.preprocessor.get_config())
    preprocessor.set_vocabulary(with_words)
    if run.preprocessor.overlap is not None:
        preprocessor.set_document_frequencies(run.preprocessor.overlap)
    old = run.model.get_layer("word_embedding").get_weights()[0]
    matrix = np.zeros((old.shape[0] + len(added), old.shape[1]), np.float32)
    if added:
        matrix[old.shape[0]:] = vectors.matrix[[vectors.index[word] for word in added]]
    model = zoo.build(settings, embeddings=matrix, **preprocessor.model_arguments())
    finetune.transfer_weights(run.model, model)
    return runs.Run(model=model, preprocessor=preprocessor, config=run.config), len(added)


# ---- embeddings ---------------------------------------------------------------------------------------------

def embedding_movement(trained, vocabulary, vectors, counts, stored_dtype=None) -> dict:
    """How far trained vectors moved from the GloVe vectors they started from, by training count.

    Args:
        trained: the model's embedding matrix `[len(vocabulary) + 2, dim]` (rows 0, 1: padding, OOV).
        vocabulary: its words (row `i + 2` is `vocabulary[i]`).
        vectors: a `keras_match.text.vectors.WordVectors` (`index`, `matrix`).
        counts: `{word: occurrences in the training texts}`.
        stored_dtype: the dtype the weights were stored in (`"float16"` for a float16 preset): each bucket then
            has `rounding_relative_distance`, the relative distance of the GloVe vectors from themselves stored
            in it (what storage alone moves a vector that training did not).

    Returns:
        `{"oov_row_norm", "glove_mean_norm", "by_count": [{"count": "1" | "2-4" ..., "words", "distance",
        "relative_distance", "cosine", "trained_norm"[, "rounding_relative_distance"]}], "without_vector": words
        that had no GloVe vector}` (means over the words with a GloVe vector; a bucket without words has None
        figures).
    """
    trained = np.asarray(trained, np.float64)
    rows = [(i + 2, vectors.index[w], counts.get(w, 0)) for i, w in enumerate(vocabulary) if w in vectors.index]
    buckets = []
    norms = []
    for least, most in COUNT_BUCKETS + ((0, 0),):
        chosen = [(r, g) for r, g, n in rows if n >= least and (most is None or n <= most)]
        label = "0" if most == 0 else (f"{least}+" if most is None else (
            str(least) if least == most else f"{least}-{most}"))
        if not chosen:
            buckets.append({"count": label, "words": 0, "distance": None, "relative_distance": None,
                            "cosine": None, "trained_norm": None})
            continue
        t = trained[[r for r, _ in chosen]]
        g = np.asarray(vectors.matrix, np.float64)[[g for _, g in chosen]]
        distance = np.linalg.norm(t - g, axis=1)
        g_norm, t_norm = np.linalg.norm(g, axis=1), np.linalg.norm(t, axis=1)
        cosine = (t * g).sum(axis=1) / np.maximum(g_norm * t_norm, 1e-12)
        norms.extend(g_norm.tolist())
        bucket = {"count": label, "words": len(chosen), "distance": float(distance.mean()),
                  "relative_distance": float((distance / np.maximum(g_norm, 1e-12)).mean()),
                  "cosine": float(cosine.mean()), "trained_norm": float(t_norm.mean())}
        if stored_dtype is not None and np.dtype(stored_dtype) != np.float32:
            rounded = g.astype(np.float32).astype(stored_dtype).astype(np.float64)
            bucket["rounding_relative_distance"] = float(
                (np.linalg.norm(rounded - g, axis=1) / np.maximum(g_norm, 1e-12)).mean())
        buckets.append(bucket)
    return {"oov_row_norm": float(np.linalg.norm(trained[1])),
            "glove_mean_norm": float(np.mean(norms)) if norms else None,
            "by_count": buckets, "without_vector": len(vocabulary) - len(rows)}


# ---- one split -----------------------------------------------------------------------------------------------

def measure_split(run, split, no_positive, vocabulary, training_words, vectors=None) -> dict:
    """Every measurement of the module docstring on one split (a ranking split of a loaded dataset)."""
    import transfer
    from keras_match import tasks, text

    task = tasks.RankingTask(no_positive)
    examples = task.examples(split)
    lowercase = run.preprocessor.lowercase
    questions = np.asarray(examples.texts["question"], dtype=object)
    answers = np.asarray(examples.texts["answer"], dtype=object)
    distinct_q, distinct_a = list(dict.fromkeys(questions.tolist())), list(dict.fromkeys(answers.tolist()))
    tokens = dict(zip(distinct_q, tokens_of(distinct_q, lowercase)))
    tokens.update(zip(distinct_a, tokens_of(distinct_a, lowercase)))
    q_tokens, a_tokens = [tokens[q] for q in questions], [tokens[a] for a in answers]
    pre = run.preprocessor

    model_scores = scores_of(run, examples)
    bm25_scores = transfer.bm25_scores(split)
    result = {"pairs": len(examples.labels),
              "figures": {"model": figures_on(examples, model_scores, no_positive),
                          "bm25": figures_on(examples, bm25_scores, no_positive)}}
    result["vocabulary"] = {
        "questions": oov_shares([tokens[q] for q in distinct_q], vocabulary),
        "answers": oov_shares([tokens[a] for a in distinct_a], vocabulary),
        "all": oov_shares([tokens[t] for t in distinct_q + distinct_a], vocabulary),
        "outside_training_words": oov_shares([tokens[t] for t in distinct_q + distinct_a], training_words)}
    result["truncation"] = {"questions": truncation([tokens[q] for q in distinct_q], pre.max_question_length),
                            "answers": truncation([tokens[a] for a in distinct_a], pre.max_answer_length)}
    length = np.array([len(t) for t in a_tokens], np.float64)
    over = np.array([overlap(q, a) for q, a in zip(q_tokens, a_tokens)], np.float64)
    result["correlations"] = {
        name: {"answer_length": mean_spearman_by_question(examples.groups, values, length),
               "overlap": mean_spearman_by_question(examples.groups, values, over)}
        for name, values in (("model", model_scores), ("labels", examples.labels), ("bm25", bm25_scores))}
    both = {"model": model_scores, "bm25": bm25_scores}
    result["oov_halves"] = halves(examples, question_oov_shares(examples, q_tokens, a_tokens, vocabulary), both,
                                  no_positive)
    result["overlap_halves"] = halves(examples, spearman_by_question(examples.groups, examples.labels, over), both,
                                      no_positive)

    interventions = {}
    longest_q = max(1, max(len(t) for t in q_tokens))
    longest_a = max(1, max(len(t) for t in a_tokens))
    with lengths(pre, max(longest_q, pre.max_question_length), max(longest_a, pre.max_answer_length)):
        interventions["lengths_raised"] = {
            "max_question_length": pre.max_question_length, "max_answer_length": pre.max_answer_length,
            "figures": figures_on(examples, scores_of(run, examples), no_positive)}
    interventions["oov_dropped"] = {"figures": figures_on(
        examples, scores_of(run, examples, lambda inputs: drop_ids(inputs, text.OOV_ID)), no_positive)}
    if vectors is not None:
        extended, added = with_vector_rows(run, [t for ts in tokens.values() for t in ts], vectors)
        interventions["oov_glove"] = {
            "words_added": added,
            "still_oov": oov_shares([tokens[t] for t in distinct_q + distinct_a],
                                    set(extended.preprocessor.encoder.vocabulary))["token_share"],
            "figures": figures_on(examples, scores_of(extended, examples), no_positive)}
    interventions["length_removed"] = {"figures": figures_on(
        examples, without_length(examples.groups, model_scores, length), no_positive)}
    result["interventions"] = interventions
    return result


# ---- the preset, its data ------------------------------------------------------------------------------------

def training_split(config, metadata, data_dir=None):
    """The split the preset trained on: its benchmark loaded with the training file its `config.json` names
    (sha256), for the training words' counts; a preset chosen on held-out training questions (`holdout_dev`,
    whose training split joins several files and whose `config.json` names none) has its benchmark loaded as its
    figures see it. Returns `(split, data files)`.

    Raises:
        SystemExit: no training split of the benchmark has that file.
    """
    from keras_match import training
    from keras_match.artifacts import presets
    from keras_match.datasets.catalog import load_by_name

    wanted = ((config.get("data_files") or {}).get("train") or {}).get("sha256")
    holdout = metadata.get("holdout_dev")
    if holdout:  # the benchmark with the preset's held-out questions (its training split minus them)
        loads = [lambda: presets.benchmark_dataset(metadata["benchmark"], holdout, data_dir=data_dir)]
    else:
        loads = [lambda split=split: load_by_name(metadata["benchmark"], data_dir=data_dir, train_split=split)
                 for split in (None, "train", "train-all")]
    for load in loads:
        try:
            dataset = load()
        except ValueError:  # a training split the benchmark does not have
            continue
        files = training.data_files(dataset)
        if (files.get("train") or {}).get("sha256") == wanted or (holdout and wanted is None):
            return dataset["train"], files
    raise SystemExit(f"transfer_causes.py: no training split of {metadata['benchmark']} has the preset's training "
                     f"file (sha256 {str(wanted)[:12]}...)")


def measure(preset, target, data_dir=None) -> dict:
    """Every measurement of the module docstring for `preset` (a shipped name or folder) on `target` (a dataset
    name, `DATASET:SPLIT` for another split than test), beside the preset's own test split."""
    from keras_match import tasks, training
    from keras_match.artifacts import presets, runs
    from keras_match.datasets.catalog import load_by_name
    from keras_match.text import vectors as vectors_lib

    run = presets.load_preset(preset)
    if getattr(run.preprocessor, "tokenizer", "words") != "words":
        raise SystemExit(f"transfer_causes.py: {preset} reads WordPiece ids; only word-tokenizer presets are measured")
    root = presets.preset_dir(preset)
    metadata = runs.read_json(root / presets.METADATA_FILE)
    settings = run.config["settings"]
    trainable = bool(settings["model"].get("trainable_embeddings"))
    vocabulary = set(run.preprocessor.encoder.vocabulary)
    train, train_files = training_split(run.config, metadata, data_dir)
    counts = collections.Counter()
    texts = list(dict.fromkeys(train.pairs().questions.tolist())) + list(dict.fromkeys(train.pairs().answers.tolist()))
    for tokens in tokens_of(texts, run.preprocessor.lowercase):
        counts.update(tokens)
    training_words = set(counts)
    embedding = metadata.get("embedding") or {}
    vectors = None
    if embedding.get("vectors_sha256"):
        from keras_match.artifacts import preset_loader

        vectors = vectors_lib.load_vectors(preset_loader._vectors_for(root, embedding, None))
    own_dataset = presets.benchmark_dataset(metadata["benchmark"], metadata.get("holdout_dev"), data_dir=data_dir)
    name, _, split_name = target.partition(":")
    target_dataset = load_by_name(name, data_dir=data_dir)
    splits = {"own": (metadata["benchmark"], "test", own_dataset),
              "target": (name, split_name or "test", target_dataset)}
    result = {"preset": str(preset), "zoo": run.config.get("zoo"), "benchmark": metadata["benchmark"],
              "target": target,
              "settings": {"max_question_length": run.preprocessor.max_question_length,
                           "max_answer_length": run.preprocessor.max_answer_length,
                           "trainable_embeddings": trainable,
                           "missing_vectors": settings["preprocessing"].get("missing_vectors"),
                           "vectors": embedding.get("vectors"),
                           "vocabulary_words": len(vocabulary), "training_words": len(training_words),
                           "overlap_features": bool(settings["preprocessing"].get("overlap_features"))}}
    if trainable and vectors is not None:
        matrix = run.model.get_layer("word_embedding").get_weights()[0]
        result["embeddings"] = embedding_movement(matrix, run.preprocessor.encoder.vocabulary, vectors, counts,
                                                  (metadata.get("weights") or {}).get("dtype"))
    data_files = {"training": train_files}
    for key, (dataset_name, split_name, dataset) in splits.items():
        if split_name not in dataset:
            raise SystemExit(f"transfer_causes.py: {dataset_name} has no {split_name} split (it has "
                             f"{', '.join(sorted(dataset.splits))}; DATASET:SPLIT picks one)")
        print(f"{preset} on {dataset_name} {split_name} ...", file=sys.stderr, flush=True)
        result[key] = {"dataset": dataset_name, "split": split_name,
                       **measure_split(run, dataset[split_name], tasks.task_for(dataset).no_positive, vocabulary,
                                       training_words, vectors if trainable else None)}
        data_files[key] = training.data_files(dataset)
    result["data_files"] = data_files
    return result


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("preset", help="a shipped ranking preset (lc_lstm/trecqa-clean) or a preset folder")
    parser.add_argument("target", help="the dataset it ranks worse than BM25 (wikiqa; DATASET:SPLIT for a split)")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    from keras_match.artifacts import provenance

    started = time.time()
    result = measure(args.preset, args.target, data_dir=args.data_dir)
    files = result.pop("data_files")
    result["provenance"] = provenance.collect(started, datasets=[result["benchmark"], args.target],
                                              data_files=files)
    json.dump(result, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
