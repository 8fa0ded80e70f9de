"""Writing trained presets: `write_preset` (`keras-match preset RUN --to DIR`), the model card, the
compacted vocabulary, and the figures a preset is measured with. The format and loading are in
`keras_match.artifacts.preset_loader`; `keras_match.artifacts.presets` is the public face of both."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import tempfile

import numpy as np

from keras_match.encoders import EMBEDDING_LAYER
from keras_match.artifacts import storage

from keras_match.artifacts.preset_loader import (
    CARD_FILE, CONFIG_FILE, FIGURES, METADATA_FILE, PREPROCESSOR_FILE, PRESET_FORMAT, WEIGHTS_FILE, _MODEL_ATTR,
    _ZOO_ATTR, _restore, PresetError, _check_digests, _matrix_sha256, _model_digest, _vocabulary_record,
    _write_words, figure_differences, largest_figure_difference, load_preset, preset_dir,
)

__all__ = ["write_preset", "rewrite_card", "compact_vocabulary", "measure", "benchmark_dataset"]


def _frozen_embedding(run):
    """The run's frozen pretrained embedding layer, or None (trained embeddings, or no pretrained vectors)."""
    if not run.config.get("embeddings_sha256"):
        return None
    try:
        layer = run.model.get_layer(EMBEDDING_LAYER)
    except ValueError:
        return None
    return None if layer.trainable else layer


def _skipped(model, layer):
    """What the weights file leaves out: the frozen embedding layer, the pretrained backbone's parts that do not
    train (`_encoder_record`) and any optimizer state."""
    from keras_match.encoders.transformer import frozen_backbone_parts

    skipped = ([layer] if layer is not None else []) + frozen_backbone_parts(model)
    if getattr(model, "optimizer", None) is not None:
        skipped.append(model.optimizer)
    return skipped


def _save_weights(model, path, skipped, config, vocab_size, float16=False, compress=False):
    from keras.src.saving import saving_lib  # save_weights has no objects_to_skip (load_weights has)
    import h5py

    def write(memory):  # in memory, then written by storage.write_hdf5
        if float16 or compress:
            float32 = storage.MemoryFile(memory.name)
            saving_lib.save_weights_only(model, float32, objects_to_skip=skipped)
            _copy_weights(float32, memory, float16=float16, compress=compress)
        else:
            saving_lib.save_weights_only(model, memory, objects_to_skip=skipped)
        with h5py.File(memory, "a") as f:
            f.attrs[_ZOO_ATTR] = str(config.get("zoo"))
            f.attrs[_MODEL_ATTR] = _model_digest(config, vocab_size)

    storage.write_hdf5(path, write)


FLOAT16_MAX = float(np.finfo(np.float16).max)


COMPRESS_FROM = 4096
"""Arrays of at least this many values are gzip-compressed by `write_preset(compress=True)` (a smaller one's
chunk index would outweigh what it saves)."""


def _copy_weights(source, target, *, float16, compress):
    """Copy the HDF5 weights file `source` to `target`, with every float32 array stored as float16 (`float16`;
    groups, attributes and other arrays as they are) and the larger arrays gzip-compressed after HDF5's byte
    shuffle (`compress`; h5py reads them back transparently). A new file rather than datasets replaced in place:
    HDF5 does not give back the space of a deleted dataset. Keras's `load_weights` assigns a float16 array to the
    model's float32 variable by casting it, so the file loads into the same model.

    Raises:
        ValueError: a weight beyond float16's range (65504): it cannot be stored in float16.
    """
    import h5py

    def copy(src, dst):
        for key, value in src.attrs.items():
            dst.attrs[key] = value
        for name, item in src.items():
            if isinstance(item, h5py.Group):
                copy(item, dst.create_group(name))
                continue
            data = item[()]
            if float16 and isinstance(data, np.ndarray) and data.dtype == np.float32:
                if data.size and float(np.max(np.abs(data))) > FLOAT16_MAX:
                    raise ValueError(f"weight {item.name} holds values beyond float16's range ({FLOAT16_MAX:g}): "
                                     "store this preset in float32")
                data = data.astype(np.float16)
            packed = compress and isinstance(data, np.ndarray) and data.size >= COMPRESS_FROM
            copied = dst.create_dataset(name, data=data, **(dict(compression="gzip", shuffle=True) if packed else {}))
            for key, value in item.attrs.items():
                copied.attrs[key] = value

    with h5py.File(source, "r") as src, h5py.File(target, "w") as dst:
        copy(src, dst)


def _encoder_record(model) -> dict | None:
    """`metadata.json` `encoder`: the pinned pretrained encoder the model reads through (its name, the sha256 of
    its weights file), the top layers that trained and the parameters not stored (those of the parts that did not
    train, put back from the pinned weights when the preset loads); None without a backbone."""
    from keras_match.encoders.pretrained import pretrained
    from keras_match.encoders.transformer import backbone_layers

    found = backbone_layers(model)
    if not found:
        return None
    if len(found) > 1 or found[0].encoder is None:
        raise ValueError(f"a preset stores models over one pinned pretrained encoder; this model has "
                         f"{len(found)} backbone layer(s), encoder {found[0].encoder!r}")
    (states,) = found
    weights = pretrained(states.encoder).weights_sha256
    frozen = sum(int(np.prod(w.shape)) for part in states.frozen_parts() for w in part.weights)
    return {"name": states.encoder, "weights_sha256": weights, "trained_layers": states.trainable_layers,
            "layers": states.layers, "frozen_parameters": frozen}


def _card(config, metadata, notes) -> str:
    """The model card (README.md) of a preset."""
    from keras_match import tasks
    from keras_match import families as zoo

    entry, dataset = config.get("zoo"), config.get("dataset")
    benchmark = metadata.get("benchmark") or dataset  # "trecqa-clean" where the run's loader name is "trecqa"
    task = tasks.task_from_config(config)
    try:
        preset = zoo.describe(entry)
    except ValueError:
        preset = {}
    embedding = metadata["embedding"]
    lines = [f"# {entry} trained on {benchmark}", ""]
    if preset.get("description"):
        lines += [preset["description"], ""]
    where = ("no data folder; the pinned encoder from a local folder, or from its public origin once, on first use"
             if metadata.get("encoder") else "no data folder, no network")
    lines += [f"Load it without training ({where}):", "", "```python",
              "import keras_match", "", f"run = keras_match.artifacts.presets.load_preset(PATH)  # a shipped preset: "
              f"keras_match.zoo.load({entry!r}, weights={benchmark!r})",
              *task.usage, "```", "",
              "## Training", ""]
    lines.append(f"- command: `{metadata.get('command') or 'unknown'}`")
    changed = zoo.changed_settings(config.get("settings") or {}, preset,
                                   task.model_settings(preset["model"]) if preset else ())
    if changed:
        lines.append(f"- settings other than the entry's (`keras_match.zoo.describe({entry!r})`): {changed}")
    train_split = config.get("train_split") or (metadata.get("holdout_dev") or {}).get("train_split")
    lines.append(f"- dataset: {dataset} (training split {train_split or 'the default'}"
                 + (f", its first {config['max_train_questions']} questions only" if config.get("max_train_questions")
                    else "") + ")"
                 + (f"; figures on {metadata['benchmark']}" if metadata.get("benchmark") not in (None, dataset)
                    else ""))
    holdout = metadata.get("holdout_dev")
    if holdout:
        lines.append(f"- model chosen on held-out training questions: the last {holdout['fraction']:.0%} of the "
                     f"questions of the first file of {holdout.get('train_split') or 'the training split'} (not "
                     f"trained on) are `dev`; the figures labelled `test` are on {benchmark}'s dev split, whose "
                     f"test labels are not public (`keras-match evaluate --dataset {benchmark}` scores it as `dev`)")
    for split, record in (metadata.get("data_files") or {}).items():
        lines.append(f"- {split} file: `{pathlib.Path(record['file']).name}` (sha256 {record['sha256']})")
    lines.append(f"- seed {metadata.get('seed')}, best epoch {metadata.get('best_epoch')} of "
                 f"{metadata.get('epochs_run')}, finished {metadata.get('date')}")
    versions = metadata.get("versions") or {}
    lines.append(f"- keras-match {metadata.get('keras_match')}, Keras {versions.get('keras')}, TensorFlow "
                 f"{versions.get('tensorflow')}; {metadata['parameters']['total']:,} parameters, "
                 f"{metadata['parameters']['stored']:,} stored ({metadata['weights']['dtype']})")
    encoder = metadata.get("encoder")
    if encoder:
        trained = encoder["trained_layers"]
        what = {"frozen": "frozen", "all": "every layer fine-tuned"}.get(trained, f"its top {trained} layers fine-tuned")
        lines.append(f"- pretrained encoder: {encoder['name']} (`model.safetensors` sha256 {encoder['weights_sha256']}), "
                     f"{what}: its {encoder['frozen_parameters']:,} parameters that did not train are not stored here; "
                     "put back at load from the pinned encoder (`--encoders-dir`, `$KERAS_MATCH_ENCODERS` or the "
                     "user cache, fetched on first use)")
    elif embedding["frozen"]:
        lines.append(f"- word vectors: {embedding['vectors']} (sha256 {embedding['vectors_sha256']}), frozen: not "
                     f"stored here; rebuilt at load from the installed vectors ({embedding['rows']:,} x "
                     f"{embedding['dim']})")
    else:
        lines.append("- word vectors: trained with the model, stored in the weights"
                     + (f" (initialised from {embedding['vectors']})" if embedding.get("vectors") else ""))
    reported = preset.get("reported") or {}
    reported = reported if reported.get("dataset") in (benchmark, dataset) else {}
    units = ((config.get("settings") or {}).get("model") or {}).get("units")
    figures = {split: values for split, values in (metadata.get("figures") or {}).items() if values}
    columns = [key for key in FIGURES if any(key in values for values in figures.values())]
    lines += ["", "## Figures", "", "| split | " + " | ".join(columns) + " |", "| --- |" + " --- |" * len(columns)]
    for split, values in figures.items():
        lines.append(f"| {split} | " + " | ".join(_figure(values.get(key)) for key in columns) + " |")
    if reported:
        lines.append("| paper (" + str(reported.get("table") or reported.get("source") or "reported") + ") | "
                     + " | ".join(_figure(reported.get(key)) for key in columns) + " |")
        if reported.get("embeddings"):
            lines += ["", f"The paper's word vectors: {reported['embeddings']}."]
    else:  # the paper has no figure on this benchmark: say so, with the entry's note on what it reports instead
        why = ((preset.get("notes") or {}).get("reported") or "").strip()
        lines += ["", f"The paper reports no figure on {benchmark}" + (f": {why}" if why else ".")]
    weights = metadata.get("weights") or {}
    if weights.get("dtype") == "float16":
        lines += ["", _float16_text(metadata)]
    if preset.get("paper"):
        lines += ["", f"Paper: {preset['paper']}"]
    lines += ["", "## Data and terms", "", f"Trained on {benchmark}: {_license(dataset)}. The weights derive from "
              "that data: use them under its terms."]
    lines += ["", "## Intended use and limits", "",
              f"- Research and comparison: {task.intended_use or 'text matching'}, in English, in the style of "
              "the training data.",
              "- Words outside the vocabulary (`vocabulary.txt`"
              + (", then the word vectors' words" if metadata.get("vocabulary") else "")
              + ") are read as one unknown word; texts are cut to the preprocessor's truncation lengths "
              "(`preprocessor.json`).",
              (f"- WordPiece tokens of {metadata['encoder']['name']}" if metadata.get("encoder") else
               f"- Word vectors of {embedding['dim']} dimensions")
              + (" (the papers mostly use 300)" if embedding["dim"] and embedding["dim"] < 300 and embedding["frozen"]
                 else "")
              + (f", {units} hidden units where the paper has {reported['units']}" if units and reported.get("units")
                 and units != reported["units"] else "")
              + ": the figures above, not the paper's, are what to expect.",
              "- Not for decisions about people; not evaluated outside its dataset."]
    if notes:
        lines += ["", "## Notes", "", str(notes).strip()]
    return "\n".join(lines) + "\n"


def _card_notes(root):
    """The "Notes" section of a preset's model card, or None."""
    card = root / CARD_FILE
    old = card.read_text(encoding="utf-8") if card.is_file() else ""
    return old.split("\n## Notes\n", 1)[1].strip() if "\n## Notes\n" in old else None


def rewrite_card(path_or_name) -> pathlib.Path:
    """Writes a preset's model card (`README.md`) again from its `config.json` and `metadata.json`, keeping its
    "Notes" section, and records the new card's sha256 in `files.sha256`; the other files are not touched. For a
    preset written before a change to the cards (or whose card was edited by hand). Returns the card's path.

    Raises:
        PresetError: a file other than the card differs from its `files.sha256` (checked before anything is
            written).
    """
    from keras_match.artifacts import runs

    root = preset_dir(path_or_name)
    _check_digests(root, skip=(CARD_FILE,))  # the card itself is what is written again
    card = root / CARD_FILE
    notes = _card_notes(root)
    config = json.loads((root / CONFIG_FILE).read_text(encoding="utf-8"))
    metadata = json.loads((root / METADATA_FILE).read_text(encoding="utf-8"))
    storage.write_text(card, _card(config, metadata, notes))
    runs.record_digests(root)
    return card


def compact_vocabulary(path_or_name, *, vectors=None) -> bool:
    """Rewrites a format-1 preset (its whole vocabulary stored) in format 2: `vocabulary.txt` keeps the words
    before the frozen vectors' own, `metadata.json` records them (`vocabulary`), the card and `files.sha256` are
    written again; the weights and the other files are not touched. Loading it gives the same vocabulary (checked
    here before anything is written).

    Args:
        path_or_name: a preset folder or a shipped preset's name.
        vectors: where the frozen vectors are, as for `load_preset`.

    Returns:
        True if rewritten; False if it already is of format 2, has no frozen vectors, or its vocabulary does not end
        with the vectors' words.

    Raises:
        PresetError: a file differs from its `files.sha256`, or the vectors of the recorded sha256 are not found.
    """
    from keras_match import preprocessors
    from keras_match.artifacts import runs

    root = preset_dir(path_or_name)
    _check_digests(root)
    metadata = runs.read_json(root / METADATA_FILE, _restore(root))
    if metadata.get("format") != 1 or not (metadata.get("embedding") or {}).get("frozen"):
        return False
    config = runs.read_config(root / CONFIG_FILE, _restore(root))
    preprocessor = preprocessors.Preprocessor.load(root)
    kept = _vocabulary_record(root, preprocessor, config, metadata["embedding"], vectors)
    if kept is None:
        return False
    words, record = kept
    if record["words"] + 2 != metadata.get("vocab_size"):
        raise PresetError(f"{root / preprocessor.VOCABULARY_FILE} gives {record['words'] + 2} token ids but the "
                          f"preset's model has {metadata.get('vocab_size')} ({root / METADATA_FILE}); {_restore(root)}")
    notes = _card_notes(root)
    metadata.update(format=PRESET_FORMAT, vocabulary=record)
    _write_words(root / preprocessor.VOCABULARY_FILE, words)
    runs.write_json(root / METADATA_FILE, metadata)
    storage.write_text(root / CARD_FILE, _card(config, metadata, notes))
    runs.record_digests(root)
    return True


def _float16_text(metadata) -> str:
    """The model card's paragraph on float16 weights: what they give against the run's float32 figures."""
    from keras_match.metrics import figure_name

    weights = metadata["weights"]
    trained = metadata.get("trained_precision", "float32")
    text = ("The weights are stored in float16 (half the size of float32); loading casts them back to the model's "
            "float32. The figures above are the run's, with its float32 weights"
            + (f", computed in {trained}. " if trained != "float32" else ". "))
    measured = weights.get("figures")
    if not measured:
        return text + f"The float16 weights' figures were not measured ({weights.get('not_measured', 'no data')})."
    reference = weights.get("reference_figures") or metadata.get("figures") or {}
    if weights.get("reference_figures"):
        text += ("Computed in float32, as a preset loads, the float32 weights give other figures (the float32 "
                 "figures below), and the float16 weights are compared with those. ")
    parts = []
    for split, values in measured.items():
        run = reference.get(split) or {}
        keys = [key for key in FIGURES if key in values and key in run]
        parts.append(f"{split} " + ", ".join(f"{figure_name(key)} {values[key]:.4f} "
                                             f"(float32 {run[key]:.4f}, {values[key] - run[key]:+.4f})"
                                             for key in keys))
    return (text + f"With the float16 weights, on {weights.get('benchmark') or metadata.get('dataset')}: "
            + "; ".join(parts) + f" (largest difference {weights.get('max_abs_difference', 0):.4f}).")


def measure(run, dataset, data_dir=None, splits=("dev", "test"), download=None) -> dict:
    """The figures of a loaded run or preset (`keras_match.artifacts.runs.Run`) on the splits of a benchmark, as
    `keras-match evaluate --dataset` gives them (the dataset's own task rules).

    Args:
        run: a `keras_match.artifacts.runs.Run` (`load_preset`, `keras_match.artifacts.runs.load_run`).
        dataset: a dataset name of `keras-match --dataset` (`"wikiqa-answered"`) or a loaded dataset.
        data_dir: the benchmark data folder (default `$KERAS_MATCH_DATA`, then the user cache).
        splits: the splits to score; those the dataset lacks are left out.
        download: as `keras_match.datasets.catalog.load_by_name` (`False`: never fetch).
    """
    from keras_match import tasks
    from keras_match.datasets.catalog import load_by_name

    loaded = load_by_name(dataset, data_dir=data_dir, download=download)
    task = tasks.task_for(loaded)
    return {split: run.evaluate(loaded[split], task=task) for split in splits if split in loaded}


def _holdout_record(holdout_dev) -> dict:
    record = dict(holdout_dev)
    fraction = record.get("fraction")
    if not isinstance(fraction, (int, float)) or not 0 < fraction < 1:
        raise ValueError(f"holdout_dev: 'fraction' must be a number in (0, 1), got {fraction!r}")
    return {"fraction": float(fraction), "train_split": record.get("train_split")}


def benchmark_dataset(benchmark, holdout_dev=None, data_dir=None, download=None):
    """A preset's benchmark loaded as its figures see it: `keras_match.datasets.catalog.load_by_name(benchmark)`,
    or, for a preset chosen on held-out training questions (`metadata.json` `holdout_dev`), that benchmark with
    the same questions held out as `dev` and its dev split as `test` (`keras_match.datasets.base.hold_out_dev`).

    Args:
        benchmark: a dataset name of `keras-match --dataset`.
        holdout_dev: `None`, or `{"fraction": ..., "train_split": ...}` (`write_preset`'s `holdout_dev`).
        data_dir: as `load_by_name`.
        download: as `load_by_name`.

    Raises:
        FileNotFoundError, keras_match.datasets.download.DataError: the data is not found.
        ValueError: `holdout_dev` of a dataset that has a test split.
    """
    from keras_match.datasets.base import hold_out_dev
    from keras_match.datasets.catalog import load_by_name

    if not holdout_dev:
        return load_by_name(benchmark, data_dir=data_dir, download=download)
    loaded = load_by_name(benchmark, data_dir=data_dir, download=download, train_split=holdout_dev.get("train_split"))
    return hold_out_dev(loaded, holdout_dev["fraction"])


def _figure(value):
    return "" if value is None or isinstance(value, (dict, list)) else (f"{value:.4f}" if isinstance(value, float)
                                                                         else str(value))


def _license(dataset) -> str:
    from keras_match.datasets import catalog, sources

    name = catalog.SPECS.get(str(dataset), (str(dataset),))[0]
    # a benchmark of several datasets (dialog-babi-task1 ... task6) has one source, named by their common prefix
    found = [source for source in sources.SOURCES if name == source or name.startswith(source + "-")]
    if not found:
        return "the user's own data (its terms are the user's)"
    return sources.source(max(found, key=len)).license or "terms not stated"


def write_preset(run_dir, target_dir, *, card_notes=None, float16=False, compress=False, benchmark=None,
                 data_dir=None, holdout_dev=None, vectors=None) -> pathlib.Path:
    """Write the trained preset of a finished run folder.

    Args:
        run_dir: a finished run written by `keras_match.train` (`keras-match train`).
        target_dir: the preset folder to write; it must not exist (or be empty). It is written under a temporary
            name beside it and renamed into place, so it never holds half a preset.
        card_notes: text added to the model card (`README.md`) under "Notes".
        float16: store the trained weights in float16 (about half the file; loading casts them back to the
            model's float32). The preset written is then loaded and scored on `benchmark`'s dev and test splits
            when its data is found: `metadata.json` `weights` records those figures, their difference from the
            float32 weights' figures and the largest one (`max_abs_difference`); the model card says so. The
            float32 figures are the run's, or for a run that computed in another precision (`mixed_bfloat16`)
            those of its float32 weights computed in float32 (`weights.reference_figures`). Without the data,
            `weights.not_measured` says why.
        compress: gzip-compress the weights file's larger arrays (`COMPRESS_FROM` values or more) after HDF5's
            byte shuffle: the same weights in a smaller file (float16 MiniLM layers: about 7 % smaller), read back
            by `load_preset` as they are. For presets shipped in the package, whose size is budgeted.
        benchmark: the dataset name (`keras-match --dataset`) the run's figures are of, recorded as
            `metadata.json` `benchmark` and used for the float16 figures; default the run's dataset
            (`config.json`), which does not name a variant such as `wikiqa-answered`.
        data_dir: the benchmark data folder for the float16 figures (default `$KERAS_MATCH_DATA`, then the
            user cache).
        holdout_dev: for a run chosen on held-out training questions and scored on the benchmark's dev split
            (`benchmarks/reproduce.py --holdout-dev`, a benchmark whose test labels are not public):
            `{"fraction": 0.2, "train_split": "train-part2+train-2015"}`, the split the questions were held out
            of. Recorded as `metadata.json` `holdout_dev`; the figures the preset is checked against are then
            those of `benchmark_dataset(benchmark, holdout_dev)`. Default (None): the run's `config.json`
            `holdout_dev` (a run written before runs recorded it has none: pass it); `{}` records none whatever
            the run says.
        vectors: where the run's frozen vectors are if not where `load_preset` looks (see there). With them, the
            preset's `vocabulary.txt` keeps only the words before the vectors' own (`metadata.json`
            `vocabulary`); without them (not found), the whole vocabulary.

    Returns:
        The preset folder's path.

    Raises:
        FileNotFoundError: `run_dir` is not a finished run.
        FileExistsError: `target_dir` exists and is not empty.
        keras_match.artifacts.storage.DamagedRunError: a file of the run differs from what it wrote.
        keras_match.artifacts.storage.WriteError: the preset could not be written.
    """
    from keras_match.artifacts import runs
    from keras_match.datasets.download import sha256_of

    files = runs.RunFiles(pathlib.Path(run_dir))
    if not files.metrics.is_file():
        raise FileNotFoundError(f"{files.metrics} not found: {run_dir} is not a finished keras-match run")
    target = pathlib.Path(target_dir)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise FileExistsError(f"{target} exists: give a new folder for the preset")
    run = runs.load_run(files.root)  # checks the run's files.sha256
    metrics = runs.read_json(files.metrics, "restore the file or retrain the run")
    config, preprocessor, model = run.config, run.preprocessor, run.model
    if holdout_dev is None:  # the run's own record: its dev split held out of its training questions, or none
        holdout_dev = config.get("holdout_dev")
    layer = _frozen_embedding(run)
    total = int(model.count_params())
    frozen_count = int(np.prod(layer.embeddings.shape)) if layer is not None else 0
    encoder = _encoder_record(model)
    frozen_encoder = encoder["frozen_parameters"] if encoder else 0
    provenance = metrics.get("provenance") or {}
    from keras_match import __version__
    from keras_match.artifacts import provenance as provenance_lib

    embedding = {"frozen": layer is not None, "layer": EMBEDDING_LAYER, "vectors": config.get("embeddings"),
                 "vectors_sha256": config.get("embeddings_sha256")}
    if layer is not None:
        matrix = np.asarray(layer.embeddings.numpy(), np.float32)
        embedding.update(rows=int(matrix.shape[0]), dim=int(matrix.shape[1]), seed=config.get("seed"),
                         missing_vectors=(config.get("settings") or {}).get("preprocessing", {})
                         .get("missing_vectors", "random"), matrix_sha256=_matrix_sha256(matrix))
    else:
        try:
            shape = model.get_layer(EMBEDDING_LAYER).embeddings.shape
            embedding.update(rows=int(shape[0]), dim=int(shape[1]))
        except ValueError:
            embedding.update(rows=None, dim=None)
    metadata = {
        "format": PRESET_FORMAT,
        "zoo": config.get("zoo"),
        "dataset": config.get("dataset"),
        "task": config.get("task"),
        "head": run.head,
        "label_names": run.label_names,
        "vocab_size": int(preprocessor.vocab_size),
        "keras_match": (provenance.get("code") or {}).get("keras_match"),
        "versions": provenance.get("versions"),
        "parameters": {"total": total, "stored": total - frozen_count - frozen_encoder,
                       "frozen_embedding": frozen_count, "frozen_encoder": frozen_encoder},
        **({"encoder": encoder} if encoder else {}),
        "benchmark": str(benchmark or config.get("dataset")),
        **({"holdout_dev": _holdout_record(holdout_dev)} if holdout_dev else {}),
        "weights": {"file": WEIGHTS_FILE, "dtype": "float16" if float16 else "float32",
                    **({"compression": "gzip"} if compress else {})},
        # what the run computed in (its figures' precision); the preset loads in float32 unless asked
        "trained_precision": ((config.get("settings") or {}).get("training") or {}).get("precision", "float32"),
        "embedding": embedding,
        "command": provenance.get("command"),
        "seed": config.get("seed"),
        "data_files": config.get("data_files"),
        "figures": {split: metrics[split] for split in ("dev", "test") if split in metrics},
        "best_epoch": metrics.get("best_epoch"),
        "epochs_run": metrics.get("epochs_run"),
        "date": provenance.get("finished"),
        "provenance": provenance,
        "written": {"by": f"keras-match {__version__}", "from": str(files.root.resolve()),
                    "date": provenance_lib.timestamp(), "versions": provenance_lib.versions()},
    }
    staged = None
    with storage.folders_made_for(target.parent):  # no empty folder left when the write fails
        try:
            with storage.writing(target):
                target.parent.mkdir(parents=True, exist_ok=True)
                staged = pathlib.Path(tempfile.mkdtemp(prefix=f".staged-{target.name}-", dir=target.parent))
                shutil.copyfile(files.config, staged / CONFIG_FILE)
                if files.preprocessor.is_file():
                    shutil.copyfile(files.preprocessor, staged / PREPROCESSOR_FILE)
                    for name in preprocessor.ASSET_FILES:
                        if (files.root / name).is_file():
                            shutil.copyfile(files.root / name, staged / name)
                else:  # a run written before preprocessor.json existed
                    preprocessor.save(staged)
                if layer is not None:
                    kept = _vocabulary_record(files.root, preprocessor, config, embedding, vectors)
                    if kept is not None:
                        words, metadata["vocabulary"] = kept
                        _write_words(staged / preprocessor.VOCABULARY_FILE, words)
                _save_weights(model, staged / WEIGHTS_FILE, _skipped(model, layer), config, preprocessor.vocab_size,
                              float16=float16, compress=compress)
                metadata["weights"]["sha256"] = sha256_of(staged / WEIGHTS_FILE)
                metadata["weights"]["bytes"] = (staged / WEIGHTS_FILE).stat().st_size
                runs.write_json(staged / METADATA_FILE, metadata)
                storage.write_text(staged / CARD_FILE, _card(config, metadata, card_notes))
                runs.record_digests(staged)
                if float16:  # the figures of the preset as written: loaded from its files, as a user loads it
                    metadata["weights"].update(_float16_figures(staged, metadata, data_dir, run))
                    runs.write_json(staged / METADATA_FILE, metadata)
                    storage.write_text(staged / CARD_FILE, _card(config, metadata, card_notes))
                    runs.record_digests(staged)
                if target.exists():
                    target.rmdir()  # empty (checked above)
                os.chmod(staged, 0o755)  # mkdtemp's folder is the owner's only; a preset is read by others
                os.rename(staged, target)
        finally:
            if staged is not None:
                shutil.rmtree(staged, ignore_errors=True)
    return target


def _float16_figures(staged, metadata, data_dir, run) -> dict:
    """`metadata.json` `weights` entries of a float16 preset: its figures on the benchmark's dev and test splits
    (`figures`), their differences from those of the float32 weights (`difference`, `max_abs_difference`), or why
    they were not measured (`not_measured`).

    The float32 figures are the run's own when it computed in float32. A run that computed in another precision
    (`trained_precision`, e.g. `mixed_bfloat16`) scores a little differently in float32, which is what a preset
    loads in: its float32 weights (`run`, loaded in float32) are scored on the same splits
    (`reference_figures`), so that the difference is what storing them in float16 changed, not the precision the
    run computed in."""
    from keras_match.datasets.catalog import known_names
    from keras_match.datasets.download import DataError

    benchmark = metadata["benchmark"]
    if benchmark not in known_names():
        raise ValueError(f"float16 figures: unknown benchmark {benchmark!r} (one of {', '.join(known_names())})")
    try:  # the data folder only: writing a preset never starts a download
        measured = measure(load_preset(staged), benchmark_dataset(benchmark, metadata.get("holdout_dev"),
                                                                  data_dir=data_dir, download=False))
    except (FileNotFoundError, DataError) as error:
        return {"benchmark": benchmark, "figures": None,
                "not_measured": f"{benchmark}'s data not found ({' '.join(str(error).split())[:300]})"}
    reference = metadata.get("figures") or {}
    for split, values in measured.items():  # the same questions, or the differences mean nothing
        count = next((key for key in ("num_questions", "num_pairs", "num_examples") if key in values), None)
        if count and count in (reference.get(split) or {}) and values[count] != reference[split][count]:
            return {"benchmark": benchmark, "figures": None,
                    "not_measured": f"{benchmark} {split} has {values[count]} {count[4:]}, the run's figures "
                                    f"{reference[split][count]}: another variant of the data (give --dataset)"}
    extra = {}
    if metadata.get("trained_precision", "float32") != "float32":
        reference = measure(run, benchmark_dataset(benchmark, metadata.get("holdout_dev"), data_dir=data_dir,
                                                   download=False))
        extra = {"reference_figures": reference}
    return {"benchmark": benchmark, "figures": measured, **extra,
            "difference": figure_differences(measured, reference),
            "max_abs_difference": largest_figure_difference(measured, reference)}
