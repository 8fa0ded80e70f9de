"""Dialog bAbI tasks 1-6 (Bordes, Boureau & Weston, ICLR 2017) as next-response selection: every bot turn of a
dialog is one example that ranks the gold bot utterance among all the candidates of its task.

Source: the Facebook release, unmodified copies from tsajed/chatbot-MemN2N-tensorflow (commit ``68b6bed``) and
HLTCHKUST/Mem2Seq (``4224ccf``); see ``dialog_babi/SOURCE.md`` in the data folder. License: CC BY 3.0 (attribute
Bordes & Weston 2017; task 6 is derived from DSTC2, cite Henderson, Thomson & Williams 2014 too).

Dataset names (:data:`NAMES`): ``dialog-babi-task1`` ... ``dialog-babi-task6`` (:data:`TASKS`). Splits ``"train"``,
``"dev"``, ``"test"`` and, for tasks 1-5, ``"test-oov"`` (the ``tst-OOV`` file: entities unseen in training);
task 6 has no OOV test set. Files, relative to the data directory (the data folder keeps them gzip'd, a download
writes the plain originals; either is read)::

    dialog_babi/dialog-babi-task{1..5}-<name>-{trn,dev,tst,tst-OOV}.txt   (candidates: dialog-babi-candidates.txt)
    dialog_babi/dialog-babi-task6-dstc2-{trn,dev,tst}.txt   (candidates: dialog-babi-task6-dstc2-candidates.txt)

Dialog file format (ASCII, LF), one line per turn, ``ID<space>REST``; ``ID`` is 1 at the first line of a dialog
and increases by 1; dialogs are also separated by an empty line:

* a **response turn**: ``REST`` = ``user utterance<TAB>bot utterance`` (``<SILENCE>`` as the user utterance when
  the bot speaks twice in a row); the bot utterance is the target;
* a **KB line** (no tab): a KB fact ``entity R_attribute value`` (tasks 3-6: the API results) or task 6's
  ``api_call no result``; it belongs to the history, it is not a target.

Mapping: each response turn *t* of a dialog is one example: ``history`` = every earlier text of the dialog in
order, each its own text (the user and the bot utterance of each earlier turn, and every KB line), ``context`` =
the user utterance of turn *t*, ``gold`` = the index of its bot utterance in the task's candidate set. Texts are
kept exactly as stored: task 6's last bot turn is `` you are welcome`` with a leading space, and so is the
candidate line ``1  you are welcome`` once its constant ``1 `` prefix is cut, so the two match as stored; the user
utterance of 6 turns of task 6's train file is empty (an empty ASR transcript, ``17 <TAB>Ok , a restaurant in any
part of town is that right?``) and is kept as the empty string (``history_length`` tells it from padding). The
candidate set (:class:`CandidateSet`: 4,212 texts for tasks 1-5, 2,407 for task 6) is read once per dataset and
shared by its splits; examples hold indices into it. Nothing is dropped; every gold response is a candidate
(else the file is refused).

Counts (dialogs / examples; examples = response turns):

| task | train | dev | test | test-oov |
| --- | --- | --- | --- | --- |
| 1 | 1,000 / 6,024 | 1,000 / 6,015 | 1,000 / 5,936 | 1,000 / 6,020 |
| 2 | 1,000 / 9,498 | 1,000 / 9,513 | 1,000 / 9,464 | 1,000 / 9,460 |
| 3 | 1,000 / 9,855 | 1,000 / 9,978 | 1,000 / 10,018 | 1,000 / 9,788 |
| 4 | 1,000 / 3,507 | 1,000 / 3,529 | 1,000 / 3,498 | 1,000 / 3,510 |
| 5 | 1,000 / 18,340 | 1,000 / 18,457 | 1,000 / 18,398 | 1,000 / 18,368 |
| 6 | 1,618 / 14,404 | 500 / 4,159 | 1,117 / 11,237 | none |

Evaluation (the papers' setting, ``keras_match.tasks.ResponseSelectionTask``): per-response accuracy (the
top-scored of all candidates is the gold one) and per-dialog accuracy (every response of the dialog right); dev
per-response accuracy chooses the model. ``ResponseSplit.head(n)`` (what ``--max-train-questions n`` calls) keeps
the first ``n`` dialogs.

>>> from keras_match import datasets
>>> ds = datasets.load("dialog-babi-task1")
>>> len(ds.candidates), ds["dev"].counts()["examples"]   # (4212, 6015)
>>> ds["train"][0]                                       # ResponseExample(id='1-1', history=(), context='hi', ...)
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import re
from typing import Iterator

import numpy as np

from keras_match.datasets.base import DataFormatError, SplitsByName
from keras_match.datasets.common import check_intact, choose_options, data_path, file_paths, locate
from keras_match.datasets.reader import iter_lines

__all__ = [
    "CandidateSet",
    "Dialog",
    "NAMES",
    "ResponseExample",
    "ResponseSelectionDataset",
    "ResponseSplit",
    "TASKS",
    "candidates_file",
    "dataset_name",
    "load",
    "read_candidates",
    "read_dialogs",
    "split_files",
]

SOURCE = "dialog-babi"
"""The dataset of :mod:`.sources` that holds every file (``keras-match data download dialog-babi``)."""

DIRECTORY = "dialog_babi"

TASKS = {
    1: "task1-API-calls",
    2: "task2-API-refine",
    3: "task3-options",
    4: "task4-phone-address",
    5: "task5-full-dialogs",
    6: "task6-dstc2",
}
"""Task number -> the middle part of its file names."""

SPLITS = {"train": "trn", "dev": "dev", "test": "tst", "test-oov": "tst-OOV"}
"""Split name -> file suffix; task 6 has no ``test-oov``."""

VARIANTS = (None,)
TRAIN_SPLITS = ("train",)

USER, BOT, KB = "user", "bot", "kb"
"""The speakers of a dialog's texts (:attr:`Dialog.speakers`): a user utterance, a bot utterance, a KB line."""

SILENCE = "<SILENCE>"
"""The user utterance of a turn where the bot speaks twice in a row."""

TASK_KIND = "response_selection"
"""``dataset.task``: the kind of :class:`keras_match.tasks.ResponseSelectionTask`."""

_LINE = re.compile(r"([0-9]+) (.*)", re.DOTALL)


def dataset_name(task: int) -> str:
    """``"dialog-babi-task<N>"``."""
    return f"dialog-babi-task{_task_number(task)}"


NAMES = tuple(f"dialog-babi-task{task}" for task in TASKS)
"""The dataset names, tasks 1 to 6."""


def _task_number(task) -> int:
    if isinstance(task, bool) or task not in TASKS:
        raise ValueError(f"unknown dialog bAbI task {task!r}; valid: {list(TASKS)}")
    return task


def split_files(task: int) -> dict[str, str]:
    """The dialog files of a task, relative to the data directory.

    Returns:
        ``{"train": ..., "dev": ..., "test": ...}`` and, for tasks 1-5, ``"test-oov"`` (plain names; the data
        folder's ``.gz`` copies are read too).

    Raises:
        ValueError: a task other than 1-6.
    """
    stem = TASKS[_task_number(task)]
    splits = [name for name in SPLITS if not (task == 6 and name == "test-oov")]
    return {name: f"{DIRECTORY}/dialog-babi-{stem}-{SPLITS[name]}.txt" for name in splits}


def candidates_file(task: int) -> str:
    """The candidate file of a task: ``dialog-babi-candidates.txt`` (tasks 1-5) or
    ``dialog-babi-task6-dstc2-candidates.txt`` (task 6), relative to the data directory."""
    if _task_number(task) == 6:
        return f"{DIRECTORY}/dialog-babi-task6-dstc2-candidates.txt"
    return f"{DIRECTORY}/dialog-babi-candidates.txt"


# ---- containers ------------------------------------------------------------------------------------------------


class CandidateSet:
    """The candidate responses of a task, read once per dataset and shared by its splits.

    Args:
        texts: the candidate texts in file order (the ``1 `` prefix of each line cut, nothing else changed).
        source: the file they were read from.

    Attributes:
        texts: ``dtype=object`` array ``[C]`` of ``str``; a candidate's index is its position (0-based: the file's
            line number minus 1).
        source: the file.

    Raises:
        ValueError: a text repeats.
    """

    def __init__(self, texts, source: str = ""):
        self.texts = np.array(list(texts), dtype=object)
        self.source = str(source)
        self._index = {text: i for i, text in enumerate(self.texts.tolist())}
        if len(self._index) != len(self.texts):
            raise ValueError(f"{self.source or 'candidate set'}: the candidate texts repeat")

    def __len__(self) -> int:
        return len(self.texts)

    def __getitem__(self, index) -> str:
        return self.texts[index]

    def __contains__(self, text) -> bool:
        return text in self._index

    def __eq__(self, other) -> bool:
        return isinstance(other, CandidateSet) and self.texts.tolist() == other.texts.tolist()

    __hash__ = None

    def __repr__(self) -> str:
        return f"CandidateSet({len(self)} candidates from {self.source!r})"

    def index(self, text: str) -> int | None:
        """The index of a candidate text (exact match), or None."""
        return self._index.get(text)

    @functools.cached_property
    def sha256(self) -> str:
        """The hex sha256 of the texts joined by newlines: tells candidate sets apart (a run records it)."""
        return hashlib.sha256("\n".join(self.texts.tolist()).encode("utf-8")).hexdigest()


@dataclasses.dataclass(frozen=True)
class Dialog:
    """One dialog of a file: its texts in order.

    Args:
        did: the dialog's id, its 1-based position in the file (a string).
        line: the file line of its first turn.
        texts: every text in order: for each response turn its user utterance then its bot utterance, and each
            KB line where it stands.
        speakers: ``"user"``, ``"bot"`` or ``"kb"`` for each of ``texts``.
    """

    did: str
    line: int
    texts: tuple[str, ...]
    speakers: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class ResponseExample:
    """One bot turn of a dialog: what the model sees and the response it must select.

    Args:
        id: ``"<dialog id>-<turn number>"`` (the turn number is the line's ``ID``).
        dialog: the dialog's id.
        line: the file line of the turn.
        history: every earlier text of the dialog in order (user and bot utterances, KB lines), each one text.
        speakers: ``"user"``, ``"bot"`` or ``"kb"`` for each history text.
        context: the last user utterance (this turn's; ``<SILENCE>`` when the bot speaks twice in a row).
        gold: the index of the gold response in the dataset's :class:`CandidateSet`.
        response: the gold response's text.
    """

    id: str
    dialog: str
    line: int
    history: tuple[str, ...]
    speakers: tuple[str, ...]
    context: str
    gold: int
    response: str


@dataclasses.dataclass(eq=False)
class ResponseSplit:
    """One split of a response-selection dataset: its dialogs, and one example per bot turn as parallel arrays.

    An example's history is a prefix of its dialog's texts, so nothing is stored twice: example ``i`` is the turn
    of dialog ``dialogs[dialog_index[i]]`` whose user utterance is that dialog's text ``history_length[i]`` (its
    history the texts before it, its gold response the text after it, ``candidates[gold[i]]``).

    Args:
        name: the split's name (``"train"``, ``"dev"``, ``"test"``, ``"test-oov"``).
        dialogs: the dialogs in file order.
        candidates: the dataset's candidate set (shared by its splits).
        dialog_index: int32 ``[n]``, each example's dialog (an index into ``dialogs``).
        history_length: int32 ``[n]``, how many of its dialog's texts precede the example's user utterance.
        turn: int32 ``[n]``, the turn number (the line's ``ID``).
        line: int32 ``[n]``, the file line of the turn.
        gold: int32 ``[n]``, the gold response's index into ``candidates``.
        source: the file the split was read from.
        dropped: why examples were dropped and how many (always empty here).
    """

    name: str
    dialogs: list[Dialog]
    candidates: CandidateSet
    dialog_index: np.ndarray
    history_length: np.ndarray
    turn: np.ndarray
    line: np.ndarray
    gold: np.ndarray
    source: str = ""
    dropped: dict[str, int] = dataclasses.field(default_factory=dict)

    def __post_init__(self):
        for field in ("dialog_index", "history_length", "turn", "line", "gold"):
            setattr(self, field, np.asarray(getattr(self, field), dtype=np.int32))
        sizes = {len(getattr(self, f)) for f in ("dialog_index", "history_length", "turn", "line", "gold")}
        if len(sizes) != 1:
            raise ValueError(f"split {self.name!r}: the example arrays differ in length")

    # ---- sizes -----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self.gold)

    num_examples = property(__len__, doc="The number of examples (one per bot turn), `len(split)`.")
    num_pairs = property(__len__, doc="The number of examples, `len(split)` (what a training log counts).")

    @property
    def num_dialogs(self) -> int:
        return len(self.dialogs)

    def counts(self) -> dict:
        """Counts for reports: ``{"dialogs", "examples", "kb_lines", "candidates", "dropped"}``."""
        return {
            "dialogs": self.num_dialogs,
            "examples": self.num_examples,
            "kb_lines": sum(dialog.speakers.count(KB) for dialog in self.dialogs),
            "candidates": len(self.candidates),
            "dropped": dict(self.dropped),
        }

    # ---- examples --------------------------------------------------------------------------------------------

    def __getitem__(self, i: int) -> ResponseExample:
        i = range(len(self))[i]
        dialog = self.dialogs[self.dialog_index[i]]
        h = int(self.history_length[i])
        gold = int(self.gold[i])
        return ResponseExample(f"{dialog.did}-{self.turn[i]}", dialog.did, int(self.line[i]), dialog.texts[:h],
                               dialog.speakers[:h], dialog.texts[h], gold, self.candidates[gold])

    def __iter__(self) -> Iterator[ResponseExample]:
        return (self[i] for i in range(len(self)))

    def contexts(self) -> np.ndarray:
        """The last user utterance of every example, ``dtype=object`` ``[n]``."""
        return np.array([self.dialogs[d].texts[h] for d, h in zip(self.dialog_index, self.history_length)],
                        dtype=object)

    def responses(self) -> np.ndarray:
        """The gold response text of every example, ``dtype=object`` ``[n]``."""
        return self.candidates.texts[self.gold]

    def histories(self, pad: str = "") -> np.ndarray:
        """Every example's history as a text matrix, ``dtype=object`` ``[n, H]`` (``H`` the longest history of
        the split, at least 1), each row padded at the end with ``pad``; row ``i`` holds
        ``history_length[i]`` texts."""
        width = max(1, int(self.history_length.max(initial=0)))
        table = np.full([len(self.dialogs), width], pad, dtype=object)
        for row, dialog in enumerate(self.dialogs):
            texts = dialog.texts[:width]
            table[row, : len(texts)] = texts
        rows = table[self.dialog_index]
        rows[np.arange(width)[None, :] >= self.history_length[:, None]] = pad
        return rows

    def dialog_ids(self) -> np.ndarray:
        """Each example's dialog id, ``dtype=object`` ``[n]`` (what per-dialog accuracy groups by)."""
        ids = np.array([dialog.did for dialog in self.dialogs], dtype=object)
        return ids[self.dialog_index]

    def example_ids(self) -> np.ndarray:
        """Each example's id ``"<dialog id>-<turn number>"``, ``dtype=object`` ``[n]``."""
        dialogs = self.dialog_ids()
        return np.array([f"{d}-{t}" for d, t in zip(dialogs, self.turn)], dtype=object)

    def head(self, num_dialogs: int) -> "ResponseSplit":
        """A split holding only the first ``num_dialogs`` dialogs and their examples (``--max-train-questions``)."""
        keep = self.dialog_index < num_dialogs
        return dataclasses.replace(
            self, dialogs=self.dialogs[:num_dialogs], dialog_index=self.dialog_index[keep],
            history_length=self.history_length[keep], turn=self.turn[keep], line=self.line[keep],
            gold=self.gold[keep], dropped=dict(self.dropped))


@dataclasses.dataclass
class ResponseSelectionDataset(SplitsByName):
    """A response-selection benchmark: its splits and the one candidate set they rank.

    Args:
        name: the dataset's name (``"dialog-babi-task1"``, ...).
        splits: split name -> :class:`ResponseSplit`.
        candidates: the candidate set every split's examples index into.
        variant: ``None``.
        metadata: facts about the load (data directory, files, evaluation convention).
    """

    name: str
    splits: dict[str, ResponseSplit]
    candidates: CandidateSet
    variant: str | None = None
    metadata: dict = dataclasses.field(default_factory=dict)

    task = TASK_KIND
    """What the dataset's labels are for: ``keras_match.tasks.ResponseSelectionTask``."""


# ---- reading ---------------------------------------------------------------------------------------------------


def read_candidates(path) -> CandidateSet:
    """Read a candidate file: one candidate per line, ``1<space>text`` (the ``1 `` is a constant, not an id).

    Args:
        path: the file (plain or ``.gz``).

    Returns:
        The candidate set, texts in file order with the ``1 `` prefix cut (nothing else changed).

    Raises:
        DataFormatError: a line without the ``1 `` prefix or with an empty text (field ``candidate``), a
            candidate that repeats an earlier line, an empty line, or no candidate at all. Names file and line.
    """
    texts, first_line = [], {}
    previous = 0
    for number, text in iter_lines(path):
        if number != previous + 1:
            raise DataFormatError(path, previous + 1, "empty line; a candidate file has one candidate per line")
        previous = number
        if not text.startswith("1 "):
            raise DataFormatError(path, number, f"expected `1 candidate text`, got {_clip(text)}", field="candidate")
        candidate = text[2:]
        if not candidate.strip():
            raise DataFormatError(path, number, "empty candidate text", field="candidate")
        if candidate in first_line:
            raise DataFormatError(path, number, f"candidate {_clip(candidate)} repeats line {first_line[candidate]}",
                                  field="candidate")
        first_line[candidate] = number
        texts.append(candidate)
    if not texts:
        raise DataFormatError(path, None, "no candidate")
    return CandidateSet(texts, source=str(path))


def read_dialogs(name: str, path, candidates: CandidateSet) -> ResponseSplit:
    """Read a dialog file into a split: one example per response turn (see the module docstring).

    Args:
        name: the split's name.
        path: the file (plain or ``.gz``).
        candidates: the task's candidate set; every bot utterance must be one of them.

    Returns:
        The split, ``source`` the file's path, nothing dropped.

    Raises:
        DataFormatError: naming the file, the line and the field:
            ``turn``: a line that does not start with ``ID<space>`` (a number >= 1 and one space), or whose ``ID``
            is neither the previous one plus 1 nor 1 (which starts a new dialog), or a dialog after an empty line
            that does not start at 1;
            ``bot_utterance``: more than one tab, an empty bot utterance, a bot utterance that is not a candidate
            (an empty user utterance is kept as stored);
            ``kb_line``: an empty KB line;
            and a dialog without a response turn, or a file without any dialog.
    """
    dialogs: list[Dialog] = []
    dialog_index, history_length, turns, lines, gold = [], [], [], [], []
    texts: list[str] = []
    speakers: list[str] = []
    start = previous_turn = previous_line = 0
    responses = 0

    def close():
        if texts:
            if not responses:
                raise DataFormatError(path, start, f"dialog {len(dialogs) + 1} (lines {start}-{previous_line}) has "
                                      "no response turn (no line with a tab)", field="bot_utterance")
            dialogs.append(Dialog(str(len(dialogs) + 1), start, tuple(texts), tuple(speakers)))

    for number, raw in iter_lines(path):
        match = _LINE.fullmatch(raw)
        if match is None:
            raise DataFormatError(path, number, "expected `ID user utterance<TAB>bot utterance` or a KB line `ID "
                                  f"text` (ID a turn number, then one space), got {_clip(raw)}", field="turn")
        turn, rest = int(match.group(1)), match.group(2)
        after_empty_line = previous_line and number > previous_line + 1
        if turn == 1:
            close()
            texts, speakers, start, responses = [], [], number, 0
        elif not previous_line or after_empty_line:
            where = "the first dialog" if not previous_line else f"a dialog after the empty line {number - 1}"
            raise DataFormatError(path, number, f"{where} starts at turn {turn}; a dialog starts at turn 1",
                                  field="turn")
        elif turn != previous_turn + 1:
            raise DataFormatError(path, number, f"turn number {turn} after {previous_turn}: expected "
                                  f"{previous_turn + 1}, or 1 to start a new dialog", field="turn")
        previous_turn, previous_line = turn, number
        if "\t" not in rest:
            if not rest.strip():
                raise DataFormatError(path, number, "empty KB line", field="kb_line")
            texts.append(rest)
            speakers.append(KB)
            continue
        parts = rest.split("\t")
        if len(parts) != 2:
            raise DataFormatError(path, number, f"expected one tab between the user and the bot utterance, found "
                                  f"{len(parts) - 1}", field="bot_utterance")
        user, bot = parts  # an empty user utterance is kept: task 6's train file has 6 (empty ASR transcripts)
        if not bot.strip():
            raise DataFormatError(path, number, "empty bot utterance", field="bot_utterance")
        index = candidates.index(bot)
        if index is None:
            raise DataFormatError(path, number, f"the bot utterance {_clip(bot)} is not among the {len(candidates):,} "
                                  f"candidates of {candidates.source}", field="bot_utterance")
        dialog_index.append(len(dialogs))
        history_length.append(len(texts))
        turns.append(turn)
        lines.append(number)
        gold.append(index)
        texts.extend((user, bot))
        speakers.extend((USER, BOT))
        responses += 1
    close()
    if not dialogs:
        raise DataFormatError(path, None, "no dialog")
    return ResponseSplit(name, dialogs, candidates, dialog_index, history_length, turns, lines, gold,
                         source=str(path))


def _clip(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "...")


# ---- loading ---------------------------------------------------------------------------------------------------


def load(task: int, variant=None, data_dir=None, *, train_split=None, download=None) -> ResponseSelectionDataset:
    """Load dialog bAbI task ``task`` (``keras_match.datasets.load("dialog-babi-task<N>")`` calls this).

    Args:
        task: 1 to 6.
        variant: ``None`` (the only choice).
        train_split: ``None`` or ``"train"`` (the only one).
        data_dir, download: as in :func:`keras_match.datasets.load`, for the files of ``dialog_babi/``.

    Returns:
        The dataset: splits ``"train"``, ``"dev"``, ``"test"`` and, for tasks 1-5, ``"test-oov"``;
        ``candidates`` the task's :class:`CandidateSet`; ``metadata`` holds ``data_dir``, ``task``, ``files``
        (split and ``"candidates"`` -> path) and ``evaluation``.

    Raises:
        ValueError: a task other than 1-6, a variant or training split other than the ones above.
        keras_match.datasets.MissingDataError: a file is missing (names the command that fetches it).
        keras_match.datasets.DataFormatError: a file is malformed (names the file, the line and the field).
        keras_match.datasets.ChecksumError: a file parses but is not the pinned one (sha256).
        keras_match.datasets.DownloadError: fetching failed.
    """
    task = _task_number(task)
    name = dataset_name(task)
    choose_options(name, variant, VARIANTS, train_split, TRAIN_SPLITS)
    files = split_files(task)
    candidate_file = candidates_file(task)
    relative = [candidate_file, *files.values()]
    root = locate(SOURCE, relative, data_dir, download)
    candidates = read_candidates(data_path(root, candidate_file))
    splits = {split: read_dialogs(split, data_path(root, path), candidates) for split, path in files.items()}
    check_intact(SOURCE, root, relative)
    evaluation = (f"per-response accuracy (top-1 among all {len(candidates):,} candidates, ties to the lowest "
                  "candidate index) and per-dialog accuracy (every response of a dialog right); dev per-response "
                  "accuracy chooses the model" + ("; test-oov: entities unseen in training" if task != 6 else ""))
    return ResponseSelectionDataset(
        name, splits, candidates,
        metadata={"data_dir": str(root), "task": task,
                  "files": file_paths(root, {**files, "candidates": candidate_file}), "evaluation": evaluation})


LOADERS = {dataset_name(task): functools.partial(load, task) for task in TASKS}
"""Dataset name -> loader ``(variant, data_dir, *, train_split, download)``, for ``keras_match.datasets.load``."""
