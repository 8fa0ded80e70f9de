"""Fine-tuning from a trained preset: `keras-match train ENTRY --dataset PATH --init-preset ENTRY/DATASET`.

A run started from a preset (`keras_match.train(..., init_preset=...)`) differs from a run from scratch in four
steps, each done here:

1. **Settings** (`merged_overrides`): the run has the preset's model and preprocessing settings (the weights only
   fit that model); a `--set` of one of them to another value is refused, naming it. Training settings (epochs,
   learning rate, batch size, loss, patience, ...) are the preset's unless given: fine-tuning often wants a lower
   learning rate or fewer epochs.
2. **Task and vectors** (`check_task`, `vectors_source`): the dataset must be of the preset's task (a ranker
   fine-tunes on ranking data, a classifier on data with the same label names in the same order); the pretrained
   vectors are the ones the preset was trained with, found by their sha256 as
   `keras_match.artifacts.presets.load_preset` finds them (others are refused).
3. **Vocabulary** (`Preprocessor.extend_vocabulary`): the preset's vocabulary keeps every word at its id; the
   words of the new training split (and, with frozen vectors, of the vector file) that it lacks are appended. The
   truncation lengths and the document frequencies of the pair features stay the preset's (the model was trained
   on them).
4. **Weights** (`transfer_weights`): every weight of the preset's model is copied into the new model; an
   embedding matrix keeps the preset's rows for the old ids, and the appended words keep the rows the new model
   was built with: their pretrained vectors (or the settings' `missing_vectors` start for words the vectors lack).

The run's `config.json` records `init_preset` (the preset, its entry and dataset, the sha256 of its weights), and a
resumed run must name the same preset.
"""

from __future__ import annotations

import dataclasses
import pathlib

import numpy as np

__all__ = ["InitPreset", "load_init_preset", "merged_overrides", "check_task", "vectors_source",
           "transfer_weights"]


@dataclasses.dataclass
class InitPreset:
    """A trained preset a run starts from.

    Attributes:
        name: what the user gave (`"mcan_fm/trecqa-clean"` or a preset folder).
        root: the preset folder.
        run: the loaded preset (`keras_match.artifacts.runs.Run`: model, preprocessor, config).
        metadata: its `metadata.json`.
    """

    name: str
    root: pathlib.Path
    run: object
    metadata: dict

    @property
    def zoo(self) -> str:
        return self.run.config["zoo"]

    def record(self) -> dict:
        """What the run's `config.json` records as `init_preset`."""
        return {"preset": str(self.name), "zoo": self.zoo, "dataset": self.run.config.get("dataset"),
                "weights_sha256": (self.metadata.get("weights") or {}).get("sha256")}


def load_init_preset(name, vectors=None) -> InitPreset:
    """The preset `name` (a shipped `"entry/dataset"` or a preset folder), loaded and checked.

    Raises:
        FileNotFoundError: no such preset.
        keras_match.artifacts.presets.PresetError: a damaged or mismatched preset, or its vectors are not found.
    """
    from keras_match.artifacts import presets, runs

    root = presets.preset_dir(name)
    run = presets.load_preset(root, vectors=vectors)
    metadata = runs.read_json(root / presets.METADATA_FILE)
    return InitPreset(name=str(name), root=root, run=run, metadata=metadata)


def merged_overrides(init: InitPreset, name: str, overrides: dict) -> dict:
    """The settings of a run of zoo entry `name` started from `init`: the preset's model and preprocessing
    settings, its training settings unless `overrides` give them, and the other `overrides`.

    Raises:
        ValueError: `name` is another zoo entry than the preset's, or an override changes a model or
            preprocessing setting of the preset (the message names the setting and both values).
    """
    if name != init.zoo:
        raise ValueError(f"--init-preset {init.name}: the preset is a {init.zoo!r} model; fine-tuning starts from "
                         f"it as {init.zoo!r}, not {name!r}")
    sections = init.run.config["settings"]
    fixed = {**sections["model"], **sections["preprocessing"]}
    for key, value in overrides.items():
        if key in fixed and fixed[key] != value:
            raise ValueError(f"--init-preset {init.name}: setting {key!r} is {fixed[key]!r} in the preset "
                             f"({init.root / 'config.json'}) and its weights only fit that; {key}={value!r} "
                             "cannot be fine-tuned from it (training settings such as epochs or learning_rate may "
                             "change)")
    return {**fixed, **sections["training"], **overrides}


def check_task(init: InitPreset, task, split) -> None:
    """Raises ValueError unless `split` (the new training split) is of the preset's task and labels."""
    preset_task = init.run.task
    if preset_task.kind != task.kind:
        raise ValueError(f"--init-preset {init.name}: the preset is a {preset_task.kind} model; the dataset "
                         f"{getattr(split, 'source', None) or getattr(split, 'name', '?')} is a {task.kind} dataset")
    problem = preset_task.accepts(split)
    if problem:
        raise ValueError(f"--init-preset {init.name}: the training split "
                         f"{getattr(split, 'source', None) or getattr(split, 'name', '?')} {problem}")


def vectors_source(init: InitPreset, given="default"):
    """The pretrained vectors of a run started from `init`: the preset's, found by their sha256 (`given` is where
    to look first, unless `"default"`); None for a preset trained without vectors.

    Raises:
        keras_match.artifacts.presets.PresetError: the preset's vectors are not found, or `given` holds other vectors.
    """
    from keras_match.artifacts import preset_loader, presets

    embedding = init.metadata.get("embedding") or {}
    if not embedding.get("vectors_sha256"):
        if given not in ("default", None):
            raise presets.PresetError(f"--init-preset {init.name}: the preset was trained without pretrained vectors "
                                      f"({init.root / presets.METADATA_FILE}); the vectors {given} cannot join it")
        return None
    if given is None:
        raise presets.PresetError(f"--init-preset {init.name}: the preset was trained with the vectors "
                                  f"{embedding.get('vectors')} ({init.root / presets.METADATA_FILE}); its new words "
                                  "need them: leave --embeddings at its default, or give that file")
    return preset_loader._vectors_for(init.root, embedding, None if given == "default" else given)


def _path(weight) -> str:
    return getattr(weight, "path", None) or weight.name


def transfer_weights(source, target) -> dict:
    """Copies the weights of `source` (the preset's model) into `target` (the same zoo model over a vocabulary that
    extends the preset's).

    Weights are matched in order (both models come from the same builder and settings); a weight of the same shape
    is copied; a weight whose first axis grew (an embedding over the extended vocabulary) gets the preset's rows
    for the old ids and keeps `target`'s own rows for the appended words.

    Returns:
        `{"copied": n, "extended": [weight paths], "new_rows": rows appended}`.

    Raises:
        ValueError: the models have different numbers of weights, or a weight differs otherwise in shape (names
            the weight and both shapes).
    """
    old, new = source.weights, target.weights
    if len(old) != len(new):
        raise ValueError(f"the preset's model has {len(old)} weights, the new model {len(new)}: they are not the "
                         "same architecture")
    copied, extended, new_rows = 0, [], 0
    for a, b in zip(old, new):
        sa, sb = tuple(a.shape), tuple(b.shape)
        if sa == sb:
            b.assign(a.numpy())
            copied += 1
        elif len(sa) == len(sb) and len(sa) >= 1 and sa[1:] == sb[1:] and sb[0] > sa[0]:
            values = np.array(b.numpy())
            values[: sa[0]] = a.numpy()
            b.assign(values)
            extended.append(_path(b))
            new_rows += sb[0] - sa[0]
        else:
            raise ValueError(f"weight {_path(b)}: the preset's has shape {list(sa)}, the new model's {list(sb)}; "
                             "only an embedding may grow (rows for appended words)")
    return {"copied": copied, "extended": extended, "new_rows": new_rows}
