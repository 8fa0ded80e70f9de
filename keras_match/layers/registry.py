"""Layer classes chosen by name: MCAN's compression functions, Compare-Aggregate's comparison functions."""


def by_name(registry, name, kind, note):
    """`registry[name]` for a registry of layer classes by lower-case name (compression, comparison functions).

    Raises:
        ValueError: `name` (any case) is not a key; the message lists the valid names and `note`.
    """
    key = name.lower() if isinstance(name, str) else None
    if key not in registry:
        raise ValueError(f"Unknown {kind} function {name!r}. Valid names (case-insensitive): {sorted(registry)} "
                         f"({note}).")
    return registry[key]
