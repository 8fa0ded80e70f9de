"""Argument and shape checks shared by the layers (and the builders that take the same arguments).

Each raises `ValueError` with one wording for one rule, whichever layer applies it: `positive_int`, `rate` and `one_of`
for constructor arguments, `last_dim` and `sequence_shape` for the input shapes seen by `build`. The checks of
a pair of inputs `[q, d]` are `keras_match.layers.masked_ops.check_pair_shape`.
"""


def positive_int(name, value, allow_none=False):
    """Raises ValueError naming `name` unless `value` is a positive int (or None, with `allow_none`)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ValueError(f"`{name}` must be {expected}. Received: {name}={value!r}")


def rate(name, value):
    """Raises ValueError naming `name` unless `value` is a number in [0, 1) (a dropout rate)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise ValueError(f"`{name}` must be a number in [0, 1). Received: {name}={value!r}")


def one_of(name, value, choices):
    """Raises ValueError naming `name` and listing `choices` unless `value` is one of them."""
    if value not in choices:
        raise ValueError(f"`{name}` must be one of {choices}. Received: {name}={value!r}")


def last_dim(layer, input_shape):
    """The last dimension of `input_shape`; ValueError naming `layer` when it is undefined."""
    dim = input_shape[-1]
    if dim is None:
        raise ValueError(
            f"Layer {layer.name} needs a defined last input dimension. Received input_shape={input_shape}"
        )
    return dim


def sequence_shape(layer, input_shape, defined_dim=True):
    """Check that `input_shape` is a sequence `[batch, time, dim]` (rank 3); with `defined_dim`, `dim` known.

    Raises:
        ValueError: naming `layer`, if the rank is not 3 (or, with `defined_dim`, the last dimension is None).
    """
    if len(input_shape) != 3 or (defined_dim and input_shape[-1] is None):
        required = " with a defined last dimension" if defined_dim else ""
        raise ValueError(
            f"Layer {layer.name} expects a rank-3 input [batch, time, dim]{required}. "
            f"Received input_shape={input_shape}"
        )
