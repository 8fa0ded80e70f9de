"""The recipe: from a zoo entry and a dataset to a model being trained, written once.

`keras_match.train`, fine-tuning (`train(..., init_preset=...)`), the tuner's hypermodel
(`keras_match.training.tuning.MatchHyperModel`) and the benchmarks all go the same way, through two objects:

```python
recipe = Recipe.prepare("mcan_fm", "trecqa-clean", seed=1234, lstm_units=100)  # settings checked, data read
preprocessor = recipe.preprocessor()           # the vocabulary of the training texts (+ the vectors')
fitting = recipe.fitting(preprocessor)         # model, compiled fit model, encoded train / dev splits
dev = fitting.dev_callback()                   # dev figures each epoch, early stopping (checkpoints: state_dir)
fitting.fit(dev)                               # the loss mode's batches through Keras fit
fitting.evaluate(recipe.task.examples(recipe.dataset["test"]))  # the task's figures
```

`Recipe` owns what does not depend on a model: the settings (checked once, before any data is read, by
`zoo.resolve`; the dataset's task then sets the head, `Task.model_settings`, and refuses a loss mode it cannot
train with), the dataset and task, the vectors, the examples. `Recipe.with_settings(**values)` gives a
variant's settings (a search trial) under the same rules. `Fitting` owns one model: it is the one place where
training makes the model, compiles it, encodes the splits, makes the batches and calls Keras `fit`.
"""

from __future__ import annotations

import dataclasses
import os

import keras

from keras_match import heads, losses, tasks, text, zoo
from keras_match.encoders import state_cache
from keras_match.inputs import pipeline
from keras_match.text import vectors as vectors_lib
from keras_match.settings import SEED_MAX, Settings
from keras_match.training import distribution
from keras_match.training.callbacks import DevEvaluationCallback

__all__ = ["Recipe", "Fitting", "load_training_data", "settings_for_task", "settings_for_vectors",
           "default_vectors_path"]


def default_vectors_path(data_dir=None):
    """The vectors a run uses when none are given (`keras_match.text.vectors.default_vectors`): `$KERAS_MATCH_EMBEDDINGS`,
    then the full GloVe 6B 50d of the `glove` extra (`"glove-6b-50d"`), then the data folder's filtered GloVe file."""
    return vectors_lib.default_vectors(data_dir)


def load_training_data(data, data_dir=None, train_split=None):
    """A dataset to train on and its task, checked: it has train and dev splits, and a ranking dev split has a
    question with a relevant answer (dev MAP chooses the model).

    Returns:
        `(dataset, task)`.

    Raises:
        ValueError: a single file, or a dataset without train or dev.
        keras_match.datasets.base.DataFormatError: a ranking dev split without any relevant answer (names its file).
    """
    from keras_match.datasets.base import DataFormatError
    from keras_match.datasets.catalog import load_by_name

    dataset = load_by_name(data, data_dir=data_dir, train_split=train_split)
    for split in ("train", "dev"):
        if split not in dataset:
            if isinstance(data, (str, os.PathLike)) and os.path.isfile(data):
                raise ValueError(f"{data} is one file: a training dataset is a folder of train / dev / test files "
                                 "(one file loads as a test split, for `keras-match evaluate`)")
            raise ValueError(f"dataset {dataset.name!r} has no {split!r} split; training needs train and dev")
    task = tasks.task_for(dataset)
    if isinstance(task, tasks.RankingTask) and not any(q.has_positive for q in dataset["dev"].questions):
        raise DataFormatError(dataset["dev"].source or dataset.name, None,
                              f"the dev split of {dataset.name!r} has no question with a relevant answer: early "
                              "stopping on dev MAP needs some; check its labels")
    return dataset, task


def check_batches(split, task, settings: Settings) -> None:
    """A pairwise or listwise loss can make a batch of the ranking training split `split`.

    Raises:
        keras_match.datasets.DataFormatError: no training question has both a relevant and an irrelevant
            candidate (pairwise) or a relevant one (listwise); names the split's file.
    """
    from keras_match.datasets.base import DataFormatError

    mode = losses.mode_of(settings.training.loss)
    if mode == "pointwise" or not isinstance(task, tasks.RankingTask):
        return
    pairwise = mode == "pairwise"
    if not any(q.has_positive and (q.has_negative or not pairwise) for q in split):
        need = "both a relevant and an irrelevant candidate" if pairwise else "a relevant candidate"
        raise DataFormatError(split.source or split.name, None,
                              f"no training question has {need}, so loss={settings.training.loss} ({mode}) "
                              "cannot make a batch; check the labels or train with loss=pointwise")


def settings_for_vectors(settings: Settings, vectors, given=()) -> Settings:
    """`settings` as the model over `vectors` (a `keras_match.text.vectors.WordVectors`, or None) has them
    (`keras_match.settings.Settings.for_vectors`).

    Raises:
        ValueError: a setting in `given` (the names the user gave) that the vectors contradict.
    """
    if vectors is None:
        return settings.for_vectors(None, given)
    return settings.for_vectors(vectors.dim, given, vectors.source)


def settings_for_task(settings: Settings, task, given=None) -> Settings:
    """`settings` with the task's head (`Task.model_settings`) and a loss the task trains with.

    A preset's loss of a mode the task does not train (`bi_encoder_minilm`'s `listwise_softmax` on a
    classification task, which trains pointwise only) gives way to the task's first mode, `pointwise`, with its
    `list_size` unset, when the user did not name `loss`; `given` (the names the user gave) tells. With `given`
    None every setting counts as the user's.

    Raises:
        ValueError: the task cannot train with the loss the user gave, or the entry reads other texts than the
            task's.
    """
    family = zoo.families()[settings.family]
    task.check_preprocessor(family.preprocessor_class(), settings.name)
    loss = settings.training.loss
    try:
        task.check_mode(losses.mode_of(loss), loss)
    except ValueError:
        if given is None or "loss" in given:
            raise
        training = dataclasses.replace(settings.training, loss=task.loss_modes[0], list_size=None)
        settings = dataclasses.replace(settings, training=training)
        task.check_mode(losses.mode_of(settings.training.loss), settings.training.loss)
    return settings.with_model(**task.model_settings(settings.model))


@dataclasses.dataclass
class Recipe:
    """A zoo entry prepared on a dataset (see the module docstring).

    Attributes:
        settings: the entry's `Settings`, with the task's head.
        overrides: the settings given by name (what `with_settings` starts from).
        dataset, task: the loaded dataset and its task (`keras_match.tasks`).
        vectors: the pretrained `keras_match.text.vectors.WordVectors`, or None (trained random embeddings).
        train_split: the training split (`max_train_questions` applied); `train_examples`, `dev_examples`: the
            task's examples of the training and dev splits.
        seed: the seed of weights, dropout, batches and the vectors of words the vector file lacks.
    """

    settings: Settings
    overrides: dict
    dataset: object
    task: object
    vectors: object
    train_split: object
    train_examples: pipeline.Examples
    dev_examples: pipeline.Examples
    seed: int
    _encoded: tuple = dataclasses.field(default=(), init=False, repr=False, compare=False)

    @property
    def mode(self) -> str:
        """The batching mode of the settings' loss: `"pointwise"`, `"pairwise"` or `"listwise"`."""
        return losses.mode_of(self.settings.training.loss)

    @classmethod
    def prepare(cls, name, data="trecqa-clean", *, data_dir=None, train_split=None, embeddings="default",
                seed=1234, max_train_questions=None, **overrides) -> Recipe:
        """Checks the arguments and settings, reads the vectors, then the dataset (fetched on first use), and checks
        that the loss can make batches of its training split.

        Args:
            name: the zoo entry.
            data: a dataset name, a path to the user's files, or a loaded dataset (`keras_match.train`).
            data_dir: the benchmark data folder.
            train_split: TrecQA's training set, `"train-all"` or `"train"`.
            embeddings: the pretrained vectors (`keras_match.text.vectors.load_vectors`), `"default"`
                (`default_vectors_path`) or None (trained random embeddings); not read when the settings name a
                `backbone` (a pretrained transformer, `keras_match.zoo.BACKBONE_SETTINGS`).
            seed: an integer from 0 to 2**32 - 1.
            max_train_questions: train on the first N training questions (pairs, for classification) only.
            **overrides: settings by name.

        Raises:
            ValueError: unknown entry, setting or dataset, a value that breaks its rule, a seed out of range (all
                before any file is read), a setting the vectors contradict (`settings_for_vectors`, before the data
                is read), a dataset without train or dev, a loss the task cannot train with.
            keras_match.datasets.DataFormatError: a malformed vector or data file; a ranking training split on
                which the loss cannot make a batch (pairwise: no question with a relevant and an irrelevant
                candidate; listwise: none with a relevant one).
        """
        if max_train_questions is not None and (isinstance(max_train_questions, bool) or
                                                not isinstance(max_train_questions, int) or max_train_questions < 1):
            raise ValueError(f"max_train_questions must be None or an integer >= 1, got {max_train_questions!r}")
        if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= SEED_MAX:
            raise ValueError(f"seed must be an integer from 0 to {SEED_MAX}, got {seed!r}")
        checked = zoo.resolve(name, **overrides)  # every setting is checked before any file is read or fetched
        if getattr(checked.preprocessing, "tokenizer", "words") != "words":
            embeddings = None  # WordPiece ids (a backbone's among them): word vectors have no rows for them
        if embeddings == "default":
            embeddings = default_vectors_path(data_dir)
        vectors = vectors_lib.load_vectors(embeddings) if embeddings else None
        settings_for_vectors(checked, vectors, overrides)  # a setting the vectors contradict: before the data
        dataset, task = load_training_data(data, data_dir=data_dir, train_split=train_split)
        settings = settings_for_vectors(settings_for_task(zoo.resolve(name, **overrides), task, overrides), vectors,
                                        overrides)
        split = dataset["train"]
        if max_train_questions:
            split = split.head(max_train_questions)
        check_batches(split, task, settings)
        return cls(settings=settings, overrides=dict(overrides), dataset=dataset, task=task, vectors=vectors,
                   train_split=split, train_examples=task.examples(split), dev_examples=task.examples(dataset["dev"]),
                   seed=seed)

    def with_settings(self, **values) -> Settings:
        """The settings of a variant: the recipe's overrides and `values` (a search trial's), with the task's
        head, checked as `prepare` checks them."""
        given = {**self.overrides, **values}
        return settings_for_vectors(settings_for_task(zoo.resolve(self.settings.name, **given), self.task, given),
                                    self.vectors, given)

    # ---- the preprocessor, the model -----------------------------------------------------------------------

    def vector_words(self, settings=None):
        """The words of the vector file that join the vocabulary: all, or the file's first `max_vocabulary`, for a
        model with frozen pretrained embeddings; none when the embeddings are trained (the vocabulary is then the
        training words: a word training never sees reads as the unknown word's zero row, not as its GloVe row beside
        trained ones; measured for `lc_lstm/trecqa-clean`, benchmarks/results/transfer/causes-lc_lstm-wikiqa.json)
        or there are no vectors."""
        settings = settings or self.settings
        if self.vectors is None or settings.model.get("trainable_embeddings"):
            return None
        cap = settings.preprocessing.max_vocabulary
        return self.vectors.words if cap is None else self.vectors.words[:cap]

    def preprocessor(self, settings=None):
        """The run's preprocessor, made from the training texts (`Preprocessor.from_training`)."""
        settings = settings or self.settings
        preprocessor_class = zoo.families()[settings.family].preprocessor_class()
        return preprocessor_class.from_training(self.train_examples.texts, settings.preprocessing,
                                                extra_words=self.vector_words(settings))

    def embeddings(self, preprocessor, settings=None):
        """`(matrix, coverage report)` of `text.load_embeddings` for the preprocessor's vocabulary (words the
        vectors lack start as the settings' `missing_vectors` says); `(None, None)` without vectors."""
        if self.vectors is None:
            return None, None
        settings = settings or self.settings
        return text.load_embeddings(self.vectors, preprocessor.encoder, seed=self.seed,
                                    missing=settings.preprocessing.missing_vectors)

    def model(self, preprocessor, embeddings=None, settings=None):
        """The zoo model for the preprocessor's inputs: `(model, coverage)`.

        With `embeddings` (a matrix from `embeddings()`) the model uses them; without, the recipe's vectors are
        made into a matrix here (`coverage` is then their report, else None); without vectors at all, the model
        trains random embeddings.
        """
        settings = settings_for_vectors(settings or self.settings, self.vectors)
        coverage = None
        if embeddings is None and self.vectors is not None:
            embeddings, coverage = self.embeddings(preprocessor, settings)
        return zoo.build(settings, embeddings=embeddings, **preprocessor.model_arguments()), coverage

    def compile(self, model, settings=None):
        """The model that `fit` trains, compiled with the settings' optimizer: the matching model itself
        (pointwise) or a `keras_match.heads.ListScorer` around it (pairwise, listwise)."""
        settings = settings or self.settings
        mode = losses.mode_of(settings.training.loss)
        loss = heads.training_loss(heads.head_of(model), mode, settings.training.loss)
        fit_model = model if mode == "pointwise" else heads.ListScorer(model, name=f"{model.name}_{mode}")
        fit_model.compile(optimizer=zoo.optimizer(settings, fit_model), loss=loss)
        # Keras 3 (3.15) builds the optimizer inside the first traced training step when no distribution strategy
        # is set; a tf.function that creates variables is traced twice, and a model's training step costs 5-15 s
        # to trace. Built here, the step is traced once (the variables are the same zeros either way).
        fit_model.optimizer.build(fit_model.trainable_variables)
        return fit_model

    # ---- inputs, batches, figures ----------------------------------------------------------------------------

    @staticmethod
    def encode(preprocessor, examples):
        """The model inputs of `examples` (`pipeline.encode`)."""
        return pipeline.encode(preprocessor, examples.texts)

    def batches(self, preprocessor, inputs, examples, first_epoch=0, epochs=None, settings=None):
        """The training batches of epochs `first_epoch` .. `epochs - 1` (default the settings') in the loss
        mode's shape (`pipeline.training_epochs`)."""
        settings = settings or self.settings
        training = settings.training
        return pipeline.training_epochs(inputs, examples, losses.mode_of(training.loss), training.batch_size,
                                        self.seed, int(epochs or training.epochs), preprocessor.SEQUENCE_INPUTS,
                                        list_size=training.list_size, first_epoch=first_epoch,
                                        bucketing=bool(training.bucketing))

    def evaluator(self, model, preprocessor, examples, inputs=None):
        """A function giving the task's figures of `model` on `examples` (encoded once, here or as `inputs`)."""
        inputs = self.encode(preprocessor, examples) if inputs is None else inputs
        head = heads.head_of(model)
        return lambda: self.task.evaluate(head, pipeline.predict(model, inputs, preprocessor.SEQUENCE_INPUTS),
                                          examples)

    def schedule_callbacks(self, settings=None):
        """The Keras callbacks of the settings' learning-rate schedule: with `lr_decay` d, epoch e (counted from 0
        over the whole run: a resumed fit counts from its checkpoint's epoch) trains at `learning_rate * d**e`
        (`keras.callbacks.LearningRateScheduler`); none without it."""
        training = (settings or self.settings).training
        if training.lr_decay is None:
            return []
        rate, decay = float(training.learning_rate), training.lr_decay
        return [keras.callbacks.LearningRateScheduler(lambda epoch, _: rate * decay ** epoch)]

    # ---- one model ---------------------------------------------------------------------------------------------

    def encoded(self, preprocessor):
        """`(train_inputs, dev_inputs)`: the training and dev splits encoded by `preprocessor`, once (kept for
        the last preprocessor asked: a search encodes them once for all its trials)."""
        if not self._encoded or self._encoded[0] is not preprocessor:
            self._encoded = (preprocessor, self.encode(preprocessor, self.train_examples),
                             self.encode(preprocessor, self.dev_examples))
        return self._encoded[1], self._encoded[2]

    def fitting(self, preprocessor, *, settings=None, embeddings=None, strategy=None, adapt=None) -> Fitting:
        """A model of the entry for `preprocessor`, compiled and ready to `fit` (see `Fitting`).

        Args:
            preprocessor: the run's preprocessor (`preprocessor()`, or a resumed / fine-tuned run's).
            settings: a variant's settings (`with_settings`); default the recipe's.
            embeddings: an embedding matrix (`embeddings()`); default the recipe's vectors made into one.
            strategy: a `tf.distribute` strategy whose scope the model is made in (data-parallel training).
            adapt: called with the model before it is compiled (fine-tuning moves a preset's weights in); what
                it returns is `Fitting.adapted`.
        """
        settings = settings or self.settings
        with distribution.scope(strategy):
            model, coverage = self.model(preprocessor, embeddings, settings)
            adapted = adapt(model) if adapt is not None else None
            fit_model = self.compile(model, settings)
        train_inputs, dev_inputs = self.encoded(preprocessor)
        if settings.training.state_cache and strategy is None:  # a frozen backbone's states, once per text
            state_cache.attach(model, [inputs[name] for inputs in (train_inputs, dev_inputs)
                                       for name in preprocessor.SEQUENCE_INPUTS])
        return Fitting(self, settings, preprocessor, model, fit_model, coverage, train_inputs, dev_inputs, adapted)

    def fitting_of(self, fit_model, preprocessor, settings=None) -> Fitting:
        """The `Fitting` of a model `fitting(...)` made and compiled before (Keras Tuner builds a trial's model,
        then hands it to the hypermodel's `fit`)."""
        model = fit_model.scorer if isinstance(fit_model, heads.ListScorer) else fit_model
        train_inputs, dev_inputs = self.encoded(preprocessor)
        return Fitting(self, settings or self.settings, preprocessor, model, fit_model, None, train_inputs,
                       dev_inputs)


@dataclasses.dataclass
class Fitting:
    """One model of a `Recipe`, compiled, with the encoded training and dev splits: the one place where training
    makes batches and calls Keras `fit` (`keras-match train`, fine-tuning, a search trial, the benchmarks).

    Attributes:
        recipe: the `Recipe` (task, examples, seed).
        settings: the model's settings (a search trial's variant, or the recipe's).
        preprocessor: the preprocessor whose ids the model reads.
        model: the matching model (what is saved and scored).
        fit_model: what `fit` trains: `model`, or a `keras_match.heads.ListScorer` around it (pairwise,
            listwise losses).
        coverage: the vectors' coverage report (`text.load_embeddings`), or None.
        train_inputs, dev_inputs: the encoded training and dev splits.
        adapted: what `Recipe.fitting(adapt=...)` returned, or None.
    """

    recipe: Recipe
    settings: Settings
    preprocessor: object
    model: object
    fit_model: object
    coverage: object
    train_inputs: dict
    dev_inputs: dict
    adapted: object = None

    def batches(self, first_epoch=0, epochs=None, settings=None):
        """The training batches of epochs `first_epoch` .. `epochs - 1` (default the settings') in the loss
        mode's shape (`Recipe.batches`); `settings` a variant's (`bucketing`) of the same loss mode."""
        return self.recipe.batches(self.preprocessor, self.train_inputs, self.recipe.train_examples,
                                   first_epoch=first_epoch, epochs=epochs, settings=settings or self.settings)

    def evaluate(self, examples=None, inputs=None) -> dict:
        """The task's figures of the model on `examples` (default the dev split, encoded once)."""
        if examples is None:
            examples, inputs = self.recipe.dev_examples, self.dev_inputs
        return self.recipe.evaluator(self.model, self.preprocessor, examples, inputs)()

    def dev_callback(self, state_dir=None) -> DevEvaluationCallback:
        """The callback that scores the dev split after every epoch, keeps the best weights, stops early after
        the settings' `patience` and, with `state_dir`, checkpoints the run so a killed one resumes
        (`keras_match.training.callbacks.DevEvaluationCallback`)."""
        task = self.recipe.task
        return DevEvaluationCallback(self.evaluate, task.monitor, task.figures, self.model, state_dir,
                                     patience=self.settings.training.patience)

    def fit(self, dev, *, first_epoch=0, epochs=None, callbacks=(), verbose="auto", strategy=None):
        """Trains the fit model from epoch `first_epoch` to `epochs` (default the settings') on the loss mode's
        batches, with `dev` (`dev_callback()`), the learning-rate schedule and `callbacks`.

        Returns:
            The Keras `History`.
        """
        epochs = int(epochs or self.settings.training.epochs)
        batches = self.batches(first_epoch=first_epoch, epochs=epochs)
        distribution.prepare_fit(self.fit_model, batches.dataset, strategy)
        # the batches are reshuffled by the pipeline (seeded); fit's own shuffle does not apply to datasets
        return self.fit_model.fit(distribution.shard_by_data(batches.dataset, strategy),
                                  steps_per_epoch=batches.steps_per_epoch, epochs=epochs, initial_epoch=first_epoch,
                                  callbacks=[dev, *self.recipe.schedule_callbacks(self.settings), *callbacks],
                                  verbose=verbose, shuffle=False)
