"""Checks that a real-data run's reported figures are what its model really scores: the figures computed again,
independently of `keras_match.metrics`, from the model's outputs (ranking: trec_eval through `pytrec_eval`;
classification: NumPy), so that a test of a short training run asserts more than `0 < figure <= 1`.

The outputs come from the library's own scoring path (`keras_match.inputs.pipeline.predict`, as `Run.score` and the
training's evaluation use it, one split at a time): calling the model another way (whole padded chunks, eagerly)
changes scores by float noise (up to 6e-8 measured), enough to swap two candidates whose scores are that close
and so change a figure; one-epoch models on these small data give such near ties (one tuning trial's dev split
had 9 relevant / irrelevant pairs of a question within 1e-6 of each other)."""

import numpy as np

from keras_match import heads
from keras_match.inputs import pipeline

TREC_MEASURES = {"map": "map", "mrr": "recip_rank", "p@1": "P_1"}


def trec_eval_figures(qids, aids, labels, scores, no_positive="skip") -> dict:
    """MAP / MRR / P@1 of `scores` by trec_eval (`pytrec_eval`), with qrels made from `labels` (relevant: >= 1).

    trec_eval breaks ties by candidate id as `keras_match.metrics` does; questions without a relevant candidate
    are left out of the qrels (`no_positive="skip"`) or kept in them, where trec_eval counts them as 0
    (`"zero"`). Returns the means and `num_questions`.
    """
    import pytrec_eval

    qrels, run = {}, {}
    for qid, aid, label, score in zip(qids, aids, labels, np.asarray(scores, np.float64).reshape(-1)):
        qrels.setdefault(str(qid), {})[str(aid)] = int(label)
        run.setdefault(str(qid), {})[str(aid)] = float(score)
    if no_positive == "skip":
        qrels = {q: judged for q, judged in qrels.items() if max(judged.values()) >= 1}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, set(TREC_MEASURES.values())).evaluate(run)
    figures = {key: float(np.mean([values[measure] for values in per_query.values()]))
               for key, measure in TREC_MEASURES.items()}
    return dict(figures, num_questions=len(per_query))


def ranking_figures_of_scores(split, scores, no_positive="skip") -> dict:
    """`trec_eval_figures` of scores given in `split.pairs()` order."""
    pairs = split.pairs()
    return trec_eval_figures(pairs.qids, pairs.aids, pairs.labels, scores, no_positive)


def ranking_figures_of_model(model, preprocessor, split, no_positive="skip", inputs=None) -> dict:
    """`trec_eval_figures` of a ranking model (its head's ranking score) on a split (`inputs`: its pairs already
    encoded by `preprocessor`, in `split.pairs()` order)."""
    if inputs is None:
        pairs = split.pairs()
        inputs = pipeline.encode(preprocessor, {"question": pairs.questions, "answer": pairs.answers})
    outputs = pipeline.predict(model, inputs, preprocessor.SEQUENCE_INPUTS)
    return ranking_figures_of_scores(split, heads.ranking_score(heads.head_of(model), outputs), no_positive)


def ranking_figures_of_run(run, split, no_positive="skip") -> dict:
    """`trec_eval_figures` of a loaded run (`keras_match.training.load_run`) on a split, scored by `Run.score`."""
    pairs = split.pairs()
    return ranking_figures_of_scores(split, run.score(pairs.questions, pairs.answers), no_positive)


def classification_figures(split, label_names, outputs) -> dict:
    """`{"accuracy", "macro_f1", "num_pairs"}` of a classifier's outputs `[n, classes]` (classes in the order of
    `label_names`) on a split, in NumPy: the name of each pair's most probable class against its gold label name
    (every class counted in the macro mean, F1 0 for a class never predicted)."""
    predicted = np.asarray(label_names, dtype=object)[np.argmax(np.asarray(outputs), axis=-1)]
    gold = np.asarray(split.label_names, dtype=object)[np.asarray(split.labels)]
    assert predicted.shape == gold.shape, (predicted.shape, gold.shape)
    f1 = []
    for label in label_names:
        hits = np.sum((predicted == label) & (gold == label))
        precision, recall = hits / max(1, np.sum(predicted == label)), hits / max(1, np.sum(gold == label))
        f1.append(0.0 if hits == 0 else 2 * precision * recall / (precision + recall))
    return {"accuracy": float(np.mean(predicted == gold)), "macro_f1": float(np.mean(f1)), "num_pairs": len(gold)}


def classification_figures_of_run(run, split) -> dict:
    """`classification_figures` of a loaded classifier on a split, scored by `Run.predict`."""
    return classification_figures(split, run.label_names, run.predict(split.first, split.second))

