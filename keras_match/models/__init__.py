"""Functional-API builders, one module per paper."""

from keras_match.models.mcan import build_mcan

__all__ = ["build_mcan"]
