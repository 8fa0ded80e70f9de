"""The bi-encoder and the cross-encoder over a pretrained transformer: the functional-API builders."""

from __future__ import annotations

import keras
import numpy as np

from keras_match import heads
from keras_match.encoders import takes_input_encoder
from keras_match.encoders import word_vectors
from keras_match.encoders.transformer import TransformerEncoder
from keras_match.layers.checks import rate
from keras_match.models.common import takes_matching_head
from keras_match.models.common import token_inputs
from keras_match.models.encoder_rankers.packed_pair import PackedPairTransformer
from keras_match.models.encoder_rankers.sentence_embedding import SentenceEmbedding
from keras_match.models.encoder_rankers.siamese_features import SiameseFeatures

__all__ = ["build_bi_encoder", "build_cross_encoder", "COSINE_SCALE"]

COSINE_SCALE = 20.0
"""The initial weight of the cosine when a ranking head starts at it (`start_at_the_cosine`): sentence-transformers'
scale of its in-batch softmax loss (a temperature of 0.05), shared by the bi-encoder and CTRN's
`sentence_cosine="start"`."""


@takes_input_encoder(word_vectors)
@takes_matching_head("score")
def build_bi_encoder(input_encoder, cosine_scale=COSINE_SCALE, head=None, name=None):
    """Build a bi-encoder (SBERT): each text encoded alone by the same encoder, ranked by the cosine of its
    mean-pooled states.

    1. the question's and the answer's per-token states from one shared input encoder (over a pretrained
       transformer, `keras_match.encoders.TransformerEncoder`: the zoo's `bi_encoder_minilm`, all-MiniLM-L6-v2
       with the states of its last layer, or a learned mix of its layers);
    2. `SentenceEmbedding`: each text's masked mean over its real tokens, L2-normalised (u, v), the sentence
       embedding of sentence-transformers' pipeline;
    3. `SiameseFeatures`: for the ranking heads (`"score"`, `"softmax"`) the cosine `cos(u, v)` `[batch, 1]`; for a
       classification head SBERT's `[u; v; |u - v|]` `[batch, 3 * dim]`;
    4. the shared head (`keras_match.models.common.MatchingHead`), with the pair features concatenated when
       `num_features > 0`. For the ranking heads its output layer starts at the cosine: the score head's weight
       of the cosine is `cosine_scale` and every other weight and the bias 0 (score `cosine_scale * cos`); the
       softmax head's logit of "relevant" minus "not relevant" is `cosine_scale * cos` (p(relevant) =
       `sigmoid(cosine_scale * cos)`). So the untrained model ranks exactly by the pretrained cosine (zero-shot:
       `keras_match.zoo.load("bi_encoder_minilm")` scores as sentence-transformers does), and training learns the
       scale and offset as weights like any other (the ranking losses train the score; `cosine_scale` 20 is
       sentence-transformers' scale of its in-batch softmax loss, a temperature of 0.05). A classification
       head starts random, as SBERT's classifier.

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` that turns token ids into per-token states; the
            zoo passes a `TransformerEncoder` (the setting `backbone=minilm-l6`, with `backbone_layers` and
            `backbone_trainable`: `"frozen"` is zero-shot, `"all"` or an int k fine-tune). Without one, the
            word-vector settings (`vocab_size`, `embeddings`, `embedding_dim` (default 300),
            `trainable_embeddings`) make a `keras_match.encoders.WordVectorEncoder`: the mean of word vectors.
        cosine_scale: float > 0, the initial weight of the cosine in a ranking head (see 4).
        head: `"score"` (default: the scaled cosine, `[batch, 1]`), `"softmax"` or `"classification"`, with
            `num_classes` and `num_features`: the settings of the shared `MatchingHead`, or one.
        name: optional model name; default `"bi_encoder"`.

    Returns:
        An uncompiled `keras.Model`: inputs `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (right-padded with 0; WordPiece ids `[CLS] text [SEP]` of the encoder's vocabulary for a transformer)
        and, when `num_features > 0`, `"features"` float32 `[batch, num_features]`; output float32, the head's
        (`[batch, 1]` scores by default). Padding never changes an output (masked means); an all-padding text
        has a zero embedding and cosine 0. The pooling, the cosine and the head compute in float32 under
        `mixed_bfloat16` too.

    Raises:
        ValueError: `cosine_scale` is not a number > 0; an unknown head, a classification head without
            `num_classes >= 2`, a negative `num_features`; the encoder's own errors.

    Examples:
    >>> encoder = keras_match.encoders.TransformerEncoder("minilm-l6")  # doctest: +SKIP
    >>> model = build_bi_encoder(encoder)  # zero-shot: scores = 20 * cosine  # doctest: +SKIP
    >>> model = build_bi_encoder(vocab_size=1000, embedding_dim=8)  # the mean of word vectors
    >>> q = np.array([[5, 6, 7, 0]], "int32"); a = np.array([[8, 9, 0]], "int32")
    >>> model({"question": q, "answer": a}).shape
    TensorShape([1, 1])

    Reference:
        Reimers & Gurevych, Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks, EMNLP 2019 (section 3:
        the siamese network, MEAN pooling, the classification objective `[u; v; |u - v|]` and the cosine).
        Henderson et al., Efficient Natural Language Response Suggestion for Smart Reply, 2017 (the in-batch
        softmax over scaled similarities that sentence-transformers trains all-MiniLM-L6-v2 with).
    """
    if isinstance(cosine_scale, bool) or not isinstance(cosine_scale, (int, float)) or not cosine_scale > 0:
        raise ValueError(f"cosine_scale must be a number > 0, got {cosine_scale!r}")
    question, answer = token_inputs("question", "answer")
    input_encoder.make_layers()
    pool = SentenceEmbedding(dtype="float32", name="sentence_embedding")
    u, v = pool(input_encoder(question)), pool(input_encoder(answer))
    ranking = head.head != "classification"
    x = SiameseFeatures("cosine" if ranking else "concatenation", dtype="float32", name="siamese_features")([u, v])
    model = head.model({"question": question, "answer": answer}, x, name=name or "bi_encoder")
    if ranking:
        start_at_the_cosine(model, float(cosine_scale))
    return model


def start_at_the_cosine(model, scale, column=0):
    """Sets the ranking head of a model whose head input holds the cosine at `column` (0: it starts with it; -1:
    it ends with it) so that its ranking score is `scale * cosine`: the score head's kernel `scale` at that row,
    the softmax head's `[-scale / 2, scale / 2]`, every other row and the biases 0 (every other input weighs 0).

    Raises:
        ValueError: the model's head is a classification head (it has no ranking score).
    """
    kind = heads.head_of(model)
    layer = model.get_layer(heads.OUTPUT_LAYERS[kind])
    kernel, bias = (np.zeros(tuple(w.shape), "float32") for w in (layer.kernel, layer.bias))
    if kind == "score":
        kernel[column, 0] = scale
    elif kind == "softmax":
        kernel[column] = [-scale / 2, scale / 2]
    else:
        raise ValueError(f"a {kind} head has no ranking score to start at the cosine")
    layer.set_weights([kernel, bias])


def _no_word_vectors(vocab_size, embeddings=None, embedding_dim=384, trainable_embeddings=False):
    """The cross-encoder's refusal of the word-vector settings (its input encoder must be a transformer)."""
    raise ValueError("build_cross_encoder packs the pair into one sequence with segment ids, which only a "
                     "pretrained BERT backbone reads: give it a keras_match.encoders.TransformerEncoder (the zoo "
                     "setting backbone=minilm-l6), not word-vector settings")


@takes_input_encoder(_no_word_vectors)
@takes_matching_head("softmax")
def build_cross_encoder(input_encoder, dropout=0.1, max_length=None, head=None, name=None):
    """Build a cross-encoder (BERT re-ranker): the question and the answer packed as one sequence through a
    pretrained BERT backbone, the `[CLS]` state scored by the shared head.

    1. `PackedPairTransformer`: the two id tensors of the pair preprocessor packed in the model as
       `[CLS] question [SEP] answer [SEP]` (the answer's `[CLS]` dropped, real ids concatenated, right-padded to
       the batch's longest pair, segment ids 0 / 1), read by the input encoder's `BertBackbone` with its
       pretrained weights (the zoo's `cross_encoder_minilm`: all-MiniLM-L6-v2), giving the last layer's `[CLS]`
       state (or, with `backbone_layers="mix"`, the learned mix of every layer's);
    2. dropout (`dropout`, BERT's classifier dropout 0.1);
    3. the shared head (`keras_match.models.common.MatchingHead`; the pair features concatenated when
       `num_features > 0`): by default Nogueira & Cho's softmax over (not relevant, relevant) trained with
       cross-entropy, whose p(relevant) ranks; `"score"` a raw score; `"classification"` BERT's sentence-pair
       classifier (SICK).

    What trains is the encoder's `trainable` (the zoo's `backbone_trainable`): `"all"` (the preset, fine-tuned
    as the paper does), an int k (the top k transformer layers), or `"frozen"` (only the head learns).

    Args:
        input_encoder: a `keras_match.encoders.TransformerEncoder` (the zoo's setting `backbone=minilm-l6`); its
            `layers` (`"last"` / `"mix"`) and `trainable` apply here. The word-vector settings are refused.
        dropout: float in [0, 1), the rate on the `[CLS]` state before the head.
        max_length: None or an int >= 2, the most ids of a packed pair (`pack_pair`): None keeps question +
            answer - 1 (99 with the pair preprocessor's 40 / 60 pieces), never above the backbone's 512.
        head: `"softmax"` (default), `"score"` or `"classification"`, with `num_classes` and `num_features`: the
            settings of the shared `MatchingHead`, or one.
        name: optional model name; default `"cross_encoder"`.

    Returns:
        An uncompiled `keras.Model`: inputs `{"question": int32 [batch, lq], "answer": int32 [batch, la]}`
        (WordPiece ids `[CLS] text [SEP]`, right-padded with 0) and, when `num_features > 0`, `"features"`
        float32 `[batch, num_features]`; output float32, the head's (`[batch, 2]` for the default softmax).
        Padding never changes an output (the packed width is the batch's longest pair and the backbone masks
        what is beyond each pair).

    Raises:
        ValueError: the input encoder is not a `TransformerEncoder`, or word-vector settings were given;
            `dropout` not in [0, 1); `max_length` not None nor an int >= 2; the head's errors.

    Examples:
    >>> encoder = keras_match.encoders.TransformerEncoder("minilm-l6", trainable="all")  # doctest: +SKIP
    >>> model = build_cross_encoder(encoder)  # doctest: +SKIP
    >>> q = np.array([[101, 2040, 2626, 8429, 102]], "int32")  # [CLS] who wrote hamlet [SEP]  # doctest: +SKIP
    >>> a = np.array([[101, 8101, 2626, 8429, 102, 0]], "int32")  # doctest: +SKIP
    >>> model({"question": q, "answer": a}).shape  # p(not relevant), p(relevant)  # doctest: +SKIP
    TensorShape([1, 2])

    Reference:
        Nogueira & Cho, Passage Re-ranking with BERT, arXiv:1901.04085, 2019 (section 3: the query as sentence A,
        the passage as sentence B, the `[CLS]` vector to a single-layer network, cross-entropy). Devlin et al.,
        BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding, NAACL 2019 (section 3,
        the packed pair with segment embeddings; section 4.1, classification from `[CLS]`).
    """
    if not isinstance(input_encoder, TransformerEncoder):
        raise ValueError(f"build_cross_encoder reads the pair packed into one sequence with segment ids, which "
                         f"only a pretrained BERT backbone reads: its input encoder must be a "
                         f"keras_match.encoders.TransformerEncoder (the zoo setting backbone=minilm-l6), got "
                         f"{type(input_encoder).__name__}")
    rate("dropout", dropout)
    question, answer = token_inputs("question", "answer")
    cls = PackedPairTransformer(input_encoder.layer, sep_id=input_encoder.entry.sep_id, max_length=max_length,
                                name="packed_pair_transformer")([question, answer])
    x = keras.layers.Dropout(dropout, name="dropout_cls")(cls)
    return head.model({"question": question, "answer": answer}, x, name=name or "cross_encoder")
