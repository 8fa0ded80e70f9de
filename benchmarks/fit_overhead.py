"""What Keras' fit loop costs beyond the training steps, for one zoo entry on real TrecQA TRAIN-ALL; prints JSON.

Milliseconds per step of `--steps` pointwise, length-bucketed batches: `train_on_batch` on batches already in
memory, `fit` on the training pipeline (`keras_match.pipeline.training_dataset`), and `fit` on the same batches
already in memory (so the difference of the last two is the input pipeline's share). No callbacks.

    KERAS_MATCH_DATA=../shared/data python benchmarks/fit_overhead.py mcan_fm --steps 120
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

    import tensorflow as tf

    from keras_match import pipeline, tasks, text, training, vectors, zoo
    from keras_match.datasets.catalog import load_by_name

    dataset = load_by_name("trecqa-clean")
    task = tasks.task_for(dataset)
    examples = task.examples(dataset["train"])
    preset, mode = training._resolve_preset(args.name, task, None, None, {"max_vocabulary": 0})
    source = vectors.load_vectors(training.default_embeddings_path())
    preprocessor = training.build_preprocessor(examples, preset, source)
    embeddings, _ = text.load_embeddings(source, preprocessor.encoder)
    model = zoo.build(preset, vocab_size=preprocessor.vocab_size, embeddings=embeddings,
                      num_features=preprocessor.num_features)
    fit_model = training._compile_for_mode(model, preset, mode)
    inputs = pipeline.encode(preprocessor, examples.texts)
    data = pipeline.training_dataset(inputs, examples, mode, preset["training"]["batch_size"], args.seed,
                                     bucketing=True)
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
    print(json.dumps({"zoo": args.name, "steps": n, "load_average": [round(x, 2) for x in os.getloadavg()],
                      "ms_per_step": {"train_on_batch": round(1000 * on_batch, 1), "fit_pipeline": round(1000 * fit, 1),
                                      "fit_in_memory": round(1000 * fit_in_memory, 1)}}, indent=2))


if __name__ == "__main__":
    main()
