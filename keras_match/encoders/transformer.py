"""The pretrained-transformer input encoder: a keras-hub `BertBackbone` loaded from a pinned folder.

`TransformerEncoder("minilm-l6")` gives each token of each text its contextual state from all-MiniLM-L6-v2
(`keras_match.encoders.pretrained`): the last layer's, or a learned mix of every layer's; frozen, fine-tuned whole,
or fine-tuned in its top k layers. The Keras layer inside the model, `TransformerStates`, holds the backbone's
architecture in its config and nothing else: the pretrained weights arrive with `finish(model)`, as the word
vectors of `WordVectorEncoder` do, and a `.keras` file carries the (possibly fine-tuned) weights in its weights
file. keras-hub is imported only when a backbone is made (`pip install -e ".[transformers]"`); importing
`keras_match` or `keras_match.encoders` does not import it.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import keras
import numpy as np
from keras import ops

from keras_match.encoders.base import LayerEncoder
from keras_match.encoders.pretrained import locate, pretrained

__all__ = ["TransformerEncoder", "TransformerStates", "backbone_layers", "frozen_backbone_parts", "tokenizer",
           "TRANSFORMER_LAYER", "LAYER_CHOICES"]

TRANSFORMER_LAYER = "transformer_states"
"""The name of the encoder's `TransformerStates` layer in every model."""

LAYER_CHOICES = ("last", "mix")
"""What `TransformerEncoder(layers=...)` takes: the last layer's states, or a learned mix of all layers'."""

_ARCHITECTURE = ("vocabulary_size", "num_layers", "num_heads", "hidden_dim", "intermediate_dim", "dropout",
                 "max_sequence_length", "num_segments")


def _keras_hub():
    try:
        import keras_hub
    except ImportError as error:
        raise ImportError(f"pretrained transformer encoders need keras-hub and safetensors: pip install -e "
                          f"\".[transformers]\" ({error})") from None
    return keras_hub


def _architecture(folder: Path) -> dict:
    """`BertBackbone`'s arguments from a Hugging Face `config.json` (what keras-hub's converter reads, and the
    dropout rate)."""
    config = json.loads((Path(folder) / "config.json").read_text(encoding="utf-8"))
    if config.get("model_type") != "bert":
        raise ValueError(f"{folder}/config.json: model_type {config.get('model_type')!r}; TransformerEncoder "
                         "reads BERT-family folders (model_type 'bert')")
    return {
        "vocabulary_size": int(config["vocab_size"]),
        "num_layers": int(config["num_hidden_layers"]),
        "num_heads": int(config["num_attention_heads"]),
        "hidden_dim": int(config["hidden_size"]),
        "intermediate_dim": int(config["intermediate_size"]),
        "dropout": float(config.get("hidden_dropout_prob", 0.1)),
        "max_sequence_length": int(config["max_position_embeddings"]),
        "num_segments": int(config.get("type_vocab_size", 2)),
    }


def _check_trainable(trainable, num_layers: int):
    """`trainable` checked: `"frozen"`, `"all"`, or an int k in `[0, num_layers]` (the top k layers train)."""
    if isinstance(trainable, str) and trainable in ("frozen", "all"):
        return trainable
    integer = isinstance(trainable, (int, np.integer)) and not isinstance(trainable, bool)
    if not integer or not 0 <= trainable <= num_layers:
        raise ValueError(f"trainable: expected 'frozen', 'all' or an int k in [0, {num_layers}] (the top k of the "
                         f"{num_layers} transformer layers train), got {trainable!r}")
    return int(trainable)


def _check_layers(layers):
    if layers not in LAYER_CHOICES:
        raise ValueError(f"layers: expected one of {LAYER_CHOICES}, got {layers!r}")
    return layers


@keras.saving.register_keras_serializable(package="keras_match")
class TransformerStates(keras.layers.Layer):
    """Per-token states of a BERT-family backbone (keras-hub's `BertBackbone`), with their padding mask.

    The backbone reads the token ids with segment ids 0 and the padding mask `token_ids != 0` (BERT's `[PAD]` is
    id 0); its pooler (`pooled_dense`) is not used and never trains. With `layers="last"` the output is the last
    transformer layer's states; with `layers="mix"` it is ELMo's scalar mix of the embedding layer's output and
    every transformer layer's, `gamma * sum_j softmax(w)_j h_j` over the `num_layers + 1` representations
    (Peters et al. 2018, eq. 1), with `w` (zeros at first: the plain mean) and `gamma` (1 at first) learned even
    when the backbone is frozen.

    The layer's config holds the architecture only: made from its config (a `.keras` file), the backbone starts
    random, and the weights come from the weights file (or `TransformerEncoder.finish`, which copies the pretrained
    ones in). Frozen parts run in inference mode (no dropout) and pass no gradient, so a frozen encoder gives the
    same states in training and inference.

    Args:
        vocabulary_size: int, the WordPiece vocabulary's size (`BertBackbone`'s argument, as the five below).
        num_layers: int, the number of transformer layers.
        num_heads: int, attention heads per layer.
        hidden_dim: int, the width of the per-token states.
        intermediate_dim: int, the width of each layer's feed-forward block.
        dropout: float, the backbone's dropout rate (used only in the parts that train).
        max_sequence_length: int, the most token ids a text may have (position embeddings).
        num_segments: int, the number of segment ids (segment 0 is used).
        layers: `"last"` or `"mix"` (see above).
        trainable_layers: `"frozen"`, `"all"` (every backbone weight but the pooler's), or an int k: only the top
            k transformer layers train (the embeddings and the lower layers stay frozen).
        encoder: the pretrained encoder's name (`"minilm-l6"`), kept for reference; optional.
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        token_ids: int tensor `[batch, length]` or `[batch, ..., length]` (a dialog's turns), 0 = padding; at most
            `max_sequence_length` ids per text.
        training: bool, dropout in the parts that train.

    Returns:
        `[batch, ..., length, hidden_dim]` in the layer's compute dtype, masked where the id is 0 (the states at
        padded positions are the backbone's, to be ignored).

    Raises:
        ValueError: `layers` or `trainable_layers` is not one of the choices; a static length above
            `max_sequence_length`.
        ImportError: keras-hub is not installed.
    """

    def __init__(self, vocabulary_size, num_layers, num_heads, hidden_dim, intermediate_dim, dropout=0.1,
                 max_sequence_length=512, num_segments=2, layers="last", trainable_layers="frozen", encoder=None,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.num_layers = int(num_layers)
        self.num_heads = int(num_heads)
        self.hidden_dim = int(hidden_dim)
        self.intermediate_dim = int(intermediate_dim)
        self.dropout = float(dropout)
        self.max_sequence_length = int(max_sequence_length)
        self.num_segments = int(num_segments)
        self.layers = _check_layers(layers)
        self.trainable_layers = _check_trainable(trainable_layers, self.num_layers)
        self.encoder = encoder
        self.supports_masking = True
        self.backbone = _keras_hub().models.BertBackbone(
            vocabulary_size=self.vocabulary_size, num_layers=self.num_layers, num_heads=self.num_heads,
            hidden_dim=self.hidden_dim, intermediate_dim=self.intermediate_dim, dropout=self.dropout,
            max_sequence_length=self.max_sequence_length, num_segments=self.num_segments,
            dtype=self.dtype_policy, name=f"{self.name}_backbone")
        self._set_trainable()

    @property
    def trained_layers(self) -> int:
        """How many of the top transformer layers train (all of them for `"all"`, none for `"frozen"`)."""
        spec = self.trainable_layers
        return self.num_layers if spec == "all" else 0 if spec == "frozen" else spec

    def _set_trainable(self):
        backbone = self.backbone
        embeddings = self.trainable_layers == "all"
        for layer in (backbone.token_embedding, backbone.position_embedding, backbone.segment_embedding,
                      backbone.embeddings_layer_norm):
            layer.trainable = embeddings
        first = self.num_layers - self.trained_layers
        for index, layer in enumerate(backbone.transformer_layers):
            layer.trainable = index >= first
        backbone.get_layer("pooled_dense").trainable = False

    def build(self, input_shape):
        if self.layers == "mix":
            self.mix_logits = self.add_weight(shape=(self.num_layers + 1,), initializer="zeros", name="mix_logits")
            self.mix_scale = self.add_weight(shape=(), initializer="ones", name="mix_scale")
        self.built = True

    @property
    def mix_weights(self):
        """The mix's normalised weights `softmax(w)` `[num_layers + 1]` (embeddings first), or None."""
        return ops.softmax(self.mix_logits) if self.layers == "mix" else None

    def _embeddings(self, token_ids, training):
        backbone = self.backbone
        tokens = backbone.token_embedding(token_ids)
        x = backbone.embeddings_add((tokens, backbone.position_embedding(tokens),
                                     backbone.segment_embedding(ops.zeros_like(token_ids))))
        x = backbone.embeddings_layer_norm(x)
        return backbone.embeddings_dropout(x, training=bool(training) and self.trainable_layers == "all")

    def all_states(self, token_ids, training=False):
        """The embedding layer's output and every transformer layer's, `num_layers + 1` tensors
        `[batch, length, hidden_dim]` for int `[batch, length]` ids; frozen ones carry no gradient."""
        token_ids = ops.cast(token_ids, "int32")
        padding_mask = ops.not_equal(token_ids, 0)
        first = self.num_layers - self.trained_layers  # the first transformer layer that trains
        x = self._embeddings(token_ids, training)
        states = [x if self.trainable_layers == "all" else ops.stop_gradient(x)]
        for index, layer in enumerate(self.backbone.transformer_layers):
            trains = index >= first
            x = layer(x, padding_mask=padding_mask, training=bool(training) and trains)
            states.append(x if trains else ops.stop_gradient(x))
        return states

    def frozen_parts(self) -> list:
        """The backbone's sub-layers that do not train (the embeddings unless `"all"`, the transformer layers below
        the top k, the pooler): their weights are the pinned encoder's, which `TransformerEncoder.finish` puts in
        place, so a trained preset need not store them (`keras_match.artifacts.preset_writer`)."""
        backbone = self.backbone
        parts = [backbone.token_embedding, backbone.position_embedding, backbone.segment_embedding,
                 backbone.embeddings_layer_norm, *backbone.transformer_layers, backbone.get_layer("pooled_dense")]
        return [part for part in parts if not part.trainable]

    @property
    def caches(self) -> bool:
        """Whether the states below the first trained layer can be cached per text
        (`keras_match.encoders.state_cache`): `layers="last"` and the embeddings frozen (not `"all"`)."""
        return self.layers == "last" and self.trainable_layers != "all"

    def frozen_states(self, token_ids):
        """The frozen part's states: the embeddings and the transformer layers below the first one that trains
        (all of them when frozen), in inference mode, `[batch, length, hidden_dim]` for int `[batch, length]` ids;
        what a `StateCache` keeps. Only for `caches` layers."""
        token_ids = ops.cast(token_ids, "int32")
        padding_mask = ops.not_equal(token_ids, 0)
        x = self._embeddings(token_ids, False)
        for layer in self.backbone.transformer_layers[:self.num_layers - self.trained_layers]:
            x = layer(x, padding_mask=padding_mask, training=False)
        return x

    def attach_cache(self, cache):
        """Look texts up in `cache` (a `keras_match.encoders.state_cache.StateCache` built for this layer)
        instead of running the frozen part, while it is attached: a batch whose texts are all cached gathers
        their states, any other batch computes them. Not part of the config or the weights; `detach_cache()`
        ends it.

        Raises:
            ValueError: the layer's states cannot be cached, or the cache is of another frozen depth.
        """
        depth = self.num_layers - self.trained_layers
        if not self.caches or cache.depth != depth:
            raise ValueError(f"{self.name}: a state cache serves layers='last' with a frozen part of {depth} layers "
                             f"(layers={self.layers!r}, trainable_layers={self.trainable_layers!r}; the cache's: "
                             f"{cache.depth})")
        cache.tensors()  # the lookup table and the states variable, made outside any traced function
        self._state_cache = cache

    def detach_cache(self):
        """Computes every batch's states again (see `attach_cache`)."""
        self._state_cache = None

    def _last_states(self, token_ids, training):
        """`layers="last"`: the frozen part (looked up in the attached cache, if any), then the trained layers."""
        if not self.caches:
            return self.all_states(token_ids, training=training)[-1]
        token_ids = ops.cast(token_ids, "int32")
        cache = getattr(self, "_state_cache", None)
        if cache is None:
            x = self.frozen_states(token_ids)
        else:
            x = cache.states_or(token_ids, lambda: self.frozen_states(token_ids), self.compute_dtype)
        x = ops.stop_gradient(x)
        padding_mask = ops.not_equal(token_ids, 0)
        for layer in self.backbone.transformer_layers[self.num_layers - self.trained_layers:]:
            x = layer(x, padding_mask=padding_mask, training=bool(training))
        return x

    def call(self, token_ids, training=None):
        shape = ops.shape(token_ids)
        length = token_ids.shape[-1]
        if length is not None and length > self.max_sequence_length:
            raise ValueError(f"{self.name}: texts of {length} token ids; the backbone reads at most "
                             f"{self.max_sequence_length} (truncate in the preprocessor)")
        flat = token_ids if len(token_ids.shape) == 2 else ops.reshape(token_ids, (-1, shape[-1]))
        if self.layers == "last":
            output = self._last_states(flat, training)
        else:
            states = self.all_states(flat, training=training)
            weights = ops.cast(ops.softmax(self.mix_logits), states[0].dtype)
            output = sum(weights[j] * state for j, state in enumerate(states))
            output = ops.cast(self.mix_scale, output.dtype) * output
        if len(token_ids.shape) != 2:
            output = ops.reshape(output, (*shape, self.hidden_dim))
        return output

    def compute_mask(self, token_ids, mask=None):
        return ops.not_equal(token_ids, 0)

    def compute_output_shape(self, input_shape):
        return (*input_shape, self.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update({name: getattr(self, name) for name in _ARCHITECTURE})
        config.update({"layers": self.layers, "trainable_layers": self.trainable_layers, "encoder": self.encoder})
        return config


@functools.lru_cache(maxsize=1)
def _pretrained_weights(folder: str, stamp) -> tuple:
    """The pretrained backbone's weights (numpy arrays, in `BertBackbone.weights` order), loaded by keras-hub's
    Transformers converter; cached for the last folder (`stamp`: the weights file's size and mtime)."""
    del stamp  # part of the cache key only
    backbone = _keras_hub().models.BertBackbone.from_preset(folder, dtype="float32")
    return tuple(backbone.get_weights())


class TransformerEncoder(LayerEncoder):
    """Each token's contextual state from a pinned pretrained transformer (all-MiniLM-L6-v2), shared by every text.

    The encoder of the zoo's transformer-input entries: a keras-hub `BertBackbone` (`TransformerStates`, a layer
    named `transformer_states`) reads WordPiece ids, `[CLS] text [SEP]` as `tokenizer(name)` and a packer give
    them (or a packed pair for a cross-encoder), and gives per-token states with the padding mask. The folder is
    found and checked by `keras_match.encoders.pretrained.locate` when the encoder is made (argument,
    `$KERAS_MATCH_ENCODERS`, the user cache; fetched there on first use). One encoder builds one model: its layer
    is made on first use and shared by every text it encodes (a pair's question and answer go through the same
    weights). The pretrained weights are copied in by `finish(model)` (the builders call it), so the model's
    `.keras` config never holds them.

    Args:
        name: a pretrained encoder (`keras_match.encoders.pretrained.names()`: `"minilm-l6"`).
        layers: `"last"` (the last layer's states, what sentence-transformers pools) or `"mix"` (ELMo's scalar
            mix of all layers' outputs with a learned scale, learned even when frozen).
        trainable: `"frozen"` (default; no backbone weight trains, states are deterministic and may be cached),
            `"all"`, or an int k: only the top k transformer layers train.
        encoders_dir: where the encoder's folder is (see `locate`); None: `$KERAS_MATCH_ENCODERS`, else the user
            cache.
        download_missing: see `locate`.

    Call arguments:
        token_ids: int32 tensor `[batch, length]` (or `[batch, turns, length]`), 0 = padding, WordPiece ids of
            the encoder's vocabulary, at most 512 per text.

    Returns:
        `[..., length, output_dim]` (384 for MiniLM) in the model's compute dtype, masked where the id is 0.

    Raises:
        ValueError: unknown name, `layers` or `trainable` not one of the choices.
        keras_match.datasets.MissingDataError / ChecksumError / DownloadError: the folder is incomplete, a file
            is damaged, or it could not be fetched (one line each, see `locate`).
        ImportError (when the layer is made): keras-hub is not installed (`pip install -e ".[transformers]"`).

    Examples:
    >>> encoder = TransformerEncoder("minilm-l6", layers="mix", trainable=2)  # doctest: +SKIP
    >>> question, answer = InputEncoder.token_inputs("question", "answer")  # doctest: +SKIP
    >>> states = encoder(question)  # [batch, length, 384], masked  # doctest: +SKIP
    >>> model = keras.Model([question, answer], ...); encoder.finish(model)  # doctest: +SKIP

    Reference:
        Wang et al., MiniLM: Deep Self-Attention Distillation for Task-Agnostic Compression of Pre-Trained
        Transformers, NeurIPS 2020. Reimers & Gurevych, Sentence-BERT: Sentence Embeddings using Siamese
        BERT-Networks, EMNLP 2019 (all-MiniLM-L6-v2 is trained that way). Peters et al., Deep contextualized word
        representations, NAACL 2018, eq. 1 (the scalar mix). Devlin et al., BERT, NAACL 2019.
    """

    def __init__(self, name="minilm-l6", layers="last", trainable="frozen", encoders_dir=None,
                 download_missing=None):
        self.name = name
        self.entry = pretrained(name)
        self.layers = _check_layers(layers)
        self.trainable = _check_trainable(trainable, self.entry.num_layers)
        self.folder = locate(name, encoders_dir, download_missing)
        self.architecture = _architecture(self.folder)
        self._layer = None

    @property
    def output_dim(self) -> int:
        return int(self.architecture["hidden_dim"])

    def new_layer(self) -> TransformerStates:
        """The `TransformerStates` layer (a random backbone until `finish`)."""
        return TransformerStates(**self.architecture, layers=self.layers, trainable_layers=self.trainable,
                                 encoder=self.name, name=TRANSFORMER_LAYER)

    def finish(self, model):
        """Copies the pretrained weights into the backbone (a random one until then)."""
        stat = os.stat(self.folder / "model.safetensors")
        weights = _pretrained_weights(str(self.folder), (stat.st_size, stat.st_mtime_ns))
        self.layer.backbone.set_weights(weights)


def backbone_layers(model) -> list:
    """Every distinct `TransformerStates` layer of `model`, nested ones included (a cross-encoder's packing layer
    holds one; a bi-encoder's question and answer share one)."""
    found = []
    for layer in model._flatten_layers(include_self=False, recursive=True):
        if isinstance(layer, TransformerStates) and all(layer is not other for other in found):
            found.append(layer)
    return found


def frozen_backbone_parts(model) -> list:
    """The backbone sub-layers of `model` that do not train (`TransformerStates.frozen_parts` of each backbone
    layer): what a trained preset leaves out and puts back from the pinned encoder."""
    return [part for states in backbone_layers(model) for part in states.frozen_parts()]


def tokenizer(name="minilm-l6", encoders_dir=None, download_missing=None):
    """keras-hub's `BertTokenizer` of a pretrained encoder's folder (its `vocab.txt`, lower-casing as
    `tokenizer_config.json` says).

    It splits text into WordPiece ids only; `[CLS]` (101) and `[SEP]` (102) are a packer's job
    (`keras_hub.layers.StartEndPacker`, `MultiSegmentPacker`), and padding is id 0.

    Args:
        name: the pretrained encoder's name (`"minilm-l6"`), as `keras_match.encoders.pretrained.locate`.
        encoders_dir: optional folder holding the encoder's folder, as `locate`.
        download_missing: whether missing files are fetched, as `locate`.

    Returns:
        A `keras_hub.models.BertTokenizer`: `tokenizer(["some text"])` gives int32 ids, ragged for a batch.

    Raises:
        As `locate`; ImportError: keras-hub is not installed.

    Examples:
    >>> tokenizer("minilm-l6")(["The weather is lovely today."])  # doctest: +SKIP
    <tf.RaggedTensor [[1996, 4633, 2003, 8403, 2651, 1012]]>
    """
    folder = locate(name, encoders_dir, download_missing)
    return _keras_hub().models.BertTokenizer.from_preset(str(folder))
