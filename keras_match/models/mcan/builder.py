"""Multi-Cast Attention Networks (Tay, Luu & Hui, KDD 2018): the functional-API builder."""

from __future__ import annotations

import keras

from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors
from keras_match.layers import Highway, MeanMaxPooling
from keras_match.models.mcan.multi_cast_attention import MultiCastAttention
from keras_match.models.common import matching_features
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs


@takes_input_encoder(word_vectors)
@takes_matching_head("softmax")
def build_mcan(
    input_encoder,
    compression="fm",
    projection_dim=None,
    lstm_units=300,
    highway_units=200,
    fm_factors=10,
    attention_units=None,
    dropout=0.2,
    embedding_dropout=None,
    lstm_dropout=None,
    l2=1e-6,
    pooled_casts="broadcast",
    scaled_affinity=False,
    shared_affinity=True,
    head=None,
    name=None,
):
    """Build a Multi-Cast Attention Network (MCAN) for scoring question/answer pairs.

    The model follows section 2 of the paper:

    1. frozen word embeddings (padding id 0 masked), then a highway projection shared by both texts (eq. 1);
    2. `MultiCastAttention`: co-attention with alignment, max and mean pooling plus intra-attention, each
       cast compared with the word by concatenation, product and difference and compressed to a scalar by
       the chosen compression function (eq. 2-12), giving 12 features per word, concatenated to the word
       (section 2.3.3);
    3. a siamese LSTM over the casted words (eq. 13) and MeanMax pooling (eq. 14);
    4. two highway layers over `[xq; xd; xq * xd; xq - xd]` (eq. 15) and a 2-class softmax (eq. 16); with
       `num_features > 0` the pair features (word overlap, BM25: not in the paper) are concatenated to that
       vector before the highway layers, as CTRN concatenates them before its dense layers.

    Dropout (`dropout`) is applied to the input of every layer after the projection, and L2 weight decay
    (`l2`, eq. 17) to every kernel. The paper applies dropout "to all layers except the embedding layer";
    `embedding_dropout` is the rate on the embedded words before the projection (None: `dropout`, as this
    builder always did; 0: none). `lstm_dropout` is the rate on the LSTM's input words `[w; z]` (None:
    `dropout`; 0: none, as the authors' code, whose LSTM has no dropout); Keras' LSTM draws one mask per text,
    so a dropped unit, a casted feature included, is missing at every word of that text. Train it with
    `keras_match.losses.PointwiseCrossEntropy` (eq. 17).

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states
            (`keras_match.encoders.WordVectorEncoder`: the paper's word vectors). For one release the builder
            also takes, by keyword and instead of it, the word-vector settings of earlier releases: `vocab_size`,
            `embeddings`, `embedding_dim` (default 300) and `trainable_embeddings` (default False).
        compression: `"sm"`, `"nn"` or `"fm"`: the compression function F_c (eq. 10, 11, 12).
        projection_dim: int or None, width of the highway projection layer; None keeps `embedding_dim`.
        lstm_units: int, LSTM hidden size d (the paper uses 300 on TrecQA).
        highway_units: int, width h of the two highway prediction layers (200 on TrecQA).
        fm_factors: int, number of factors k of the FM compression (10 on TrecQA).
        attention_units: int or None, width of the affinity MLP F of eq. 2; None keeps the projection width.
        dropout: float in [0, 1), dropout rate (0.2 in the paper).
        embedding_dropout: float in [0, 1) or None, dropout of the embedded words (None: `dropout`).
        lstm_dropout: float in [0, 1) or None, input dropout of the siamese LSTM (None: `dropout`).
        l2: float, L2 regularisation weight lambda of eq. 17 (1e-6 on TrecQA).
        pooled_casts: `"broadcast"` or `"weighted"`: the max and mean casts as one pooled vector at every word
            (eq. 3-4) or as each word scaled by its attention weight (the authors' code); see `CoAttention`.
        scaled_affinity: bool, divide the affinities of eq. 2 and 6 by the square root of their width.
        shared_affinity: bool, one affinity function F (eq. 2) for the alignment, max and mean casts (True), or
            one per cast ("we do not share parameters across multiple attention casts", section 2.3); see
            `MultiCastAttention`.
        head: `"softmax"` (default: eq. 16), `"score"` or `"classification"`, with `num_classes` and
            `num_features`: the settings of the shared `keras_match.models.common.MatchingHead`, or one.
        name: optional model name; default `"mcan_<compression>"`.

    Returns:
        An uncompiled `keras.Model` whose one output is the head's, for the default `"softmax"` head float32
        `[batch, 2]`, the probabilities of (not relevant, relevant) of eq. 16 (`MatchingHead` gives the other
        heads' shapes). Its inputs: the token ids `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (`keras_match.models.common.token_inputs`: 0 = padding, right-padded) and, when `num_features > 0`,
        `MatchingHead`'s `"features"`. Padding never changes a pair's output.

    Raises:
        ValueError: if `embeddings` does not have `vocab_size` rows, `compression` or `head` is unknown, or
            `num_features` is negative.

    Examples:
    >>> model = build_mcan(vocab_size=1000, embedding_dim=50, lstm_units=32, highway_units=16)
    >>> q = np.array([[5, 6, 7, 0]], dtype="int32"); a = np.array([[8, 9, 0]], dtype="int32")
    >>> model({"question": q, "answer": a}).shape
    TensorShape([1, 2])

    Reference:
        Tay, Luu, Hui. "Multi-Cast Attention Networks for Retrieval-based Question Answering and Response
        Prediction." KDD 2018. arXiv:1806.00778.
    """
    regularizer = keras.regularizers.L2(l2) if l2 else None
    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights
    width = projection_dim or input_encoder.output_dim

    # eq. 1: one highway projection layer shared by both texts (applied to the dropped-out embeddings).
    projection = Highway(width, kernel_regularizer=regularizer, name="highway_projection")
    drop = keras.layers.Dropout(dropout if embedding_dropout is None else embedding_dropout,
                                name="dropout_embedded")
    q = projection(drop(input_encoder(question)))
    a = projection(drop(input_encoder(answer)))

    # eq. 2-12 and section 2.3.3: 12 casted attention features per word, appended to the word.
    casts = MultiCastAttention(
        compression=compression,
        attention_units=attention_units,
        fm_factors=fm_factors,
        kernel_regularizer=regularizer,
        pooled_casts=pooled_casts,
        scaled_affinity=scaled_affinity,
        shared_affinity=shared_affinity,
        name="multi_cast_attention",
    )
    zq, za = casts([q, a])
    concat = keras.layers.Concatenate(name="casted_words")
    q = concat([q, zq])
    a = concat([a, za])

    # eq. 13-14: siamese LSTM, MeanMax pooling.
    lstm = keras.layers.LSTM(
        lstm_units,
        return_sequences=True,
        kernel_regularizer=regularizer,
        recurrent_regularizer=regularizer,
        dropout=dropout if lstm_dropout is None else lstm_dropout,
        name="siamese_lstm",
    )
    pool = MeanMaxPooling(name="mean_max_pooling")
    xq = pool(lstm(q))
    xa = pool(lstm(a))

    # eq. 15-16: two highway layers over [xq; xd; xq * xd; xq - xd], then a linear softmax layer.
    x = keras.layers.Dropout(dropout, name="dropout_highway_1")(matching_features(xq, xa))

    def prediction(x):  # the pair features join undropped before the first highway layer, as in CTRN
        x = Highway(highway_units, kernel_regularizer=regularizer, name="highway_1")(x)
        x = keras.layers.Dropout(dropout, name="dropout_highway_2")(x)
        x = Highway(highway_units, kernel_regularizer=regularizer, name="highway_2")(x)
        return keras.layers.Dropout(dropout, name="dropout_output")(x)

    return head.model({"question": question, "answer": answer}, x, prediction=prediction,
                      regularizer=regularizer, name=name or f"mcan_{str(compression).lower()}")
