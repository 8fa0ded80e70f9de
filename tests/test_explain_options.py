"""`keras-match explain` reads each family's own options from `zoo.Family.explain_options`: the CLI names none."""

import inspect

import pytest

from keras_match import cli, zoo


def test_a_family_declares_its_explain_options_and_the_cli_reads_them_generically():
    options, rest = cli._explain_options(zoo.families()["compare_aggregate"],
                                         ["--question", "q ?", "--window", "2", "--answer", "a ."])
    assert options == {"window": 2} and rest == ["--question", "q ?", "--answer", "a ."]
    options, rest = cli._explain_options(zoo.families()["coupled_lstm"],
                                         ["--question", "q", "--answer", "a", "--neurons", "5", "0"])
    assert options == {"neurons": ["5", "0"]} and rest == ["--question", "q", "--answer", "a"]
    # a family defined elsewhere (not registered) gets its option without a line of the CLI changed
    toy = zoo.Family(name="toy", builders={}, explain=lambda run, texts, out, **options: [],
                     explain_options={"top_k": {"type": int, "help": "how many"}})
    assert cli._explain_options(toy, ["--top-k", "3", "--question", "q"]) == ({"top_k": 3}, ["--question", "q"])
    assert cli._explain_options(toy, ["--question", "q"]) == ({}, ["--question", "q"])


def test_another_familys_option_is_refused_in_one_line():
    with pytest.raises(ValueError, match="^explain: a coupled_lstm run takes --neurons, not --window$"):
        cli._explain_options(zoo.families()["coupled_lstm"], ["--question", "q", "--window", "2"])
    with pytest.raises(ValueError, match="^explain: a toy run takes no option, not --neurons$"):
        cli._explain_options(zoo.Family(name="toy", builders={}), ["--neurons=3"])


def test_the_cli_names_no_familys_option_and_its_help_lists_them(capsys):
    source = inspect.getsource(cli)
    assert "--window" not in source and "--neurons" not in source
    with pytest.raises(SystemExit):
        cli.main(["explain", "--help"])
    printed = capsys.readouterr().out
    assert "compare_aggregate: --window SIZE" in printed and "coupled_lstm: --neurons K ..." in printed
