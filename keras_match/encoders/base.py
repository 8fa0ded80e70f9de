"""The input encoder: the one part of a matching model that reads token ids.

Every zoo model is an input encoder, a matching body and a head (keras-hub's Backbone / Task split, with the
matching body in between). The input encoder turns each text's token ids into per-token states with their padding
mask; the family's builder (`keras_match.models`) holds only the matching body, which reads those states and
nothing else of the input; `keras_match.models.common.matching_model` is the head (pair features input, the score
or class output). An encoder plugs into every family once: a builder takes it as its first argument,
`build_mcan(encoder, ...)`, and so does `keras_match.zoo.build(settings, encoder=...)`.
"""

from __future__ import annotations

import functools
import inspect

import keras
import numpy as np

__all__ = ["InputEncoder", "LayerEncoder", "takes_input_encoder", "builder_settings", "encoder_settings"]


class InputEncoder:
    """Turns token ids into per-token states with their padding mask, for the matching body.

    A subclass implements `output_dim` and `encode`; `finish(model)` runs once the model is built (to copy
    pretrained weights in: a `.keras` config never holds them). One encoder object builds one model: the layers it
    makes on its first call are shared by every text it encodes (a pair's question and answer, a dialog's turns and
    candidates), as the papers share their embedding between the two texts.

    Args of `__call__`:
        token_ids: int32 tensor `[batch, length]` (or `[batch, turns, length]`, a dialog's history), 0 = padding.

    Returns of `__call__`:
        float tensor `[..., length, output_dim]` in the model's compute dtype, carrying the Keras mask
        `token_ids != 0`; the states at padded positions may hold anything, the mask tells the body to ignore
        them.

    Examples:
    >>> encoder = WordVectorEncoder(vocab_size=1000, embedding_dim=50)
    >>> model = keras_match.models.mcan.build_mcan(encoder, lstm_units=32, highway_units=16)
    """

    @property
    def output_dim(self) -> int:
        """The width of the per-token states."""
        raise NotImplementedError

    def encode(self, token_ids):
        """The per-token states of `token_ids` (see the class docstring)."""
        raise NotImplementedError

    def make_layers(self):
        """Makes the encoder's layers now, if it has not (its first `__call__` does otherwise). Builders call it
        where they always made their embedding, so that seeded runs draw every layer's initial weights in the same
        order as before encoders existed (Keras draws an initialiser's seed when the layer is made). Returns
        self."""
        return self

    def __call__(self, token_ids):
        return self.encode(token_ids)

    def finish(self, model):
        """Called by the builder once `model` is built; the default does nothing."""

    @staticmethod
    def token_inputs(*names):
        """One model input per name: int32 token ids `[batch, length]` (0 = padding), lengths left open so that
        batches can be trimmed to their longest text."""
        return tuple(keras.Input(shape=(None,), dtype="int32", name=name) for name in names)



class LayerEncoder(InputEncoder):
    """An input encoder that is one Keras layer (`new_layer()`), made on first use and shared by every text.

    A subclass implements `output_dim` and `new_layer()`; `layer` makes the layer once (in the model's
    precision scope, when a builder first asks), and `encode(token_ids)` is `layer(token_ids)`.
    """

    _layer = None

    def new_layer(self):
        """A new layer mapping token ids to per-token states (see `InputEncoder`)."""
        raise NotImplementedError

    @property
    def layer(self):
        """The encoder's layer, made on first use."""
        if self._layer is None:
            self._layer = self.new_layer()
        return self._layer

    def make_layers(self):
        self.layer  # noqa: B018  (made on first use)
        return self

    def encode(self, token_ids):
        return self.layer(token_ids)

def _parameters(function):
    return list(inspect.signature(function).parameters)


def takes_input_encoder(make_encoder):
    """Decorates a builder whose first argument is an `InputEncoder`, so it may also be called with the settings
    `make_encoder` takes instead (the word-vector arguments `vocab_size`, `embeddings`, `embedding_dim`,
    `trainable_embeddings` of earlier releases and of the zoo's settings).

    An int in the encoder's place is the `vocab_size` of earlier releases' first argument.
    `make_encoder(vocab_size, embeddings=None, **settings) -> InputEncoder` makes the encoder; a setting that the
    builder takes as well (the dialog model's `units`, its encoder's width) goes to both. The decorated builder
    calls `encoder.finish(model)` on the model it built.

    Raises (from the decorated builder):
        ValueError: both an encoder and word-vector settings, or neither an encoder nor `vocab_size`.
    """
    own = [p for p in _parameters(make_encoder) if p not in ("vocab_size", "embeddings")]

    def decorate(builder):
        takes = set(_parameters(builder))

        @functools.wraps(builder)
        def build(input_encoder=None, *args, vocab_size=None, embeddings=None, **kwargs):
            if isinstance(input_encoder, (int, np.integer)) and not isinstance(input_encoder, bool):
                if vocab_size is not None:
                    raise ValueError(f"{builder.__name__}: vocab_size given twice")
                input_encoder, vocab_size = None, int(input_encoder)  # an earlier release's positional vocab_size
            settings = {key: kwargs[key] for key in own if key in kwargs}
            for key in settings:
                if key not in takes:
                    del kwargs[key]
            if input_encoder is None:
                if vocab_size is None:
                    raise ValueError(f"{builder.__name__} needs an input encoder (keras_match.encoders) or the "
                                     "word-vector settings vocab_size (and embeddings / embedding_dim)")
                input_encoder = make_encoder(vocab_size, embeddings, **settings)
            elif vocab_size is not None or embeddings is not None or any(k not in takes for k in settings):
                raise ValueError(f"{builder.__name__}: give an input encoder or the word-vector settings "
                                 f"({', '.join(['vocab_size', 'embeddings'] + own)}), not both")
            elif not isinstance(input_encoder, InputEncoder):
                raise ValueError(f"{builder.__name__}: input_encoder must be a keras_match.encoders.InputEncoder, "
                                 f"got {type(input_encoder).__name__} (word-vector settings go by name: vocab_size=)")
            model = builder(input_encoder, *args, **kwargs)
            input_encoder.finish(model)
            return model

        build.make_encoder = make_encoder
        return build

    return decorate


def encoder_settings(builder) -> set:
    """The settings a (decorated) builder reads only to make its encoder (`vocab_size`, `embeddings` and its
    `make_encoder`'s own, but those the body takes too): what an encoder given to it replaces."""
    make = getattr(builder, "make_encoder", None)
    return set(_parameters(make)) - set(_parameters(builder)) if make is not None else set()


def builder_settings(builder) -> list:
    """The names a (decorated) builder takes by keyword: its own arguments but the encoder, and its word-vector
    settings (`vocab_size`, `embeddings` and those of its `make_encoder`)."""
    names = [p for p in _parameters(builder) if p != "input_encoder"]
    make = getattr(builder, "make_encoder", None)
    if make is not None:
        names += [p for p in _parameters(make) if p not in names]
    return names
