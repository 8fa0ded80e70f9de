"""The model families and their zoo entries: registration (`Family`, `register`), the entries' presets
(`names`, `describe`), their settings (`resolve`) and their models (`build`, `compile_model`).

`keras_match.zoo` is the public face of this module (everything here, plus `load` and `trained`, which read
trained presets): the presets and runs modules import this one, so that loading a trained preset does not
import itself back. The layout of a zoo entry is described in `keras_match.zoo`.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib.resources
import json
import os
import pathlib
import typing

import keras

from keras_match import optimizers
from keras_match import precision as precision_lib
from keras_match.registries import Registry
from keras_match.settings import NON_NEGATIVE_NUMBER
from keras_match.settings import OPTIONAL_POSITIVE_INT
from keras_match.settings import OPTIONAL_RATE
from keras_match.settings import POSITIVE_INT
from keras_match.settings import RATE
from keras_match.settings import Rule
from keras_match.settings import Settings
from keras_match.settings import TrainingSettings
from keras_match.settings import check_value
from keras_match.settings import section_fields

__all__ = ["Family", "register", "unregister", "families", "family_of", "names", "describe", "resolve", "build",
           "builder_arguments", "setting_names", "changed_settings", "optimizer", "compile_model", "read_config",
           "COMMON_MODEL_RULES", "SECTIONS", "PRESET_PACKAGE", "BACKBONE_SETTINGS", "BACKBONE_RULES"]

PRESET_PACKAGE = "keras_match.zoo_presets"
SECTIONS = ("model", "training", "preprocessing")
_MERGED = SECTIONS + ("notes",)

def _heads():
    from keras_match import heads

    return heads


COMMON_MODEL_RULES = {
    "dropout": RATE,
    "embedding_dropout": OPTIONAL_RATE,
    "l2": NON_NEGATIVE_NUMBER,
    "embedding_dim": POSITIVE_INT,
    "projection_dim": OPTIONAL_POSITIVE_INT,
    "trainable_embeddings": Rule(lambda v: isinstance(v, bool), "true or false"),
    "head": Rule(lambda v: v in _heads().HEADS, "one of the heads softmax, score, classification "
                 "(keras_match.heads)"),
}
"""Rules of model settings that several families share; a family's own `rules` add to (and win over) these."""


def _pretrained_names():
    from keras_match.encoders import pretrained

    return pretrained.names()


BACKBONE_SETTINGS = {"backbone": None, "backbone_layers": "last", "backbone_trainable": "frozen"}
"""The model settings every pair family takes to read a pretrained transformer instead of word vectors, with their
defaults (`backbone: null`: the word vectors of the paper). `backbone` names a pinned pretrained encoder
(`keras_match.encoders.pretrained.names()`, e.g. `"minilm-l6"`): the model's input encoder is then a
`keras_match.encoders.TransformerEncoder` (`backbone_layers`: its `layers`, `backbone_trainable`: its
`trainable`), the preprocessor tokenizes with that encoder's WordPiece vocabulary (its `tokenizer` setting follows
`backbone`), and the word-vector settings (`embedding_dim`, `trainable_embeddings`, the vectors file) are not
used."""

BACKBONE_RULES = {
    "backbone": Rule(lambda v: v is None or (isinstance(v, str) and v in _pretrained_names()),
                     "null (the word vectors) or a pretrained encoder: minilm-l6 (keras_match.encoders.pretrained)"),
    "backbone_layers": Rule(lambda v: v in ("last", "mix"), "last or mix"),
    "backbone_trainable": Rule(lambda v: v in ("frozen", "all") or (isinstance(v, int) and not isinstance(v, bool)
                                                                   and v >= 0),
                               "frozen, all or an integer k >= 0 (the top k transformer layers train)"),
}
"""The rules of `BACKBONE_SETTINGS`."""


@dataclasses.dataclass(frozen=True)
class Family:
    """A model family's registration.

    Args:
        name: the family's name, also its folder under `zoo/` and its search space `tuning/<name>.json`.
        builders: `{builder name: function}`; a builder takes an input encoder (`keras_match.encoders`; or,
            through `encoders.takes_input_encoder`, the word-vector settings `vocab_size`, `embeddings`,
            `embedding_dim`, `trainable_embeddings`), the preprocessor's other model arguments (`num_features`
            for pair features) and its model settings, and returns an uncompiled `keras.Model` ending in a head
            of `keras_match.heads` (`models.common.MatchingHead`).
        preprocessor: the name of the preprocessor its models read (`keras_match.preprocessors`), `"pair"` by
            default.
        rules: `{model setting: keras_match.settings.Rule}` for its model settings (added to
            `COMMON_MODEL_RULES`); settings without a rule keep the kind of the preset's value.
        search_space: a search-space dict, or the file name under `tuning/` (default `"<name>.json"`).
        explain: optional `explain(run, texts, out, **options) -> list of str`, what `keras-match explain`
            prints after writing the plot `out`; `options` are the family's `explain_options` the user set.
        explain_options: `{option name: argparse keyword arguments}` of the options `explain` takes, e.g.
            `{"window": {"type": int, "help": "..."}}`: `keras-match explain` reads `--window` for this family's
            runs only (and lists it in `keras-match explain --help`), so the CLI names no family's options.
        score_candidates: optional `score_candidates(model) -> fn(inputs, candidate_ids) -> scores [batch, C]`:
            for a family whose models select among a fixed candidate set kept in the model, the same model
            scoring candidates given at call time (`candidate_ids` int32 `[C, length]`, shared by the batch). The
            export then adds the task's signature that takes candidate texts (`respond` of response selection).
        serving_forward: optional `serving_forward(model) -> fn(inputs) -> outputs`, equal to `model(inputs,
            training=False)` with the weights as they are when it is called: what the export serves instead of
            the model (e.g. with work that depends only on the weights done once).
        presets: optional `{entry: preset dict}` held in memory (a family defined outside the package, a test's);
            default: the JSON files of `zoo/<name>/`.
    """

    name: str
    builders: dict
    preprocessor: str = "pair"
    rules: dict = dataclasses.field(default_factory=dict)
    search_space: typing.Any = None
    explain: typing.Callable | None = None
    explain_options: dict = dataclasses.field(default_factory=dict)
    score_candidates: typing.Callable | None = None
    serving_forward: typing.Callable | None = None
    presets: dict | None = None

    def builder(self, name):
        """The builder function `name`.

        Raises:
            ValueError: the family has no such builder.
        """
        if name not in self.builders:
            raise ValueError(f"family {self.name!r} has no builder {name!r}; its builders: {sorted(self.builders)}")
        return self.builders[name]

    def model_rules(self) -> dict:
        return {**COMMON_MODEL_RULES, **self.rules}

    def preprocessor_class(self):
        from keras_match import preprocessors

        return preprocessors.get(self.preprocessor)


_FAMILIES = Registry("keras_match.models", "model family", packages_only=True)


def register(family: Family) -> Family:
    """Adds `family` to the zoo (a family of the same name is replaced). Returns it.

    Raises:
        ValueError: `family` is not a `Family`, or one of its builder names belongs to another family.
    """
    if not isinstance(family, Family):
        raise ValueError(f"register takes a keras_match.zoo.Family, got {type(family).__name__}")
    for other in _FAMILIES.so_far().values():
        shared = sorted(set(other.builders) & set(family.builders))
        if other.name != family.name and shared:
            raise ValueError(f"family {family.name!r}: builder names {shared} belong to family {other.name!r}")
    return _FAMILIES.register(family.name, family)


unregister = _FAMILIES.unregister
"""Removes the family `name` from the zoo (a family defined for a while, a test's). Returns it, or None."""


def families() -> dict:
    """`{name: Family}` of every registered family (the package's family folders are imported on first use)."""
    return _FAMILIES.all()


def _raw_presets() -> dict:
    """`{entry: (family name, preset dict as written)}` of every family."""
    found = {}
    root = importlib.resources.files(PRESET_PACKAGE)
    for family in families().values():
        if family.presets is not None:
            items = [(name, copy.deepcopy(preset)) for name, preset in family.presets.items()]
        else:
            folder = root / family.name
            items = []
            if folder.is_dir():
                for path in sorted(folder.iterdir(), key=lambda p: p.name):
                    if path.name.endswith(".json"):
                        items.append((path.name[: -len(".json")], _read_preset(path)))
        for name, preset in items:
            if name in found:
                raise ValueError(f"zoo entry {name!r} is defined by families {found[name][0]!r} and {family.name!r}")
            found[name] = (family.name, preset)
    return found


def _read_preset(path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"zoo preset {path}: not valid JSON ({error})") from None


def _merge(parent: dict, child: dict) -> dict:
    merged = copy.deepcopy(parent)
    merged.pop("abstract", None)
    for key, value in child.items():
        if key in _MERGED and isinstance(value, dict):
            merged[key] = {**merged.get(key, {}), **copy.deepcopy(value)}
        elif key not in ("extends", "unset"):
            merged[key] = copy.deepcopy(value)
    for section, keys in (child.get("unset") or {}).items():
        for key in keys:
            merged.get(section, {}).pop(key, None)
    return merged


def _expanded(name, raw, chain=()):
    if name in chain:
        raise ValueError(f"zoo presets extend each other in a circle: {' -> '.join(chain + (name,))}")
    if name not in raw:
        raise ValueError(f"zoo entry {chain[-1]!r} extends {name!r}, which is no zoo preset")
    family, preset = raw[name]
    parent_name = preset.get("extends")
    if parent_name is None:
        merged = _merge({}, preset)
        merged["abstract"] = bool(preset.get("abstract"))
        return family, merged
    parent_family, parent = _expanded(parent_name, raw, chain + (name,))
    if parent_family != family:
        raise ValueError(f"zoo entry {name!r} ({family}) extends {parent_name!r} of another family ({parent_family})")
    merged = _merge(parent, preset)
    merged["abstract"] = bool(preset.get("abstract"))
    return family, merged


def names():
    """Every zoo entry's name (abstract presets excluded), sorted."""
    raw = _raw_presets()
    return sorted(name for name in raw if not _expanded(name, raw)[1]["abstract"])


def family_of(name) -> Family:
    """The `Family` of zoo entry `name`."""
    return families()[describe(name)["family"]]


def describe(name):
    """The preset of zoo entry `name` as a dict, `extends` applied, every section with its defaults (a copy).

    Keys: `name`, `family`, `builder`, `description`, `notes` (dict), `paper`, `model`, `training`,
    `preprocessing`, `dataset`, `reported`.

    Raises:
        ValueError: `name` is not a zoo entry (the message lists the entries), or its preset is malformed.
    """
    raw = _raw_presets()
    if name not in raw or _expanded(name, raw)[1]["abstract"]:
        listed = sorted(n for n in raw if not _expanded(n, raw)[1]["abstract"])
        raise ValueError(f"unknown zoo entry {name!r}; the zoo has: {', '.join(listed)}")
    family_name, preset = _expanded(name, raw)
    family = families()[family_name]
    if "builder" not in preset or "model" not in preset:
        raise ValueError(f"zoo preset {name!r} names no builder or model settings")
    family.builder(preset["builder"])
    preprocessing_class = family.preprocessor_class().Settings
    preset.pop("abstract", None)
    preset.update(
        name=name,
        family=family_name,
        notes=dict(preset.get("notes") or {}),
        training={**TrainingSettings().to_dict(), **preset.get("training", {})},
        preprocessing={**preprocessing_class().to_dict(), **preset.get("preprocessing", {})},
    )
    for key in ("description", "paper", "dataset", "reported"):
        preset.setdefault(key, None)
    return preset


def changed_settings(settings, preset, task_settings=()) -> str:
    """A run's model and training `settings` (its config's `settings`) that differ from its zoo entry's `preset`
    (`describe(name)`), as `section key value (the entry's: value)` items joined by "; " ("" if none, or `preset`
    is empty: an entry the zoo does not know). A backbone setting the entry does not name is compared with its
    default (`BACKBONE_SETTINGS`); any other setting the entry does not name is listed as such. Left out: the
    model settings the run's task sets (`task_settings`, the keys of `Task.model_settings`: the head, the
    classes) and the preprocessing, which follows the backbone. The model cards of presets list them
    (`keras_match.artifacts.preset_writer`)."""
    if not preset:
        return ""
    items = []
    for section in ("model", "training"):
        entry = preset.get(section) or {}
        if section == "model":
            entry = dict(BACKBONE_SETTINGS, **entry)
        for key, value in (settings.get(section) or {}).items():
            if section == "model" and key in task_settings:
                continue
            if key not in entry:
                items.append(f"{section} `{key}` {json.dumps(value)} (the entry does not set it)")
            elif entry[key] != value:
                items.append(f"{section} `{key}` {json.dumps(value)} (the entry's: {json.dumps(entry[key])})")
    return "; ".join(items)


def _builder_arguments(family, builder):
    from keras_match import encoders

    return encoders.builder_settings(family.builder(builder))


def builder_arguments(settings: Settings) -> list:
    """The names of the arguments the builder of `settings` takes."""
    return _builder_arguments(families()[settings.family], settings.builder)


def resolve(name, **overrides) -> Settings:
    """The settings of zoo entry `name` with `overrides` applied by name, checked.

    Returns:
        `keras_match.settings.Settings`.

    Raises:
        ValueError: unknown entry, a setting that the entry does not have (the message lists the valid ones),
            or a value that breaks its rule (the message names the setting and what it must be).
    """
    preset = describe(name)
    family = families()[preset["family"]]
    preprocessor_class = family.preprocessor_class()
    data_arguments = set(preprocessor_class.MODEL_ARGUMENTS) | {"embeddings"}
    builder_arguments = [a for a in _builder_arguments(family, preset["builder"]) if a not in data_arguments]
    model, training, preprocessing = dict(preset["model"]), preset["training"], preset["preprocessing"]
    rules = family.model_rules()
    takes_backbone = family.preprocessor == "pair"
    if takes_backbone:
        rules = {**BACKBONE_RULES, **rules}
    unknown = []
    for key, value in overrides.items():
        if takes_backbone and key in BACKBONE_SETTINGS and key not in model:
            check_value(key, value, rules[key])
            model[key] = value
        elif key in training:
            training[key] = value
        elif key in preprocessing:
            preprocessing[key] = value
        elif key in model or key in builder_arguments:
            check_value(key, value, rules.get(key), preset["model"].get(key))
            model[key] = value
        else:
            unknown.append(key)
    if not takes_backbone and set(unknown) & set(BACKBONE_SETTINGS):
        raise ValueError(f"zoo entry {name!r}: the {family.name} family reads no pretrained backbone (setting(s) "
                         f"{sorted(set(unknown) & set(BACKBONE_SETTINGS))}): only the pair families (ranking and "
                         "classification of a question and an answer) put a transformer under their body; "
                         "use its word vectors (--embeddings)")
    if unknown:
        valid = sorted(set(model) | set(training) | set(preprocessing) | set(builder_arguments)
                       | (set(BACKBONE_SETTINGS) if takes_backbone else set()))
        raise ValueError(f"zoo entry {name!r}: unknown setting(s) {unknown}; valid settings are {valid}")
    backbone = model.get("backbone")
    if backbone is not None and "tokenizer" in preprocessing:  # ids of the backbone's WordPiece vocabulary
        if overrides.get("tokenizer", backbone) != backbone:
            raise ValueError(f"setting tokenizer={json.dumps(overrides['tokenizer'])}: must be {backbone} (or "
                             f"unset) with backbone={backbone}, which reads the ids of its own WordPiece vocabulary")
        preprocessing["tokenizer"] = backbone
    settings = Settings(
        name=name,
        family=family.name,
        builder=preset["builder"],
        model=model,
        training=TrainingSettings.from_dict(training, f"zoo entry {name!r}"),
        preprocessing=preprocessor_class.Settings.from_dict(preprocessing, f"zoo entry {name!r}"),
    )
    _check_model_arguments(settings, family, preprocessor_class)
    if settings.training.precision == "auto":  # a run records what it computes in, not what picked it
        settings = dataclasses.replace(settings, training=dataclasses.replace(
            settings.training, precision=precision_lib.resolve("auto")))
    return settings


def _check_model_arguments(settings, family, preprocessor_class):
    """A preprocessing setting that gives the model an input its builder does not take fails here."""
    taken = _builder_arguments(family, settings.builder)
    for argument, value in preprocessor_class.default_model_arguments(settings.preprocessing).items():
        if value and argument not in taken:
            raise ValueError(f"zoo entry {settings.name!r}: its builder {settings.builder!r} takes no {argument}, "
                             f"so the preprocessing settings {preprocessor_class.describe_argument(argument)} "
                             "cannot be switched on")


def build(settings: Settings, embeddings=None, *, input_encoder=None, **model_arguments):
    """The (uncompiled) model of resolved `settings`.

    Args:
        settings: `resolve(...)`'s result.
        embeddings: optional pretrained vectors `[vocab_size, dim]`.
        input_encoder: optional `keras_match.encoders.InputEncoder` to build the family's body on instead of the
            word vectors of `settings` (their settings `embedding_dim`, `trainable_embeddings` and `embeddings`
            are then not used). Without it, the settings' `backbone` (`BACKBONE_SETTINGS`), if set, makes a
            `keras_match.encoders.TransformerEncoder`.
        **model_arguments: what the preprocessor gives the builder (`vocab_size`, `num_features` for the pair
            preprocessor: `Preprocessor.model_arguments()`); defaults from the preprocessing settings.
    """
    family = families()[settings.family]
    preprocessor_class = family.preprocessor_class()
    arguments = preprocessor_class.default_model_arguments(settings.preprocessing)
    if embeddings is not None:
        arguments["vocab_size"] = int(embeddings.shape[0])
    arguments.update({k: v for k, v in model_arguments.items() if v is not None})
    taken = _builder_arguments(family, settings.builder)
    kwargs = dict(settings.model)
    backbone = {key: kwargs.pop(key, default) for key, default in BACKBONE_SETTINGS.items()}
    if input_encoder is None and backbone["backbone"] is not None:
        from keras_match.encoders.transformer import TransformerEncoder

        input_encoder = TransformerEncoder(backbone["backbone"], layers=backbone["backbone_layers"],
                                           trainable=backbone["backbone_trainable"])
    kwargs.setdefault("name", settings.name)
    kwargs.update({key: value for key, value in arguments.items() if key in taken or value})
    builder = family.builder(settings.builder)
    if input_encoder is not None:  # the word-vector settings make no encoder then
        from keras_match import encoders

        unused = encoders.encoder_settings(builder)
        kwargs = {key: value for key, value in kwargs.items() if key not in unused}
    else:
        kwargs["embeddings"] = embeddings
    with precision_lib.scope(settings.training.precision):  # the layers compute in the run's precision
        return builder(input_encoder, **kwargs)


def optimizer(settings: Settings, model=None):
    """A new optimizer with the settings' class, learning rate and gradient clipping; with the training setting
    `backbone_learning_rate`, `model`'s pretrained backbone trains at that rate (`keras_match.optimizers`).

    Raises:
        ValueError: `backbone_learning_rate` is set and no layer of `model`'s backbone trains, or no `model` is
            given.
    """
    training = settings.training
    config = {  # Keras refuses an int learning rate; 1 is as valid a number as 1.0
        "learning_rate": float(training.learning_rate),
        **({"clipnorm": float(training.clipnorm)} if training.clipnorm else {}),
    }
    if training.backbone_learning_rate is not None:
        if model is None:
            raise ValueError("backbone_learning_rate: the optimizer needs the model whose backbone it trains")
        return optimizers.backbone_optimizer(training.optimizer, config, training.backbone_learning_rate, model)
    return keras.optimizers.get({"class_name": training.optimizer, "config": config})


def compile_model(model, settings: Settings):
    """Compile `model` with the settings' optimizer and its head's pointwise loss (`keras_match.heads`).

    Pairwise and listwise losses train a wrapper around the model (`keras_match.heads.ListScorer`); the recipe
    (`keras_match.training.recipe.Recipe.compile`) builds it from the settings' `loss`.
    """
    from keras_match import heads

    model.compile(optimizer=optimizer(settings, model), loss=heads.training_loss(heads.head_of(model), "pointwise"))
    return model


def read_config(path, name) -> dict:
    """The settings of a `best.json` written by `keras_match.training.tuning.write_results`, for `keras-match train NAME
    --config FILE`.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not a best-configuration file, or one of another zoo entry.
    """
    path = pathlib.Path(path)
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ValueError(f"{path}: not valid JSON ({error})") from None
    if not isinstance(config, dict) or not isinstance(config.get("settings"), dict):
        raise ValueError(f"{path}: not a best configuration (no \"settings\" object); `keras-match tune` writes one")
    if config.get("zoo") not in (None, name):
        raise ValueError(f"{path} configures zoo entry {config['zoo']!r}, not {name!r}")
    return dict(config["settings"])


def setting_names(name) -> list:
    """Every setting name of zoo entry `name` (its model, training and preprocessing settings)."""
    preset = describe(name)
    backbone = set(BACKBONE_SETTINGS) if families()[preset["family"]].preprocessor == "pair" else set()
    return sorted(set(preset["model"]) | set(section_fields(TrainingSettings)) | set(preset["preprocessing"])
                  | backbone)
