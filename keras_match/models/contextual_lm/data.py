"""Dialog bAbI task 6 as a contextual language-modelling corpus: every utterance a sentence, its previous utterance
its context, its speaker its per-sentence label.

The paper's corpora (Switchboard Dialog Act, Penn Discourse Treebank) cannot be obtained here; task 6 (DSTC2
restaurant dialogs, real users and a bot) is dialog with a per-utterance label that can: the speaker, user or bot,
stands in for the dialog act of eq. 12.

Sentences (:func:`dialog_sentences`): the user and the bot utterance of every response turn of a dialog, in order
(the dialogs are read by :func:`keras_match.datasets.dialog_babi.read_dialogs`, whose errors name the file, the
line and the field). Left out by default **[I]**: KB lines (API results, not utterances: ``keep_kb``), ``<SILENCE>``
(the user said nothing: ``keep_silence``) and empty texts (6 empty ASR transcripts in train). A sentence's previous
sentence is the one before it in its dialog among the kept ones; the first sentence of a dialog has none (an empty
previous sentence, label ``-1``). Counts with the defaults (dialogs / sentences / target tokens, ``</s>`` included;
no sentence is longer than 30 tokens): train 1,618 / 24,920 / 214,596, dev 500 / 7,024 / 61,527, test 1,117 /
19,888 / 176,588; with ``min_count=2`` the vocabulary is 676 words (678 ids) and 125 dev / 328 test tokens are
``[UNK]``.

Ids (:func:`build_encoder`): the project's tokenizer and ids (:class:`keras_match.text.TextEncoder`: lower-cased
GloVe-style tokens, ``0`` padding, ``1`` ``[UNK]`` for every word not in the vocabulary), the vocabulary the
training sentences' words seen at least ``min_count`` times, after two markers ``<s>`` (id 2, :data:`BOS`) and
``</s>`` (id 3, :data:`EOS`) that the tokenizer can never produce from text (it splits ``<``, ``s``, ``>``).
Each sentence keeps its first ``max_length`` tokens; the LM input is ``<s> w_1 .. w_M`` and its target
``w_1 .. w_M </s>`` (``max_length + 1`` positions), the previous sentence is ``w_1 .. w_M`` (``max_length``).
"""

from __future__ import annotations

import collections
import dataclasses
from typing import Iterator

import numpy as np

from keras_match.datasets import dialog_babi
from keras_match.text import OOV_ID, PAD_ID, TextEncoder, tokenize

__all__ = ["BOS", "EOS", "BOS_TOKEN", "EOS_TOKEN", "LABELS", "Sentence", "SentenceSplit", "ContextualLMData",
           "dialog_sentences", "read_split", "build_encoder", "encode_split", "prepare"]

BOS_TOKEN, EOS_TOKEN = "<s>", "</s>"
BOS, EOS = 2, 3
"""The ids of ``<s>`` and ``</s>`` (the first two vocabulary words; ids 0 and 1 are padding and ``[UNK]``)."""

LABELS = (dialog_babi.USER, dialog_babi.BOT)
"""The per-sentence labels: ``0`` user, ``1`` bot (``2`` KB with ``keep_kb``)."""
_LABEL_IDS = {dialog_babi.USER: 0, dialog_babi.BOT: 1, dialog_babi.KB: 2}

TASK = 6


@dataclasses.dataclass(frozen=True)
class Sentence:
    """One sentence of a dialog.

    Args:
        dialog: the dialog's index in its split (0-based).
        text: the utterance as stored.
        speaker: ``"user"``, ``"bot"`` (or ``"kb"``).
        previous: the previous kept sentence's text, ``""`` for the first of a dialog.
        previous_speaker: its speaker, ``None`` for the first of a dialog.
    """

    dialog: int
    text: str
    speaker: str
    previous: str
    previous_speaker: str | None


def dialog_sentences(dialogs, keep_silence: bool = False, keep_kb: bool = False) -> list[Sentence]:
    """The sentences of dialogs (:class:`keras_match.datasets.dialog_babi.Dialog`) in order, each with its previous
    sentence (see the module docstring for what is kept)."""
    out = []
    for index, dialog in enumerate(dialogs):
        previous, previous_speaker = "", None
        for text, speaker in zip(dialog.texts, dialog.speakers):
            if speaker == dialog_babi.KB and not keep_kb:
                continue
            if not text.strip() or (text == dialog_babi.SILENCE and not keep_silence):
                continue
            out.append(Sentence(index, text, speaker, previous, previous_speaker))
            previous, previous_speaker = text, speaker
    return out


def read_split(name: str, path, candidates: dialog_babi.CandidateSet, keep_silence: bool = False,
               keep_kb: bool = False) -> list[Sentence]:
    """The sentences of a dialog file.

    Args:
        name: the split's name.
        path: a dialog bAbI dialog file (plain or ``.gz``).
        candidates: its task's candidate set (the reader checks every bot utterance is one).
        keep_silence, keep_kb: see :func:`dialog_sentences`.

    Raises:
        keras_match.datasets.DataFormatError: a malformed line; the message names the file, the line and the field.
    """
    split = dialog_babi.read_dialogs(name, path, candidates)
    return dialog_sentences(split.dialogs, keep_silence=keep_silence, keep_kb=keep_kb)


def build_encoder(texts, min_count: int = 2) -> TextEncoder:
    """A :class:`TextEncoder` of ``<s>``, ``</s>`` and the words of ``texts`` seen at least ``min_count`` times
    (by count, then alphabetically: :meth:`TextEncoder.build`'s order)."""
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 1:
        raise ValueError(f"min_count must be an integer >= 1, got {min_count!r}")
    # TextEncoder.build's rule (count descending, then token), each distinct text tokenized once.
    repeats = collections.Counter(texts)
    distinct = list(repeats)
    counts = collections.Counter()
    for start in range(0, len(distinct), 4096):
        batch = distinct[start:start + 4096]
        for text, row in zip(batch, tokenize(batch).to_list()):
            for token in row:
                counts[token.decode("utf-8")] += repeats[text]
    ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    words = [word for word, count in ranked if count >= min_count]
    if not words:
        raise ValueError(f"no token occurs at least min_count={min_count} times in the texts")
    encoder = TextEncoder([BOS_TOKEN, EOS_TOKEN, *words])
    encoder.token_counts = counts
    encoder.num_training_words = len(words)
    return encoder


@dataclasses.dataclass(eq=False)
class SentenceSplit:
    """One split as id matrices, one row per sentence.

    Attributes:
        name: the split's name.
        previous: int32 ``[n, max_length]``, the previous sentence's ids (all 0: none).
        tokens: int32 ``[n, max_length + 1]``, the LM inputs ``<s> w_1 .. w_M`` (0-padded).
        targets: int32 ``[n, max_length + 1]``, the LM targets ``w_1 .. w_M </s>`` (0-padded).
        label: int32 ``[n]``, the previous sentence's speaker (eq. 12's ``L_{t-1}``; ``-1``: none).
        speaker: int32 ``[n]``, the sentence's own speaker.
        dialog: int32 ``[n]``, the dialog's index.
        truncated: how many sentences had more than ``max_length`` tokens.
        source: the file read.
    """

    name: str
    previous: np.ndarray
    tokens: np.ndarray
    targets: np.ndarray
    label: np.ndarray
    speaker: np.ndarray
    dialog: np.ndarray
    truncated: int = 0
    source: str = ""

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def lengths(self) -> np.ndarray:
        """Real target tokens per sentence (words + ``</s>``)."""
        return (self.targets != PAD_ID).sum(axis=1)

    def counts(self) -> dict:
        """``{"sentences", "dialogs", "tokens", "unk", "truncated"}`` (``tokens``: real targets, ``</s>`` included;
        ``unk``: of them ``[UNK]``)."""
        return {"sentences": len(self), "dialogs": int(len(np.unique(self.dialog))),
                "tokens": int(self.lengths.sum()), "unk": int((self.targets == OOV_ID).sum()),
                "truncated": int(self.truncated)}

    def batches(self, batch_size: int = 64, shuffle: bool = False, seed: int = 0) -> Iterator[tuple[dict, dict]]:
        """``(x, y)`` batches cut to their longest sentence: ``x = {"previous", "tokens"}``, ``y = {"next_word",
        "label"}`` (int32).

        Without ``shuffle``: in order. With it: sentences of similar length together (sorted by length, ties
        broken at random), the batches in random order; ``seed`` fixes both.
        """
        n = len(self)
        if shuffle:
            rng = np.random.default_rng(seed)
            order = np.lexsort((rng.random(n), self.lengths))
            chunks = [order[i:i + batch_size] for i in range(0, n, batch_size)]
            chunks = [chunks[i] for i in rng.permutation(len(chunks))]
        else:
            chunks = [np.arange(i, min(i + batch_size, n)) for i in range(0, n, batch_size)]
        previous_lengths = (self.previous != PAD_ID).sum(axis=1)
        lengths = self.lengths
        for rows in chunks:
            width = max(1, int(lengths[rows].max()))
            previous_width = max(1, int(previous_lengths[rows].max()))
            x = {"previous": self.previous[rows, :previous_width], "tokens": self.tokens[rows, :width]}
            y = {"next_word": self.targets[rows, :width], "label": self.label[rows]}
            yield x, y


def encode_split(name: str, sentences: list[Sentence], encoder: TextEncoder, max_length: int = 30,
                 source: str = "") -> SentenceSplit:
    """Sentences -> :class:`SentenceSplit` (see the module docstring for the ids)."""
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise ValueError(f"max_length must be an integer >= 1, got {max_length!r}")
    n = len(sentences)
    if n == 0:
        raise ValueError(f"split {name!r} has no sentence")
    # Each distinct text is tokenized once (bot utterances repeat a lot; a previous sentence is a sentence too).
    index = {}
    for s in sentences:
        index.setdefault(s.text, len(index))
        index.setdefault(s.previous, len(index))
    table = encoder.encode(list(index), max_length + 1).numpy().astype(np.int32)  # one more: see what is cut
    full = table[[index[s.text] for s in sentences]]
    truncated = int((full[:, max_length] != PAD_ID).sum())
    words = full[:, :max_length]
    length = (words != PAD_ID).sum(axis=1)
    tokens = np.zeros((n, max_length + 1), np.int32)
    tokens[:, 0] = BOS
    tokens[:, 1:] = words
    targets = np.zeros((n, max_length + 1), np.int32)
    targets[:, :max_length] = words
    targets[np.arange(n), length] = EOS
    previous = table[[index[s.previous] for s in sentences], :max_length]
    label = np.array([-1 if s.previous_speaker is None else _LABEL_IDS[s.previous_speaker] for s in sentences],
                     np.int32)
    speaker = np.array([_LABEL_IDS[s.speaker] for s in sentences], np.int32)
    dialog = np.array([s.dialog for s in sentences], np.int32)
    return SentenceSplit(name, previous, tokens, targets, label, speaker, dialog, truncated, source)


@dataclasses.dataclass(eq=False)
class ContextualLMData:
    """The prepared corpus: ``splits`` (``"train"``, ``"dev"``, ``"test"`` -> :class:`SentenceSplit`), the
    ``encoder`` and ``metadata`` (files, settings, counts)."""

    splits: dict
    encoder: TextEncoder
    metadata: dict

    def __getitem__(self, name) -> SentenceSplit:
        return self.splits[name]

    @property
    def vocabulary_size(self) -> int:
        return self.encoder.vocab_size

    @property
    def num_labels(self) -> int:
        return 3 if self.metadata.get("keep_kb") else 2


def prepare(data_dir=None, *, min_count: int = 2, max_length: int = 30, max_train_dialogs: int | None = None,
            keep_silence: bool = False, keep_kb: bool = False, download=None) -> ContextualLMData:
    """Dialog bAbI task 6 as a contextual LM corpus (train / dev / test).

    Args:
        data_dir: the data directory (None: ``$KERAS_MATCH_DATA``, then the user cache; see
            :func:`keras_match.datasets.dialog_babi.load`, which checks every file's sha256).
        min_count: a training word seen fewer times is ``[UNK]``.
        max_length: tokens kept per sentence.
        max_train_dialogs: keep the first N training dialogs (the vocabulary is built from them), None: all.
        keep_silence, keep_kb: see :func:`dialog_sentences`.
        download: passed to the loader.

    Returns:
        A :class:`ContextualLMData`.

    Raises:
        keras_match.datasets.DataFormatError: a malformed line (file, line, field);
        keras_match.datasets.MissingDataError / ChecksumError: see the loader.
        ValueError: bad ``min_count`` / ``max_length`` / ``max_train_dialogs``.
    """
    if max_train_dialogs is not None and (isinstance(max_train_dialogs, bool) or int(max_train_dialogs) < 1):
        raise ValueError(f"max_train_dialogs must be None or an integer >= 1, got {max_train_dialogs!r}")
    dataset = dialog_babi.load(TASK, data_dir=data_dir, download=download)
    sentences = {}
    for name in ("train", "dev", "test"):
        dialogs = dataset[name].dialogs
        if name == "train" and max_train_dialogs is not None:
            dialogs = dialogs[: int(max_train_dialogs)]
        sentences[name] = dialog_sentences(dialogs, keep_silence=keep_silence, keep_kb=keep_kb)
    encoder = build_encoder([s.text for s in sentences["train"]], min_count=min_count)
    files = dataset.metadata.get("files", {})
    splits = {name: encode_split(name, items, encoder, max_length, source=str(files.get(name, "")))
              for name, items in sentences.items()}
    metadata = {"dataset": dialog_babi.dataset_name(TASK), "data_dir": dataset.metadata.get("data_dir"),
                "files": {k: str(v) for k, v in files.items()}, "min_count": min_count, "max_length": max_length,
                "max_train_dialogs": max_train_dialogs, "keep_silence": keep_silence, "keep_kb": keep_kb,
                "vocabulary_size": encoder.vocab_size, "labels": list(LABELS) + (["kb"] if keep_kb else []),
                "counts": {name: split.counts() for name, split in splits.items()}}
    return ContextualLMData(splits, encoder, metadata)
