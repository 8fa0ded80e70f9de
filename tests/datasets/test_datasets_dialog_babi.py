"""The dialog bAbI loader (keras_match.datasets.dialog_babi) on the real files of the data folder: counts and
examples checked against a reading of the raw lines written here independently, the KB lines in the history,
task 6's leading-space quirk, the OOV split, `head` (`--max-train-questions`), and malformed files (small
temporary ones, and malformed or changed copies of the real files) whose errors name file, line and field."""

import gzip
import re
import shutil

import numpy as np
import pytest

from keras_match import datasets
from keras_match.datasets import ChecksumError, DataFormatError, MissingDataError, dialog_babi
from keras_match.datasets.catalog import known_names, load_by_name

SPLIT_SUFFIX = {"train": "trn", "dev": "dev", "test": "tst", "test-oov": "tst-OOV"}
STEMS = {1: "task1-API-calls", 2: "task2-API-refine", 3: "task3-options", 4: "task4-phone-address",
         5: "task5-full-dialogs", 6: "task6-dstc2"}


@pytest.fixture(scope="module")
def task1(data_dir):
    return datasets.load("dialog-babi-task1", data_dir=data_dir)


@pytest.fixture(scope="module")
def task6(data_dir):
    return datasets.load("dialog-babi-task6", data_dir=data_dir)


# ---- an independent reading of the raw files ------------------------------------------------------------------


def raw_lines(path):
    with gzip.open(path, "rt", encoding="utf-8", newline="\n") as f:
        return f.read().split("\n")


def raw_file(data_dir, task, split):
    return data_dir / "dialog_babi" / f"dialog-babi-{STEMS[task]}-{SPLIT_SUFFIX[split]}.txt.gz"


def raw_candidates(data_dir, task):
    name = "dialog-babi-task6-dstc2-candidates.txt.gz" if task == 6 else "dialog-babi-candidates.txt.gz"
    return [line[2:] for line in raw_lines(data_dir / "dialog_babi" / name) if line]


def raw_dialogs(path):
    """[(dialog lines as (number, rest))], split at the empty lines (the file's other dialog boundary)."""
    dialogs, current = [], []
    for number, line in enumerate(raw_lines(path), 1):
        if not line:
            if current:
                dialogs.append(current)
            current = []
            continue
        current.append((number, line.split(" ", 1)[1]))
    if current:
        dialogs.append(current)
    return dialogs


def raw_examples(path):
    """(history, context, response, line) of every line with a tab, the history rebuilt line by line."""
    examples = []
    for dialog in raw_dialogs(path):
        history = []
        for number, rest in dialog:
            if "\t" in rest:
                user, bot = rest.split("\t")
                examples.append((tuple(history), user, bot, number))
                history += [user, bot]
            else:
                history.append(rest)
    return examples


# ---- names, splits, counts -------------------------------------------------------------------------------------


def test_names_and_splits(task1, task6, data_dir):
    assert dialog_babi.NAMES == tuple(f"dialog-babi-task{t}" for t in range(1, 7))
    assert set(dialog_babi.NAMES) <= set(datasets.names()) and set(dialog_babi.NAMES) <= set(known_names())
    assert list(task1.splits) == ["train", "dev", "test", "test-oov"]
    assert list(task6.splits) == ["train", "dev", "test"]  # task 6 has no OOV test set
    for ds in (task1, task6):
        assert isinstance(ds, dialog_babi.ResponseSelectionDataset) and ds.task == "response_selection"
        assert all(split.candidates is ds.candidates for split in ds.splits.values())  # stored once
    assert task1.candidates.texts.tolist() == raw_candidates(data_dir, 1) and len(task1.candidates) == 4212
    assert task6.candidates.texts.tolist() == raw_candidates(data_dir, 6) and len(task6.candidates) == 2407
    assert task1["test-oov"].source == str(raw_file(data_dir, 1, "test-oov"))
    assert task6.metadata["files"]["candidates"].endswith("dialog-babi-task6-dstc2-candidates.txt.gz")
    assert load_by_name("dialog-babi-task1", data_dir=data_dir).counts() == task1.counts()


@pytest.mark.parametrize("task", [1, 6])
def test_counts_match_the_raw_lines(task, task1, task6, data_dir):
    ds = task1 if task == 1 else task6
    for name, split in ds.splits.items():
        lines = [line for line in raw_lines(raw_file(data_dir, task, name)) if line]
        ids = [int(line.split(" ", 1)[0]) for line in lines]
        expected = {"dialogs": ids.count(1), "examples": sum("\t" in line for line in lines),
                    "kb_lines": sum("\t" not in line for line in lines), "candidates": len(ds.candidates),
                    "dropped": {}}
        assert split.counts() == expected, name
        assert split.num_dialogs == len(raw_dialogs(raw_file(data_dir, task, name)))  # empty-line boundaries agree
        assert split.num_pairs == len(split) == split.num_examples
    # anchored: dialog_babi/SOURCE.md's measured counts
    if task == 1:
        assert [s.num_examples for s in ds.splits.values()] == [6024, 6015, 5936, 6020]
    else:
        assert [(s.num_dialogs, s.num_examples) for s in ds.splits.values()] == [(1618, 14404), (500, 4159),
                                                                                 (1117, 11237)]


@pytest.mark.parametrize("task", [2, 3, 4, 5])
def test_counts_of_tasks_2_to_5_match_the_raw_lines(task, data_dir):
    ds = datasets.load(f"dialog-babi-task{task}", data_dir=data_dir)
    assert list(ds.splits) == ["train", "dev", "test", "test-oov"] and len(ds.candidates) == 4212
    for name, split in ds.splits.items():
        lines = [line for line in raw_lines(raw_file(data_dir, task, name)) if line]
        assert (split.num_dialogs, split.num_examples, split.counts()["kb_lines"]) == (
            sum(line.startswith("1 ") for line in lines), sum("\t" in line for line in lines),
            sum("\t" not in line for line in lines)), name
    if task in (3, 5):  # the KB facts of an API call's results come before the bot turns that use them
        example = next(e for e in ds["dev"] if "kb" in e.speakers)
        assert example.history[example.speakers.index("kb")].split()[1].startswith("R_")


@pytest.mark.parametrize("task, split", [(1, "dev"), (1, "test-oov"), (6, "dev"), (6, "test")])
def test_every_example_is_the_raw_turn_with_its_history(task, split, task1, task6, data_dir):
    ds = task1 if task == 1 else task6
    loaded = ds[split]
    expected = raw_examples(raw_file(data_dir, task, split))
    assert len(loaded) == len(expected)
    candidates = raw_candidates(data_dir, task)
    for example, (history, context, response, line) in zip(loaded, expected):
        assert (example.history, example.context, example.response, example.line) == (history, context, response,
                                                                                        line)
        assert candidates[example.gold] == response  # every gold is a candidate, at its file position
        assert len(example.speakers) == len(history)
    assert loaded.contexts().tolist() == [e[1] for e in expected]
    assert loaded.responses().tolist() == [e[2] for e in expected]


def test_the_first_examples(task1, task6):
    first, second = task1["train"][0], task1["train"][1]
    assert (first.id, first.history, first.context, first.response) == (
        "1-1", (), "hi", "hello what can i help you with today")
    assert second.history == ("hi", "hello what can i help you with today") and second.speakers == ("user", "bot")
    assert (second.context, second.response) == ("can you book a table", "i'm on it")
    assert task1["train"][7].response == "api_call italian paris two cheap"
    assert task1["train"][-1].id == f"1000-{task1['train'].turn[-1]}"
    opening = task6["train"][0]
    assert opening.context == "<SILENCE>" and opening.response.startswith("Hello , welcome to the Cambridge")


def test_kb_lines_are_kept_in_the_history(task6, data_dir):
    # task 6 train, dialog 1: the api_call at turn 2, then 14 KB facts (lines 3-16), then the bot speaks at turn 17
    example = task6["train"][2]
    assert example.line == 17 and example.context == "<SILENCE>"
    assert example.history[3] == "api_call R_cuisine west moderate"
    kb = [text for text, speaker in zip(example.history, example.speakers) if speaker == "kb"]
    assert kb == [line.split(" ", 1)[1] for line in raw_lines(raw_file(data_dir, 6, "train"))[2:16]]
    assert kb[0] == "saint_johns_chop_house R_post_code saint_johns_chop_house_post_code"
    assert example.speakers == ("user", "bot", "user", "bot") + ("kb",) * 14
    # an API result without results is a KB line too
    second_dialog = [e for e in task6["train"] if e.dialog == "2"]
    assert "api_call no result" in second_dialog[-1].history
    assert second_dialog[-1].speakers[second_dialog[-1].history.index("api_call no result")] == "kb"
    # histories() is the same texts as a padded matrix
    split = task6["dev"]
    matrix = split.histories()
    assert matrix.shape == (len(split), int(split.history_length.max()))
    for i in (0, 5, len(split) - 1):
        h = int(split.history_length[i])
        assert tuple(matrix[i, :h]) == split[i].history and set(matrix[i, h:]) <= {""}


def test_task6_last_turn_keeps_its_leading_space(task6, data_dir):
    assert " you are welcome" in task6.candidates and "you are welcome" not in task6.candidates
    for name, split in task6.splits.items():
        last = np.r_[np.flatnonzero(np.diff(split.dialog_index)), len(split) - 1]  # the last example of each dialog
        assert len(last) == split.num_dialogs
        assert set(split.responses()[last]) == {" you are welcome"}, name
        raw = sum(line.endswith("\t you are welcome") for line in raw_lines(raw_file(data_dir, 6, name)))
        assert raw == split.num_dialogs == {"train": 1618, "dev": 500, "test": 1117}[name]
    # the 6 empty user utterances of the train file (empty ASR transcripts) are kept as stored
    empty = [e for e in task6["train"] if e.context == ""]
    assert len(empty) == sum(bool(re.fullmatch(r"[0-9]+ \t.*", line)) for line in raw_lines(raw_file(data_dir, 6,
                                                                                                            "train")))
    assert len(empty) == 6 and empty[0].line == 56475


def test_every_gold_is_a_candidate(task1, task6, data_dir):
    for task, ds in ((1, task1), (6, task6)):
        candidates = set(raw_candidates(data_dir, task))
        for name, split in ds.splits.items():
            bots = {line.split("\t")[1] for line in raw_lines(raw_file(data_dir, task, name)) if "\t" in line}
            assert bots <= candidates
            assert set(split.responses()) == bots
            assert split.gold.min() >= 0 and split.gold.max() < len(ds.candidates)


def test_head_keeps_the_first_training_dialogs(task1, task6, data_dir):
    for task, ds in ((1, task1), (6, task6)):
        train = ds["train"]
        small = train.head(10)
        dialogs = raw_dialogs(raw_file(data_dir, task, "train"))[:10]
        assert small.num_dialogs == 10 and [d.did for d in small.dialogs] == [str(i) for i in range(1, 11)]
        assert small.num_examples == sum("\t" in rest for dialog in dialogs for _, rest in dialog)
        assert [e.id for e in small] == [e.id for e in train][: small.num_examples]
        assert small.candidates is train.candidates
        assert train.num_dialogs == {1: 1000, 6: 1618}[task]  # the loaded split is unchanged
    assert task1["train"].head(5000).num_dialogs == 1000  # more than there are: all


def test_the_oov_split_holds_entities_unseen_in_training(task1):
    def words(split):
        return {w for texts in (split.contexts(), split.responses()) for text in texts for w in text.split()}

    seen = words(task1["train"]) | words(task1["dev"])
    assert words(task1["test"]) <= seen  # the ordinary test set: no new word
    unseen = words(task1["test-oov"]) - seen
    calls = {text for text in task1["test-oov"].responses() if text.startswith("api_call")}
    # the OOV entities: 4 cuisines, 6 cities; each of the 160 distinct api_calls of test-oov names one of them
    assert unseen == {"bangkok", "beijing", "cantonese", "hanoi", "japanese", "korean", "seoul", "thai", "tokyo",
                      "vietnamese"}
    assert len(calls) == 160 and all(set(call.split()) & unseen for call in calls)
    assert task1["test-oov"].source.endswith("dialog-babi-task1-API-calls-tst-OOV.txt.gz")
    assert task1["test-oov"].counts() == {"dialogs": 1000, "examples": 6020, "kb_lines": 0, "candidates": 4212,
                                          "dropped": {}}


def test_first_use_fetches_the_files_into_the_user_cache(data_dir, tmp_path, monkeypatch):
    """No data folder: the loader fetches dialog-babi's originals (a local server stands in for GitHub) into the
    user cache, checks them against their sha256, and reads the plain files it wrote."""
    from conftest import benchmark_module

    monkeypatch.delenv("KERAS_MATCH_DATA", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path / "cache"))
    with benchmark_module("github_mirror").serve(data_dir, ["dialog-babi"]) as (url, handler):
        monkeypatch.setenv("KERAS_MATCH_GITHUB_URL", url)
        ds = datasets.load("dialog-babi-task4")
    cache = tmp_path / "cache" / "data"
    assert len(handler.requests) == 29 and ds.metadata["data_dir"] == str(cache)
    assert ds["test-oov"].source == str(cache / "dialog_babi" / "dialog-babi-task4-phone-address-tst-OOV.txt")
    assert [s.num_examples for s in ds.splits.values()] == [3507, 3529, 3498, 3510]


# ---- malformed files -------------------------------------------------------------------------------------------


@pytest.fixture
def small(tmp_path):
    """Writes a small candidate file and returns (candidates, write(text) -> dialog file path)."""
    path = tmp_path / "candidates.txt"
    path.write_text("1 hello what can i help you with today\n1 i'm on it\n1  you are welcome\n")
    candidates = dialog_babi.read_candidates(path)

    def write(text, name="dialogs.txt"):
        dialog = tmp_path / name
        dialog.write_text(text)
        return dialog

    return candidates, write


def error_of(path, candidates):
    with pytest.raises(DataFormatError) as info:
        dialog_babi.read_dialogs("dev", path, candidates)
    return info.value


def test_a_small_file_reads(small):
    candidates, write = small
    assert candidates.texts.tolist() == ["hello what can i help you with today", "i'm on it", " you are welcome"]
    path = write("1 hi\thello what can i help you with today\n2 resto R_phone p\n3 book\ti'm on it\n\n"
                 "1 <SILENCE>\thello what can i help you with today\n2 \t you are welcome\n")
    split = dialog_babi.read_dialogs("dev", path, candidates)
    assert split.counts() == {"dialogs": 2, "examples": 4, "kb_lines": 1, "candidates": 3, "dropped": {}}
    assert split[1].history == ("hi", "hello what can i help you with today", "resto R_phone p")
    assert split[1].speakers == ("user", "bot", "kb") and split[1].line == 3
    assert split[3].context == "" and split[3].gold == 2 and split.example_ids().tolist() == ["1-1", "1-3", "2-1",
                                                                                            "2-2"]


@pytest.mark.parametrize("text, line, field, message", [
    ("hi\thello what can i help you with today\n", 1, "turn", "expected `ID user utterance<TAB>bot utterance`"),
    ("1 hi\ti'm on it\nx2 book\ti'm on it\n", 2, "turn", "expected `ID"),
    ("1 hi\ti'm on it\t extra\n", 1, "bot_utterance", "expected one tab"),
    ("1 hi\ti'm on it\n2 book\tsee you\n", 2, "bot_utterance", "'see you' is not among the 3 candidates of"),
    ("1 hi\ti'm on it\n2 book\t\n", 2, "bot_utterance", "empty bot utterance"),
    ("1 hi\ti'm on it\n3 book\ti'm on it\n", 2, "turn", "turn number 3 after 1: expected 2, or 1 to start"),
    ("1 hi\ti'm on it\n2 a\ti'm on it\n2 b\ti'm on it\n", 3, "turn", "turn number 2 after 2"),
    ("1 hi\ti'm on it\n\n2 book\ti'm on it\n", 3, "turn", "a dialog after the empty line 2 starts at turn 2"),
    ("2 hi\ti'm on it\n", 1, "turn", "the first dialog starts at turn 2"),
    ("1 hi\ti'm on it\n\n1 resto R_phone p\n2 resto R_cuisine thai\n", 3, "bot_utterance", "has no response turn"),
    ("1 hi\ti'm on it\n2  \n", 2, "kb_line", "empty KB line"),
])
def test_malformed_dialog_lines_name_file_line_and_field(small, text, line, field, message):
    candidates, write = small
    path = write(text)
    error = error_of(path, candidates)
    assert (error.path, error.line, error.field) == (str(path), line, field)
    assert str(error).startswith(f"{path}, line {line}, field {field!r}: ") and message in str(error)
    if "candidates of" in message:
        assert str(error).endswith(f"candidates of {candidates.source}")


def test_an_empty_dialog_file_is_refused(small):
    candidates, write = small
    error = error_of(write("\n\n"), candidates)
    assert error.line is None and "no dialog" in str(error)


@pytest.mark.parametrize("text, line, message", [
    ("1 a\n2 b\n", 2, "expected `1 candidate text`, got '2 b'"),
    ("1 a\n1 b\n1 a\n", 3, "candidate 'a' repeats line 1"),
    ("1 a\n1  \n", 2, "empty candidate text"),
])
def test_malformed_candidate_files(tmp_path, text, line, message):
    path = tmp_path / "candidates.txt"
    path.write_text(text)
    with pytest.raises(DataFormatError) as info:
        dialog_babi.read_candidates(path)
    assert (info.value.line, info.value.field) == (line, "candidate") and message in str(info.value)
    assert str(info.value).startswith(f"{path}, line {line}, field 'candidate'")
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(DataFormatError, match="no candidate"):
        dialog_babi.read_candidates(empty)


def copy_task1(data_dir, tmp_path):
    """A data folder holding task 1's files (gzip'd, as the shared folder keeps them)."""
    folder = tmp_path / "data" / "dialog_babi"
    folder.mkdir(parents=True)
    for name in ["dialog-babi-candidates.txt.gz",
                 *(f"dialog-babi-task1-API-calls-{s}.txt.gz" for s in ("trn", "dev", "tst", "tst-OOV"))]:
        shutil.copy(data_dir / "dialog_babi" / name, folder / name)
    return folder.parent


def rewrite(path, change):
    lines = raw_lines(path)
    path.write_bytes(gzip.compress("\n".join(change(lines)).encode("utf-8")))


def test_a_malformed_copy_of_a_real_file_names_its_line(data_dir, tmp_path):
    root = copy_task1(data_dir, tmp_path)
    dev = root / "dialog_babi" / "dialog-babi-task1-API-calls-dev.txt.gz"
    rewrite(dev, lambda lines: lines[:4] + [lines[4].replace("\t", "\tplease ", 1)] + lines[5:])
    with pytest.raises(DataFormatError) as info:
        datasets.load("dialog-babi-task1", data_dir=root)
    assert (info.value.path, info.value.line, info.value.field) == (str(dev), 5, "bot_utterance")
    assert "is not among the 4,212 candidates" in str(info.value)


def test_a_changed_copy_that_parses_is_refused_by_its_sha256(data_dir, tmp_path):
    root = copy_task1(data_dir, tmp_path)
    test = root / "dialog_babi" / "dialog-babi-task1-API-calls-tst.txt.gz"
    rewrite(test, lambda lines: lines[: lines.index("") + 1])  # only the first dialog left
    with pytest.raises(ChecksumError, match="is damaged: its content differs from the pinned file"):
        datasets.load("dialog-babi-task1", data_dir=root)


def test_missing_files_and_bad_options(data_dir, tmp_path):
    root = copy_task1(data_dir, tmp_path)
    (root / "dialog_babi" / "dialog-babi-task1-API-calls-tst-OOV.txt.gz").unlink()
    with pytest.raises(MissingDataError, match=r"`keras-match data download dialog-babi --data-dir "):
        datasets.load("dialog-babi-task1", data_dir=root)
    with pytest.raises(ValueError, match="unknown dataset 'dialog-babi-task7'"):
        datasets.load("dialog-babi-task7", data_dir=data_dir)
    with pytest.raises(ValueError, match="unknown dialog bAbI task 0"):
        dialog_babi.load(0, data_dir=data_dir)
    with pytest.raises(ValueError, match="unknown variant 'raw' for dataset 'dialog-babi-task2'"):
        datasets.load("dialog-babi-task2", variant="raw", data_dir=data_dir)
    with pytest.raises(ValueError, match="unknown train_split 'dev'"):
        datasets.load("dialog-babi-task2", train_split="dev", data_dir=data_dir)
