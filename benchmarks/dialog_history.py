"""How much of a dialog's history a `max_turns` cut drops (issue 58: dialog bAbI task 6's history); prints JSON.

The dialog preprocessor keeps the LAST `max_turns` texts of a response's history
(`keras_match.preprocessors.dialog.last_turns`), and a history counts every earlier text of the dialog: user and
bot utterances and KB lines (`keras_match.datasets.dialog_babi`). For each split of a dialog bAbI task and each
`--max-turns` value this counts the responses whose history is longer than the cut, and of those, the ones whose
dropped texts include a user utterance and the ones that include a KB line. It also gives, for each split, the
history lengths (mean, percentiles, longest) with and without the KB lines. Trains nothing.

    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_history.py --dataset dialog-babi-task6 \\
        --max-turns 20 30 50 100 200 --out benchmarks/results/carnn_dialog_task6/history/cuts.json
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import summarize  # noqa: E402  (benchmarks/summarize.py)

PERCENTILES = (50, 90, 99)


def kept_positions(speakers, history_length: int, max_turns: int | None, cut: str = "oldest") -> list:
    """The positions of the texts a cut keeps of a history of `history_length` texts (`speakers`: the dialog's
    speaker of each text, the history being its first `history_length`), in order: the preprocessor's rule
    (`kept_turns`) on speakers instead of texts. `max_turns` None keeps every text. Every text of the history
    counts, where `kept_turns` takes a row's trailing empty texts for padding: no dialog bAbI file has an empty
    text at the end of a history, so the two agree there (`tests/test_dialog_history.py` checks it on task 6).

    Raises:
        ValueError: `cut` is not one of `keras_match.preprocessors.dialog.HISTORY_CUTS`.
    """
    from keras_match.preprocessors.dialog import check_history_cut

    check_history_cut(cut)
    positions = list(range(history_length))
    if max_turns is None or history_length <= max_turns:
        return positions
    if cut == "oldest":
        return positions[-max_turns:]
    kb = [i for i in positions if speakers[i] == "kb"]
    utterances = [i for i in positions if speakers[i] != "kb"]
    slots = max(max_turns - len(utterances), 0)
    return sorted(utterances[-max_turns:] + (kb[-slots:] if slots else []))


def dropped_speakers(speakers, history_length: int, max_turns: int | None, cut: str = "oldest") -> set:
    """The speakers of the texts a cut drops from a history (`kept_positions` says which it keeps)."""
    kept = set(kept_positions(speakers, history_length, max_turns, cut))
    return {speakers[i] for i in range(history_length) if i not in kept}


def split_cuts(split, max_turns_values, history_cuts=("oldest",)) -> dict:
    """The cuts of one `ResponseSplit`: `{"responses", "history": {...}, "cuts": [...]}`.

    `history`: the histories' lengths (texts) with and without KB lines (`mean`, `p50` / `p90` / `p99`, `max`).
    `cuts`: one row per history cut and `max_turns` (None: no cut) with the share of responses whose history is
    cut, whose cut drops a user utterance, and whose cut drops a KB line.

    Raises:
        ValueError: the split has no response.
    """
    n = len(split)
    if not n:
        raise ValueError(f"split {split.name!r} has no response")
    lengths = np.asarray(split.history_length, dtype=np.int64)
    kb_before = [np.concatenate([[0], np.cumsum([s == "kb" for s in dialog.speakers])]) for dialog in split.dialogs]
    without_kb = np.array([h - kb_before[d][h] for d, h in zip(split.dialog_index, lengths)], np.int64)
    cuts = []
    for history_cut in history_cuts:
        for max_turns in max_turns_values:
            cut = user = kb_lines = 0
            for d, h in zip(split.dialog_index, lengths):
                dropped = dropped_speakers(split.dialogs[d].speakers, int(h), max_turns, history_cut)
                cut += bool(dropped)
                user += "user" in dropped
                kb_lines += "kb" in dropped
            cuts.append({"history_cut": history_cut, "max_turns": max_turns, "cut": cut / n,
                         "cut_drops_a_user_text": user / n, "cut_drops_a_kb_line": kb_lines / n})

    def described(values):
        return {"mean": float(values.mean()), **{f"p{q}": float(np.percentile(values, q)) for q in PERCENTILES},
                "max": int(values.max())}

    return {"responses": n, "dialogs": len(split.dialogs),
            "history": {"texts": described(lengths), "texts_without_kb_lines": described(without_kb)},
            "cuts": cuts}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", default="dialog-babi-task6", help="a dialog bAbI task (dialog-babi-task1 ... 6)")
    parser.add_argument("--splits", nargs="+", default=["train", "dev", "test"])
    parser.add_argument("--max-turns", type=int, nargs="+", default=[20, 30, 50, 100, 200],
                        help="the cuts to count (the presets keep 30)")
    parser.add_argument("--history-cuts", nargs="+", default=["oldest"],
                        help="which texts go first (the preprocessor's history_cut: oldest, kb_first)")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if any(value < 1 for value in args.max_turns):
        print(f"dialog_history: --max-turns must be integers >= 1, got {args.max_turns}", file=sys.stderr)
        return 2
    from keras_match.datasets.catalog import load_by_name
    from keras_match.preprocessors.dialog import HISTORY_CUTS

    unknown = sorted(set(args.history_cuts) - set(HISTORY_CUTS))
    if unknown:
        print(f"dialog_history: --history-cuts {' '.join(unknown)}: must be among {', '.join(HISTORY_CUTS)}",
              file=sys.stderr)
        return 2
    started = time.time()
    try:
        dataset = load_by_name(args.dataset, data_dir=args.data_dir)
        splits = {name: split_cuts(dataset[name], [*args.max_turns, None], args.history_cuts)
                  for name in args.splits}
    except (OSError, KeyError, ValueError) as error:
        print(f"dialog_history: {error}", file=sys.stderr)
        return 1
    return summarize.write_dataset_result("dialog_history", args.out, {
        "dataset": args.dataset, "max_turns": args.max_turns, "history_cuts": args.history_cuts, "splits": splits},
        started, args.dataset, dataset)


if __name__ == "__main__":
    sys.exit(main())
