"""Argument and shape checks shared by the layers (and the builders that take the same arguments)."""


def positive_int(name, value, allow_none=False):
    """Raises ValueError naming `name` unless `value` is a positive int (or None, with `allow_none`)."""
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        expected = "a positive integer or None" if allow_none else "a positive integer"
        raise ValueError(f"`{name}` must be {expected}. Received: {name}={value!r}")


def last_dim(layer, input_shape):
    """The last dimension of `input_shape`; ValueError naming `layer` when it is undefined."""
    dim = input_shape[-1]
    if dim is None:
        raise ValueError(
            f"Layer {layer.name} needs a defined last input dimension. Received input_shape={input_shape}"
        )
    return dim
