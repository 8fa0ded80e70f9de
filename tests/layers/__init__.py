"""Tests of keras_match.layers (a package so its helpers import as .helpers without name clashes)."""
