"""`fill_docstring`: text that several layers' docstrings share, written once and put in where each names it.

The layers' docstrings are complete for users (`help(layer)` shows every section: Args, Call arguments,
Returns, Raises, Examples, Reference), so a paragraph several layers share (the arguments of a common base
class, the call arguments of one family) is written once, as a fragment next to the layers that use it, and
each docstring names it with a `{name}` placeholder:

```python
CALL_ARGUMENTS = '''Call arguments:
    inputs: `[a, h]`, ...
    mask: ...'''


@fill_docstring(call_arguments=CALL_ARGUMENTS)
class MyComparison(Comparison):
    '''...

    {call_arguments}

    Returns:
        ...
    '''
```
"""

import textwrap


def _indented(fragment, indent):
    """`fragment` dedented, its lines after the first indented by `indent` (blank lines stay empty)."""
    first, *rest = textwrap.dedent(fragment).strip("\n").split("\n")
    return "\n".join([first] + [indent + line if line.strip() else "" for line in rest])


def fill_docstring(**fragments):
    """Decorator: puts each fragment in the place of its `{name}` placeholder in a class's or function's docstring.

    A fragment is written without indentation of its own (it is dedented); its lines after the first get the
    indentation of the placeholder's line, so a multi-line fragment (a whole section, several `Args` entries)
    fits at any depth of the docstring. Other braces of the docstring (`R^{l x 2l}`, `conv_{w}/kernel`) are
    kept.

    Args:
        **fragments: `name=text`, the text of placeholder `{name}`.

    Returns:
        The decorator; it returns the class or function itself, with its docstring filled in.

    Raises:
        ValueError: when decorating, if the docstring has no `{name}` placeholder for one of the fragments (so
            that a renamed placeholder cannot drop a paragraph unnoticed).
    """

    def decorate(documented):
        if documented.__doc__ is None:  # python -OO strips docstrings
            return documented
        lines = documented.__doc__.split("\n")
        for name, fragment in fragments.items():
            placeholder = "{" + name + "}"
            if not any(placeholder in line for line in lines):
                raise ValueError(f"The docstring of {documented.__qualname__} has no placeholder {placeholder}.")
            filled = [
                line.replace(placeholder, _indented(fragment, line[: len(line) - len(line.lstrip())]))
                for line in lines
            ]
            lines = "\n".join(filled).split("\n")  # a fragment may hold the placeholder of a later one
        documented.__doc__ = "\n".join(lines)
        return documented

    return decorate
