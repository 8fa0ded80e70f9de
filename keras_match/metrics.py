"""Ranking metrics for answer selection and response selection, computed the way trec_eval computes them, and
the accuracy / F1 of sentence-pair classification.

Pure NumPy: importing this module does not import TensorFlow or Keras.

Conventions (trec_eval 9.x, ``form_res_rels.c``):

* Candidates of a question are ranked by score, descending; ties are broken by the candidate (document) id
  compared as a string, **descending** (``"9" > "29" > "10" > "1"``). :func:`rank_order` implements this and every
  metric uses it.
* A candidate is relevant when its label is ``>= 1`` (trec_eval's default relevance level); graded labels are
  allowed.
* A question without any relevant candidate is handled by an explicit convention, ``no_positive`` in
  :func:`evaluate_ranking`: ``"skip"`` (the question is left out of the means), ``"zero"`` (it counts as 0 for
  every metric) or ``"error"``. trec_eval itself averages over the questions present in both the run and the
  qrels: a question listed in the qrels with only non-relevant judgments counts as 0 there (``"zero"``); a
  question absent from the qrels (e.g. WikiQA's ``-filtered.ref``) is left out (``"skip"``).

Typical use::

    from keras_match import metrics
    result = metrics.evaluate_ranking(qids, aids, scores, labels, metrics=("map", "mrr", "p@1"))
    # -> {"map": ..., "mrr": ..., "p@1": ..., "num_questions": ..., "num_skipped": ...}
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Callable, Sequence

import numpy as np

from keras_match.artifacts import storage

if TYPE_CHECKING:  # pragma: no cover
    from keras_match.datasets.base import Split

NO_POSITIVE_CONVENTIONS = ("skip", "zero", "error")
DEFAULT_METRICS = ("map", "mrr", "p@1")

_FIGURE_NAMES = {"accuracy": "accuracy", "macro_f1": "macro-F1", "per_response_accuracy": "per-response accuracy",
                 "per_dialog_accuracy": "per-dialog accuracy"}


def figure_name(key: str) -> str:
    """How a figure's key is printed: `map` -> `MAP`, `mrr` -> `MRR`, `p@1` -> `P@1`, `r10@1` -> `R10@1`,
    `accuracy` -> `accuracy`, `macro_f1` -> `macro-F1`, `per_response_accuracy` -> `per-response accuracy`."""
    return _FIGURE_NAMES.get(key, key.upper())


# ----------------------------------------------------------------------------------------------------------------
# Ranking within one question
# ----------------------------------------------------------------------------------------------------------------


def rank_order(scores, docids=None) -> np.ndarray:
    """Order the candidates of one question the way trec_eval does.

    Sorts by score, descending; ties are broken by candidate id compared as a string, descending
    (trec_eval's ``comp_sim_docno``: ``"9"`` before ``"29"`` before ``"10"`` before ``"1"``).

    Args:
        scores: float array-like of shape ``[n]``; higher means more relevant. Must be finite.
        docids: the candidates' ids, array-like of ``n`` values converted with ``str``. Defaults to the
            candidates' positions (``"0"``, ``"1"``, ...), which is how the TrecQA and WikiQA qrels number
            candidates, so the default reproduces trec_eval on those files.

    Returns:
        int64 array of shape ``[n]``: candidate indices, best first.
    """
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    docids = _as_str_array(range(len(scores)) if docids is None else docids)
    # Rank of each docid among the question's docids (ascending string order); negated for descending ties.
    _, doc_rank = np.unique(docids, return_inverse=True)
    return np.lexsort((-doc_rank.reshape(-1), -scores))  # last key is the primary one


def _ranked_relevance(labels, scores, docids) -> np.ndarray:
    """bool array: whether the candidate at each rank (best first) is relevant (label >= 1)."""
    labels = np.asarray(labels, dtype=np.float64).reshape(-1)
    return labels[rank_order(scores, docids)] >= 1


# ----------------------------------------------------------------------------------------------------------------
# Per-question metrics
# ----------------------------------------------------------------------------------------------------------------


def average_precision(labels, scores, docids=None) -> float:
    """Average precision of one question (trec_eval ``map`` for a single query).

    The mean, over the relevant candidates, of the precision at the rank of each of them.

    Args:
        labels: graded labels, array-like of shape ``[n]``; relevant means ``>= 1``.
        scores: float array-like of shape ``[n]``.
        docids: candidate ids for tie-breaking (see :func:`rank_order`).

    Returns:
        The average precision in ``[0, 1]``; ``0.0`` when no candidate is relevant.
    """
    rel = _ranked_relevance(labels, scores, docids)
    if not rel.any():
        return 0.0
    hits = np.cumsum(rel)
    ranks = np.arange(1, len(rel) + 1)
    return float(np.sum(hits[rel] / ranks[rel]) / rel.sum())


def reciprocal_rank(labels, scores, docids=None) -> float:
    """Reciprocal rank of the first relevant candidate of one question (trec_eval ``recip_rank``).

    Args:
        labels: graded labels, array-like of shape ``[n]``; relevant means ``>= 1``.
        scores: float array-like of shape ``[n]``.
        docids: candidate ids for tie-breaking (see :func:`rank_order`).

    Returns:
        ``1 / rank`` of the best-ranked relevant candidate; ``0.0`` when no candidate is relevant.
    """
    rel = _ranked_relevance(labels, scores, docids)
    if not rel.any():
        return 0.0
    return 1.0 / (int(np.argmax(rel)) + 1)


def precision_at_k(labels, scores, k: int, docids=None) -> float:
    """Precision at cutoff ``k`` of one question (trec_eval ``P_k``).

    Like trec_eval, the count of relevant candidates in the top ``k`` is divided by ``k`` even when the
    question has fewer than ``k`` candidates.

    Args:
        labels: graded labels, array-like of shape ``[n]``; relevant means ``>= 1``.
        scores: float array-like of shape ``[n]``.
        k: the cutoff, ``>= 1``.
        docids: candidate ids for tie-breaking (see :func:`rank_order`).

    Returns:
        The precision in ``[0, 1]``.

    Raises:
        ValueError: ``k < 1``.
    """
    _check_positive_int(k, "k")
    rel = _ranked_relevance(labels, scores, docids)
    return float(rel[:k].sum() / k)


def recall_n_at_k(labels, scores, n: int, k: int, docids=None) -> float:
    """``R_n@k`` of one group: among its first ``n`` candidates, the fraction of positives ranked in the top ``k``.

    The response-selection metric (R10@1, R10@2, R10@5, R2@1): the first ``n`` candidates of the group, in
    input order, are ranked among themselves; candidates after the ``n``-th are ignored.

    Args:
        labels: graded labels, array-like of shape ``[m]`` with ``m >= n``; relevant means ``>= 1``.
        scores: float array-like of shape ``[m]``.
        n: how many candidates of the group take part, ``>= 1``.
        k: the cutoff, ``1 <= k <= n``.
        docids: candidate ids for tie-breaking (see :func:`rank_order`).

    Returns:
        The recall in ``[0, 1]``; ``0.0`` when none of the first ``n`` candidates is relevant.

    Raises:
        ValueError: ``n`` or ``k`` out of range, or the group has fewer than ``n`` candidates.

    Reference:
        Lowe et al., "The Ubuntu Dialogue Corpus", SIGDIAL 2015 (``R_n@k``).
    """
    _check_positive_int(n, "n")
    _check_positive_int(k, "k")
    if k > n:
        raise ValueError(f"R_n@k needs k <= n, got n={n}, k={k}")
    labels = np.asarray(labels).reshape(-1)
    if len(labels) < n:
        raise ValueError(f"R{n}@{k} needs at least {n} candidates, the group has {len(labels)}")
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    docids = None if docids is None else _as_str_array(docids)[:n]
    rel = _ranked_relevance(labels[:n], scores[:n], docids)
    if not rel.any():
        return 0.0
    return float(rel[:k].sum() / rel.sum())


# ----------------------------------------------------------------------------------------------------------------
# Metric names
# ----------------------------------------------------------------------------------------------------------------


def _metric_fn(name: str) -> tuple[Callable, int]:
    """``name`` -> (function of ``(labels, scores, docids)``, candidates it needs at least)."""
    if name == "map":
        return average_precision, 1
    if name == "mrr":
        return reciprocal_rank, 1
    match = re.fullmatch(r"p@(\d+)", name)
    if match and int(match[1]) >= 1:
        k = int(match[1])
        return (lambda labels, scores, docids: precision_at_k(labels, scores, k, docids)), 1
    match = re.fullmatch(r"r(\d+)@(\d+)", name)
    if match and 1 <= int(match[2]) <= int(match[1]):
        n, k = int(match[1]), int(match[2])
        return (lambda labels, scores, docids: recall_n_at_k(labels, scores, n, k, docids)), n
    raise ValueError(
        f"unknown metric {name!r}; valid names: 'map', 'mrr', 'p@<k>' (e.g. 'p@1'), "
        f"'r<n>@<k>' with 1 <= k <= n (e.g. 'r10@1')"
    )


# ----------------------------------------------------------------------------------------------------------------
# Evaluation over many questions
# ----------------------------------------------------------------------------------------------------------------


def evaluate_ranking(
    qids,
    docids,
    scores,
    labels,
    metrics: Sequence[str] = DEFAULT_METRICS,
    no_positive: str = "skip",
) -> dict:
    """Mean ranking metrics over questions, from flat parallel arrays of (question, candidate) pairs.

    Rows are grouped by ``qid`` (rows of one question need not be contiguous); within a question candidates are
    ranked with :func:`rank_order`. The means are plain averages over the evaluated questions, as trec_eval
    averages per-query values.

    Args:
        qids: question id of each row, array-like of ``N`` values (converted with ``str``).
        docids: candidate id of each row, unique within its question (converted with ``str``).
        scores: float array-like of shape ``[N]`` or ``[N, 1]``; higher means more relevant.
        labels: graded labels, array-like of shape ``[N]``; relevant means ``>= 1``.
        metrics: metric names: ``"map"``, ``"mrr"``, ``"p@<k>"`` (e.g. ``"p@1"``) and ``"r<n>@<k>"``
            (e.g. ``"r10@1"``, see :func:`recall_n_at_k`).
        no_positive: what to do with a question that has no relevant candidate: ``"skip"`` leaves it out of
            the means, ``"zero"`` counts it as 0 for every metric, ``"error"`` raises.

    Returns:
        dict: each requested metric name -> mean (float), plus ``"num_questions"`` (int, the questions the
        means are over) and ``"num_skipped"`` (int, questions left out because they have no relevant candidate;
        always 0 unless ``no_positive="skip"``).

    Raises:
        ValueError: arrays of unequal length (the message names them), non-finite scores or labels (naming the
            question ids), a candidate id repeated within a question, an unknown metric name or ``no_positive``
            value, a question with fewer candidates than an ``r<n>@<k>`` metric needs, questions without a
            relevant candidate when ``no_positive="error"`` (naming them), or no question left to evaluate.
    """
    if no_positive not in NO_POSITIVE_CONVENTIONS:
        raise ValueError(f"no_positive must be one of {NO_POSITIVE_CONVENTIONS}, got {no_positive!r}")
    if isinstance(metrics, str):
        metrics = (metrics,)
    fns = {name: _metric_fn(name) for name in metrics}
    if not fns:
        raise ValueError("no metric requested")
    qids, docids, scores, labels, groups = _grouped(qids, docids, scores, labels)

    no_pos = [q for q, rows in groups.items() if not (labels[rows] >= 1).any()]
    if no_pos and no_positive == "error":
        raise ValueError(f"{len(no_pos)} question(s) have no relevant candidate (label >= 1): {_some(no_pos)}")
    skipped = set(no_pos) if no_positive == "skip" else set()
    evaluated = [q for q in groups if q not in skipped]
    if not evaluated:
        raise ValueError(f"no question to evaluate: all {len(groups)} question(s) have no relevant candidate")
    widest = max(fns, key=lambda name: fns[name][1])
    too_small = [q for q in evaluated if len(groups[q]) < fns[widest][1]]
    if too_small:
        raise ValueError(
            f"metric {widest!r} needs at least {fns[widest][1]} candidates per question; "
            f"{len(too_small)} question(s) have fewer: {_some(too_small)}"
        )

    totals = dict.fromkeys(fns, 0.0)
    for q in evaluated:
        rows = groups[q]
        for name, (fn, _) in fns.items():
            totals[name] += fn(labels[rows], scores[rows], docids[rows])
    result = {name: total / len(evaluated) for name, total in totals.items()}
    result["num_questions"] = len(evaluated)
    result["num_skipped"] = len(skipped)
    return result


def evaluate_split(split: "Split", scores, **kwargs) -> dict:
    """:func:`evaluate_ranking` on a :class:`keras_match.datasets.base.Split`.

    Args:
        split: the split whose questions were scored.
        scores: float array-like of shape ``[split.num_pairs]`` (or ``[num_pairs, 1]``) in ``split.pairs()``
            order, e.g. ``model.predict`` on the split's pairs.
        **kwargs: ``metrics`` and ``no_positive``, passed to :func:`evaluate_ranking`.

    Returns:
        dict: as :func:`evaluate_ranking`.

    Raises:
        ValueError: as :func:`evaluate_ranking` (e.g. ``scores`` not of length ``split.num_pairs``).
    """
    pairs = split.pairs()
    return evaluate_ranking(pairs.qids, pairs.aids, scores, pairs.labels, **kwargs)


# ----------------------------------------------------------------------------------------------------------------
# Classification
# ----------------------------------------------------------------------------------------------------------------


def evaluate_classification(labels, predictions, label_names: Sequence[str]) -> dict:
    """Accuracy, macro-F1 and per-class precision / recall / F1 of predicted class indices.

    A class that is never predicted has precision 0; one that never occurs has recall 0 (and F1 0): the
    macro average counts every class of ``label_names``, as scikit-learn's ``f1_score(average="macro",
    zero_division=0)`` does.

    Args:
        labels: true class indices, int array-like ``[N]``, each in ``[0, len(label_names))``.
        predictions: predicted class indices, same shape (e.g. ``argmax`` of the class probabilities).
        label_names: the name of each class, in index order.

    Returns:
        dict: ``"accuracy"`` and ``"macro_f1"`` (floats in [0, 1]), ``"num_pairs"`` (int), ``"per_class"``:
        ``{name: {"precision", "recall", "f1", "support"}}``.

    Raises:
        ValueError: arrays of unequal length, no examples, or a class index out of range.
    """
    labels = np.asarray(labels).reshape(-1)
    predictions = np.asarray(predictions).reshape(-1)
    if len(labels) != len(predictions):
        raise ValueError(f"labels ({len(labels)}) and predictions ({len(predictions)}) differ in length")
    if len(labels) == 0:
        raise ValueError("no example to evaluate")
    n_classes = len(label_names)
    for name, values in (("labels", labels), ("predictions", predictions)):
        if values.min() < 0 or values.max() >= n_classes:
            raise ValueError(f"{name} hold a class index outside [0, {n_classes})")
    per_class = {}
    for index, name in enumerate(label_names):
        true_positive = float(np.sum((labels == index) & (predictions == index)))
        predicted = float(np.sum(predictions == index))
        support = int(np.sum(labels == index))
        precision = true_positive / predicted if predicted else 0.0
        recall = true_positive / support if support else 0.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        per_class[str(name)] = {"precision": precision, "recall": recall, "f1": f1, "support": support}
    return {
        "accuracy": float(np.mean(labels == predictions)),
        "macro_f1": float(np.mean([c["f1"] for c in per_class.values()])),
        "num_pairs": int(len(labels)),
        "per_class": per_class,
    }


# ----------------------------------------------------------------------------------------------------------------
# trec_eval files
# ----------------------------------------------------------------------------------------------------------------


def write_trec_run(path, qids, docids, scores, run_name: str = "keras_match") -> None:
    """Write a trec_eval run file: one ``qid Q0 docid rank score run_name`` line per candidate.

    Questions appear in first-appearance order, candidates in :func:`rank_order` order with ranks from 1.
    Scores are written with ``repr`` so they read back exactly (trec_eval re-sorts by score and ignores the
    rank column, so rounding would change its tie-breaking).

    Args:
        path: output file (str or path-like); replaced when complete (`keras_match.artifacts.storage`).
        qids: question id of each row, array-like of ``N`` values.
        docids: candidate id of each row, unique within its question.
        scores: float array-like of shape ``[N]`` or ``[N, 1]``.
        run_name: the run tag written in the last column.

    Raises:
        ValueError: as :func:`evaluate_ranking` for the inputs, or an id or ``run_name`` that is empty or
            contains whitespace (trec_eval splits lines on whitespace).
    """
    _check_token(run_name, "run_name")
    qids, docids, scores, _, groups = _grouped(qids, docids, scores, None)
    _check_tokens(qids, "qid")
    _check_tokens(docids, "docid")
    lines = []
    for q, rows in groups.items():
        ranked = rows[rank_order(scores[rows], docids[rows])]
        lines += [f"{q} Q0 {docids[i]} {rank} {float(scores[i])!r} {run_name}\n" for rank, i in enumerate(ranked, 1)]
    storage.write_text(os.fspath(path), "".join(lines))


def write_trec_qrels(path, qids, docids, labels) -> None:
    """Write a trec_eval qrels file: one ``qid 0 docid label`` line per row, in input order.

    Args:
        path: output file (str or path-like); replaced when complete (`keras_match.artifacts.storage`).
        qids: question id of each row, array-like of ``N`` values.
        docids: candidate id of each row, unique within its question.
        labels: integer labels, array-like of shape ``[N]``.

    Raises:
        ValueError: arrays of unequal length, a non-integer label, a repeated candidate id within a question,
            or an id that is empty or contains whitespace.
    """
    qids, docids, _, labels, _ = _grouped(qids, docids, None, labels)
    _check_tokens(qids, "qid")
    _check_tokens(docids, "docid")
    if not np.all(labels == np.round(labels)):
        raise ValueError("qrels labels must be integers")
    storage.write_text(os.fspath(path), "".join(f"{q} 0 {d} {int(label)}\n" for q, d, label in zip(qids, docids, labels)))


# ----------------------------------------------------------------------------------------------------------------
# Input validation
# ----------------------------------------------------------------------------------------------------------------


def _grouped(qids, docids, scores, labels):
    """Validate flat parallel arrays and group their rows by question.

    Returns:
        ``(qids, docids, scores, labels, groups)``: ``qids``/``docids`` object arrays of ``str``, ``scores`` and
        ``labels`` float64 arrays (``None`` when not given) and ``groups`` mapping each qid (in first-appearance
        order) to the int array of its rows.
    """
    qids = _as_str_array(qids)
    docids = _as_str_array(docids)
    arrays = {"qids": qids, "docids": docids}
    if scores is not None:
        scores = np.asarray(scores, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.ndim != 1:
            raise ValueError(f"scores must have shape [N] or [N, 1], got {scores.shape}")
        arrays["scores"] = scores
    if labels is not None:
        labels = np.asarray(labels, dtype=np.float64).reshape(-1)
        arrays["labels"] = labels
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError(f"arrays must have equal lengths, got {', '.join(f'{k}={v}' for k, v in lengths.items())}")
    if not len(qids):
        raise ValueError("no rows to evaluate (empty arrays)")

    groups: dict[str, list[int]] = {}
    for i, q in enumerate(qids):
        groups.setdefault(q, []).append(i)
    groups = {q: np.asarray(rows, dtype=np.int64) for q, rows in groups.items()}

    for name, values in (("scores", scores), ("labels", labels)):
        if values is not None and not np.isfinite(values).all():
            bad = list(dict.fromkeys(qids[~np.isfinite(values)]))
            raise ValueError(f"non-finite {name} (NaN or inf) for question(s) {_some(bad)}")
    for q, rows in groups.items():
        if len(set(docids[rows])) != len(rows):
            ids, counts = np.unique(docids[rows], return_counts=True)
            raise ValueError(f"question {q!r} has duplicate candidate id(s) {_some(list(ids[counts > 1]))}")
    return qids, docids, scores, labels, groups


def _as_str_array(values) -> np.ndarray:
    return np.array([str(v) for v in np.asarray(values, dtype=object).reshape(-1)], dtype=object)


def _some(items, limit: int = 10) -> str:
    shown = ", ".join(repr(x) for x in items[:limit])
    return shown + (f" ... ({len(items) - limit} more)" if len(items) > limit else "")


def _check_positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _check_token(value: str, name: str) -> None:
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"{name} must be non-empty without whitespace, got {value!r}")


def _check_tokens(values: np.ndarray, name: str) -> None:
    for v in dict.fromkeys(values):
        _check_token(v, name)


__all__ = [
    "DEFAULT_METRICS",
    "NO_POSITIVE_CONVENTIONS",
    "average_precision",
    "evaluate_ranking",
    "evaluate_split",
    "precision_at_k",
    "rank_order",
    "recall_n_at_k",
    "reciprocal_rank",
    "write_trec_qrels",
    "write_trec_run",
]
