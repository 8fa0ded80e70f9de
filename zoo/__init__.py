"""Zoo preset files (one JSON file per zoo entry), installed as ``keras_match.zoo_presets``."""
