"""Search-space files (one JSON file per paper), installed as ``keras_match.tuning_spaces``."""
