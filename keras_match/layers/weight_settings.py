"""The initializer and regularizer arguments of a layer's kinds of weight, read and serialized in one place.

A recurrent layer here takes, for each kind of weight it makes (`"kernel"`, `"recurrent"`, `"bias"`), an
`<kind>_initializer` and a `<kind>_regularizer` argument, keeps them as attributes of those names (Keras objects)
and returns them under the same names from `get_config()`, all initializers first, then all regularizers, in the
order of `kinds`. These helpers do it for every such layer (`CARNNCell`, `CARNN`, `CoupledLSTM2D`), so their
attributes and config keys are spelled one way.
"""

import keras

WEIGHT_KINDS = ("kernel", "recurrent", "bias")
"""The kinds of weight of a recurrent layer: input kernels, recurrent kernels, biases."""


def set_weight_settings(layer, initializers, regularizers, kinds=WEIGHT_KINDS, get_initializer=None):
    """Set `layer.<kind>_initializer` and `layer.<kind>_regularizer` for each kind from the constructor arguments.

    Args:
        layer: the layer being constructed.
        initializers: the `<kind>_initializer` arguments, one per kind in the order of `kinds` (a name, a config
            dict, an initializer or None, as `keras.initializers.get` takes them).
        regularizers: the `<kind>_regularizer` arguments, likewise (`keras.regularizers.get`; None for none).
        kinds: the kinds of weight. Defaults to `("kernel", "recurrent", "bias")`.
        get_initializer: the function that turns an initializer argument into an initializer. Defaults to
            `keras.initializers.get`; a layer with its own default for None passes its own.

    Raises:
        ValueError: (from `zip`) if `initializers` or `regularizers` has not one entry per kind; (from Keras) if
            an argument names no known initializer or regularizer.
    """
    get_initializer = get_initializer or keras.initializers.get
    for kind, initializer, regularizer in zip(kinds, initializers, regularizers, strict=True):
        setattr(layer, f"{kind}_initializer", get_initializer(initializer))
        setattr(layer, f"{kind}_regularizer", keras.regularizers.get(regularizer))


def weight_settings(layer, kinds=WEIGHT_KINDS):
    """`{"<kind>_initializer": ..., "<kind>_regularizer": ...}`: the layer's objects, keyed by argument name.

    Initializers first, then regularizers, each in the order of `kinds`: ready to pass on as keyword arguments
    (e.g. to a sublayer taking the same arguments).
    """
    settings = {f"{kind}_initializer": getattr(layer, f"{kind}_initializer") for kind in kinds}
    settings.update({f"{kind}_regularizer": getattr(layer, f"{kind}_regularizer") for kind in kinds})
    return settings


def weight_settings_config(layer, kinds=WEIGHT_KINDS):
    """The `get_config()` entries of the layer's initializers and regularizers (`weight_settings`, serialized)."""
    config = {}
    for name, value in weight_settings(layer, kinds).items():
        serialize = keras.initializers.serialize if name.endswith("_initializer") else keras.regularizers.serialize
        config[name] = serialize(value)
    return config


def weight_setting(layer, kind):
    """`(initializer, regularizer)` of one kind of weight: what `add_weight` takes for it."""
    return getattr(layer, f"{kind}_initializer"), getattr(layer, f"{kind}_regularizer")
