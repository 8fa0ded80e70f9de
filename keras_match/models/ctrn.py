"""Cross Temporal Recurrent Networks (Tay, Luu & Hui, AAAI 2018): the CTRN and QRNN matcher builders."""

from __future__ import annotations

import keras
import numpy as np

from keras_match.layers import CTRN, QRNN, TemporalMeanPooling
from keras_match.models.common import feature_input, frozen_embedding, output_head, pair_inputs


def _check_positive(**values):
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _matching_model(
    encode,
    *,
    vocab_size,
    embedding_dim,
    embeddings,
    projection_dim,
    num_dense_layers,
    dense_units,
    dropout,
    l2,
    num_features,
    trainable_embeddings,
    head,
    num_classes,
    name,
):
    """The model around a sequence-pair encoder, shared by `build_ctrn`, `build_qrnn_matcher` and the benchmarks.

    `encode(q, a, regularizer) -> (hq, ha)` maps the projected, masked word sequences `[batch, l, width]` to hidden
    sequences `[batch, l, d]` (masks carried along). Everything else (inputs, embedding, projection, pooling,
    dense layers, softmax, dropout, L2) is the same for every encoder, so speed and accuracy comparisons differ
    only in the encoder.
    """
    _check_positive(num_dense_layers=num_dense_layers, dense_units=dense_units)
    features = feature_input(num_features)
    regularizer = keras.regularizers.L2(l2) if l2 else None
    question, answer = pair_inputs()
    embedding = frozen_embedding(vocab_size, embedding_dim, embeddings, trainable_embeddings)
    width = projection_dim or embedding.output_dim

    # "Word embedding matrices are all non-trainable and are learned by the projection layer instead."
    projection = keras.layers.Dense(
        width, activation="relu", kernel_regularizer=regularizer, name="projection"
    )
    drop = keras.layers.Dropout(dropout, name="dropout_projected")
    q = drop(projection(embedding(question)))
    a = drop(projection(embedding(answer)))

    hq, ha = encode(q, a, regularizer)

    pool = TemporalMeanPooling(name="temporal_mean_pooling")
    x = keras.layers.Concatenate(name="pair_representation")([pool(hq), pool(ha)])
    inputs = {"question": question, "answer": answer}
    x = keras.layers.Dropout(dropout, name="dropout_dense_1")(x)
    if features is not None:
        inputs["features"] = features
        x = keras.layers.Concatenate(name="pair_and_features")([x, features])
    for i in range(1, num_dense_layers + 1):
        if i > 1:
            x = keras.layers.Dropout(dropout, name=f"dropout_dense_{i}")(x)
        x = keras.layers.Dense(dense_units, activation="relu", kernel_regularizer=regularizer, name=f"dense_{i}")(x)
    x = keras.layers.Dropout(dropout, name="dropout_output")(x)
    model = keras.Model(inputs, output_head(x, head, num_classes, regularizer), name=name)
    if embeddings is not None:
        embedding.set_weights([np.asarray(embeddings, dtype="float32")])
    return model


def build_ctrn(
    vocab_size,
    embedding_dim=300,
    embeddings=None,
    filters=512,
    kernel_size=2,
    alignment="index",
    projection_dim=None,
    num_dense_layers=1,
    dense_units=128,
    dropout=0.5,
    l2=4e-6,
    num_features=0,
    trainable_embeddings=False,
    head="softmax",
    num_classes=None,
    name=None,
):
    """Build a Cross Temporal Recurrent Network (CTRN) for scoring question/answer pairs.

    The model follows the paper's sections "Cross Temporal Recurrent Networks" and "Implementation Details":

    1. frozen word embeddings (padding id 0 masked), then a projection layer shared by both texts,
       `Dense(projection_dim, relu)` ("word embedding matrices are all non-trainable and are learned by the
       projection layer instead"; the paper gives neither the projection's width nor its activation);
    2. `keras_match.layers.CTRN`: QRNN convolutions (eq. 1) shared by both texts and, per text, a cell with
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
        vocab_size: int, number of token ids including padding (0) and OOV (1), as
            `keras_match.text.TextEncoder.vocab_size`.
        embedding_dim: int, word vector size. Ignored when `embeddings` is given (its width is used).
        embeddings: optional float array `[vocab_size, embedding_dim]`, pretrained vectors (GloVe), e.g.
            from `keras_match.text.load_embeddings`. Without it the embeddings are randomly initialised.
        filters: int, number of filters d of the convolutions, the hidden size (the paper tunes 128..1024).
        kernel_size: int, filter width k (2 in the paper's Table 2).
        alignment: `"index"` (default, `t* = t`; it trained as well or slightly better on TrecQA in a quick
            comparison) or `"stretch"` (the paper's `t* = t * ceil(max(|q|, |a|) / min(|q|, |a|))`, clipped to
            the partner's length); see `keras_match.layers.CTRN`.
        projection_dim: int or None, width m of the projection layer; None keeps the embedding width.
        num_dense_layers: int >= 1, number of hidden dense layers (the paper tunes 1..3).
        dense_units: int, width h of the hidden dense layers (128 in the paper's Table 2).
        dropout: float in [0, 1), dropout rate (0.5 in the paper).
        l2: float, L2 regularisation weight lambda of eq. 3 (4e-6 in the paper).
        num_features: int >= 0, number of extra pair features. With `num_features > 0` the model has a third
            input `"features"`, float32 `[batch, num_features]` (e.g. `keras_match.features.OverlapFeatures`).
        trainable_embeddings: bool, whether the word vectors are trained (the paper keeps them fixed).
        head: the output head (`keras_match.heads`): `"softmax"` (the paper's 2-class softmax), `"score"`
            (a raw ranking score) or `"classification"` (softmax over `num_classes` labels).
        num_classes: int >= 2, the number of labels of a classification head.
        name: optional model name; default `"ctrn"`.

    Returns:
        An uncompiled `keras.Model` with inputs `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (token ids, 0 = padding; lengths may differ between batches), plus `"features"` float32
        `[batch, num_features]` when `num_features > 0`, and one output, the head's: float32 `[batch, 2]`, the
        softmax probabilities of (not relevant, relevant), for the default `"softmax"` head (`[batch, 1]` for
        `"score"`, `[batch, num_classes]` for `"classification"`). Padding never changes a pair's output; an
        empty text gives a finite one.

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
    return _matching_model(
        lambda q, a, regularizer: CTRN(
            filters,
            kernel_size=kernel_size,
            alignment=alignment,
            kernel_regularizer=regularizer,
            name="ctrn",
        )([q, a]),
        vocab_size=vocab_size,
        embedding_dim=embedding_dim,
        embeddings=embeddings,
        projection_dim=projection_dim,
        num_dense_layers=num_dense_layers,
        dense_units=dense_units,
        dropout=dropout,
        l2=l2,
        num_features=num_features,
        trainable_embeddings=trainable_embeddings,
        head=head,
        num_classes=num_classes,
        name=name or "ctrn",
    )


def build_qrnn_matcher(
    vocab_size,
    embedding_dim=300,
    embeddings=None,
    filters=512,
    kernel_size=2,
    projection_dim=None,
    num_dense_layers=1,
    dense_units=128,
    dropout=0.5,
    l2=4e-6,
    num_features=0,
    trainable_embeddings=False,
    head="softmax",
    num_classes=None,
    name=None,
):
    """Build the QRNN baseline of the CTRN paper: a siamese QRNN matcher for question/answer pairs.

    The model follows the paper's sections "Cross Temporal Recurrent Networks" and "Implementation Details":

    1. frozen word embeddings (padding id 0 masked), then a projection layer shared by both texts,
       `Dense(projection_dim, relu)` ("word embedding matrices are all non-trainable and are learned by the
       projection layer instead"; the paper gives neither the projection's width nor its activation);
    2. `keras_match.layers.QRNN` (eq. 1 with fo-pooling), one weight set applied to each text on its own
       (no crossing);
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
        vocab_size: int, number of token ids including padding (0) and OOV (1), as
            `keras_match.text.TextEncoder.vocab_size`.
        embedding_dim: int, word vector size. Ignored when `embeddings` is given (its width is used).
        embeddings: optional float array `[vocab_size, embedding_dim]`, pretrained vectors (GloVe), e.g.
            from `keras_match.text.load_embeddings`. Without it the embeddings are randomly initialised.
        filters: int, number of filters d of the convolutions, the hidden size (the paper tunes 128..1024).
        kernel_size: int, filter width k (2 in the paper's Table 2).
        projection_dim: int or None, width m of the projection layer; None keeps the embedding width.
        num_dense_layers: int >= 1, number of hidden dense layers (the paper tunes 1..3).
        dense_units: int, width h of the hidden dense layers (128 in the paper's Table 2).
        dropout: float in [0, 1), dropout rate (0.5 in the paper).
        l2: float, L2 regularisation weight lambda of eq. 3 (4e-6 in the paper).
        num_features: int >= 0, number of extra pair features. With `num_features > 0` the model has a third
            input `"features"`, float32 `[batch, num_features]` (e.g. `keras_match.features.OverlapFeatures`).
        trainable_embeddings: bool, whether the word vectors are trained (the paper keeps them fixed).
        head: the output head (`keras_match.heads`): `"softmax"` (the paper's 2-class softmax), `"score"`
            (a raw ranking score) or `"classification"` (softmax over `num_classes` labels).
        num_classes: int >= 2, the number of labels of a classification head.
        name: optional model name; default `"qrnn"`.

    Returns:
        An uncompiled `keras.Model` with inputs `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (token ids, 0 = padding; lengths may differ between batches), plus `"features"` float32
        `[batch, num_features]` when `num_features > 0`, and one output, the head's: float32 `[batch, 2]`, the
        softmax probabilities of (not relevant, relevant), for the default `"softmax"` head (`[batch, 1]` for
        `"score"`, `[batch, num_classes]` for `"classification"`). Padding never changes a pair's output; an
        empty text gives a finite one.

    Raises:
        ValueError: `embeddings` does not have `vocab_size` rows, a size is not a positive integer, or
            `num_features` is negative, or `head` is unknown.

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

    return _matching_model(
        encode,
        vocab_size=vocab_size,
        embedding_dim=embedding_dim,
        embeddings=embeddings,
        projection_dim=projection_dim,
        num_dense_layers=num_dense_layers,
        dense_units=dense_units,
        dropout=dropout,
        l2=l2,
        num_features=num_features,
        trainable_embeddings=trainable_embeddings,
        head=head,
        num_classes=num_classes,
        name=name or "qrnn",
    )
