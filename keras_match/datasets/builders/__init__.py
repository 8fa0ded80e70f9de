"""Builders of the derived benchmark files from their public originals (see keras_match.datasets.sources)."""
