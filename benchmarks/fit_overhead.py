"""What Keras' fit loop costs beyond the training steps, for one zoo entry on real TrecQA TRAIN-ALL; prints JSON.

Milliseconds per step of `--steps` length-bucketed batches of the entry's loss mode (pointwise for the papers'
presets), made as training makes them (`keras_match.training.recipe.Recipe.batches`): `train_on_batch` on batches already
in memory, `fit` on the training pipeline, and `fit` on the same batches already in memory (so the difference of
the last two is the input pipeline's share). No callbacks. The JSON's `provenance` (`keras_match.artifacts.provenance`)
records the command, the code, the versions, the machine (with its load average at the end), the start and end
times, the seed, the data files and the vectors with their sha256.

    KERAS_MATCH_DATA=../shared/data python benchmarks/fit_overhead.py mcan_fm --steps 120 > fit_overhead.json
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", nargs="?", default="mcan_fm")
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    import math

    import tensorflow as tf

    from keras_match import training
    from keras_match.artifacts import provenance
    from keras_match.training.recipe import Recipe

    started = time.time()
    # the entry prepared as `keras-match train` prepares it (the vocabulary: the training words only)
    recipe = Recipe.prepare(args.name, "trecqa-clean", seed=args.seed, max_vocabulary=0)
    fitting = recipe.fitting(recipe.preprocessor())  # the model, compiled, and the encoded splits
    fit_model = fitting.fit_model
    bucketed = recipe.with_settings(bucketing=True)
    per_epoch = fitting.batches(epochs=1, settings=bucketed).steps_per_epoch
    epochs = max(1, math.ceil((args.steps + args.warmup) / per_epoch))
    data = fitting.batches(epochs=epochs, settings=bucketed).dataset
    n, w = args.steps, args.warmup
    batches = list(data.take(n + w))
    for x, y in batches[:w]:
        fit_model.train_on_batch(x, y)
    start = time.perf_counter()
    for x, y in batches[w:]:
        fit_model.train_on_batch(x, y)
    on_batch = (time.perf_counter() - start) / n
    fit_model.fit(data.take(w), epochs=1, verbose=0)
    start = time.perf_counter()
    fit_model.fit(data.take(n), epochs=1, verbose=0)
    fit = (time.perf_counter() - start) / n
    in_memory = tf.data.Dataset.from_generator(lambda: iter(batches[w:]), output_signature=data.element_spec)
    start = time.perf_counter()
    fit_model.fit(in_memory, epochs=1, verbose=0)
    fit_in_memory = (time.perf_counter() - start) / n
    vectors = {"path": recipe.vectors.source, "sha256": recipe.vectors.sha256} if recipe.vectors else None
    print(json.dumps({"zoo": args.name, "steps": n,
                      "ms_per_step": {"train_on_batch": round(1000 * on_batch, 1), "fit_pipeline": round(1000 * fit, 1),
                                      "fit_in_memory": round(1000 * fit_in_memory, 1)},
                      "provenance": provenance.collect(started, seed=args.seed, dataset="trecqa-clean",
                                                       data_files=training.data_files(recipe.dataset),
                                                       embeddings=vectors)}, indent=2))


if __name__ == "__main__":
    main()
