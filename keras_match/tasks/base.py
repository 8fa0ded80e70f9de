"""The task base class: what a dataset asks of a model, and everything that depends on it.

A task (`keras_match.tasks`) is the kind of a dataset, not keras-hub's `Task` (a model plus its preprocessor): it
turns a split into the flat `keras_match.inputs.pipeline.Examples` the input pipeline batches, names the texts of an
example (`text_fields`, which must be the raw-text inputs of the model's preprocessor), chooses the head the
model needs and the dev figure that picks the model (`monitor`), evaluates a model's outputs, prints a summary
line, records itself in a run's `config.json` (`config` / `from_config`), and says what the exported
signatures return (`serving_outputs`, `signature_outputs`, `extra_signatures`).
"""

from __future__ import annotations

import abc
import typing

__all__ = ["Task"]


class Task(abc.ABC):
    """Base class of the tasks (see the module docstring); a subclass implements its abstract methods.

    Class attributes of a subclass:
        kind: the registry name (`"ranking"`, `"classification"`); datasets name theirs in `dataset.task`.
        monitor: the dev figure that chooses the model (a key of `evaluate`'s report).
        figures: the figures printed after each epoch.
        text_fields: the names of an example's texts.
        loss_modes: the loss modes (`keras_match.losses.mode_of`) it trains with.
        usage: lines of Python that use a loaded run or preset of this task, bound to `run` (a preset's model
            card shows them; they must run as written).
        intended_use: what a model of this task is for, the rest of a sentence (a preset's model card).
    """

    kind: typing.ClassVar[str] = ""
    monitor: typing.ClassVar[str] = ""
    figures: typing.ClassVar[tuple] = ()
    text_fields: typing.ClassVar[tuple] = ()
    loss_modes: typing.ClassVar[tuple] = ("pointwise",)
    usage: typing.ClassVar[tuple] = ()
    intended_use: typing.ClassVar[str] = ""

    # ---- made from a dataset or a run's config -----------------------------------------------------------------

    @classmethod
    @abc.abstractmethod
    def for_dataset(cls, dataset) -> Task:
        """The task of a loaded dataset whose `task` is this kind."""
        raise NotImplementedError

    def config(self) -> dict:
        """`{"kind": ..., ...}`: what `from_config` needs to make the task again (written to `config.json`)."""
        return {"kind": self.kind}

    @classmethod
    @abc.abstractmethod
    def from_config(cls, config: dict) -> Task:
        """The task recorded by `config()`."""
        raise NotImplementedError

    # ---- data -----------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def accepts(self, split) -> str | None:
        """None if this task can score `split`, else why not: the rest of a sentence that begins with the split's
        name (`"is a ranking split; ..."`)."""
        raise NotImplementedError

    def check_split(self, split):
        """Raises ValueError when `split` is of another task or another label set (a silent wrong answer)."""
        problem = self.accepts(split)
        if problem:
            raise ValueError(f"split {getattr(split, 'name', '?')!r} {problem}")

    @abc.abstractmethod
    def examples(self, split):
        """The split's examples (`keras_match.inputs.pipeline.Examples`) with texts under `text_fields`."""
        raise NotImplementedError

    def check_preprocessor(self, preprocessor_class, name):
        """Raises ValueError unless the preprocessor reads exactly this task's texts."""
        reads = tuple(preprocessor_class.TEXT_INPUTS)
        if set(reads) != set(self.text_fields):
            raise ValueError(f"zoo entry {name!r} reads the texts {list(reads)}; a {self.kind} dataset gives "
                             f"{list(self.text_fields)}")

    # ---- the model ------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def model_settings(self, model: dict) -> dict:
        """The head settings the task needs, given the preset's model settings."""
        raise NotImplementedError

    def check_mode(self, mode, loss):
        """Raises ValueError when the task cannot train with the loss mode `mode`."""
        if mode not in self.loss_modes:
            raise ValueError(f"{self.kind} trains {' or '.join(self.loss_modes)}; loss={loss!r} is {mode}")

    # ---- figures --------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def evaluate(self, head, outputs, examples) -> dict:
        """The task's figures of a model's outputs `[n, units]` on `examples`."""
        raise NotImplementedError

    @abc.abstractmethod
    def summary(self, report) -> str:
        """One printable line of `evaluate`'s report."""
        raise NotImplementedError

    # ---- serving --------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def serving_outputs(self, head, outputs, numeric_only=False) -> dict:
        """The exported signatures' outputs of the model's outputs (tensors); `numeric_only` for `serve_ids`
        (ONNX takes no strings)."""
        raise NotImplementedError

    @abc.abstractmethod
    def signature_outputs(self, head, num_outputs) -> dict:
        """`{signature: {output: (dtype name, shape)}}` for `serving_default`, `serve_ids` and the extras."""
        raise NotImplementedError

    def extra_signatures(self, head, preprocessor, open_candidates=False) -> dict:
        """`{name: (inputs table, make)}`: signatures beyond `serving_default` and `serve_ids` (ranking's `rank`).

        The inputs table is `{input: (dtype name, shape)}`; `make(score_texts, score_with_candidates)` returns
        the endpoint function, given `score_texts(texts) -> model outputs` over the preprocessor's text inputs
        and, when `open_candidates` (the model's family has `score_candidates`, `keras_match.zoo.Family`),
        `score_with_candidates(texts, candidates) -> scores [batch, C]` over candidate texts `[C]` given at call
        time (None otherwise).
        """
        return {}

    @abc.abstractmethod
    def predictions(self, head, outputs, texts, label_names=None) -> list:
        """Printable lines for `keras-match predict`: the model's outputs on `texts`."""
        raise NotImplementedError
