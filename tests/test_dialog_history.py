"""benchmarks/dialog_history.py: what a `max_turns` cut drops from dialog histories (user utterances, KB lines),
and the histories' lengths with and without KB lines."""

import json

import pytest
from conftest import benchmark_module

from keras_match.datasets.dialog_babi import CandidateSet, Dialog, ResponseSplit


@pytest.fixture(scope="module")
def history():
    return benchmark_module("dialog_history")


def _split():
    """Two dialogs. a: user, bot, kb, kb, kb, user, bot, user (responses after texts 0, 5 and 7); b: user, bot,
    user (responses after texts 0 and 2)."""
    a = Dialog("1", 1, ("hi", "hello", "r1 R_cuisine thai", "r1 R_price cheap", "r2 R_price cheap", "thai please",
                        "ok", "thanks"), ("user", "bot", "kb", "kb", "kb", "user", "bot", "user"))
    b = Dialog("2", 10, ("hi", "hello", "bye"), ("user", "bot", "user"))
    return ResponseSplit("test", [a, b], CandidateSet(["hello", "ok", "you're welcome"]),
                         dialog_index=[0, 0, 0, 1, 1], history_length=[0, 5, 7, 0, 2], turn=[1, 2, 3, 1, 2],
                         line=[1, 6, 8, 10, 11], gold=[0, 1, 2, 0, 2])


def test_a_cut_drops_the_first_texts_and_is_counted_by_their_speakers(history):
    speakers = ("user", "bot", "kb", "kb", "kb", "user", "bot", "user")
    assert history.dropped_speakers(speakers, 7, 2) == {"user", "bot", "kb"}
    assert history.dropped_speakers(speakers, 7, 5) == {"user", "bot"}
    assert history.dropped_speakers(speakers, 7, 7) == set()
    assert history.dropped_speakers(speakers, 7, None) == set()

    result = history.split_cuts(_split(), [2, 5, 6, None])
    assert result["responses"] == 5 and result["dialogs"] == 2
    cuts = {row["max_turns"]: row for row in result["cuts"]}
    # histories 0, 5, 7, 0, 2 texts: a cut at 2 cuts 5 (drops user, bot, kb) and 7 (user ... kb)
    assert cuts[2] == {"history_cut": "oldest", "max_turns": 2, "cut": 2 / 5, "cut_drops_a_user_text": 2 / 5, "cut_drops_a_kb_line": 2 / 5}
    # at 5: only the 7-text history is cut, losing its first user and bot texts, no KB line
    assert cuts[5] == {"history_cut": "oldest", "max_turns": 5, "cut": 1 / 5, "cut_drops_a_user_text": 1 / 5, "cut_drops_a_kb_line": 0.0}
    # at 6: the 7-text history loses only its first text, the user's "hi"
    assert cuts[6] == {"history_cut": "oldest", "max_turns": 6, "cut": 1 / 5, "cut_drops_a_user_text": 1 / 5, "cut_drops_a_kb_line": 0.0}
    assert cuts[None] == {"history_cut": "oldest", "max_turns": None, "cut": 0.0, "cut_drops_a_user_text": 0.0, "cut_drops_a_kb_line": 0.0}
    lengths = result["history"]
    assert lengths["texts"]["max"] == 7 and lengths["texts"]["mean"] == pytest.approx(14 / 5)
    assert lengths["texts_without_kb_lines"]["max"] == 4  # 7 texts less the 3 KB lines
    assert lengths["texts_without_kb_lines"]["mean"] == pytest.approx((0 + 2 + 4 + 0 + 2) / 5)
    with pytest.raises(ValueError, match="no response"):
        history.split_cuts(ResponseSplit("dev", [], CandidateSet([]), [], [], [], [], []), [30])


def test_the_kb_first_cut_drops_kb_lines_before_any_utterance(history):
    speakers = ("user", "bot", "kb", "kb", "kb", "user", "bot", "user")
    # 7 texts, 4 utterances (0, 1, 5, 6) and 3 KB lines (2, 3, 4)
    assert history.kept_positions(speakers, 7, 5, "kb_first") == [0, 1, 4, 5, 6]  # the latest KB line fits
    assert history.dropped_speakers(speakers, 7, 5, "kb_first") == {"kb"}
    assert history.kept_positions(speakers, 7, 4, "kb_first") == [0, 1, 5, 6]
    assert history.kept_positions(speakers, 7, 3, "kb_first") == [1, 5, 6]  # more utterances than room
    assert history.dropped_speakers(speakers, 7, 3, "kb_first") == {"user", "kb"}
    assert history.kept_positions(speakers, 7, 5, "oldest") == [2, 3, 4, 5, 6]
    with pytest.raises(ValueError, match="history_cut='newest': must be one of oldest, kb_first"):
        history.kept_positions(speakers, 7, 5, "newest")

    result = history.split_cuts(_split(), [2, 5, None], ["oldest", "kb_first"])
    cuts = {(row["history_cut"], row["max_turns"]): row for row in result["cuts"]}
    assert len(cuts) == 6
    # kb_first at 5: only the 7-text history is cut; it keeps its 4 utterances and its latest KB line, losing two
    # KB lines, where the oldest cut loses its "hi" and "hello"
    assert cuts["kb_first", 5] == {"history_cut": "kb_first", "max_turns": 5, "cut": 1 / 5,
                                   "cut_drops_a_user_text": 0.0, "cut_drops_a_kb_line": 1 / 5}
    # at 2 the 7-text history has 4 utterances: it loses "hi"; the 5-text one keeps "hi hello"
    assert cuts["kb_first", 2]["cut_drops_a_user_text"] == 1 / 5
    assert cuts["oldest", 5] == {"history_cut": "oldest", "max_turns": 5, "cut": 1 / 5,
                                 "cut_drops_a_user_text": 1 / 5, "cut_drops_a_kb_line": 0.0}


def test_kept_positions_is_the_preprocessors_rule_on_a_real_split(history, data_dir):
    import numpy as np

    from keras_match.datasets import dialog_babi
    from keras_match.preprocessors.dialog import kept_turns

    split = dialog_babi.load(6, data_dir=data_dir)["dev"]
    rows = range(0, len(split), 7)  # about 600 responses, long histories among them
    histories = [split.dialogs[split.dialog_index[r]].texts[:split.history_length[r]] for r in rows]
    width = max(len(h) for h in histories)
    padded = np.array([list(h) + [""] * (width - len(h)) for h in histories], dtype=object)
    for cut in ("oldest", "kb_first"):
        for max_turns in (5, 30):
            got = kept_turns(padded.tolist(), max_turns, cut).numpy().astype(object)
            for i, r in enumerate(rows):
                dialog = split.dialogs[split.dialog_index[r]]
                kept = [dialog.texts[p] for p in history.kept_positions(dialog.speakers, int(split.history_length[r]),
                                                                       max_turns, cut)]
                assert [t.decode() for t in got[i][:len(kept)]] == kept and not any(got[i][len(kept):]), (cut, r)


def test_the_command_writes_every_split_with_provenance_and_refuses_a_bad_cut(history, data_dir, tmp_path, capsys):
    out = tmp_path / "cuts.json"
    assert history.main(["--dataset", "dialog-babi-task1", "--splits", "dev", "--max-turns", "4", "30",
                         "--data-dir", str(data_dir), "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result == json.loads(capsys.readouterr().out)
    assert result["provenance"]["command"] and set(result["splits"]) == {"dev"}
    cuts = [row["max_turns"] for row in result["splits"]["dev"]["cuts"]]
    assert cuts == [4, 30, None]
    shares = [row["cut"] for row in result["splits"]["dev"]["cuts"]]
    assert shares[0] > shares[1] >= shares[2] == 0.0  # a shorter cut cuts more histories
    assert history.main(["--max-turns", "0", "--out", str(tmp_path / "bad.json")]) == 2
    assert "--max-turns must be integers >= 1" in capsys.readouterr().err
    assert history.main(["--history-cuts", "newest", "--out", str(tmp_path / "bad.json")]) == 2
    assert "--history-cuts newest: must be among oldest, kb_first" in capsys.readouterr().err
    assert history.main(["--dataset", "dialog-babi-task1", "--splits", "nosuch", "--data-dir", str(data_dir),
                         "--out", str(tmp_path / "bad.json")]) == 1
    assert "no split 'nosuch'" in capsys.readouterr().err and not (tmp_path / "bad.json").exists()
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    assert history.main(["--dataset", "dialog-babi-task1", "--splits", "dev", "--data-dir", str(data_dir),
                         "--out", str(blocker / "cuts.json")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("dialog_history: cannot make") and "a-file" in err and len(err.splitlines()) == 1
