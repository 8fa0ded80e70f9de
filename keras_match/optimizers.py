"""A learning rate of its own for a pretrained backbone's layers that train with the matching body.

The zoo's transformer-input entries (`backbone=minilm-l6`) can train the backbone's top layers with the body
(`backbone_trainable=K`). One rate for both is what `learning_rate` alone gives, and on TrecQA TRAIN-ALL the body's
3e-4 left MCAN over MiniLM below its frozen row (docs/transformer-encoders.md): pretrained layers are usually
fine-tuned at 1e-5 to 5e-5 while a body trained from scratch wants 1e-4 to 1e-3. With the training setting
`backbone_learning_rate`, the backbone's variables that train are updated at that rate and the body's at
`learning_rate`, by the same optimizer class, with the same schedule: `lr_decay` scales both (the backbone's rate is
held as the ratio `backbone_learning_rate / learning_rate`).

`backbone_optimizer(settings, model)` makes the optimizer; every Keras optimizer class (`adam`, `adamax`, ...; not
the wrappers `LossScaleOptimizer` and `MultiOptimizer`) has a registered twin here (`BackboneRateAdam`, ...), so a
`.keras` file compiled with one loads again.
"""

import keras

__all__ = ["BackboneRate", "backbone_optimizer", "backbone_variables"]


class BackboneRate:
    """Mixin of a Keras optimizer: the variables named in `backbone_paths` are updated at `learning_rate *
    backbone_rate`, the others at `learning_rate`.

    Every other part of the optimizer is its base class's: its slots (Adam's moments), gradient clipping and step
    counter are shared, and each variable's update is the base class's `update_step` at the variable's rate, so the
    result is that of two optimizers of the class, one per group, stepping together. Weight decay would apply at
    one rate to both, so an optimizer with weight decay (AdamW's default 0.004) is refused. Without
    `backbone_paths` it is its base class.

    Args:
        backbone_rate: float > 0, the backbone's learning rate over the optimizer's (`learning_rate`).
        backbone_paths: the Keras paths (`Variable.path`) of the backbone's variables that train, unique.
        **kwargs: the base optimizer's arguments (`learning_rate`, `clipnorm`, ...).

    Raises:
        ValueError: `backbone_rate` is not a number > 0, a path is given twice, or the optimizer has weight decay.

    Reference:
        Howard & Ruder (2018), Universal Language Model Fine-tuning for Text Classification (discriminative
        fine-tuning: a rate per layer group).
    """

    def __init__(self, *args, backbone_rate=1.0, backbone_paths=(), **kwargs):
        super().__init__(*args, **kwargs)
        if isinstance(backbone_rate, bool) or not isinstance(backbone_rate, (int, float)) or not backbone_rate > 0:
            raise ValueError(f"backbone_rate: expected a number > 0, got {backbone_rate!r}")
        paths = [str(path) for path in backbone_paths]
        if len(set(paths)) != len(paths):
            raise ValueError("backbone_paths: a variable path is given twice; the backbone's variables must have "
                             "distinct paths")
        if paths and self.weight_decay:
            raise ValueError(f"backbone_rate: {type(self).__name__} has weight decay {self.weight_decay:g}, which "
                             "would apply at the body's rate to the backbone too; use an optimizer without weight "
                             "decay (adam, adamax, adagrad, rmsprop, sgd)")
        self.backbone_rate = float(backbone_rate)
        self.backbone_paths = paths
        self._backbone_indices = frozenset()

    def build(self, variables):
        super().build(variables)
        wanted = set(self.backbone_paths)
        self._backbone_indices = frozenset(self._get_variable_index(v) for v in variables if v.path in wanted)

    def update_step(self, gradient, variable, learning_rate):
        # `variable` is the backend's own variable here (a tf.Variable, without the Keras path): known by its index
        if self._get_variable_index(variable) in self._backbone_indices:
            learning_rate = learning_rate * self.backbone_rate
        return super().update_step(gradient, variable, learning_rate)

    def get_config(self):
        return {**super().get_config(), "backbone_rate": self.backbone_rate, "backbone_paths": self.backbone_paths}


def _twin(base):
    twin = type(f"BackboneRate{base.__name__}", (BackboneRate, base),
                {"__doc__": f"`keras.optimizers.{base.__name__}` with a backbone rate of its own (`BackboneRate`).",
                 "__module__": __name__})
    return keras.saving.register_keras_serializable(package="keras_match")(twin)


TWINS = {name.lower(): _twin(cls) for name, cls in vars(keras.optimizers).items()
         if isinstance(cls, type) and issubclass(cls, keras.optimizers.Optimizer)
         and cls is not keras.optimizers.Optimizer and name not in ("LossScaleOptimizer", "MultiOptimizer")}
"""`{lower-case optimizer name: its BackboneRate twin class}`."""
globals().update({cls.__name__: cls for cls in TWINS.values()})


def backbone_variables(model) -> list:
    """The trainable variables of the pretrained backbones in `model` (every `TransformerStates` layer, however deep),
    in the model's order; `[]` for a model without one or with its backbone frozen."""
    from keras_match.encoders import transformer  # keras-hub, imported only for a backbone's model

    owned = {id(v) for layer in transformer.backbone_layers(model) for v in layer.trainable_variables}
    return [v for v in model.trainable_variables if id(v) in owned]


def backbone_optimizer(name, config, backbone_learning_rate, model):
    """Optimizer `name` made from `config` (its `learning_rate`, `clipnorm`, ...), whose `model`'s backbone variables
    train at `backbone_learning_rate` (`keras_match.families.optimizer` gives it the training settings').

    Args:
        name: a Keras optimizer name (`"adam"`, `"adamax"`, ...; any case).
        config: the optimizer's arguments, `learning_rate` (a number) among them.
        backbone_learning_rate: number > 0, the rate of the backbone's variables that train.
        model: the model (or the `ListScorer` around it) the optimizer will train, built.

    Returns:
        A `BackboneRate` twin of the optimizer class.

    Raises:
        ValueError: no variable of the model's backbone trains (the entry reads word vectors, or
            `backbone_trainable` is `frozen` or 0), or two of its trainable variables share a path.
    """
    variables = backbone_variables(model)
    if not variables:
        raise ValueError("backbone_learning_rate: no layer of a pretrained backbone trains in this model (set "
                         "backbone=minilm-l6 and backbone_trainable to all or k >= 1, or drop backbone_learning_rate)")
    paths = [v.path for v in model.trainable_variables]
    if len(set(paths)) != len(paths):
        raise ValueError(f"backbone_learning_rate: {len(paths) - len(set(paths))} trainable variables of model "
                         f"{model.name} share a path, so the backbone's cannot be told apart")
    return TWINS[name.lower()](**config, backbone_rate=float(backbone_learning_rate) / config["learning_rate"],
                               backbone_paths=[v.path for v in variables])
