"""The Coupled-LSTMs matching model (Liu, Qiu, Zhou, Chen & Huang, EMNLP 2016, section 4): `build_coupled_lstm`."""

from __future__ import annotations

import keras

from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors_with
from keras_match.layers.checks import positive_int
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs
from keras_match.models.coupled_lstm.coupled_lstm import COUPLINGS
from keras_match.models.coupled_lstm.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm.coupled_lstm import DIRECTIONS
from keras_match.models.coupled_lstm.coupled_lstm import paper_uniform
from keras_match.models.coupled_lstm.dynamic_pooling import DynamicPooling2D


def _pooling(pooling):
    if (not isinstance(pooling, (list, tuple)) or len(pooling) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in pooling)):
        raise ValueError(f"pooling must be two positive integers (p, q), got {pooling!r}")
    return tuple(pooling)


@takes_input_encoder(word_vectors_with(embedding_dim=50, trainable_embeddings=True))
@takes_matching_head("score")
def build_coupled_lstm(
    input_encoder,
    coupling="loose",
    blocks=1,
    directions=4,
    units=50,
    pooling=(2, 1),
    share_weights=True,
    dense_units=50,
    dropout=0.0,
    l2=5e-5,
    head=None,
    name=None,
):
    """Build the Coupled-LSTMs matching model (LC-LSTMs or TC-LSTMs) of Liu et al. (2016).

    The model follows the paper's section 4 (figure 3):

    1. word embeddings shared by both texts (padding id 0 masked), fine-tuned in the paper (section 6.1);
    2. `blocks` stacked `CoupledLSTM2D` blocks (section 4.2): the first reads the two word sequences (with their
       masks), each upper block the grid of the block below (section 4.2.3); each block runs over the grid from
       `directions` corners (1 or 4, section 4.2.1) and sums them (eq. 13). `coupling` is `"loose"` (LC-LSTMs,
       `2 * units` channels) or `"tight"` (TC-LSTMs, `units` channels);
    3. `DynamicPooling2D(p, q)`: max over a `p x q` partition of each pair's true grid (section 4.3), flattened;
    4. a fully connected layer of `dense_units` (section 4.4; its activation is not given: tanh here, the
       activation of the paper's other fully connected layers);
    5. the head (section 4.5): a linear score for ranking (`head="score"`, trained with the max-margin loss
       `pairwise_hinge`, section 5), a softmax for classification (cross-entropy).

    Every weight but the embeddings and the head's starts uniform in [-0.1, 0.1] (section 6.1); L2 (`l2`) is
    applied to every kernel (the C-LSTMs' input and recurrent kernels, the fully connected layer, the head).
    Train with AdaGrad and gradient clipping (section 5; the zoo presets' `training`).

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states
            (`keras_match.encoders.WordVectorEncoder`: the paper's word vectors). For one release the builder
            also takes, by keyword and instead of it, the word-vector settings of earlier releases: `vocab_size`,
            `embeddings`, `embedding_dim` (default 50) and `trainable_embeddings` (default True).
        coupling: `"loose"` (LC-LSTMs) or `"tight"` (TC-LSTMs).
        blocks: int >= 1, the number of stacked C-LSTMs blocks (1; 3 for the paper's best rankers, 4 for its
            best classifiers).
        directions: 1 or 4, the corners each block runs from (section 4.2.1).
        units: int, the hidden size d of the C-LSTMs (50 in Table 1).
        pooling: `(p, q)`, the dynamic pooling's size ((2, 1) for ranking, (1, 1) for classification, Table 1).
        share_weights: bool, one weight set per block for the four directions and, for LC, for LSTM^1 and LSTM^2
            (`CoupledLSTM2D(share_directions=..., share_streams=...)`): the only reading that fits Table 2's
            parameter counts. LC with shared streams needs `embedding_dim` (of the first block) equal for both
            texts, which a shared embedding gives.
        dense_units: int, the width of the fully connected layer (not in the paper; 50 fits Table 2's counts).
        dropout: float in [0, 1), dropout on the pooled vector and on the fully connected layer's output (the
            paper names no dropout: 0).
        l2: float, the L2 weight of every kernel (5e-5 ranking, 1e-5 classification, Table 1).
        head: `"score"` (default: section 4.5's ranking score), `"softmax"` or `"classification"` (section 4.5's
            softmax), with `num_classes` and `num_features`: the settings of the shared
            `keras_match.models.common.MatchingHead`, or one.
        name: optional model name; default `"coupled_lstm"`.

    Returns:
        An uncompiled `keras.Model` from the token ids
        `{"question": int32 [batch, lq], "answer": int32 [batch, la]}` (`keras_match.models.common.token_inputs`:
        0 = padding, right-padded) and, when `num_features > 0`, `MatchingHead`'s `"features"`, to the head's
        float32 output (`[batch, 1]` for the default `"score"`, the other heads' shapes in `MatchingHead`).

    Raises:
        ValueError: `embeddings` does not have `vocab_size` rows, a size is not a positive integer, `coupling`,
            `directions`, `pooling` or `head` is invalid.

    Examples:
    >>> model = build_coupled_lstm(vocab_size=1000, embedding_dim=8, units=4, dense_units=4)
    >>> model({"question": np.array([[5, 6, 0]], "int32"), "answer": np.array([[8, 9]], "int32")}).shape
    TensorShape([1, 1])

    Reference:
        Liu, Qiu, Zhou, Chen, Huang. "Modelling Interaction of Sentence Pair with Coupled-LSTMs." EMNLP 2016.
        arXiv:1605.05573.
    """
    positive_int("blocks", blocks)
    positive_int("units", units)
    positive_int("dense_units", dense_units)
    if coupling not in COUPLINGS:
        raise ValueError(f"coupling must be one of {COUPLINGS}, got {coupling!r}")
    if isinstance(directions, bool) or directions not in DIRECTIONS:
        raise ValueError(f"directions must be one of {DIRECTIONS}, got {directions!r}")
    p, q = _pooling(pooling)
    if not isinstance(share_weights, bool):
        raise ValueError(f"share_weights must be true or false, got {share_weights!r}")
    regularizer = keras.regularizers.L2(l2) if l2 else None

    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights
    grid = [input_encoder(question), input_encoder(answer)]
    for block in range(1, blocks + 1):
        grid = CoupledLSTM2D(
            units,
            coupling=coupling,
            directions=directions,
            share_directions=share_weights,
            share_streams=share_weights and coupling == "loose",
            kernel_regularizer=regularizer,
            recurrent_regularizer=regularizer,
            name=f"coupled_lstm_{block}",
        )(grid)
    x = keras.layers.Flatten(name="pooled")(DynamicPooling2D(p, q, name="dynamic_pooling")(grid))

    def prediction(x):
        if dropout:
            x = keras.layers.Dropout(dropout, name="dropout_pooled")(x)
        x = keras.layers.Dense(dense_units, activation="tanh", kernel_initializer=paper_uniform(),
                               bias_initializer=paper_uniform(), kernel_regularizer=regularizer,
                               name="fully_connected")(x)
        if dropout:
            x = keras.layers.Dropout(dropout, name="dropout_fully_connected")(x)
        return x

    return head.model({"question": question, "answer": answer}, x, prediction=prediction,
                      regularizer=regularizer, name=name or "coupled_lstm")
