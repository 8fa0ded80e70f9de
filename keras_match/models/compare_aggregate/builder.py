"""Compare-Aggregate (Wang & Jiang, ICLR 2017): the functional-API builder."""

from __future__ import annotations

import keras

from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors
from keras_match.layers.checks import positive_int
from keras_match.layers.checks import rate
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs
from keras_match.models.compare_aggregate.compare_aggregate import CompareAggregate


@takes_input_encoder(word_vectors)
@takes_matching_head("score")
def build_compare_aggregate(
    input_encoder,
    comparison="submult_nn",
    units=150,
    windows=(1, 2, 3, 4, 5),
    filters=None,
    conv_padding="valid",
    dense_units=None,
    embedding_dropout=0.3,
    head=None,
    name=None,
):
    """Build a Compare-Aggregate model (Wang & Jiang, 2017) for scoring question/answer pairs.

    The model follows sections 2 and 3.1 and the appendix of the paper:

    1. word embeddings, frozen by default ("During training, they are not updated"; padding id 0 masked), with
       dropout on the embedded words of both texts (`embedding_dropout`, "the hyper-parameter we tuned is the
       dropout on the embedding layer");
    2. `keras_match.models.compare_aggregate.CompareAggregate` (eq. 1-9): the gated preprocessing shared by both
       texts (eq. 1), the answer's attention over the question (eq. 2), the comparison function `comparison`
       (eq. 3-8) and the CNN aggregation with one ReLU convolution of `filters` filters per window size,
       max-pooled over time (eq. 9), giving `r` of width `len(windows) * filters` (`n * l` in the paper);
    3. when `num_features > 0`, the extra pair features (word overlap, BM25: not in the paper) concatenated to
       `r`, as CTRN concatenates them before its dense layers;
    4. the prediction layers of eq. 10: a hidden layer `tanh(W^s r + b^s)` of width `dense_units` (`l` in the
       paper), then the head. With the default `"score"` head the output is eq. 10's logit
       `w^T tanh(W^s r + b^s) + b`, a raw score per pair; the softmax over a question's K candidates in eq. 10
       is the listwise loss (`keras_match.losses.ListwiseSoftmax`, `loss="listwise_softmax"`), which scores
       `[questions, K]` lists through `keras_match.heads.ListScorer`. For classification (SNLI in the paper,
       "the actual model structure is what we have described before") the same hidden layer feeds a softmax
       over `num_classes` labels (`head="classification"`); the paper does not spell this layer out, the tanh
       layer is our reading of it.

    The paper uses no L2 regularisation and no dropout besides the embedding dropout, so this builder has
    neither. Train it with Adamax (learning rate 0.002, beta 0.9 / 0.999, the appendix).

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states
            (`keras_match.encoders.WordVectorEncoder`: the paper's word vectors). For one release the builder
            also takes, by keyword and instead of it, the word-vector settings of earlier releases: `vocab_size`,
            `embeddings`, `embedding_dim` (default 300) and `trainable_embeddings` (default False).
        comparison: str, the comparison function f of eq. 3-8: `"nn"`, `"ntn"`, `"euccos"`, `"sub"`, `"mult"`
            or `"submult_nn"` (case-insensitive; see `keras_match.models.compare_aggregate.get_comparison`).
        units: int, the hidden size l (150 in the appendix): width of the preprocessing (eq. 1), of the
            comparison functions with weights (eq. 3, 4, 8) and, by default, of the convolutions and of the
            hidden prediction layer.
        windows: non-empty list of distinct positive ints, the CNN window sizes n of eq. 9 ([1, 2, 3, 4, 5] for
            WikiQA and SNLI in the appendix).
        filters: int or None, filters per window (None: `units`, so that `r` is in R^{nl}).
        conv_padding: `"valid"` (Kim's narrow convolution, default) or `"same"`, see
            `keras_match.models.compare_aggregate.CNNAggregation`.
        dense_units: int or None, width of the hidden tanh layer of eq. 10 (`W^s in R^{l x nl}`; None: `units`).
        embedding_dropout: float in [0, 1), dropout rate on the embedded words (the paper tunes it and does not
            report the value; 0.3 is the authors' README example for SNLI).
        head: `"score"` (default: eq. 10's logit), `"softmax"` or `"classification"` (SNLI), with `num_classes`
            and `num_features`: the settings of the shared `keras_match.models.common.MatchingHead`, or one.
        name: optional model name; default `"compare_aggregate_<comparison>"`.

    Returns:
        An uncompiled `keras.Model` whose one output is the head's, float32 `[batch, 1]` raw scores for the
        default `"score"` head (`MatchingHead` gives the other heads' shapes). Its inputs: the token ids
        `{"question": int32 [batch, lq], "answer": int32 [batch, la]}` (`keras_match.models.common.token_inputs`:
        0 = padding, right-padded) and, when `num_features > 0`, `MatchingHead`'s `"features"`. The question is
        the text attended to (the premise for entailment), the answer the text compared word by word (the
        hypothesis). Padding never changes a pair's output (padded words get no attention weight and never enter
        the CNN's max); an empty answer gives `r = 0` and an empty question `h = 0`, both finite.

    Raises:
        ValueError: `embeddings` does not have `vocab_size` rows; `units`, `filters` or `dense_units` is not a
            positive integer (None allowed for the last two); `windows` is empty, holds a non-positive or
            repeated size; `comparison`, `conv_padding` or `head` is unknown; a classification head lacks
            `num_classes >= 2`; `embedding_dropout` is not in [0, 1); `num_features` is negative.

    Examples:
    >>> model = build_compare_aggregate(vocab_size=1000, embedding_dim=50, units=16, comparison="mult")
    >>> q = np.array([[5, 6, 7, 0]], dtype="int32"); a = np.array([[8, 9, 0]], dtype="int32")
    >>> model({"question": q, "answer": a}).shape
    TensorShape([1, 1])
    >>> build_compare_aggregate(vocab_size=1000, embedding_dim=50, units=16, head="classification",
    ...                         num_classes=3).output.shape
    (None, 3)

    Reference:
        Wang, Jiang. "A Compare-Aggregate Model for Matching Text Sequences." ICLR 2017. arXiv:1611.01747.
        Section 2 (eq. 1-9), section 3.1 (eq. 10) and the appendix (settings).
    """
    positive_int("units", units)
    positive_int("dense_units", dense_units, allow_none=True)
    rate("embedding_dropout", embedding_dropout)
    # eq. 1-9; raises ValueError for a bad comparison, windows, filters or conv_padding.
    compare_aggregate = CompareAggregate(
        units,
        comparison=comparison,
        windows=windows,
        filters=filters,
        conv_padding=conv_padding,
        name="compare_aggregate",
    )
    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights

    # Appendix: dropout on the embedding layer (independent masks for the two texts).
    drop = keras.layers.Dropout(embedding_dropout, name="dropout_embedded")
    r = compare_aggregate([drop(input_encoder(question)), drop(input_encoder(answer))])  # [batch, n * filters]

    # eq. 10: w^T tanh(W^s r + b^s) + b; the head's Dense layer holds w and b.
    return head.model(
        {"question": question, "answer": answer}, r,
        prediction=keras.layers.Dense(dense_units or units, activation="tanh", name="prediction_hidden"),
        name=name or f"compare_aggregate_{str(comparison).lower()}")
