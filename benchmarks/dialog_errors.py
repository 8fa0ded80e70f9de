"""The kinds of a response-selection run's errors on one split (issue 58: dialog bAbI task 2's per-dialog accuracy).

A finished run (a `keras-match train` folder of a response-selection entry, e.g. `carnn_dialog_i` on
`dialog-babi-task2`) scores the split; every wrong turn is counted by the kind of its gold response. An
`api_call` is "first" (the dialog's first API call) or "updated" (a later one: task 2's user changes a constraint
and the bot must issue the call again with the new value); any other response is its own kind (dialog bAbI's bot
responses are templates). A wrong API call is also counted by which of its slots the chosen candidate gets wrong
(`api_call cuisine location party_size price`; "not an api_call" when another kind was chosen). Per dialog: how
many are right at every turn, and how many of the others are wrong only at updated API calls. The first
`--examples` wrong turns are kept with their last history texts, the gold and the chosen response.

Writes `--out` (JSON, with provenance) and prints it:

    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_errors.py RUN --dataset dialog-babi-task2 \\
        --split test --out benchmarks/results/carnn_dialog_babi/errors-task2-s1234.json
"""

from __future__ import annotations

import argparse
import collections
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import summarize  # noqa: E402  (benchmarks/summarize.py)

API_CALL = "api_call"
SLOTS = ("cuisine", "location", "party_size", "price")
"""The slots of a dialog bAbI API call, in the order the call names them (`api_call italian paris six cheap`)."""


def response_kind(text: str, earlier_api_calls: int) -> str:
    """The kind of a gold response: `"api_call (first)"` / `"api_call (updated)"` (an API call after
    `earlier_api_calls` earlier ones in the same dialog), else the response text itself."""
    if text.split(" ", 1)[0] == API_CALL:
        return f"{API_CALL} (updated)" if earlier_api_calls else f"{API_CALL} (first)"
    return text


def wrong_slots(gold: str, chosen: str) -> list[str]:
    """The slots of the API call `gold` that `chosen` gets wrong (`["not an api_call"]` when `chosen` is no API
    call; the slot's index when a call has more values than `SLOTS` names)."""
    gold_values, chosen_values = gold.split()[1:], chosen.split()
    if not chosen_values or chosen_values[0] != API_CALL:
        return ["not an api_call"]
    chosen_values = chosen_values[1:]
    wrong = []
    for index in range(max(len(gold_values), len(chosen_values))):
        mine = gold_values[index] if index < len(gold_values) else None
        theirs = chosen_values[index] if index < len(chosen_values) else None
        if mine != theirs:
            wrong.append(SLOTS[index] if index < len(SLOTS) else f"slot {index + 1}")
    return wrong


UPDATE_STATES = ("right", "previous value", "another value")


def _count_update_slots(counts, previous, gold, chosen):
    """Adds the slots of one updated API call to `counts` (`{"changed" | "unchanged": Counter}`): whether the user
    changed the slot since the `previous` call, and whether `chosen` holds the `gold` value there, the previous
    value, or another; nothing when `chosen` is no API call."""
    chosen_values = chosen.split()
    if not chosen_values or chosen_values[0] != API_CALL:
        return
    before, after, picked = previous.split()[1:], gold.split()[1:], chosen_values[1:]
    for index, value in enumerate(after):
        old = before[index] if index < len(before) else None
        mine = picked[index] if index < len(picked) else None
        state = "right" if mine == value else "previous value" if mine == old else "another value"
        counts["unchanged" if old == value else "changed"][state] += 1


def error_kinds(gold_texts, chosen_texts, dialogs, turns) -> dict:
    """Count the errors of a split by kind.

    Args:
        gold_texts: `[n]` the gold response of each turn.
        chosen_texts: `[n]` the chosen response of each turn.
        dialogs: `[n]` each turn's dialog id.
        turns: `[n]` each turn's position in its dialog (any sortable values; the order of the turns).

    Returns:
        `{"kinds": [{"kind", "turns", "wrong", "accuracy"}] (most errors first), "api_call_wrong_slots":
        {slot: wrong API calls}, "updated_api_calls_answered_with_the_previous_call": wrong updated API calls
        whose chosen response is the dialog's previous gold API call (the call before the user's update),
        "updated_api_call_slots": {"changed" | "unchanged": {"right" | "previous value" | "another value": slots}}
        (every slot of every updated API call answered with an API call, by whether the user changed it since the
        previous call and what the chosen call holds there), "dialogs": {"dialogs", "right_at_every_turn", "wrong_only_at_updated_api_calls",
        "wrong_at_an_updated_api_call"}, "wrong": [indices of the wrong turns, in dialog and turn order]}`.

    Raises:
        ValueError: the four arrays differ in length, or there is no turn.
    """
    n = len(gold_texts)
    if not n or not len(chosen_texts) == len(dialogs) == len(turns) == n:
        raise ValueError(f"gold, chosen, dialogs and turns need the same non-zero length, got {n}, "
                         f"{len(chosen_texts)}, {len(dialogs)}, {len(turns)}")
    order = sorted(range(n), key=lambda i: (str(dialogs[i]), turns[i]))
    calls_before = collections.Counter()
    kind_of, previous_call = [None] * n, [None] * n
    last_call = {}
    for i in order:
        kind_of[i] = response_kind(str(gold_texts[i]), calls_before[dialogs[i]])
        previous_call[i] = last_call.get(dialogs[i])
        if kind_of[i].startswith(API_CALL):
            calls_before[dialogs[i]] += 1
            last_call[dialogs[i]] = str(gold_texts[i])
    totals, wrong_counts, slots = collections.Counter(), collections.Counter(), collections.Counter()
    wrong_kinds = collections.defaultdict(set)
    all_dialogs = set()
    wrong, repeated = [], 0
    update_slots = {"changed": collections.Counter(), "unchanged": collections.Counter()}
    for i in order:
        totals[kind_of[i]] += 1
        if previous_call[i] is not None and kind_of[i].startswith(API_CALL):
            _count_update_slots(update_slots, previous_call[i], str(gold_texts[i]), str(chosen_texts[i]))
        all_dialogs.add(dialogs[i])
        if str(chosen_texts[i]) != str(gold_texts[i]):
            wrong.append(i)
            wrong_counts[kind_of[i]] += 1
            wrong_kinds[dialogs[i]].add(kind_of[i])
            if kind_of[i].startswith(API_CALL):
                slots.update(wrong_slots(str(gold_texts[i]), str(chosen_texts[i])))
                repeated += str(chosen_texts[i]) == previous_call[i]
    updated = f"{API_CALL} (updated)"
    kinds = [{"kind": kind, "turns": totals[kind], "wrong": wrong_counts[kind],
              "accuracy": 1.0 - wrong_counts[kind] / totals[kind]} for kind in totals]
    kinds.sort(key=lambda row: (-row["wrong"], -row["turns"], row["kind"]))
    return {
        "kinds": kinds,
        "api_call_wrong_slots": dict(slots.most_common()),
        "updated_api_calls_answered_with_the_previous_call": repeated,
        "updated_api_call_slots": {change: {state: counts[state] for state in UPDATE_STATES}
                                   for change, counts in update_slots.items()},
        "dialogs": {"dialogs": len(all_dialogs), "right_at_every_turn": len(all_dialogs) - len(wrong_kinds),
                    "wrong_only_at_updated_api_calls": sum(kinds_ == {updated} for kinds_ in wrong_kinds.values()),
                    "wrong_at_an_updated_api_call": sum(updated in kinds_ for kinds_ in wrong_kinds.values())},
        "wrong": wrong,
    }


def analyse(run_dir, dataset, split="test", data_dir=None, examples_kept=10, history_kept=6) -> dict:
    """Score run `run_dir` on `split` of `dataset` (a name or a loaded response-selection dataset) and count its
    errors (`error_kinds`); the figures are the task's own (`evaluate_selection`), the first `examples_kept`
    wrong turns kept with their last `history_kept` history texts.

    Raises:
        ValueError: the run's task refuses the split (another candidate set).
    """
    from keras_match.artifacts import runs
    from keras_match.datasets.catalog import load_by_name
    from keras_match.tasks.response_selection import choose, evaluate_selection

    if isinstance(dataset, str):
        dataset = load_by_name(dataset, data_dir=data_dir)
    run = runs.load_run(run_dir)
    data = dataset[split]
    run.task.check_split(data)
    examples, outputs = run.outputs(data)
    scores = run.task.scores(run.head, outputs, len(examples), len(examples.candidates))
    chosen = choose(scores)
    candidates = np.asarray(examples.candidates, dtype=object)
    gold_texts, chosen_texts = candidates[examples.labels], candidates[chosen]
    turns = [int(str(example_id).rsplit("-", 1)[-1]) for example_id in examples.ids]
    counted = error_kinds(gold_texts, chosen_texts, examples.groups, turns)
    kept = []
    for i in counted.pop("wrong")[:examples_kept]:
        history = [str(text) for text in examples.texts["history"][i][:examples.history_lengths[i]]]
        kept.append({"id": str(examples.ids[i]), "history_tail": history[-history_kept:],
                     "context": str(examples.texts["context"][i]), "gold": str(gold_texts[i]),
                     "chosen": str(chosen_texts[i])})
    return {"figures": evaluate_selection(scores, examples.labels, examples.groups), **counted, "examples": kept}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", type=pathlib.Path, help="a finished response-selection run folder")
    parser.add_argument("--dataset", required=True, help="the dataset name (e.g. dialog-babi-task2)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--examples", type=int, default=10, help="wrong turns kept with their history")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    from keras_match.datasets.catalog import load_by_name

    started = time.time()
    try:
        dataset = load_by_name(args.dataset, data_dir=args.data_dir)
        result = analyse(args.run, dataset, args.split, examples_kept=args.examples)
    except (OSError, ValueError) as error:
        print(f"dialog_errors: {error}", file=sys.stderr)
        return 1
    return summarize.write_dataset_result("dialog_errors", args.out, {
        "run": str(args.run), "dataset": args.dataset, "split": args.split, **result}, started, args.dataset, dataset)


if __name__ == "__main__":
    sys.exit(main())
