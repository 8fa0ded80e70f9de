"""Functional-API builders, one module per paper."""

from keras_match.models.compare_aggregate import build_compare_aggregate
from keras_match.models.ctrn import build_ctrn
from keras_match.models.ctrn import build_qrnn_matcher
from keras_match.models.mcan import build_mcan

__all__ = ["build_compare_aggregate", "build_ctrn", "build_mcan", "build_qrnn_matcher"]
