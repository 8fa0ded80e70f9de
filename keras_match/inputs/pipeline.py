"""The input pipeline: examples of a split, their model inputs, training batches for each loss mode, scoring.

1. `Examples` are the flat text pairs of a split with their labels and groups (a ranking split's question
   ids; none for classification), made by the task (`keras_match.tasks`).
2. `encode` calls the run's preprocessor (`keras_match.preprocessors`) as a `tf.function` (`encoding_function`) on
   chunks of `ENCODE_BATCH` texts, once: its model inputs (token ids padded to the truncation lengths, and the
   optional pair features), as numpy arrays.
3. `training_dataset` (each pass an epoch) and `training_epochs` (all epochs in one pass, as training uses
   them) draw each epoch's batch plan (`keras_match.inputs.batching`, chosen by the loss's mode) from a
   seed and the epoch number and gathers the batches: `[batch, length]` ids for pointwise, `[batch, 2, length]`
   for pairwise (positive first), `[questions, list, length]` for listwise with label -1 on padded items. Every
   batch is cut to its longest text.
4. `predict` runs a model over encoded inputs sorted by length, in batches cut to their longest text, and
   returns its outputs in the caller's order.

With bucketing (training's default), each epoch's batches hold examples of similar length
(`keras_match.inputs.batching`). The functions that sort or trim by length take `sequence_inputs`, the preprocessor's
token-id inputs in bucketing order (`Preprocessor.SEQUENCE_INPUTS`); nothing here names a text.
"""

from __future__ import annotations

import dataclasses
import json
import weakref

import numpy as np
import tensorflow as tf

from keras_match import text
from keras_match.inputs import batching
from keras_match.preprocessors.base import trim_padding

__all__ = ["Examples", "encode", "lengths_of", "training_dataset", "training_epochs", "TrainingEpochs", "predict",
           "without_autotune", "ENCODE_BATCH", "PREDICT_BATCH"]

ENCODE_BATCH = 1024
"""Texts per preprocessor call when encoding (the overlap features' memory is quadratic in length)."""

PREDICT_BATCH = 256
"""Pairs per model call when scoring."""


def without_autotune(dataset):
    """`dataset` with `tf.data`'s autotuning off (`tf.data.Options().autotune.enabled = False`).

    The pipelines here set no `tf.data.AUTOTUNE` value, but with autotuning on `tf.data` still injects a
    `prefetch(AUTOTUNE)` after a pipeline that does not end in a prefetch (`predict`'s; the training datasets end
    in a fixed `prefetch(2)`), and runs a model thread beside every iterator that wakes after a period doubling up
    to 60 s; deleting the iterator waits for the rest of that period. With autotuning off nothing is injected, and
    `predict`'s map runs in the caller's thread. Measured on one core (TensorFlow 2.21): scoring TrecQA raw's test
    split with `ctrn_minilm` took 41 s, 18 s of them idle inside the deletion of the iterator after the last batch
    (the whole test split four times in one process: with autotuning on 41, 23, 41 and 41 s; off 25, 22, 23 and
    23 s). The 45-51 s the first step of some epochs once waited, when each epoch had an iterator of its own
    (`training_epochs`), fits the same cause: the period reaches 60 s.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


@dataclasses.dataclass
class Examples:
    """The flat examples of a split, in order.

    Attributes:
        texts: `{text input: object array of str [n] (or [n, k] for a text input of rank 2)}`, the
            preprocessor's raw-text inputs (`{"question": ..., "answer": ...}` for pairs).
        labels: int32 `[n]`: relevance labels (ranking) or class indices (classification).
        groups: object array `[n]` of question ids for ranking (what pairwise and listwise batches group by),
            or None.
        ids: object array `[n]` of example ids (candidate ids for ranking), or None.
    """

    texts: dict
    labels: np.ndarray
    groups: np.ndarray | None = None
    ids: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.labels)


def encode(preprocessor, texts, batch_size=ENCODE_BATCH) -> dict:
    """The model inputs of raw texts, calling the preprocessor's `tf.function` on chunks of `batch_size` texts.

    Args:
        preprocessor: a `keras_match.preprocessors.Preprocessor`.
        texts: `{text input: texts [n]}` for each of the preprocessor's `TEXT_INPUTS` (lists or object arrays of
            str or bytes).
        batch_size: texts per preprocessor call.

    Returns:
        dict of numpy arrays, one per model input: int32 ids `[n, max_length]` per token-id input, float32
        `features [n, f]` when the preprocessor makes them; `n = 0` gives empty arrays of those widths.

    Raises:
        ValueError: the text inputs differ in length.
        TypeError: a text is neither str nor bytes (the message names its input and index).
    """
    preprocessor.check_texts(texts)
    columns = {key: np.asarray(texts[key], dtype=object) for key in preprocessor.TEXT_INPUTS}
    sizes = {key: len(value) for key, value in columns.items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"the text inputs must have the same length, got {sizes}")
    n = next(iter(sizes.values()))
    if n == 0:
        specs = preprocessor.model_input_specs()
        widths = preprocessor.sequence_lengths()
        return {key: np.zeros([0] + [widths.get(key, d) or 0 for d in spec.shape[1:-1]]
                              + [widths.get(key, spec.shape[-1])], spec.dtype.as_numpy_dtype)
                for key, spec in specs.items()}
    # str or UTF-8 bytes; [n] or [n, k] (a rank-2 text input: a history of turns)
    ranks = dict(preprocessor.TEXT_INPUTS)
    strings = {key: text.as_string_batch(value, rank=ranks[key], name=key) for key, value in columns.items()}
    function = encoding_function(preprocessor)
    chunks = [{key: value.numpy() for key, value in
               function({key: value[start:start + batch_size] for key, value in strings.items()}).items()}
              for start in range(0, n, batch_size)]
    return {key: np.concatenate([chunk[key] for chunk in chunks]) for key in chunks[0]}


_ENCODING_FUNCTIONS = weakref.WeakKeyDictionary()


def encoding_function(preprocessor):
    """The preprocessor as a `tf.function` of one batch of texts (`{text input: tf.string [b] or [b, k]}` ->
    the model inputs), traced once per preprocessor and state.

    Tracing the preprocessor (tokenizer, lookups, pair features) took about 1 s of every `encode` call, even for
    one pair; the function is kept while the preprocessor lives and traced again when what the graph reads
    changes: its config (truncation lengths, switches) or its `trackables()` (a new vocabulary or document
    frequencies, `set_vocabulary`, `extend_vocabulary`)."""
    trackables = list(preprocessor.trackables())
    state = (json.dumps(preprocessor.get_config(), sort_keys=True, default=str), tuple(map(id, trackables)))
    cached = _ENCODING_FUNCTIONS.get(preprocessor)
    if cached is not None and cached[0] == state:
        return cached[2]
    owner = weakref.ref(preprocessor)  # the cache must not keep its key alive
    function = tf.function(lambda texts: owner()(texts), input_signature=[preprocessor.text_input_specs()])
    _ENCODING_FUNCTIONS[preprocessor] = (state, trackables, function)  # trackables kept: their ids stay theirs
    return function




def _gather(inputs, labels, index, mode):
    """One batch of a plan: the inputs and labels of `index` (`[b]`, `[b, 2]` or `[b, k]` with -1 padding)."""
    if mode == "listwise":
        padded = index == batching.PAD_INDEX
        safe = np.where(padded, 0, index)
        batch = {}
        for key, value in inputs.items():
            rows = value[safe]
            rows[padded] = 0  # padded list items: all-padding ids, zero features
            batch[key] = rows
        y = np.where(padded, -1.0, labels[safe].astype(np.float32)).astype(np.float32)
        return batch, y
    batch = {key: value[index] for key, value in inputs.items()}
    if mode == "pairwise":
        return batch, np.zeros([len(index)], np.float32)  # the positive is column 0
    return batch, labels[index].astype(np.int32)


LENGTH_STEP = 4
"""Bucketing sorts by the first token-id input's length in steps of this many tokens first, then by the others'."""


def lengths_of(inputs, sequence_inputs) -> np.ndarray:
    """A length sort key per example of encoded inputs: the token count of the first of `sequence_inputs` in
    steps of `LENGTH_STEP`, then the counts of the others, then the exact count of the first (for pairs, whose
    `sequence_inputs` are `("answer", "question")`: the answer's length in steps of 4, the question's, the
    answer's). Batches of neighbours in this order are short in every text. A token-id input of rank 3
    (several texts per example) counts all its tokens."""
    counts = [np.count_nonzero(np.asarray(inputs[key]).reshape(len(inputs[key]), -1), axis=-1)
              for key in sequence_inputs]
    first, rest = counts[0], counts[1:]
    return batching.length_keys(first // LENGTH_STEP, *rest, first)


def training_dataset(inputs, examples: Examples, mode, batch_size, seed, sequence_inputs, list_size=None,
                     first_epoch=0, bucketing=False):
    """The training batches of a loss mode as a `tf.data.Dataset` of `(inputs, labels)`, reshuffled each epoch:
    each pass over it is the next epoch.

    Epoch `e` (counted from `first_epoch`, so a resumed run continues the sequence) draws its plan from
    `numpy.random.default_rng([seed, e])`. Training uses `training_epochs`, which yields the same epochs
    through one pass.

    Args:
        inputs: the encoded inputs of `examples` (`encode`).
        examples: their labels and groups; pairwise and listwise need `examples.groups`.
        mode: `"pointwise"`, `"pairwise"` or `"listwise"`.
        batch_size: pairs per batch (pointwise), pairs of pairs (pairwise), candidates per batch (listwise).
        seed: int.
        sequence_inputs: the token-id inputs in bucketing order (`Preprocessor.SEQUENCE_INPUTS`).
        list_size: listwise only: candidates sampled per question (None: all).
        first_epoch: the epoch number of the first pass over the dataset.
        bucketing: batch examples of similar length together (`keras_match.inputs.batching`); training turns it on
            unless the preset says `"bucketing": false`.

    Returns:
        `tf.data.Dataset`; labels are int32 `[b]` (pointwise), zeros `[b]` (pairwise) or float32 `[b, k]`
        with -1 on padded items (listwise).

    Raises:
        ValueError: a ranking mode without groups, or a plan without any batch (no question with both a
            positive and a negative candidate, say).
    """
    plan_of = _planner(inputs, examples, mode, batch_size, seed, list_size, bucketing, sequence_inputs)
    first_plan = _with_batches(plan_of(first_epoch), mode)
    epoch = [first_epoch]
    labels = np.asarray(examples.labels)

    def generate():
        plan = first_plan if epoch[0] == first_epoch else plan_of(epoch[0])
        epoch[0] += 1
        for index in plan:
            yield _gather(inputs, labels, index, mode)

    dataset = _dataset(generate, inputs, mode, sequence_inputs)
    if mode != "listwise":  # a fixed number of batches per epoch: the progress bar knows the total
        dataset = dataset.apply(tf.data.experimental.assert_cardinality(len(first_plan)))
    return dataset.prefetch(2)


@dataclasses.dataclass
class TrainingEpochs:
    """The batches of a whole training run: `dataset` yields `steps_per_epoch` batches of each epoch in turn."""

    dataset: tf.data.Dataset
    steps_per_epoch: int


def training_epochs(inputs, examples: Examples, mode, batch_size, seed, epochs, sequence_inputs, list_size=None,
                    first_epoch=0, bucketing=False) -> TrainingEpochs:
    """The training batches of epochs `first_epoch` .. `epochs - 1` in one pass, for `fit(dataset,
    steps_per_epoch=..., initial_epoch=first_epoch, epochs=epochs)`.

    Epoch `e` holds the batches of the plan `training_dataset` gives it (`default_rng([seed, e])`), so a
    resumed run continues the same sequence. Every epoch has the same number of batches (pointwise and pairwise
    plans do by construction; a listwise plan shorter than the longest of epochs `0 .. epochs - 1` has its
    widest batches halved, `batching.split_to`), so Keras keeps one iterator through all epochs. (With a new
    `tf.data` iterator per epoch, the first step of 2 to 4 of the README job's 5 epochs waited 45-51 s on this
    2-core machine, inside the destructor of the previous epoch's iterator: probably autotuning's wait, see
    `without_autotune`, which every dataset here now has.)

    Args:
        epochs: the run's number of epochs (an int above `first_epoch`).
        Others: as `training_dataset`.

    Returns:
        `TrainingEpochs`.

    Raises:
        ValueError: as `training_dataset`, or `epochs` not above `first_epoch`.
    """
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs <= first_epoch:
        raise ValueError(f"epochs must be an integer above first_epoch={first_epoch}, got {epochs!r}")
    plan_of = _planner(inputs, examples, mode, batch_size, seed, list_size, bucketing, sequence_inputs)
    plans = [plan_of(number) for number in range(epochs)]  # all of them: the count must not depend on resuming
    steps = len(_with_batches(max(plans, key=len), mode))
    if mode == "listwise":
        plans = [batching.split_to(plan, steps) for plan in plans]
    elif any(len(plan) != steps for plan in plans):
        raise AssertionError(f"{mode} plans of unequal length")  # pointwise / pairwise plans never differ
    plans = plans[first_epoch:]
    labels = np.asarray(examples.labels)

    def generate():
        for plan in plans:
            for index in plan:
                yield _gather(inputs, labels, index, mode)

    # no declared cardinality: Keras would make a fresh iterator when the count is reached, after the last epoch
    return TrainingEpochs(_dataset(generate, inputs, mode, sequence_inputs).prefetch(2), steps)


def _planner(inputs, examples, mode, batch_size, seed, list_size, bucketing, sequence_inputs):
    """`plan_of(epoch)`: the batch plan of an epoch (checks the mode and the groups first)."""
    labels = np.asarray(examples.labels)
    if mode not in batching.MODES:
        raise ValueError(f"unknown batching mode {mode!r}; valid modes: {list(batching.MODES)}")
    if mode != "pointwise" and examples.groups is None:
        raise ValueError(f"{mode} batches need question groups; this data has none (classification?)")
    groups = examples.groups if examples.groups is not None else np.zeros(len(labels))
    lengths = lengths_of(inputs, sequence_inputs) if bucketing else None

    def plan_of(number):
        return batching.plan(mode, groups, labels, batch_size, np.random.default_rng([seed, number]),
                             list_size=list_size, lengths=lengths)

    return plan_of


def _with_batches(plan, mode):
    """`plan`, which must hold a batch (an empty plan means no question can make one)."""
    if not plan:
        need = "a relevant candidate" if mode == "listwise" else "both a relevant and an irrelevant candidate"
        raise ValueError(f"no {mode} training batch can be made: no training question has {need}")
    return plan


def _dataset(generate, inputs, mode, sequence_inputs):
    """`generate`'s `(inputs, labels)` batches as a `tf.data.Dataset`, each cut to its longest text."""
    extra = {"pointwise": 0, "pairwise": 1, "listwise": 1}[mode]
    input_spec = {}
    for key, value in inputs.items():  # token ids: any length; other inputs (features) keep their widths
        inner = [None] * (value.ndim - 1) if key in sequence_inputs else list(value.shape[1:])
        input_spec[key] = tf.TensorSpec([None] * (1 + extra) + inner, tf.as_dtype(value.dtype))
    label_spec = (tf.TensorSpec([None], tf.int32) if mode == "pointwise" else
                  tf.TensorSpec([None], tf.float32) if mode == "pairwise" else tf.TensorSpec([None, None], tf.float32))
    dataset = tf.data.Dataset.from_generator(generate, output_signature=(input_spec, label_spec))
    return without_autotune(dataset.map(lambda x, y: (trim_padding(x, sequence_inputs), y)))


_INFERENCE = weakref.WeakKeyDictionary()
"""model -> {input signature: its inference tf.function} (`_inference_function`)."""


def _inference_function(model, element_spec):
    """`model(inputs, training=False)` as a tf.function traced once for every batch and text length.

    Keras' `predict` traces its step for the first batch's shapes, again for the second's, and again with the sizes
    that differ left open: 3 traces of the whole model where batches are cut to their longest text, 2-8 s each.
    This function's input signature leaves every dimension open from the start, so a model is traced once for all
    the scoring of a process.
    """
    signature = {key: tf.TensorSpec([None] * spec.shape.rank, spec.dtype, name=key)
                 for key, spec in element_spec.items()}
    key = tuple(sorted((name, spec.dtype.name, spec.shape.rank) for name, spec in signature.items()))
    functions = _INFERENCE.setdefault(model, {})
    if key not in functions:
        held = weakref.ref(model)  # the cache must not keep the model alive
        functions[key] = tf.function(lambda batch: held()(batch, training=False), input_signature=[signature])
    return functions[key]


def predict(model, inputs, sequence_inputs, batch_size=PREDICT_BATCH) -> np.ndarray:
    """The model's outputs for encoded inputs, in the caller's order.

    The examples are scored sorted by length (`lengths_of` over `sequence_inputs`, the preprocessor's
    token-id inputs), in batches cut to their longest text (a batch costs what its longest text costs; padding
    never changes an output), and put back in the order given. No examples give an empty array (Keras'
    `predict` fails on an empty dataset).
    """
    n = len(next(iter(inputs.values())))
    if n == 0:
        width = model.outputs[0].shape[-1]
        return np.zeros([0, width], np.float32)
    order = np.argsort(lengths_of(inputs, sequence_inputs), kind="stable")
    ordered = {key: np.asarray(value)[order] for key, value in inputs.items()}
    dataset = without_autotune(tf.data.Dataset.from_tensor_slices(ordered).batch(batch_size).map(
        lambda batch: trim_padding(batch, sequence_inputs)))
    call = _inference_function(model, dataset.element_spec)
    outputs = np.concatenate([np.asarray(call(batch), dtype=np.float32) for batch in dataset])
    restored = np.empty_like(outputs)
    restored[order] = outputs
    return restored
