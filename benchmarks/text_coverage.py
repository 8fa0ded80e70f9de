"""GloVe 6B token coverage of candidate tokenization rules (used to choose ``keras_match.text.tokenize``).

Texts: every distinct question and answer text of TrecQA ``train-all`` + ``clean-dev`` + ``clean-test`` and of
WikiQA ``train`` + ``dev`` + ``test`` (raw ``.tsv.gz``), each counted once. Tokens are lower-cased; a token is
"covered" if it is a word of the GloVe file. Every rule runs with TF ops, as the encoder would.

Coverage alone rewards over-splitting (``n't -> n ' t``, ``1,000 -> 1 , 000``: every fragment is a GloVe word),
so a second table gives a training-free downstream check: an IDF-weighted GloVe alignment ranker
(score = sum over question tokens of idf * max cosine to an answer token, / sum of idf; tokens without a vector
only match themselves) evaluated by MAP / MRR on TrecQA clean-dev+clean-test and on WikiQA dev+test questions
with at least one correct and one wrong candidate.

Usage::

    python benchmarks/text_coverage.py [--data /work/shared/data]
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from keras_match import text as km_text  # noqa: E402

TRECQA = ("train-all.tsv.gz", "clean-dev.tsv", "clean-test.tsv")
WIKIQA = ("WikiQA-train.tsv.gz", "WikiQA-dev.tsv.gz", "WikiQA-test.tsv.gz")


def _rows(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        yield from csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)


def dataset_texts(data_dir: pathlib.Path) -> dict[str, list[str]]:
    trec, wiki = {}, {}
    for name in TRECQA:
        for row in _rows(data_dir / "trecqa" / "tsv" / name):
            trec[row["question"]] = None
            trec[row["answer"]] = None
    for name in WIKIQA:
        for row in _rows(data_dir / "wikiqa" / name):
            wiki[row["Question"]] = None
            wiki[row["Sentence"]] = None
    return {"TrecQA": list(trec), "WikiQA": list(wiki)}


def _ptb_map(texts):
    for escape, bracket in km_text._PTB_BRACKETS:
        texts = tf.strings.regex_replace(texts, "(?i)" + escape, f" {bracket} ")
    return tf.strings.regex_replace(texts, r"``|''", ' " ')


def _lower(texts):
    return tf.strings.lower(texts, encoding="utf-8")


RULES = {
    "whitespace": lambda t: tf_text.WhitespaceTokenizer().tokenize(_lower(t)),
    "whitespace + PTB/quote map": lambda t: tf_text.WhitespaceTokenizer().tokenize(_ptb_map(_lower(t))),
    "unicode_script": lambda t: tf_text.UnicodeScriptTokenizer().tokenize(_lower(t)),
    "punct (\\w+ | one symbol)": lambda t: tf_text.regex_split(
        _lower(t), r"[\s\p{Z}]+|[\p{L}\p{M}\p{N}_]+|[^\s\p{Z}]", r"[\p{L}\p{M}\p{N}_]+|[^\s\p{Z}]"),
    "glove_ptb, no PTB/quote map": lambda t: km_text._regex_tokenize(t, map_brackets=False, map_quotes=False),
    "glove_ptb, quotes not mapped": lambda t: km_text._regex_tokenize(t, map_quotes=False),
    "glove_ptb, no abbreviations": lambda t: km_text._regex_tokenize(t, abbreviations=False),
    "glove_ptb, curly ’ kept": lambda t: km_text._regex_tokenize(t, normalize_apostrophes=False),
    "glove_ptb, hyphens split": lambda t: km_text._regex_tokenize(t, join_hyphens=False),
    "glove_ptb (chosen: text.tokenize)": lambda t: km_text.tokenize(t),
}


def _eval_questions(data_dir: pathlib.Path):
    """{dataset: list of (question, [(answer, label)])} for the ranking check."""
    out = {}
    for dataset, files, qkey, akey, lkey, idkey in (
        ("TrecQA", [data_dir / "trecqa" / "tsv" / n for n in ("clean-dev.tsv", "clean-test.tsv")],
         "question", "answer", "label", "qid"),
        ("WikiQA", [data_dir / "wikiqa" / n for n in ("WikiQA-dev.tsv.gz", "WikiQA-test.tsv.gz")],
         "Question", "Sentence", "Label", "QuestionID"),
    ):
        groups = {}
        for path in files:
            for row in _rows(path):
                key = (path.name, row[idkey])
                groups.setdefault(key, (row[qkey], []))[1].append((row[akey], int(row[lkey])))
        out[dataset] = [g for g in groups.values()
                        if any(l > 0 for _, l in g[1]) and any(l <= 0 for _, l in g[1])]
    return out


def _alignment_map(rule, questions, vectors):
    import numpy as np

    def toks(texts):
        return [row for row in rule(tf.constant(texts, dtype=tf.string)).to_list()]

    answers = [a for _, cands in questions for a, _ in cands]
    df = collections.Counter(t for row in toks(answers) for t in set(row))
    n_docs = len(answers)
    aps, rrs = [], []
    for question, cands in questions:
        q_tokens = toks([question])[0]
        a_rows = toks([a for a, _ in cands])
        scores = []
        for a_tokens in a_rows:
            num = den = 0.0
            a_vecs = np.array([vectors[t] for t in a_tokens if t in vectors]).reshape(-1, 50)
            a_set = set(a_tokens)
            for t in q_tokens:
                idf = np.log((n_docs + 1) / (df.get(t, 0) + 1))
                if t in vectors and len(a_vecs):
                    sim = max(float(np.max(a_vecs @ vectors[t])), 1.0 if t in a_set else -1.0)
                else:
                    sim = 1.0 if t in a_set else 0.0
                num += idf * sim
                den += idf
            scores.append(num / den if den else 0.0)
        order = sorted(range(len(cands)), key=lambda i: -scores[i])
        hits, precisions = 0, []
        for rank, i in enumerate(order, 1):
            if cands[i][1] > 0:
                hits += 1
                precisions.append(hits / rank)
        aps.append(sum(precisions) / hits)
        rrs.append(next(1 / r for r, i in enumerate(order, 1) if cands[i][1] > 0))
    return sum(aps) / len(aps), sum(rrs) / len(rrs)


def count(rule, texts, batch=8192):
    counts = collections.Counter()
    for start in range(0, len(texts), batch):
        tokens = rule(tf.constant(texts[start:start + batch], dtype=tf.string))
        counts.update(tokens.flat_values.numpy().tolist())
    return counts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--no-ranking", action="store_true", help="coverage table only")
    args = parser.parse_args(argv)
    data_dir = pathlib.Path(args.data)
    import numpy as np

    vectors = {}
    with gzip.open(data_dir / "glove" / "glove.6B.50d.filtered.txt.gz", "rb") as f:
        for line in f:
            word, values = line.split(b" ", 1)
            v = np.array(values.split(), dtype=np.float32)
            vectors[word] = v / (np.linalg.norm(v) or 1.0)
    glove = vectors
    texts = dataset_texts(data_dir)
    print(f"distinct texts: " + ", ".join(f"{k} {len(v):,}" for k, v in texts.items()))
    header = f"{'rule':36s}" + "".join(f"{k + ' token':>15s}{k + ' type':>14s}{'types':>8s}{'tok/text':>9s}"
                                       for k in texts)
    print(header)
    for name, rule in RULES.items():
        start = time.perf_counter()
        line = f"{name:36s}"
        for dataset, items in texts.items():
            counts = count(rule, items)
            total = sum(counts.values())
            covered = sum(n for tok, n in counts.items() if tok in glove)
            types_covered = sum(1 for tok in counts if tok in glove)
            line += (f"{100 * covered / total:14.2f}%{100 * types_covered / len(counts):13.2f}%{len(counts):8d}"
                     f"{total / len(items):9.2f}")
        print(line + f"   ({time.perf_counter() - start:.1f} s)", flush=True)
    if args.no_ranking:
        return
    questions = _eval_questions(data_dir)
    print("\nIDF-weighted GloVe alignment ranker (no training): MAP / MRR; "
          + ", ".join(f"{k} {len(v)} questions" for k, v in questions.items()))
    for name, rule in RULES.items():
        line = f"{name:36s}"
        for dataset, items in questions.items():
            m, r = _alignment_map(rule, items, vectors)
            line += f"   {dataset} {m:.4f} / {r:.4f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
