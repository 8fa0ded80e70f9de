"""The Inter-Weighted Alignment Network (Shen, Yang & Deng, EMNLP 2017), with a BiLSTM or a cross-context CARNN
encoder (Tran et al., NAACL 2018): `build_iwan`."""

from __future__ import annotations

import keras

from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors_with
from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.checks import rate
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs
from keras_match.models.iwan.alignment import COMPARES
from keras_match.models.iwan.alignment import SIMILARITIES
from keras_match.models.iwan.alignment import DecompositionAlignment
from keras_match.models.iwan.context_encoder import ENCODERS
from keras_match.models.iwan.context_encoder import ContextEncoder
from keras_match.models.iwan.inter_weighting import WEIGHTINGS
from keras_match.models.iwan.inter_weighting import InterWeighting


def pair_vector(vs, vt):
    """`[v_s; v_t; v_s * v_t; |v_s - v_t|]` from Keras layers only (`|a - b| = max(a, b) - min(a, b)`)."""
    product = keras.layers.Multiply(name="pair_product")([vs, vt])
    distance = keras.layers.Subtract(name="pair_distance")([keras.layers.Maximum(name="pair_max")([vs, vt]),
                                                            keras.layers.Minimum(name="pair_min")([vs, vt])])
    return keras.layers.Concatenate(name="pair_vector")([vs, vt, product, distance])


@takes_input_encoder(word_vectors_with(embedding_dim=50, trainable_embeddings=False))
@takes_matching_head("softmax")
def build_iwan(
    input_encoder,
    encoder="bilstm",
    weighting="inter_attention",
    hidden_units=100,
    alignment_units=100,
    attention_units=50,
    dense_units=100,
    similarity="dot",
    compare="orthogonal",
    embedding_dropout=None,
    dropout=0.3,
    head=None,
    name=None,
):
    """Build an Inter-Weighted Alignment Network (IWAN) with a BiLSTM or a cross-context CARNN encoder.

    Only IWAN's abstract, introduction and Figure 1 caption were retrieved, so most of the model is a
    reconstruction: [R] marks what the paper (or the CARNN paper) states, [I] what is ours, following
    `shared/papers/iwan_architecture.md`. The layers, every one shared by the two sentences ("blocks of the
    same colour share parameters", Figure 1 [R]):

    1. word embeddings, frozen pretrained vectors by default (padding id 0 masked) [I], with dropout
       `embedding_dropout` (by default `dropout`) on the embedded words [I];
    2. the context layer, `ContextEncoder(encoder, hidden_units)`: IWAN's BiLSTM [R], or the cross-context
       CARNN that replaces it (Tran et al. 2018, §4.3 [R]): each sentence read by an nCARNN / iCARNN / sCARNN
       whose context is the Position Encoder summary of the OTHER sentence's embedded words, one CARNN per
       direction, concatenated [I];
    3. `DecompositionAlignment(alignment_units, similarity, compare)`: the word-level similarity matrix [R]
       (dot product [I]), the masked soft alignment of each word with the other sentence [I], the orthogonal
       decomposition `p = (h . h~ / (h~ . h~ + eps)) h~`, `o = h - p` [I] and `f = ReLU(W_a [p; o] + b_a)` [I];
    4. `InterWeighting(weighting, attention_units)`: one weight per word given the other sentence [R], by
       Inter-Attention `softmax_i(v^T tanh(W_1 [h_i; h-bar_other] + b_1))` or Inter-Skip
       `sigmoid(u^T [h_i; h-bar_other] + c)` (formulas [I]), and the composition `v = sum_i w_i f_i` [I];
    5. the pair vector `z = [v_s; v_t; v_s * v_t; |v_s - v_t|]` [I] with dropout `dropout`; with
       `num_features > 0` the pair features (word overlap, BM25: not in the paper) join `z` undropped;
    6. a hidden ReLU layer of `dense_units` and the head [I]: by default a 2-class softmax (not relevant,
       relevant) trained with cross-entropy, its `p(relevant)` ranking the candidates (notes §2.8a).

    No hyperparameter of IWAN was retrieved: every default here is ours (notes §3), sized for frozen GloVe 6B
    50d and a CPU.

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states
            (`keras_match.encoders.WordVectorEncoder`: the paper's word vectors). For one release the builder
            also takes, by keyword and instead of it, the word-vector settings of earlier releases: `vocab_size`,
            `embeddings`, `embedding_dim` (default 50) and `trainable_embeddings` (default False).
        encoder: `"bilstm"` (IWAN's, default), `"ncarnn"`, `"icarnn"` or `"scarnn"` (the CARNN paper's
            cross-context encoders).
        weighting: `"inter_attention"` (default), `"inter_skip"` or `"none"` (uniform weights: an ablation).
        hidden_units: int or None, the context encoder's size per direction (its states are `2 * hidden_units`
            wide); None: the embedding width. sCARNN's hidden size is the embedding width (eq. 6): with
            `encoder="scarnn"` give None (or that width).
        alignment_units: int, the width of the alignment features `f` (`W_a`'s rows).
        attention_units: int, the width of Inter-Attention's hidden layer (`W_1`'s rows; unused otherwise).
        dense_units: int, the width of the hidden ReLU layer before the head.
        similarity: `"dot"` (default), `"cosine"` or `"bilinear"`: the similarity matrix (all [I]).
        compare: `"orthogonal"` (default) or `"concat_diff_prod"`: what `W_a` reads per word (both [I]).
        embedding_dropout: float in [0, 1) or None, dropout on the embedded words (None: `dropout`).
        dropout: float in [0, 1), dropout on the pair vector `z`.
        head: the shared head (`keras_match.models.common.MatchingHead`), `"softmax"` by default, given by its
            settings `head`, `num_classes` (a classification head's labels) and `num_features` (pair features).
        name: optional model name; default `"iwan"` (BiLSTM) or `"iwan_<encoder>"`.

    Returns:
        An uncompiled `keras.Model` with inputs `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (token ids, 0 = padding, right-padded; lengths may differ between batches), plus `"features"` float32
        `[batch, num_features]` when `num_features > 0`, and the head's output: float32 `[batch, 2]`
        probabilities for `"softmax"` (`[batch, 1]` for `"score"`, `[batch, num_classes]` for
        `"classification"`). The layer `context_encoder` outputs the two sentences' states. Padding never
        changes a pair's output; empty texts give finite outputs.

    Raises:
        ValueError: `embeddings` does not have `vocab_size` rows; `encoder`, `weighting`, `similarity`,
            `compare` or `head` is unknown; a width is not a positive integer (`hidden_units` may be None);
            `encoder="scarnn"` with `hidden_units` other than None or the embedding width; a dropout rate is
            not in [0, 1); a classification head lacks `num_classes >= 2`; `num_features` is negative.

    Examples:
    >>> model = build_iwan(vocab_size=1000, embedding_dim=8, hidden_units=4, alignment_units=4,
    ...                    attention_units=4, dense_units=4)
    >>> model({"question": np.array([[5, 6, 0]], "int32"), "answer": np.array([[8, 9]], "int32")}).shape
    TensorShape([1, 2])
    >>> build_iwan(vocab_size=1000, embedding_dim=8, encoder="scarnn", hidden_units=None).output.shape
    (None, 2)

    Reference:
        - Shen, Yang, Deng. "Inter-Weighted Alignment Network for Sentence Pair Modeling." EMNLP 2017, pp.
          1179-1189 (ACL Anthology D17-1122).
        - Tran, Lai, Haffari, Zukerman, Bui, Bui. "Context-Aware Recurrent Neural Networks" (CARNN). NAACL 2018,
          §4.3, Figure 4 and Table 3 (IWAN + nCARNN / iCARNN / sCARNN on TrecQA clean).
    """
    one_of("encoder", encoder, ENCODERS)
    one_of("weighting", weighting, WEIGHTINGS)
    one_of("similarity", similarity, SIMILARITIES)
    one_of("compare", compare, COMPARES)
    positive_int("hidden_units", hidden_units, allow_none=True)
    for key, value in (("alignment_units", alignment_units), ("attention_units", attention_units),
                       ("dense_units", dense_units)):
        positive_int(key, value)
    rate("dropout", dropout)
    embedding_dropout = dropout if embedding_dropout is None else embedding_dropout
    rate("embedding_dropout", embedding_dropout)
    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights
    if encoder == "scarnn" and hidden_units not in (None, input_encoder.output_dim):
        raise ValueError(f"encoder 'scarnn': the hidden size is the embedding width (CARNN eq. 6 has no input "
                         f"projection); hidden_units must be None or {input_encoder.output_dim}, got {hidden_units!r}")

    drop = keras.layers.Dropout(embedding_dropout, name="dropout_embedded")
    xs, xt = drop(input_encoder(question)), drop(input_encoder(answer))
    hs, ht = ContextEncoder(encoder, hidden_units, name="context_encoder")([xs, xt])
    fs, ft = DecompositionAlignment(alignment_units, similarity=similarity, compare=compare,
                                    name="alignment")([hs, ht])
    inter_weighting = InterWeighting(weighting, attention_units, name="inter_weighting")
    vs = inter_weighting([fs, hs, ht])  # question words weighted with the answer in view
    vt = inter_weighting([ft, ht, hs])
    z = keras.layers.Dropout(dropout, name="dropout_pair")(pair_vector(vs, vt))

    return head.model(
        {"question": question, "answer": answer}, z,
        prediction=keras.layers.Dense(dense_units, activation="relu", name="prediction_hidden"),
        name=name or ("iwan" if encoder == "bilstm" else f"iwan_{encoder}"))
