"""How many dev / test tokens a run's vocabulary lacks, for vocabularies of the training words plus the first N
words of the pretrained vector file (`max_vocabulary`); prints JSON.

For each dataset and cap: the vocabulary size (ids), the dev / test tokens (distinct questions and every answer)
that are out of the vocabulary, and how many of those the vector file has a vector for (the tokens a larger cap
would give their own vector), and how many have no vector in the file at all (a model with frozen embeddings
sees them as its out-of-vocabulary vector, or as the zero vector of a vocabulary word the file lacks, whatever
the cap). The JSON's `provenance` (`keras_match.artifacts.provenance`) records the command, the code, the versions, the
machine, the start and end times, the datasets and their data files, and the vector file, with their sha256.

    KERAS_MATCH_DATA=../shared/data python benchmarks/vocabulary_coverage.py --datasets trecqa-clean \
        --caps 0 100000 200000 all > vocabulary_coverage.json
"""

import argparse
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["trecqa-clean"])
    parser.add_argument("--caps", nargs="+", default=["0", "100000", "200000", "all"],
                        help="max_vocabulary values; 'all' for every word of the vector file")
    parser.add_argument("--vectors", default="glove-6b-50d")
    args = parser.parse_args(argv)

    import numpy as np

    from keras_match import tasks, text, training
    from keras_match.artifacts import provenance
    from keras_match.text import vectors
    from keras_match.datasets.catalog import load_by_name
    from keras_match.preprocessors.pair import PairPreprocessor, PairSettings

    started = time.time()
    source = vectors.load_vectors(args.vectors)
    result = {"vectors": source.source, "datasets": {}}
    data_files = {}
    for name in args.datasets:
        dataset = load_by_name(name)
        data_files[name] = training.data_files(dataset)
        task = tasks.task_for(dataset)
        training_texts = task.examples(dataset["train"]).texts
        tokens, without_a_vector = {}, {}  # per split; the same for every cap
        for split in ("dev", "test"):
            examples = task.examples(dataset[split])
            texts = list(np.unique(examples.texts["question"])) + list(examples.texts["answer"])
            tokens[split] = [t.decode("utf-8") for t in text.tokenize(texts).flat_values.numpy()]
            without_a_vector[split] = sum(t not in source.index for t in tokens[split])
        rows = {}
        for cap in args.caps:
            words = source.words if cap == "all" else source.words[: int(cap)]
            # the vocabulary `keras-match train` makes: the training texts' words, then the vector file's
            preprocessor = PairPreprocessor.from_training(training_texts, PairSettings(), extra_words=words)
            vocabulary = set(preprocessor.encoder.vocabulary)
            row = {"ids": len(vocabulary) + 2}
            for split in ("dev", "test"):
                missing = [t for t in tokens[split] if t not in vocabulary]
                row[split] = {"tokens": len(tokens[split]), "out_of_vocabulary": len(missing),
                              "out_of_vocabulary_with_a_vector": sum(t in source.index for t in missing),
                              "without_a_vector": without_a_vector[split]}
            rows[cap] = row
            print(f"{name} max_vocabulary={cap}: {row}", file=sys.stderr, flush=True)
        result["datasets"][name] = rows
    result["provenance"] = provenance.collect(started, datasets=args.datasets, data_files=data_files,
                                              embeddings={"path": source.source, "sha256": source.sha256})
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
