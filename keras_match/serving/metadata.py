"""An export's metadata file (`assets.extra/keras_match.json`) and the error of a failed export check: the
pieces the SavedModel export (`keras_match.serving.export`) and the ONNX export
(`keras_match.serving.onnx_export`) share. Pure Python."""

from __future__ import annotations

import json
import pathlib

__all__ = ["METADATA_FILE", "ExportVerificationError", "read_metadata"]

METADATA_FILE = "assets.extra/keras_match.json"
"""Export metadata, relative to a version folder (TF Serving ignores it)."""


class ExportVerificationError(RuntimeError):
    """An exported model does not run, or does not give the scores of the model it was exported from."""


def read_metadata(version_dir):
    """The export metadata (`assets.extra/keras_match.json`) of a version folder, as a dict.

    Raises:
        FileNotFoundError: the folder is not a keras-match SavedModel export.
    """
    path = pathlib.Path(version_dir) / METADATA_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: {version_dir} is not a SavedModel written by "
                                "keras_match.serving.export.saved_model")
    return json.loads(path.read_text(encoding="utf-8"))
