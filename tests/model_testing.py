"""`run_model_test`: the checks every zoo entry passes, written once (keras-hub's `run_model_saving_test` /
`run_task_test` idea), and `small_overrides`, which makes any entry small enough for a test.

`tests/models/test_zoo_entries.py` runs it for every entry of `keras_match.zoo.names()`, so a new family's
entries are checked without new test code.
"""

import functools
import re

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match import heads, zoo
from keras_match.artifacts import runs
from keras_match.inputs import pipeline
from keras_match.serving import export
from keras_match.datasets import catalog
from keras_match.training.recipe import Recipe

SMALL_WIDTH = 8
SMALL_FACTORS = 2
_WIDTH_SETTING = re.compile(r"(^|_)(units|dim|filters|channels|hidden|size)$")
_FACTOR_SETTING = re.compile(r"(^|_)(factors|rank)$")
_KEEP = {"vocab_size", "kernel_size", "pool_size", "window_size", "batch_size"}


FAMILY_SIZES = {
    "coupled_lstm": {"max_blocks": 2, "max_question_length": 12, "max_answer_length": 16,
                     "questions": {"ranking": 30, "classification": 400}},
}
"""What a family changes when a test builds it small (`small_overrides`, `small_lengths`) and in its short run
(`questions`), where the defaults would make the tests too slow for CI.

`coupled_lstm`: the C-LSTMs grid runs n + m - 1 sequential steps per block, forward and backward, over n * m
cells; with the defaults one LC-LSTMs entry's short run trained 196 steps in 149 s here (texts of 30 / 40
tokens), and exporting and serving the five entries took 23 minutes. Its tests cut texts at 12 / 16 tokens, stack
at most two blocks (the stacked path is still the one checked) and train on fewer questions (pairs)."""

BACKBONE_SIZES = {"questions": {"ranking": 30, "classification": 200}, "max_question_length": 25}
"""The short run of an entry over a pretrained backbone (`backbone`): the pinned MiniLM's frozen states of each
distinct text are computed first (`state_cache`), about 60 s for the 5,900 texts of 100 TrecQA questions and
the clean dev split on one busy core here, so it trains on 30 questions (pairs). Questions are cut at 25 words
(`compare_aggregate_mult_minilm`'s length; the others' is 40) so that the four ranking entries' short runs read
the same texts, and the session's state cache (`tests/conftest.py`: one per pytest worker, and
`tests/models/test_zoo_entries.py` runs in one) computes their states once, not once for 25 and again for 40."""


PRETRAINED_BACKBONE_FAMILIES = {"encoder_rankers": "tests/models/encoder_rankers/test_encoder_rankers_models.py"}
"""Families whose entries are a pretrained transformer as a whole (all-MiniLM-L6-v2: 22.7 M parameters, every layer
fine-tuned by the presets, no width to shrink), and the file that checks them instead of the zoo-wide tests
(`tests/models/test_zoo_entries.py`, `tests/test_training_modes.py`, `tests/test_export_zoo.py`,
`tests/test_precision.py`). Measured here for `bi_encoder_minilm` / `cross_encoder_minilm` (a 2-core machine with
another run on it): `run_model_test`'s short run 104 / 88 s an entry (and the bi-encoder's zero-shot dev MAP fell
0.762 -> 0.709 at the short run's 10 x learning rate), one training step per loss mode 24-38 s a case (six cases),
the bfloat16 build 5-6 s. That file runs the same checks on the same builders through `zoo.build` over MiniLM's
encoder shrunk to two layers of width 8 (loss modes, round trips, padding, bfloat16, the raw-text SavedModel), and
on MiniLM where its weights matter (zero-shot cosines, the packed pair, padding, a short real run that learns)."""


def skip_pretrained_backbone(name, check):
    """`pytest.skip` for `check` (what the calling test does) when zoo entry `name` belongs to one of the
    `PRETRAINED_BACKBONE_FAMILIES`, naming the file that checks it."""
    where = PRETRAINED_BACKBONE_FAMILIES.get(zoo.describe(name)["family"])
    if where is not None:
        pytest.skip(f"{name}: {check} of a 22.7M-parameter pretrained transformer is checked by {where}, on the "
                    "same builders over a 2-layer BERT and on MiniLM (tests/model_testing.py)")


def _family_sizes(name):
    if zoo.describe(name)["model"].get("backbone"):
        return BACKBONE_SIZES
    return FAMILY_SIZES.get(zoo.describe(name)["family"], {})


def small_overrides(name):
    """Overrides that make zoo entry `name` small: integer width settings (`*_units`, `*_dim`, `*filters`,
    `*_size` ...) capped at 8, factor counts at 2, `blocks` at the family's `max_blocks` (`FAMILY_SIZES`); depth,
    kernel sizes and the rest kept as the paper sets them."""
    overrides = {}
    model = zoo.describe(name)["model"]
    if "max_blocks" in _family_sizes(name):
        overrides["blocks"] = min(model["blocks"], _family_sizes(name)["max_blocks"])
    for key, value in model.items():
        if key in _KEEP or isinstance(value, bool) or not isinstance(value, int):
            continue
        if _WIDTH_SETTING.search(key):
            overrides[key] = min(value, SMALL_WIDTH)
        elif _FACTOR_SETTING.search(key):
            overrides[key] = min(value, SMALL_FACTORS)
    return overrides


SHORT_RUNS = {"ranking": ("trecqa-clean", 100), "classification": ("sick", 800),
              "response_selection": ("dialog-babi-task1", 300)}
"""The real data of the short run, by the task of the entry's dataset: a ranking entry trains on the first 100
TrecQA TRAIN-ALL questions (its clean dev split scores it), a classifier on the first 800 SICK training pairs, a
response selector on the first 300 dialogs of dialog bAbI task 1 (1,808 responses; its dev split, 6,015 responses
among 4,212 candidates, scores it). Halving the ranking run to 50 questions (to shorten CI) was tried: 13 of
the 14 entries it changed that were checked still learned, but `compare_aggregate_submult_nn`'s dev MAP fell below
its untrained figure (0.500 -> 0.474), so the short run stays at 100 questions."""

_DROPOUT = re.compile(r"(^|_)dropout$")


def _is_length(key):
    return key.startswith("max_") and (key.endswith("_length") or key == "max_turns")


def small_lengths(name):
    """The truncation lengths of a small build (`{"max_question_length": ..., "max_answer_length": ...}` for a
    pair entry; every `max_*_length` and `max_turns` setting of other preprocessors): the preset's, or the
    family's caps (`FAMILY_SIZES`) where lower."""
    preset = zoo.describe(name)["preprocessing"]
    family = _family_sizes(name)
    return {key: min(value, family.get(key, value)) for key, value in preset.items() if _is_length(key)}


def short_run_overrides(name):
    """The settings of the short run: `small_overrides`, one epoch, batches of 32, every dropout rate 0, the
    learning rate 10 times the preset's (at most 0.01) and a vocabulary of the training words only
    (`max_vocabulary=0`: with the vector file's 71,124 words, converting each entry to ONNX took 32 s here;
    `tests/test_vectors.py` covers the vectors' words). Measured on TrecQA clean (100 training questions, widths
    8): with the presets' dropout and learning rate, one epoch left the dev MAP of `qrnn` (0.70 -> 0.69),
    `compare_aggregate_nn` (0.54 -> 0.52) and others at or below their untrained figure; with these settings
    every family gained (`ctrn` 0.30 -> 0.71, `compare_aggregate_mult` 0.37 -> 0.54, `mcan_fm` 0.50 -> 0.53).
    The short run reads the entry's pretrained vectors (unless the entry has none, `pretrained_embeddings`
    false): those fix the embedding's width, so `embedding_dim` is not capped there (another width is refused,
    `keras_match.settings.Settings.for_vectors`)."""
    preset = zoo.describe(name)
    overrides = dict(small_overrides(name), epochs=1, batch_size=32, max_vocabulary=0,
                     learning_rate=min(0.01, 10 * preset["training"]["learning_rate"]))
    if preset["model"].get("pretrained_embeddings", True):
        overrides.pop("embedding_dim", None)
    overrides.update({key: 0.0 for key in preset["model"] if _DROPOUT.search(key)})
    overrides.update(small_lengths(name))
    return overrides


@functools.lru_cache(maxsize=None)
def _task_of_dataset(dataset, data_dir):
    return getattr(catalog.load_by_name(dataset, data_dir=data_dir), "task", "ranking")


def task_kind(name, data_dir):
    """The task (`"ranking"`, `"classification"` or `"response_selection"`) of the entry's own dataset, loaded
    from `data_dir`."""
    return _task_of_dataset(zoo.describe(name)["dataset"], str(data_dir))


def _predict(model, inputs):
    """The model's outputs for a few examples, called eagerly: `model.predict` traced each of the three models of
    a check (trained, config clone, `.keras` copy) once or twice, 26 s of mcan_fm's 118 s here, for 24 rows."""
    return np.asarray(model({key: tf.constant(value) for key, value in inputs.items()}, training=False), np.float32)


def run_model_test(name, data_dir, tmp_path, seed=7, exports=True):
    """Builds zoo entry `name` small, trains it one epoch on real data through the recipe (`short_run_overrides`,
    with its family's `FAMILY_SIZES` changes), and checks it. The data is the short run's of the task of the
    entry's own dataset (`SHORT_RUNS`).

    1. a short real-data run learns: after one epoch the dev figure is above the same model's untrained figure
       (ranking: MAP; response selection: per-response accuracy, where chance, 1 / 4,212, is no bar), or above
       chance (classification: accuracy above 1 / classes);
    2. config round trip: `Model.from_config(model.get_config())` with the same weights gives identical outputs;
    3. `.keras` round trip: save, load, identical outputs (to 1e-6: the loaded model's graph may round the last
       bit differently);
    4. padding invariance: the same examples with 7 more padding columns give the same outputs;
    5. SavedModel parity: the exported `serving_default` on raw texts gives the run's outputs, and `serve_ids`
       on the preprocessor's inputs too;
    6. ONNX parity: `export.to_onnx` converts `serve_ids` and onnxruntime matches TensorFlow (to 1e-4).

    Checks 5 and 6 run when `exports` is true. `tests/models/test_zoo_entries.py` turns them off because
    `tests/test_export_zoo.py` exports every zoo entry through the same `export.saved_model` / `export.to_onnx`
    and checks more there (every signature, tricky texts, REST / gRPC bodies, warm-up records): exporting each
    entry twice cost about 40 % of its `run_model_test` here (mcan_fm: 33 s SavedModel + 68 s ONNX of 258 s).

    Returns:
        dict of what was measured (`untrained`, `trained`, the monitored figure's name).
    """
    kind = task_kind(name, data_dir)
    dataset, questions = SHORT_RUNS[kind]
    questions = _family_sizes(name).get("questions", {}).get(kind, questions)
    recipe = Recipe.prepare(name, dataset, data_dir=data_dir, seed=seed, max_train_questions=questions,
                            **short_run_overrides(name))
    task, monitor = recipe.task, recipe.task.monitor
    preprocessor = recipe.preprocessor()
    keras.utils.set_random_seed(seed)
    fitting = recipe.fitting(preprocessor)  # the model, compiled, and the encoded splits, as training makes them
    model = fitting.model
    untrained = fitting.evaluate()[monitor]
    batches = fitting.batches()  # one epoch, without the dev callback (its checkpoints are tested elsewhere)
    fitting.fit_model.fit(batches.dataset, steps_per_epoch=batches.steps_per_epoch, epochs=1, verbose=0, shuffle=False)
    trained = fitting.evaluate()[monitor]
    if kind in ("ranking", "response_selection"):
        assert trained > untrained, f"{name}: dev {monitor} {trained:.4f} after one epoch, {untrained:.4f} untrained"
    else:
        chance = 1.0 / len(task.label_names)
        assert trained > chance, f"{name}: dev {monitor} {trained:.4f} after one epoch, chance {chance:.4f}"

    # examples of the dev split, scored as training scores them (cut to their longest text)
    texts = {key: values[:24] for key, values in recipe.dev_examples.texts.items()}
    inputs = preprocessor.trim_padding(pipeline.encode(preprocessor, texts))
    expected = _predict(model, inputs)
    assert np.isfinite(expected).all() and expected.shape[0] == 24

    clone = keras.Model.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(_predict(clone, inputs), expected, atol=1e-6, err_msg=f"{name}: config round trip")

    path = tmp_path / f"{name}.keras"
    model.save(path)
    np.testing.assert_allclose(_predict(keras.models.load_model(path), inputs), expected, atol=1e-6,
                               err_msg=f"{name}: .keras round trip")

    padded = {key: np.pad(np.asarray(value), [(0, 0)] * (np.ndim(value) - 1) + [(0, 7)])
              if key in preprocessor.SEQUENCE_INPUTS else value for key, value in inputs.items()}
    np.testing.assert_allclose(_predict(model, padded), expected, atol=1e-5, err_msg=f"{name}: padding changes it")

    if not exports:
        return {"monitor": monitor, "untrained": untrained, "trained": trained}
    run = runs.Run(model=model, preprocessor=preprocessor, config={"zoo": name, "task": task.config()})
    version = export.saved_model(run, tmp_path / "export", version=1, warmup=False)
    import tensorflow_text  # noqa: F401  (the exported graph's tokenizer ops)

    loaded = tf.saved_model.load(str(version))
    served = loaded.signatures["serving_default"](**{key: tf.constant(np.asarray(texts[key], object).tolist())
                                                     for key in preprocessor.TEXT_INPUTS})
    by_ids = loaded.signatures["serve_ids"](**{key: tf.constant(value) for key, value in inputs.items()})
    if kind == "response_selection":  # scores [n, C] over the task's candidate set and the chosen index
        for outputs in (served, by_ids):
            np.testing.assert_allclose(outputs["scores"].numpy(), expected, atol=1e-5)
            assert outputs["choice"].numpy().tolist() == np.argmax(expected, axis=-1).tolist()
    elif heads.head_of(model) == "classification":
        np.testing.assert_allclose(served["probabilities"].numpy(), expected, atol=1e-5)
        np.testing.assert_allclose(by_ids["probabilities"].numpy(), expected, atol=1e-5)
        names = np.asarray(task.label_names)[np.argmax(expected, axis=-1)]
        assert [label.decode() for label in served["label"].numpy()] == names.tolist()
    else:
        scores = np.asarray(heads.ranking_score(heads.head_of(model), expected))
        np.testing.assert_allclose(served["score"].numpy(), scores, atol=1e-5)
        np.testing.assert_allclose(by_ids["score"].numpy(), scores, atol=1e-5)
    onnx = export.to_onnx(version)
    assert onnx.max_abs_diff <= 1e-4 and onnx.num_samples > 0
    return {"monitor": monitor, "untrained": untrained, "trained": trained}
