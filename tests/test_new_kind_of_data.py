"""The proof that a new kind of data plugs in without touching the package: a toy task whose examples have three
texts (context, query, response), a toy preprocessor and a toy model family, all defined in this file only,
registered, trained for one epoch through the public recipe (`keras_match.train`), evaluated, exported as a
SavedModel whose raw-text signature takes the three texts, and scored through it.

Nothing outside this file knows these names: training, the recipe, runs, export, signatures and serving read the
preprocessor's declared inputs and the task's outputs.
"""

import dataclasses
import os
import shutil
import tempfile
import typing
import weakref

import keras
import numpy as np
import pytest
import tensorflow as tf

from keras_match import preprocessors, tasks, text, train, zoo
from keras_match.artifacts import runs
from keras_match.serving import export
from keras_match.encoders import takes_input_encoder, word_vectors_with
from keras_match.models.common import matching_model, token_inputs
from keras_match.inputs.pipeline import Examples
from keras_match.preprocessors.base import Preprocessor
from keras_match.settings import POSITIVE_INT, PreprocessingSettings

FIELDS = ("context", "query", "response")


# ---- the toy data: which of a query's responses shares its topic word? -------------------------------------

TOPICS = ["sky", "sea", "cat", "dog", "tea", "sun", "rain", "snow", "bird", "tree", "car", "boat"]
FILLER = ["the", "a", "is", "of", "and", "very", "quite", "today", "here", "there"]


@dataclasses.dataclass
class TripleSplit:
    name: str
    contexts: list
    queries: list
    responses: list
    labels: np.ndarray
    groups: np.ndarray
    source: str | None = None
    dropped: dict = dataclasses.field(default_factory=dict)

    @property
    def num_pairs(self):
        return len(self.labels)

    def counts(self):
        return {"examples": self.num_pairs, "positive": int(self.labels.sum())}

    def head(self, n):
        keep = np.isin(self.groups, np.unique(self.groups)[:n])
        pick = lambda values: [v for v, k in zip(values, keep) if k]  # noqa: E731
        return TripleSplit(self.name, pick(self.contexts), pick(self.queries), pick(self.responses),
                           self.labels[keep], self.groups[keep])


def make_split(name, rng, count):
    contexts, queries, responses, labels, groups = [], [], [], [], []
    for group in range(count):
        topic, *others = rng.choice(TOPICS, size=4, replace=False)
        context = " ".join(rng.choice(FILLER, size=4))
        query = f"tell me about the {topic} {rng.choice(FILLER)}"
        for candidate, label in [(topic, 1)] + [(other, 0) for other in others]:
            contexts.append(context)
            queries.append(query)
            responses.append(f"{rng.choice(FILLER)} {candidate} {rng.choice(FILLER)}")
            labels.append(label)
            groups.append(f"{name}-{group}")
    return TripleSplit(name, contexts, queries, responses, np.array(labels, np.int32), np.array(groups, object))


@dataclasses.dataclass
class TripleDataset:
    name: str
    splits: dict
    metadata: dict = dataclasses.field(default_factory=dict)
    task = "toy_response_choice"

    def __getitem__(self, split):
        return self.splits[split]

    def __contains__(self, split):
        return split in self.splits


# ---- the toy task ------------------------------------------------------------------------------------------


class ResponseChoiceTask(tasks.Task):
    """P@1 of the best-scored response per query; the raw-text signature returns `score`."""

    kind = "toy_response_choice"
    monitor = "p@1"
    figures = ("p@1",)
    text_fields = FIELDS

    @classmethod
    def for_dataset(cls, dataset):
        return cls()

    @classmethod
    def from_config(cls, config):
        return cls()

    def accepts(self, split):
        return None if isinstance(split, TripleSplit) else "is not a split of (context, query, response) triples"

    def examples(self, split):
        texts = {"context": np.array(split.contexts, object), "query": np.array(split.queries, object),
                 "response": np.array(split.responses, object)}
        return Examples(texts=texts, labels=split.labels, groups=split.groups, ids=None)

    def model_settings(self, model):
        return {"head": "score"}

    def evaluate(self, head, outputs, examples):
        scores = np.asarray(outputs)[:, 0]
        hits = [examples.labels[examples.groups == group][np.argmax(scores[examples.groups == group])]
                for group in np.unique(examples.groups)]
        return {"p@1": float(np.mean(hits)), "num_queries": len(hits)}

    def summary(self, report):
        return f"P@1 {report['p@1']:.4f} ({report['num_queries']} queries)"

    def serving_outputs(self, head, outputs, numeric_only=False):
        return {"score": tf.cast(outputs[:, 0], tf.float32)}

    def signature_outputs(self, head, num_outputs):
        return {"serving_default": {"score": ("float32", [None])}, "serve_ids": {"score": ("float32", [None])}}

    def predictions(self, head, outputs, texts, label_names=None):
        return [f"{float(score):.4f}\t{response}" for score, response in zip(np.asarray(outputs)[:, 0],
                                                                           texts["response"])]


# ---- the toy preprocessor ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TripleSettings(PreprocessingSettings):
    RULES: typing.ClassVar[dict] = {**PreprocessingSettings.RULES, "max_length": POSITIVE_INT}
    max_length: int = 8


@keras.saving.register_keras_serializable(package="toy_triples")
class TriplePreprocessor(Preprocessor):
    """Three texts -> three token-id inputs of at most `max_length` tokens each."""

    Settings = TripleSettings
    TEXT_INPUTS = {name: 1 for name in FIELDS}
    SEQUENCE_INPUTS = ("response", "query", "context")
    ASSET_FILES = ("vocabulary.txt",)

    def __init__(self, vocabulary=None, max_length=8, **kwargs):
        super().__init__(**kwargs)
        self.max_length = max_length
        self.encoder = text.TextEncoder(list(vocabulary)) if vocabulary is not None else None

    @classmethod
    def from_training(cls, texts, settings, extra_words=None):
        documents = np.concatenate([np.asarray(texts[name], object) for name in FIELDS])
        encoder = text.TextEncoder.build(documents)
        return cls(encoder.vocabulary, max_length=settings.max_length)

    @property
    def vocab_size(self):
        return self.encoder.vocab_size

    def call(self, x, y=None, sample_weight=None):
        self.check_texts(x)
        inputs = {name: self.encoder.encode(text.as_string_batch(x[name]), self.max_length) for name in FIELDS}
        return keras.utils.pack_x_y_sample_weight(inputs, y, sample_weight)

    def model_input_specs(self):
        return {name: tf.TensorSpec([None, None], tf.int32, name=name) for name in FIELDS}

    def sequence_lengths(self):
        return {name: self.max_length for name in FIELDS}

    def trackables(self):
        return [self.encoder.table]

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length, "vocabulary": None}

    def save_assets(self, dir_path):
        self.encoder.save_vocabulary(os.path.join(dir_path, "vocabulary.txt"))

    def load_assets(self, dir_path):
        private = tempfile.mkdtemp(prefix="toy_triples_")
        shutil.copyfile(os.path.join(dir_path, "vocabulary.txt"), os.path.join(private, "vocabulary.txt"))
        self.encoder = text.TextEncoder.from_file(os.path.join(private, "vocabulary.txt"))
        weakref.finalize(self.encoder.table, shutil.rmtree, private, ignore_errors=True)


# ---- the toy family ----------------------------------------------------------------------------------------


@takes_input_encoder(word_vectors_with(embedding_dim=16, trainable_embeddings=True))
def build_bag_of_words(input_encoder, units=8, head="score", num_classes=None, name=None):
    """Each text's mean state, [context; query; response; query * response] -> a dense layer -> the head."""
    context, query, response = token_inputs(*FIELDS)
    pool = keras.layers.GlobalAveragePooling1D()
    c, q, r = (pool(input_encoder(ids)) for ids in (context, query, response))
    x = keras.layers.Concatenate()([c, q, r, keras.layers.Multiply()([q, r])])
    return matching_model({"context": context, "query": query, "response": response}, x,
                          prediction=keras.layers.Dense(units, activation="relu"), head=head,
                          num_classes=num_classes, name=name)


@pytest.fixture
def registered():
    """The toy task, preprocessor and family, registered for one test and removed after it."""
    tasks.register(ResponseChoiceTask)
    preprocessors.register("toy_triples", TriplePreprocessor)
    zoo.register(zoo.Family(
        name="toy_bag_of_words", builders={"bag_of_words": build_bag_of_words}, preprocessor="toy_triples",
        presets={"toy_bag_of_words": {"builder": "bag_of_words", "description": "a toy", "model": {"units": 16},
                                      "training": {"learning_rate": 0.02, "batch_size": 32, "epochs": 1},
                                      "preprocessing": {"max_length": 6}}},
        search_space={"hyperparameters": {"units": {"type": "choice", "values": [8, 16]}}}))
    yield
    zoo.unregister("toy_bag_of_words")
    preprocessors.unregister("toy_triples")
    tasks.unregister("toy_response_choice")


def test_a_three_text_task_trains_evaluates_exports_and_serves_through_the_public_recipe(registered, tmp_path):
    rng = np.random.default_rng(0)
    dataset = TripleDataset("toy", {"train": make_split("train", rng, 1000), "dev": make_split("dev", rng, 40),
                                    "test": make_split("test", rng, 40)})
    assert "toy_bag_of_words" in zoo.names()

    report = train("toy_bag_of_words", dataset, embeddings_path=None, run_dir=tmp_path / "run", seed=3, verbose=0)
    assert report["task"] == "toy_response_choice" and report["epochs_run"] == 1
    assert report["test"]["p@1"] > 0.5, report  # chance is 0.25: one epoch learns the shared topic word
    config = runs.read_config(tmp_path / "run" / "config.json")
    assert config["family"] == "toy_bag_of_words" and config["task"] == {"kind": "toy_response_choice"}
    assert config["settings"]["preprocessing"]["max_length"] == 6

    run = runs.load_run(tmp_path / "run")
    assert run.evaluate(dataset["test"]) == report["test"]
    texts = {"context": ["the sea is here", ""], "query": ["tell me about the cat today", "sky ?"],
             "response": ["a cat there", "the boat"]}
    scores = run.score(texts)
    assert scores.shape == (2,) and np.isfinite(scores).all()

    version = export.saved_model(run, tmp_path / "export", version=1)
    metadata = export.read_metadata(version)
    assert metadata["signatures"]["serving_default"] == {name: ["string", [None]] for name in FIELDS}
    assert set(metadata["signatures"]) == {"serving_default", "serve_ids"}  # the task adds no `rank`
    import tensorflow_text  # noqa: F401  (the graph's tokenizer ops)

    loaded = tf.saved_model.load(str(version))
    served = loaded.signatures["serving_default"](**{k: tf.constant(v) for k, v in texts.items()})["score"]
    np.testing.assert_allclose(served.numpy(), scores, atol=1e-5)
    ids = run.preprocessor(texts)
    by_ids = loaded.signatures["serve_ids"](**ids)["score"]
    np.testing.assert_allclose(by_ids.numpy(), scores, atol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match="context, query and response must hold the same"):
        loaded.signatures["serving_default"](context=tf.constant(["a"]), query=tf.constant(["b", "c"]),
                                             response=tf.constant(["d"]))


def test_the_toy_entry_is_checked_like_any_other(registered):
    with pytest.raises(ValueError, match="setting max_length=0: must be an integer >= 1"):
        zoo.resolve("toy_bag_of_words", max_length=0)
    with pytest.raises(ValueError, match="unknown setting"):
        zoo.resolve("toy_bag_of_words", lstm_units=3)
    settings = zoo.resolve("toy_bag_of_words", units=4)
    assert settings.family == "toy_bag_of_words" and settings.model == {"units": 4}
    # a pair dataset cannot train it: the texts differ
    from keras_match.training.recipe import settings_for_task

    with pytest.raises(ValueError, match=r"reads the texts \['context', 'query', 'response'\]"):
        settings_for_task(settings, tasks.RankingTask())


def test_unregistered_after_the_test():
    assert "toy_bag_of_words" not in zoo.names()
    assert "toy_response_choice" not in tasks.registered()
