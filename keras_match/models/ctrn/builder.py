"""Cross Temporal Recurrent Networks (Tay, Luu & Hui, AAAI 2018): the CTRN and QRNN matcher builders."""

from __future__ import annotations

import keras

from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors
from keras_match.layers import TemporalMeanPooling
from keras_match.layers.checks import positive_int
from keras_match.models.ctrn.ctrn import CTRN
from keras_match.models.ctrn.qrnn import QRNN
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs
from keras_match.models.encoder_rankers.builder import COSINE_SCALE
from keras_match.models.encoder_rankers.builder import start_at_the_cosine
from keras_match.models.encoder_rankers.sentence_embedding import SentenceEmbedding
from keras_match.models.encoder_rankers.siamese_features import SiameseFeatures


_SHARED = ("input_encoder", "projection_dim", "num_dense_layers", "dense_units", "dropout", "l2", "sentence_cosine",
           "head")
"""The arguments `build_ctrn` and `build_qrnn_matcher` pass on to `build_recurrent_matcher` unchanged."""


def _shared_arguments(arguments):
    return {key: arguments[key] for key in _SHARED}


def sentence_cosine_of(states_q, states_a, name="sentence_cosine"):
    """The bi-encoder's score of a pair, from the input encoder's states: the cosine of the two texts'
    mean-pooled, L2-normalised states (`keras_match.models.encoder_rankers.SentenceEmbedding`, one layer shared by
    both texts), computed in float32 under every precision (a bfloat16 cosine keeps 8 significant bits).

    Over a frozen sentence encoder (all-MiniLM-L6-v2, whose sentence embedding this is) it is the zero-shot
    bi-encoder's score, `bi_encoder_minilm` with `backbone_trainable="frozen"`. A builder that takes
    `sentence_cosine=True` gives it to its output layer beside its own representation (ours, not a paper's).

    Args:
        states_q, states_a: float `[batch, lq, d]` and `[batch, la, d]`, the input encoder's per-token states,
            carrying its padding mask (padded positions never count).
        name: the name of the cosine layer (`SiameseFeatures("cosine")`, as the bi-encoder's; the embedding layer
            is `f"{name}_embedding"`).

    Returns:
        float32 `[batch, 1]` in [-1, 1] (0 for a text with no real token).
    """
    embed = SentenceEmbedding(dtype="float32", name=f"{name}_embedding")
    return SiameseFeatures("cosine", dtype="float32", name=name)([embed(states_q), embed(states_a)])


@takes_matching_head("softmax")
def build_recurrent_matcher(
    encode,
    *,
    input_encoder,
    projection_dim=None,
    num_dense_layers=1,
    dense_units=128,
    dropout=0.5,
    l2=4e-6,
    sentence_cosine=False,
    head=None,
    name=None,
):
    """The CTRN paper's matching model around any sequence-pair encoder: `build_ctrn` and `build_qrnn_matcher` are
    it with their encoders, and `benchmarks/recurrence_speed.py` times it with an LSTM.

    Everything but the encoder (inputs, embedding, projection, temporal mean pooling, dense layers, head, dropout,
    L2; see `build_ctrn`) is the same for every encoder, so speed and accuracy comparisons differ only in it.

    Args:
        encode: `encode(q, a, regularizer) -> (hq, ha)`, mapping the projected, masked word sequences
            `[batch, l, width]` to hidden sequences `[batch, l, d]` (masks carried along); `regularizer` is the
            L2 regularizer (or None) its kernels should take.

    The other arguments are those of `build_ctrn`.

    Returns:
        As `build_ctrn`.

    Raises:
        ValueError: as `build_ctrn`.
    """
    positive_int("num_dense_layers", num_dense_layers)
    positive_int("dense_units", dense_units)
    if not (isinstance(sentence_cosine, bool) or sentence_cosine == "start"):
        raise ValueError(f"sentence_cosine must be false, true or \"start\", got {sentence_cosine!r}")
    regularizer = keras.regularizers.L2(l2) if l2 else None
    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights
    width = projection_dim or input_encoder.output_dim

    # "Word embedding matrices are all non-trainable and are learned by the projection layer instead."
    projection = keras.layers.Dense(
        width, activation="relu", kernel_regularizer=regularizer, name="projection"
    )
    drop = keras.layers.Dropout(dropout, name="dropout_projected")
    states_q, states_a = input_encoder(question), input_encoder(answer)
    q = drop(projection(states_q))
    a = drop(projection(states_a))

    hq, ha = encode(q, a, regularizer)

    pool = TemporalMeanPooling(name="temporal_mean_pooling")
    x = keras.layers.Concatenate(name="pair_representation")([pool(hq), pool(ha)])
    x = keras.layers.Dropout(dropout, name="dropout_dense_1")(x)

    def prediction(x):
        for i in range(1, num_dense_layers + 1):
            if i > 1:
                x = keras.layers.Dropout(dropout, name=f"dropout_dense_{i}")(x)
            x = keras.layers.Dense(dense_units, activation="relu", kernel_regularizer=regularizer,
                                   name=f"dense_{i}")(x)
        x = keras.layers.Dropout(dropout, name="dropout_output")(x)
        if sentence_cosine:
            # float32: the output layer reads the cosine at full precision, beside the dense layers' output
            x = keras.layers.Concatenate(dtype="float32", name="prediction_and_cosine")(
                [x, sentence_cosine_of(states_q, states_a)])
        return x

    model = head.model({"question": question, "answer": answer}, x, prediction=prediction,
                       regularizer=regularizer, name=name)
    if sentence_cosine == "start":
        start_at_the_cosine(model, COSINE_SCALE, column=-1)
    return model


@takes_input_encoder(word_vectors)
@takes_matching_head("softmax")
def build_ctrn(
    input_encoder,
    filters=512,
    kernel_size=2,
    alignment="index",
    projection_dim=None,
    num_dense_layers=1,
    dense_units=128,
    dropout=0.5,
    l2=4e-6,
    sentence_cosine=False,
    head=None,
    name=None,
):
    """Build a Cross Temporal Recurrent Network (CTRN) for scoring question/answer pairs.

    The model follows the paper's sections "Cross Temporal Recurrent Networks" and "Implementation Details":

    1. frozen word embeddings (padding id 0 masked), then a projection layer shared by both texts,
       `Dense(projection_dim, relu)` ("word embedding matrices are all non-trainable and are learned by the
       projection layer instead"; the paper gives neither the projection's width nor its activation);
    2. `keras_match.models.ctrn.CTRN`: QRNN convolutions (eq. 1) shared by both texts and, per text, a cell with
       its own gates and a cell with the partner's gates at the aligned step t*, multiplied per time step
       (lightweight temporal crossing). It has exactly the parameters of `build_qrnn_matcher`;
    3. temporal mean pooling of each text's hidden states over its real tokens;
    4. the concatenation `[xq; xa]`, plus, when `num_features > 0`, the extra pair features (the four word-overlap
       features of Severyn & Moschitti on TrecQA, "concatenated before the dense layers"); then
       `num_dense_layers` ReLU layers of width `dense_units` and a 2-class softmax layer (eq. 2).

    Dropout (`dropout`, 0.5 in the paper) is applied to the projected words (the recurrent layer's input), to
    `[xq; xa]` (not to the extra features) and to the input of every later dense layer and of the softmax
    layer; L2 weight decay (`l2`, 4e-6 in the paper, eq. 3) to every kernel. Train it with
    `keras_match.losses.PointwiseCrossEntropy` (eq. 3) and Adam. The ReLU activations are our choice (the paper
    does not name them).

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states
            (`keras_match.encoders.WordVectorEncoder`: the paper's word vectors). For one release the builder
            also takes, by keyword and instead of it, the word-vector settings of earlier releases: `vocab_size`,
            `embeddings`, `embedding_dim` (default 300) and `trainable_embeddings` (default False).
        filters: int, number of filters d of the convolutions, the hidden size (the paper tunes 128..1024).
        kernel_size: int, filter width k (2 in the paper's Table 2).
        alignment: `"index"` (default, `t* = t`; it trained as well or slightly better on TrecQA in a quick
            comparison) or `"stretch"` (the paper's `t* = t * ceil(max(|q|, |a|) / min(|q|, |a|))`, clipped to
            the partner's length); see `keras_match.models.ctrn.CTRN`.
        projection_dim: int or None, width m of the projection layer; None keeps the embedding width.
        num_dense_layers: int >= 1, number of hidden dense layers (the paper tunes 1..3).
        dense_units: int, width h of the hidden dense layers (128 in the paper's Table 2).
        dropout: float in [0, 1), dropout rate (0.5 in the paper).
        l2: float, L2 regularisation weight lambda of eq. 3 (4e-6 in the paper).
        sentence_cosine: False (default, the paper's model), True or `"start"`. True: the output layer also reads the
            bi-encoder's score of the pair, the cosine of the two texts' mean-pooled input-encoder states
            (`keras_match.models.ctrn.builder.sentence_cosine_of`; over frozen all-MiniLM-L6-v2 the zero-shot
            bi-encoder's score), concatenated in float32 after the last dense layer's dropout. `"start"`: that,
            and the output layer starts at `COSINE_SCALE * cosine` (20, the bi-encoder's; every other input weighs 0,
            `keras_match.models.encoder_rankers.start_at_the_cosine`), so the untrained model ranks as the cosine
            does. Ours, not the paper's: it measures what CTRN's body adds on top of that score.
        head: `"softmax"` (default: the 2-class softmax layer of eq. 2), `"score"` or `"classification"`, with
            `num_classes` and `num_features` (the word-overlap features, step 4): the settings of the shared
            `keras_match.models.common.MatchingHead`, or one.
        name: optional model name; default `"ctrn"`.

    Returns:
        An uncompiled `keras.Model` with one output, the head's: for the default `"softmax"` head float32
        `[batch, 2]`, the probabilities of (not relevant, relevant) of eq. 2 (`MatchingHead` gives the other
        heads' shapes). Its inputs: the token ids `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (`keras_match.models.common.token_inputs`: 0 = padding, right-padded) and, when `num_features > 0`,
        `MatchingHead`'s `"features"`. Padding never changes a pair's output; an empty text gives a finite one.

    Raises:
        ValueError: `embeddings` does not have `vocab_size` rows, a size is not a positive integer,
            `num_features` is negative, `alignment` or `head` is unknown.

    Examples:
    >>> model = build_ctrn(vocab_size=1000, embedding_dim=50, filters=32, dense_units=16)
    >>> q = np.array([[5, 6, 7, 0]], dtype="int32"); a = np.array([[8, 9, 0]], dtype="int32")
    >>> model({"question": q, "answer": a}).shape
    TensorShape([1, 2])
    >>> sorted(build_ctrn(vocab_size=1000, embedding_dim=50, filters=32, num_features=4).input)
    ['answer', 'features', 'question']

    Reference:
        Tay, Luu, Hui. "Cross Temporal Recurrent Networks for Ranking Question Answer Pairs." AAAI 2018.
        arXiv:1711.07656.
    """
    return build_recurrent_matcher(
        lambda q, a, regularizer: CTRN(
            filters,
            kernel_size=kernel_size,
            alignment=alignment,
            kernel_regularizer=regularizer,
            name="ctrn",
        )([q, a]),
        **_shared_arguments(locals()),
        name=name or "ctrn",
    )


@takes_input_encoder(word_vectors)
@takes_matching_head("softmax")
def build_qrnn_matcher(
    input_encoder,
    filters=512,
    kernel_size=2,
    projection_dim=None,
    num_dense_layers=1,
    dense_units=128,
    dropout=0.5,
    l2=4e-6,
    sentence_cosine=False,
    head=None,
    name=None,
):
    """Build the QRNN baseline of the CTRN paper: a siamese QRNN matcher for question/answer pairs.

    The model is `build_ctrn`'s with one change, step 2: `keras_match.models.ctrn.QRNN` (eq. 1 with fo-pooling),
    one weight set applied to each text on its own (no crossing). The projection, the temporal mean pooling,
    the dense layers, the pair features, dropout and L2 are the same.

    It takes the arguments of `build_ctrn` except `alignment`; `name` defaults to `"qrnn"`.

    Returns:
        As `build_ctrn`: an uncompiled `keras.Model` with the same inputs (int32 token ids
        `{"question": [batch, lq], "answer": [batch, la]}`, 0 = padding, and the optional `"features"`) and the
        same head's output (float32 `[batch, 2]` for the default `"softmax"` head).

    Raises:
        ValueError: as `build_ctrn`.

    Examples:
    >>> model = build_qrnn_matcher(vocab_size=1000, embedding_dim=50, filters=32, dense_units=16)
    >>> model({"question": np.array([[5, 6, 0]], "int32"), "answer": np.array([[8, 9]], "int32")}).shape
    TensorShape([1, 2])

    Reference:
        Tay, Luu, Hui. "Cross Temporal Recurrent Networks for Ranking Question Answer Pairs." AAAI 2018 (the
        QRNN rows of Tables 4-7). Bradbury, Merity, Xiong, Socher. "Quasi-Recurrent Neural Networks." ICLR 2017.
    """

    def encode(q, a, regularizer):
        qrnn = QRNN(filters, kernel_size=kernel_size, kernel_regularizer=regularizer, name="siamese_qrnn")
        return qrnn(q), qrnn(a)

    return build_recurrent_matcher(
        encode,
        **_shared_arguments(locals()),
        name=name or "qrnn",
    )
