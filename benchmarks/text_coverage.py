"""GloVe 6B token coverage of candidate tokenization rules (used to choose ``keras_match.text.tokenize``).

Texts: every distinct question and answer text of TrecQA ``train-all`` + ``clean-dev`` + ``clean-test`` and of
WikiQA ``train`` + ``dev`` + ``test`` (raw ``.tsv.gz``), each counted once. Tokens are lower-cased; a token is
"covered" if it is a word of the GloVe file. Every rule runs with TF ops, as the encoder would.

Coverage alone rewards over-splitting (``n't -> n ' t``, ``1,000 -> 1 , 000``: every fragment is a GloVe word),
so a second table gives a training-free downstream check: an IDF-weighted GloVe alignment ranker
(score = sum over question tokens of idf * max cosine to an answer token, / sum of idf; tokens without a vector
only match themselves) evaluated by MAP / MRR on TrecQA clean-dev+clean-test and on WikiQA dev+test questions
with at least one correct and one wrong candidate.

Prints one JSON object: the coverage figures of each rule (`coverage`), the ranking check's MAP / MRR
(`ranking`, none with `--no-ranking`) and the `provenance` (`keras_match.artifacts.provenance`: the command, the code, the
versions, the machine, the start and end times, the data folder, and the data and GloVe files read with their
sha256). `--table` prints the same figures as markdown tables instead. Progress goes to stderr.

Usage::

    python benchmarks/text_coverage.py [--data /work/shared/data] [--no-ranking] > text_coverage.json
    python benchmarks/text_coverage.py --table [--data /work/shared/data] [--no-ranking]
"""

from __future__ import annotations

import argparse
import collections
import csv
import gzip
import json
import os
import pathlib
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import tensorflow as tf  # noqa: E402
import tensorflow_text as tf_text  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
from keras_match.artifacts import provenance  # noqa: E402
from keras_match.text import tokenizer as km_text  # noqa: E402
from keras_match.datasets.download import sha256_of  # noqa: E402

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
                        if any(label > 0 for _, label in g[1]) and any(label <= 0 for _, label in g[1])]
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


GLOVE = pathlib.Path("glove") / "glove.6B.50d.filtered.txt.gz"


def _log(*args):
    print(*args, file=sys.stderr, flush=True)


def _files(data_dir: pathlib.Path) -> dict[str, dict]:
    """`{name: {"file": path, "sha256": digest}}` of the data files read (TrecQA's and WikiQA's)."""
    paths = [data_dir / "trecqa" / "tsv" / n for n in TRECQA] + [data_dir / "wikiqa" / n for n in WIKIQA]
    return {path.relative_to(data_dir).as_posix(): {"file": str(path), "sha256": sha256_of(path)} for path in paths}


def measure(data_dir: pathlib.Path, ranking: bool = True, rules=None) -> dict:
    """The figures of every rule of `rules` (default `RULES`) and their provenance: the JSON object `main` prints.

    Returns:
        `{"texts": {dataset: distinct texts}, "coverage": {rule: {dataset: {"token_coverage", "type_coverage",
        "types", "tokens_per_text"}, "seconds"}}, "ranking": {"questions": {dataset: n}, "rules": {rule:
        {dataset: {"map", "mrr"}}}} or None, "provenance": {...}}`; coverages are shares (0 to 1).
    """
    import numpy as np

    rules = RULES if rules is None else rules
    started = time.time()
    vectors = {}
    with gzip.open(data_dir / GLOVE, "rb") as f:
        for line in f:
            word, values = line.split(b" ", 1)
            v = np.array(values.split(), dtype=np.float32)
            vectors[word] = v / (np.linalg.norm(v) or 1.0)
    texts = dataset_texts(data_dir)
    _log("distinct texts: " + ", ".join(f"{k} {len(v):,}" for k, v in texts.items()))
    coverage = {}
    for name, rule in rules.items():
        start = time.perf_counter()
        row = {}
        for dataset, items in texts.items():
            counts = count(rule, items)
            total = sum(counts.values())
            covered = sum(n for tok, n in counts.items() if tok in vectors)
            types_covered = sum(1 for tok in counts if tok in vectors)
            row[dataset] = {"token_coverage": round(covered / total, 6),
                            "type_coverage": round(types_covered / len(counts), 6), "types": len(counts),
                            "tokens_per_text": round(total / len(items), 4)}
        row["seconds"] = round(time.perf_counter() - start, 1)
        coverage[name] = row
        _log(f"{name}: {row}")
    result = {"texts": {k: len(v) for k, v in texts.items()}, "coverage": coverage, "ranking": None}
    if ranking:
        questions = _eval_questions(data_dir)
        figures = {}
        for name, rule in rules.items():
            figures[name] = {}
            for dataset, items in questions.items():
                m, r = _alignment_map(rule, items, vectors)
                figures[name][dataset] = {"map": round(float(m), 6), "mrr": round(float(r), 6)}
            _log(f"{name}: {figures[name]}")
        result["ranking"] = {"questions": {k: len(v) for k, v in questions.items()}, "rules": figures}
    result["provenance"] = provenance.collect(
        started, data_dir=str(data_dir), data_files=_files(data_dir),
        embeddings={"path": str(data_dir / GLOVE), "sha256": sha256_of(data_dir / GLOVE)})
    return result


def table(result, where="result") -> str:
    """The markdown tables of a result of `measure`: the coverage of each rule (tokens and types with a GloVe
    vector, distinct tokens, tokens per text, per dataset) and, when measured, the ranking check's MAP / MRR.

    Raises:
        SystemExit: `result` (from `where`) has no provenance.
    """
    provenance.require(result, where)
    datasets = list(result["texts"])

    def cell(name):  # a rule's name may hold a '|'
        return name.replace("|", "\\|")

    header = ["rule"] + [f"{d} {what}" for d in datasets for what in ("token", "type", "types", "tok/text")]
    lines = ["Distinct texts: " + ", ".join(f"{d} {n:,}" for d, n in result["texts"].items()), "",
             "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for name, row in result["coverage"].items():
        cells = [cell(name)]
        for d in datasets:
            cells += [f"{100 * row[d]['token_coverage']:.2f}%", f"{100 * row[d]['type_coverage']:.2f}%",
                      str(row[d]["types"]), f"{row[d]['tokens_per_text']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    ranking = result.get("ranking")
    if ranking:
        questions = ranking["questions"]
        lines += ["", "IDF-weighted GloVe alignment ranker (no training): MAP / MRR; "
                  + ", ".join(f"{d} {n} questions" for d, n in questions.items()), "",
                  "| rule | " + " | ".join(f"{d} MAP / MRR" for d in questions) + " |",
                  "|---|" + "---:|" * len(questions)]
        for name, row in ranking["rules"].items():
            lines.append(f"| {cell(name)} | " + " | ".join(f"{row[d]['map']:.4f} / {row[d]['mrr']:.4f}"
                                                     for d in questions) + " |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"))
    parser.add_argument("--no-ranking", action="store_true", help="coverage figures only")
    parser.add_argument("--table", action="store_true", help="print markdown tables instead of JSON")
    args = parser.parse_args(argv)
    result = measure(pathlib.Path(args.data), ranking=not args.no_ranking)
    print(table(result, "this run") if args.table else json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
