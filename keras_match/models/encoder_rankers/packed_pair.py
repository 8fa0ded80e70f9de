"""The cross-encoder's input: a question and an answer packed as one `[CLS] question [SEP] answer [SEP]` sequence
with segment ids 0 / 1, read by a pretrained BERT backbone (`PackedPairTransformer`); `pack_pair` packs alone."""

from __future__ import annotations

import keras
from keras import ops

from keras_match.encoders.transformer import TransformerStates

__all__ = ["pack_pair", "PackedPairTransformer"]


def pack_pair(question_ids, answer_ids, sep_id=102, max_length=None):
    """Packs two WordPiece id tensors, each `[CLS] pieces [SEP]` then padding 0, as BERT reads a text pair.

    Each row becomes the question's real ids (its `[CLS]` and `[SEP]` included), then the answer's real ids without
    its leading `[CLS]`, then padding 0: `[CLS] q_1 .. q_n [SEP] a_1 .. a_m [SEP] 0 ..`, the packing of BERT's
    sentence pairs (Devlin et al. 2019, section 3, Figure 2) and of Nogueira & Cho's re-ranker. The segment ids are
    0 over the question's ids and 1 over the answer's (padding 0); the padding mask is True over both. The width is
    the longest packed row of the batch (at least 1; at most `Lq + La - 1`: the answer's `[CLS]` is dropped), cut
    at `max_length` if given: a longer row keeps its first `max_length - 1` ids and ends with `[SEP]`.

    The ids must be right-padded (real ids first, then 0 only), as the pair preprocessor makes them
    (`keras_match.preprocessors.PairPreprocessor` with a WordPiece `tokenizer`); an all-padding row (a padded list
    item) packs to an all-padding row.

    Args:
        question_ids: int tensor `[batch, Lq]`, 0 = padding, `[CLS]` first.
        answer_ids: int tensor `[batch, La]`, 0 = padding, `[CLS]` first (dropped).
        sep_id: int, the id of `[SEP]` (102 in BERT uncased's vocabulary, all-MiniLM-L6-v2's).
        max_length: None or an int >= 2, the most ids a packed row keeps.

    Returns:
        `(token_ids, segment_ids, padding_mask)`: int32 `[batch, width]`, int32 `[batch, width]`, bool
        `[batch, width]`.

    Raises:
        ValueError: `max_length` is not None nor an int >= 2.
    """
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                   or max_length < 2):
        raise ValueError(f"max_length must be None or an integer >= 2, got {max_length!r}")
    # one more padding column each: a gather from a batch of zero-width rows (an empty request) has a column
    question_ids, answer_ids = (ops.pad(ops.cast(ids, "int32"), [[0, 0], [0, 1]])
                                for ids in (question_ids, answer_ids))
    question_length = ops.sum(ops.cast(ops.not_equal(question_ids, 0), "int32"), axis=1, keepdims=True)
    answer_length = ops.sum(ops.cast(ops.not_equal(answer_ids, 0), "int32"), axis=1, keepdims=True)
    length = question_length + ops.maximum(answer_length - 1, 0)  # [batch, 1], the answer's [CLS] dropped
    width = ops.max(length, initial=1)  # at least 1: [CLS]'s position exists in an empty batch too
    if max_length is not None:
        width = ops.minimum(width, max_length)
    positions = ops.expand_dims(ops.arange(width, dtype="int32"), 0)  # [1, width]
    in_question = positions < question_length
    in_pair = positions < length
    question_position = ops.minimum(positions, ops.shape(question_ids)[1] - 1) + ops.zeros_like(question_length)
    answer_position = ops.minimum(positions - question_length + 1, ops.shape(answer_ids)[1] - 1)
    from_question = ops.take_along_axis(question_ids, ops.maximum(question_position, 0), axis=1)
    from_answer = ops.take_along_axis(answer_ids, ops.maximum(answer_position, 0), axis=1)
    token_ids = ops.where(in_question, from_question, ops.where(in_pair, from_answer, 0))
    segment_ids = ops.cast(ops.logical_and(in_pair, ops.logical_not(in_question)), "int32")
    if max_length is not None:  # a row cut short still ends with [SEP]
        cut = ops.logical_and(ops.equal(positions, width - 1), length > width)
        token_ids = ops.where(cut, sep_id, token_ids)
    return token_ids, segment_ids, in_pair


@keras.saving.register_keras_serializable(package="keras_match")
class PackedPairTransformer(keras.layers.Layer):
    """The `[CLS]` state of a BERT backbone reading a question and an answer packed as one sequence.

    The pair is packed inside the model (`pack_pair`: `[CLS] question [SEP] answer [SEP]`, segment ids 0 / 1,
    right-padded to the batch's longest packed row), so the model takes the pair preprocessor's two id tensors
    and an export tokenizes raw text as every pair model does. The backbone is a
    `keras_match.encoders.TransformerStates` (the input encoder's layer, which a
    `keras_match.encoders.TransformerEncoder` makes and fills with the pretrained weights when the model is built):
    its keras-hub `BertBackbone` reads the token ids, the segment ids and the padding mask, and this layer returns
    the last transformer layer's state at position 0 (`[CLS]`), BERT's representation of the pair (Devlin et al.
    2019, section 4.1; Nogueira & Cho 2019 feed it to a single-layer classifier). With the states layer's
    `layers="mix"` it is the learned scalar mix of the `[CLS]` state of the embeddings and every layer (Peters
    et al. 2018, eq. 1). The backbone's pooler (`pooled_dense`) is not used and never trains.

    What trains follows the states layer's `trainable_layers`: `"frozen"` (nothing of the backbone: its parts run
    in inference mode and pass no gradient), `"all"` or the top k transformer layers (the embeddings and the layers
    below stay frozen, without dropout).

    Args:
        states: a `keras_match.encoders.TransformerStates` (its architecture, trainable layers and layer choice);
            the layer owns it (its weights are this layer's).
        sep_id: int, the id of `[SEP]` (102 for all-MiniLM-L6-v2).
        max_length: None or an int >= 2: the packed row's longest (`pack_pair`); None keeps
            `question + answer - 1` ids (99 with the pair preprocessor's 40 / 60), and at most the backbone's
            `max_sequence_length` (512) in any case.
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[question_ids, answer_ids]`, int `[batch, Lq]` and `[batch, La]`, right-padded with 0, each
            `[CLS] pieces [SEP]` (WordPiece ids of the backbone's vocabulary).
        training: bool, dropout in the parts that train.

    Returns:
        `[batch, hidden_dim]` (384 for MiniLM) in the layer's compute dtype, no mask. Padding beyond a row's
        ids changes nothing (the backbone's attention masks it and the packed width is the batch's longest
        packed row). An all-padding pair (a padded list item) gives a finite vector.

    Raises:
        ValueError: `states` is not a `TransformerStates`; `max_length` is not None nor an int >= 2.
        ImportError: keras-hub is not installed (from `TransformerStates`).

    Examples:
    >>> encoder = keras_match.encoders.TransformerEncoder("minilm-l6", trainable="all")  # doctest: +SKIP
    >>> question, answer = keras_match.models.common.token_inputs("question", "answer")  # doctest: +SKIP
    >>> cls = PackedPairTransformer(encoder.layer)([question, answer])  # [batch, 384]  # doctest: +SKIP
    >>> model = keras.Model([question, answer], keras.layers.Dense(1)(cls))  # doctest: +SKIP
    >>> encoder.finish(model)  # the pretrained weights  # doctest: +SKIP

    Reference:
        Devlin et al., BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, NAACL
        2019 (section 3, input representation; section 4.1, the `[CLS]` state for pair classification). Nogueira
        & Cho, Passage Re-ranking with BERT, arXiv:1901.04085, 2019 (the pair packed query first, the `[CLS]`
        vector to a single-layer classifier). Peters et al., Deep contextualized word representations, NAACL
        2018, eq. 1 (the mix).
    """

    def __init__(self, states, sep_id=102, max_length=None, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(states, TransformerStates):
            raise ValueError("states must be a keras_match.encoders.TransformerStates, got "
                             f"{type(states).__name__}")
        if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, int)
                                       or max_length < 2):
            raise ValueError(f"max_length must be None or an integer >= 2, got {max_length!r}")
        self.states = states
        self.sep_id = int(sep_id)
        self.max_length = max_length

    @property
    def length_cap(self) -> int:
        """The most ids a packed row keeps: `max_length`, and never more than the backbone's positions."""
        cap = self.states.max_sequence_length
        return cap if self.max_length is None else min(cap, self.max_length)

    def build(self, input_shape):
        if not self.states.built:
            self.states.build(input_shape[0])  # the mix's weights, with layers="mix"
        self.built = True

    def all_cls_states(self, token_ids, segment_ids, padding_mask, training=False):
        """The `[CLS]` state of the embeddings and of every transformer layer, `num_layers + 1` tensors
        `[batch, hidden_dim]`, for packed ids; frozen parts run in inference mode and carry no gradient."""
        states = self.states
        backbone = states.backbone
        first = states.num_layers - states.trained_layers  # the first transformer layer that trains
        embeddings_train = states.trainable_layers == "all"
        tokens = backbone.token_embedding(token_ids)
        x = backbone.embeddings_add((tokens, backbone.position_embedding(tokens),
                                     backbone.segment_embedding(segment_ids)))
        x = backbone.embeddings_layer_norm(x)
        x = backbone.embeddings_dropout(x, training=bool(training) and embeddings_train)
        x = x if embeddings_train else ops.stop_gradient(x)
        cls = [x[:, 0, :]]
        for index, layer in enumerate(backbone.transformer_layers):
            x = layer(x, padding_mask=padding_mask, training=bool(training) and index >= first)
            x = x if index >= first else ops.stop_gradient(x)
            cls.append(x[:, 0, :])
        return cls

    def call(self, inputs, training=None):
        question_ids, answer_ids = inputs
        token_ids, segment_ids, padding_mask = pack_pair(question_ids, answer_ids, self.sep_id, self.length_cap)
        cls = self.all_cls_states(token_ids, segment_ids, padding_mask, training=training)
        if self.states.layers == "last":
            return cls[-1]
        weights = ops.cast(ops.softmax(self.states.mix_logits), cls[0].dtype)
        mixed = sum(weights[j] * state for j, state in enumerate(cls))
        return ops.cast(self.states.mix_scale, mixed.dtype) * mixed

    def compute_output_shape(self, input_shape):
        return (input_shape[0][0], self.states.hidden_dim)

    def get_config(self):
        config = super().get_config()
        config.update(states=keras.saving.serialize_keras_object(self.states), sep_id=self.sep_id,
                      max_length=self.max_length)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["states"] = keras.saving.deserialize_keras_object(config["states"])
        return cls(**config)
