"""Response-selection runs scored with their history cut at other lengths than they were trained with (issue 58: on
dialog bAbI task 6, keeping 20 texts scored lower on dev and higher on test than 30 in every pair of the search);
prints JSON.

Each run scores the split once with its own `max_turns` and once for each `--max-turns` value: the same weights
reading the last N texts of each history (the run's own `history_cut`). For each scoring, the per-response accuracy
over all responses and by the length of the response's history (every earlier text of the dialog, KB lines
included; `keras_match.tasks.response_selection` `history_lengths`): at most the shortest cut of the file, where every
scoring reads the same texts, and longer, the longer ones split by whether the texts the longest cut adds to the
shortest hold a user utterance (`added_speakers`), and the templates of the gold responses whose choice a cut changes
from the run's own (`flips`), with how many gold responses of each template the training split and the scored one
hold (`template_counts`), and where the restaurants of the changed choices stand in the history
(`restaurants_of_changed_choices`: for the responses a cut makes wrong, the new choice's restaurant and the gold
response's; for those it makes right, the run's own choice's and the gold's; each one of `RESTAURANT_KINDS`: offered
by the bot, or in a KB line, within the shorter cut or only in the texts the longer one adds, or not read at all).
Two runs that differ only in `max_turns` (the same zoo entry, seed and other settings: checked, `check_pair`) are
also compared as trained: the responses only one of them gets right, by history length. A difference on the short
histories comes from what training made of the model, not from the texts a cut hides at scoring; a run's own row
beside its cross-scored rows says how much those texts move it. Trains nothing.

    KERAS_MATCH_DATA=../shared/data python benchmarks/dialog_cut_scoring.py RUN [RUN] --max-turns 20 30 \\
        --dataset dialog-babi-task6 --split test --out benchmarks/results/carnn_dialog_task6_grid/cuts/NAME.json
"""

from __future__ import annotations

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import summarize  # noqa: E402  (benchmarks/summarize.py)


def check_pair(first: dict, second: dict) -> tuple[int, int]:
    """The two runs' `max_turns` (from their `config.json` contents), after checking that they differ in nothing
    else that shapes the model: the zoo entry, dataset, seed and every setting but `max_turns`.

    Raises:
        ValueError: they differ elsewhere (the message names the first difference), or in nothing.
    """
    for key in ("zoo", "dataset", "seed"):
        if first.get(key) != second.get(key):
            raise ValueError(f"the runs differ in {key} ({first.get(key)!r} and {second.get(key)!r}): compare two "
                             "runs that differ only in max_turns")
    for group in sorted(set(first["settings"]) | set(second["settings"])):
        mine, theirs = first["settings"].get(group, {}), second["settings"].get(group, {})
        for key in sorted(set(mine) | set(theirs)):
            if key != "max_turns" and mine.get(key) != theirs.get(key):
                raise ValueError(f"the runs differ in {group}.{key} ({mine.get(key)!r} and {theirs.get(key)!r}): "
                                 "compare two runs that differ only in max_turns")
    turns = tuple(config["settings"]["preprocessing"]["max_turns"] for config in (first, second))
    if turns[0] == turns[1]:
        raise ValueError(f"both runs keep {turns[0]} texts: compare two runs that differ in max_turns")
    return turns


def accuracies(right, short) -> dict:
    """Per-response accuracy of `right` (bool `[n]`) over all responses, over those with `short` histories and over
    the rest (None where there is none), with the counts of right responses."""
    right, short = np.asarray(right, bool), np.asarray(short, bool)

    def share(mask):
        return float(right[mask].mean()) if mask.any() else None

    return {"all": share(np.ones_like(short)), "short_history": share(short), "long_history": share(~short),
            "right": int(right.sum()), "right_short_history": int(right[short].sum()),
            "right_long_history": int(right[~short].sum())}


def added_speakers(split, shortest: int, longest: int) -> list:
    """For each response of `split` (a `ResponseSplit`), the speakers (`"user"`, `"bot"`, `"kb"`) of the texts the
    longer of two `"oldest"` cuts keeps and the shorter drops: its history's texts `[h - longest, h - shortest)`,
    an empty set for a history of at most `shortest` texts."""
    added = []
    for d, h in zip(split.dialog_index, split.history_length):
        speakers = split.dialogs[int(d)].speakers
        added.append(set(speakers[max(0, int(h) - longest):max(0, int(h) - shortest)]))
    return added


def _kb_facts(split):
    """The words of each KB fact line of `split` (`saint_johns_chop_house R_location south`); the KB line
    `api_call no result` is no fact."""
    for dialog in split.dialogs:
        for text, speaker in zip(dialog.texts, dialog.speakers):
            tokens = str(text).split()
            if speaker == "kb" and len(tokens) >= 3 and tokens[1].startswith("R_"):
                yield tokens


def kb_words(split) -> set:
    """The words of `split`'s KB facts that name an entity or a value: the first word and the words after the
    attribute (`saint_johns_chop_house R_location south`: `saint_johns_chop_house`, `south`)."""
    return {word for tokens in _kb_facts(split) for word in (tokens[0], *tokens[2:])}


def response_template(text: str, entity_words: set) -> str:
    """A response with each KB word (`kb_words`) replaced by `<kb>`: the bot's template, the restaurant and the
    values it names left out (`<kb> is a nice place in the <kb> of town serving tasty <kb> food`)."""
    return " ".join("<kb>" if token in entity_words else token for token in str(text).split())


def template_counts(split, entity_words: set) -> dict:
    """`{template: responses}` of `split`'s gold responses (`response_template`), most first."""
    counts = {}
    for gold in split.gold:
        template = response_template(split.candidates[int(gold)], entity_words)
        counts[template] = counts.get(template, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


RESTAURANT_KINDS = ("offered in the shorter cut", "offered only in the added texts", "in KB lines of the shorter cut",
                    "in KB lines of the added texts only", "not in the texts read", "no restaurant")
"""Where a response's restaurant stands in its history (`restaurant_kind`), first match wins: a bot text among the
last `shortest` texts names it; a bot text only among the texts the longer cut adds; a KB line among the last
`shortest` texts; a KB line only among the added texts; no text of the longer cut; the response names no
restaurant."""


def restaurant_names(split) -> set:
    """The restaurants of `split`'s KB facts: the first word of each fact line (`saint_johns_chop_house R_location
    south`: `saint_johns_chop_house`)."""
    return {tokens[0] for tokens in _kb_facts(split)}


def restaurant_kind(response: str, texts, speakers, shortest: int, longest: int, restaurants: set) -> str:
    """Where the first restaurant (`restaurant_names`) that `response` names stands in a history of `texts` with
    their `speakers` (every earlier text of the dialog, oldest first), between its last `shortest` texts and the
    texts its last `longest` add to them: one of `RESTAURANT_KINDS`."""
    *found, absent, none = RESTAURANT_KINDS
    name = next((token for token in str(response).split() if token in restaurants), None)
    if name is None:
        return none
    h = len(texts)
    kept = range(max(0, h - shortest), h)
    added = range(max(0, h - longest), max(0, h - shortest))
    for kind, where, speaker in zip(found, (kept, added, kept, added), ("bot", "bot", "kb", "kb")):
        if any(speakers[i] == speaker and name in str(texts[i]).split() for i in where):
            return kind
    return absent


def choice_kinds(split, candidates, chosen, mask, shortest: int, longest: int, restaurants: set) -> dict:
    """`{kind: responses}` over `RESTAURANT_KINDS`, for the candidates `chosen` (indices `[n]` into `candidates`,
    the task's candidate set) of the responses of `split` where `mask` (bool `[n]`) holds (`restaurant_kind` of
    each)."""
    counts = dict.fromkeys(RESTAURANT_KINDS, 0)
    for i in np.flatnonzero(np.asarray(mask, bool)):
        dialog = split.dialogs[int(split.dialog_index[i])]
        h = int(split.history_length[i])
        kind = restaurant_kind(candidates[int(chosen[i])], dialog.texts[:h], dialog.speakers[:h], shortest,
                               longest, restaurants)
        counts[kind] += 1
    return counts


def flips(right_before, right_after, templates, shown: int = 5) -> list:
    """The `shown` response templates with the most responses whose choice changes between two scorings, most
    first: `{"template", "responses", "right_to_wrong", "wrong_to_right"}` (`responses`: all of that template)."""
    right_before, right_after = np.asarray(right_before, bool), np.asarray(right_after, bool)
    rows = {}
    for template, before, after in zip(templates, right_before, right_after):
        row = rows.setdefault(template, {"template": template, "responses": 0, "right_to_wrong": 0,
                                         "wrong_to_right": 0})
        row["responses"] += 1
        row["right_to_wrong"] += int(before and not after)
        row["wrong_to_right"] += int(after and not before)
    changed = [row for row in rows.values() if row["right_to_wrong"] or row["wrong_to_right"]]
    changed.sort(key=lambda row: (-(row["right_to_wrong"] + row["wrong_to_right"]), row["template"]))
    return changed[:shown]


def compare(right_first, right_second, short) -> dict:
    """How two correctness vectors part: the responses only the first gets right and only the second, by history
    length (`short` or not)."""
    right_first, right_second, short = (np.asarray(x, bool) for x in (right_first, right_second, short))
    first_only, second_only = right_first & ~right_second, right_second & ~right_first
    return {"first_only": int(first_only.sum()), "second_only": int(second_only.sum()),
            "first_only_short_history": int(first_only[short].sum()),
            "second_only_short_history": int(second_only[short].sum()),
            "first_only_long_history": int(first_only[~short].sum()),
            "second_only_long_history": int(second_only[~short].sum())}


def _source(run_or_preset):
    """`(config, load)`: the `config.json` contents of a finished run folder or a trained preset (a preset folder
    or a shipped preset's name, `keras_match.artifacts.presets.load_preset`), and a function that loads it afresh:
    a run in the precision it trained in (`load_run(precision="trained")`), so that its own cut scores as the run
    scored itself (in float32, a mixed bfloat16 run chose differently on a few responses).

    Raises:
        FileNotFoundError: neither (the message names it).
    """
    from keras_match.artifacts import presets, runs
    from keras_match.artifacts.storage import read_json

    path = pathlib.Path(run_or_preset)
    if (path / "model.keras").is_file():
        return (read_json(path / "config.json", "restore the file or retrain the run"),
                lambda: runs.load_run(path, precision="trained"))
    folder = presets.preset_dir(run_or_preset)  # a preset's folder; FileNotFoundError naming it when not one
    return (read_json(folder / "config.json", "restore the file or reinstall the preset"),
            lambda: presets.load_preset(run_or_preset))


def right_choices(run_dir, data, max_turns=None):
    """`(examples, scores, right)`: the scores of split `data` (`[n, C]` over the candidate set) by run `run_dir` (a
    finished run folder or a trained preset, `_source`) and whether it chooses each response right (bool `[n]`),
    its history cut at `max_turns` texts (None: the run's own).

    Raises:
        FileNotFoundError: `run_dir` is no run or preset.
        ValueError: the run's task refuses the split (another candidate set).
    """
    from keras_match.tasks.response_selection import choose

    run = _source(run_dir)[1]()  # afresh for each cut: the preprocessor's tf.function traces its max_turns once
    run.task.check_split(data)
    if max_turns is not None:
        run.preprocessor.max_turns = int(max_turns)
    examples, outputs = run.outputs(data)
    scores = run.task.scores(run.head, outputs, len(examples), len(examples.candidates))
    return examples, np.asarray(scores), np.asarray(choose(scores)) == np.asarray(examples.labels)


def analyse(run_dirs, dataset, max_turns=(), split="test", data_dir=None, progress=print) -> dict:
    """Each run of `run_dirs` (one or two) scored on `split` with its own history cut and at each of `max_turns`.

    Raises:
        ValueError: two runs that are no pair (`check_pair`), more than two, or a run's task refuses the split.
    """
    from keras_match.datasets.catalog import load_by_name
    from keras_match.tasks.response_selection import choose

    if not 1 <= len(run_dirs) <= 2:
        raise ValueError(f"pass one run or two that differ only in max_turns, got {len(run_dirs)}")
    configs = [_source(path)[0] for path in run_dirs]
    if len(configs) == 2:
        check_pair(*configs)
    own = [config["settings"]["preprocessing"]["max_turns"] for config in configs]
    if isinstance(dataset, str):
        dataset = load_by_name(dataset, data_dir=data_dir)
    data = dataset[split]
    shortest = min([*own, *max_turns])
    runs, lengths = [], None
    for path, trained, config in zip(run_dirs, own, configs):
        scorings = []
        for turns in sorted({trained, *max_turns}):
            started = time.time()
            examples, scores, right = right_choices(path, data, None if turns == trained else turns)
            lengths = np.asarray(examples.history_lengths)
            scorings.append({"max_turns": turns, "as_trained": turns == trained, "right": right,
                             "chosen": np.asarray(choose(scores))})
            progress(f"{pathlib.Path(path).name} at {turns} texts: {right.mean():.4f} "
                     f"({time.time() - started:.0f} s)")
        runs.append({"run": str(path), "zoo": config["zoo"], "seed": config["seed"], "settings": config["settings"],
                     "trained_max_turns": trained, "scorings": scorings})
    short = lengths <= shortest
    if not np.array_equal(lengths, np.asarray(data.history_length)):
        raise ValueError("the task's examples are not in the split's order: cannot match texts to responses")
    longest = max([*own, *max_turns])
    oldest = all(config["settings"]["preprocessing"].get("history_cut", "oldest") == "oldest" for config in configs)
    # which texts a longer cut adds is `added_speakers`' rule for the "oldest" cut only
    adds_user = np.array(["user" in speakers for speakers in added_speakers(data, shortest, longest)]) if oldest \
        else None
    result = {"short_history_max_texts": shortest, "longest_cut": longest, "responses": int(len(lengths)),
              "short_history_responses": int(short.sum()),
              "long_history_responses_whose_longest_cut_adds_a_user_text": None if adds_user is None
              else int(adds_user.sum()), "runs": runs}
    if len(runs) == 2:
        first, second = ([s["right"] for s in run["scorings"] if s["as_trained"]][0] for run in runs)
        result["as_trained_compared"] = compare(first, second, short)
    words = kb_words(data) | (kb_words(dataset["train"]) if split != "train" else set())
    templates = [response_template(examples.candidates[label], words) for label in examples.labels]
    # which bot templates each split uses: the training split's and this one's
    result["template_responses"] = {name: template_counts(dataset[name], words) for name in dict.fromkeys(
        ["train", split])}
    restaurants = restaurant_names(data)
    gold = np.asarray(examples.labels)

    def kinds(chosen_by, mask):
        return choice_kinds(data, examples.candidates, chosen_by, mask, shortest, longest, restaurants)

    for run in runs:
        trained, trained_chosen = next((scoring["right"], scoring["chosen"]) for scoring in run["scorings"]
                                       if scoring["as_trained"])
        for scoring in run["scorings"]:
            right, chosen = scoring.pop("right"), scoring.pop("chosen")
            if not scoring["as_trained"]:  # the gold responses whose choice this cut changes, by template
                scoring["changed_from_as_trained"] = flips(trained, right, templates)
                # and where the restaurants of the changed choices stand in the history (issue 58: what the older
                # texts make the model choose)
                became_wrong, became_right = trained & ~right, right & ~trained
                scoring["restaurants_of_changed_choices"] = {
                    "right_to_wrong": {"chosen": kinds(chosen, became_wrong), "gold": kinds(gold, became_wrong)},
                    "wrong_to_right": {"chosen_as_trained": kinds(trained_chosen, became_right),
                                       "gold": kinds(gold, became_right)}}
            scoring.update(accuracies(right, short))
            if adds_user is not None:
                for name, mask in (("adds_a_user_text", adds_user), ("adds_no_user_text", ~short & ~adds_user)):
                    scoring[f"long_history_{name}"] = float(right[mask].mean()) if mask.any() else None
    return result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", help="one finished response-selection run (a run folder, a preset folder "
                        "or a shipped preset's name), or two that differ only in max_turns")
    parser.add_argument("--max-turns", type=int, nargs="*", default=[], help="history lengths to score each run at")
    parser.add_argument("--dataset", required=True, help="the dataset name (e.g. dialog-babi-task6)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--data-dir", default=None, help="benchmark data (default $KERAS_MATCH_DATA)")
    parser.add_argument("--out", type=pathlib.Path, required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    if any(turns < 1 for turns in args.max_turns):
        parser.error(f"--max-turns: each value must be a positive int, got {args.max_turns}")
    from keras_match.datasets.catalog import load_by_name

    started = time.time()
    try:
        dataset = load_by_name(args.dataset, data_dir=args.data_dir)
        result = analyse(args.runs, dataset, args.max_turns, args.split,
                         progress=lambda line: print(line, file=sys.stderr, flush=True))
    except (OSError, ValueError) as error:
        print(f"dialog_cut_scoring: {error}", file=sys.stderr)
        return 1
    return summarize.write_dataset_result("dialog_cut_scoring", args.out, {
        "dataset": args.dataset, "split": args.split, "max_turns": args.max_turns, **result},
        started, args.dataset, dataset)


if __name__ == "__main__":
    sys.exit(main())
