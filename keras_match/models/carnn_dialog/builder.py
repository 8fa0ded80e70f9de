"""The CARNN end-to-end dialog model (Tran et al., NAACL 2018, section 4.1, Figure 2): `build_carnn_dialog`."""

from __future__ import annotations

import keras
import numpy as np

from keras_match.encoders import EMBEDDING_LAYER
from keras_match.encoders import WordVectorEncoder
from keras_match.encoders import takes_input_encoder
from keras_match.layers.carnn import CARNN
from keras_match.layers.checks import positive_int
from keras_match.layers.carnn import VARIANTS
from keras_match.layers.position_encoder import PositionEncoder
from keras_match.layers.position_encoder import VARIANTS as POSITION_VARIANTS
from keras_match.models.carnn_dialog.layers import EMPTY_HISTORY
from keras_match.models.carnn_dialog.layers import CandidateIds
from keras_match.models.carnn_dialog.layers import CandidateScorer
from keras_match.models.carnn_dialog.layers import HistoryAttention

OUTPUT_LAYER = "class_probabilities"  # keras_match.heads.OUTPUT_LAYERS["classification"]


def _candidate_ids(candidate_ids, num_classes):
    if candidate_ids is None:
        if num_classes is None:
            raise ValueError("build_carnn_dialog needs candidate_ids (the preprocessor's) or num_classes")
        return np.zeros([num_classes, 1], np.int32)  # an empty candidate set: for building without data
    ids = np.asarray(candidate_ids)
    if ids.ndim != 2 or ids.shape[0] < 1 or ids.shape[1] < 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(f"candidate_ids must be integer token ids [C, length], got shape {ids.shape} and dtype "
                         f"{ids.dtype}")
    if num_classes is not None and ids.shape[0] != num_classes:
        raise ValueError(f"candidate_ids hold {ids.shape[0]} candidates; the task selects among {num_classes}")
    return ids.astype(np.int32)


def dialog_word_vectors(vocab_size, embeddings=None, units=1024, trainable_embeddings=True,
                        pretrained_embeddings=False):
    """The dialog model's input encoder from its settings: word vectors of width `units`, trained from a random
    start (the paper's) unless `pretrained_embeddings` (then `embeddings`, `[vocab_size, units]`).

    Raises:
        ValueError: `pretrained_embeddings` without `embeddings`, or embeddings of another shape.
    """
    if not pretrained_embeddings:
        return WordVectorEncoder(vocab_size, units, None, trainable_embeddings)
    if embeddings is None:
        raise ValueError("pretrained_embeddings=True needs embeddings")
    embeddings = np.asarray(embeddings)
    if embeddings.shape != (vocab_size, units):
        raise ValueError(f"embeddings: expected [vocab_size={vocab_size}, units={units}], got {embeddings.shape}")
    return WordVectorEncoder(vocab_size, units, embeddings, trainable_embeddings)


@takes_input_encoder(dialog_word_vectors)
def build_carnn_dialog(
    input_encoder,
    candidate_ids=None,
    units=1024,
    variant="i",
    projection=False,
    position_encoding="paper",
    empty_history="context",
    head="classification",
    num_classes=None,
    name=None,
):
    """Build the CARNN dialog model of Tran et al. (2018), section 4.1 (Figure 2): select the response of a dialog
    turn among a fixed candidate set.

    1. word embeddings of width `units`, trained with the model from a random start ("These word embeddings are
       jointly trained with the model", section 4.1), shared by the history, the user utterance and the
       candidates (padding id 0 masked);
    2. every utterance becomes one vector by the Position Encoder (section 4.1): the history turns `e_1 .. e_{M-1}`
       (`[batch, turns, units]`, with a turn mask), the last user utterance `c = e_M`, and every candidate
       `e_{y_l}` (eq. 9);
    3. a CARNN (`variant` n / i / s, eq. 3 / 5 / 6) over the history encodings with `c` as its controlling context,
       `h_1 .. h_{M-1} = CARNN(e_1 .. e_{M-1}, c)`;
    4. `HistoryAttention` (eq. 8): the residual `h~_m = h_m + e_m`, attention `softmax(h~_m^T c)`, `h_his`;
    5. `CandidateScorer` (eq. 10): `h_his^T e_{y_l}` for every candidate (with `projection`, `(W h_his)^T e_{y_l}`)
       and a softmax over the candidate set, the output layer `class_probabilities` (the classification head:
       column `l` is candidate `l` of the task's set).

    One width `units` serves the embeddings, the utterance vectors and the CARNN states: eq. 8 adds `h_m` to
    `e_m` and dots `h~_m` with `c`, and eq. 10 dots `h_his` with `e_y`, which needs them all of one width
    (**[I]**: the paper gives only "a hidden vector size of 1024", section 5.1).

    The candidate set is a constant of the model (`CandidateIds`, a non-trainable int32 weight): it is not an
    input, so the model's inputs are `{"history": int32 [batch, turns, words], "context": int32 [batch, words]}`
    (`keras_match.preprocessors.DialogPreprocessor`).

    Args:
        input_encoder: the `keras_match.encoders.InputEncoder` of every utterance's token ids, `units` wide
            (the paper's: word vectors, `dialog_word_vectors`). For one release the builder also takes, by keyword
            and instead of it, the settings of `dialog_word_vectors`: `vocab_size` (token ids including padding 0
            and OOV 1), `embeddings` (optional pretrained vectors `[vocab_size, units]`, used only with
            `pretrained_embeddings`), `trainable_embeddings` (default True: the paper trains them) and
            `pretrained_embeddings` (default False: a random start, as the paper).
        candidate_ids: int `[C, length]`, the candidates' token ids (`DialogPreprocessor.candidate_ids`); None
            builds an empty set of `num_classes` candidates (every candidate scores 0; for building without data).
        units: int, the hidden size (1024 in the paper).
        variant: `"n"`, `"i"` or `"s"`, the CARNN unit.
        projection: bool, score with a learned matrix `W` (`CandidateScorer`), not in eq. 10.
        position_encoding: `"paper"` or `"memn2n_code"`, the Position Encoder's weights (`PositionEncoder`).
        empty_history: `"context"` or `"zeros"`, `h_his` of a turn without history (`HistoryAttention`).
        head: `"classification"` (the only head: a softmax over the candidate set, eq. 10).
        num_classes: the number of candidates the task selects among (checked against `candidate_ids`).
        name: the model's name.

    Returns:
        A `keras.Model` from `{"history", "context"}` to `class_probabilities` float32 `[batch, C]`, each row
        summing to 1.

    Raises:
        ValueError: a head other than "classification", an unknown variant, `units` not a positive integer,
            candidate ids of another shape or count than `num_classes`, pretrained embeddings of another shape,
            an input encoder whose width is not `units`.
    """
    if head != "classification":
        raise ValueError(f"the CARNN dialog model's head is a softmax over the candidate set (eq. 10): head must be "
                         f"'classification', got {head!r}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if position_encoding not in POSITION_VARIANTS:
        raise ValueError(f"position_encoding must be one of {POSITION_VARIANTS}, got {position_encoding!r}")
    if empty_history not in EMPTY_HISTORY:
        raise ValueError(f"empty_history must be one of {EMPTY_HISTORY}, got {empty_history!r}")
    positive_int("units", units)
    if input_encoder.output_dim != units:
        raise ValueError(f"the input encoder's states are {input_encoder.output_dim} wide but units is {units}: eq. 8 "
                         "adds h_m to e_m and eq. 10 dots h_his with e_y, so they must be of one width")
    ids = _candidate_ids(candidate_ids, num_classes)

    history = keras.Input(shape=(None, None), dtype="int32", name="history")
    context = keras.Input(shape=(None,), dtype="int32", name="context")
    input_encoder.make_layers()  # where the embedding always was made: seeded runs draw the same weights
    turns = PositionEncoder(position_encoding, name="turn_encoder")(input_encoder(history))  # e_1..e_{M-1}, turn mask
    user = PositionEncoder(position_encoding, name="context_encoder")(input_encoder(context))  # c = e_M
    states = CARNN(units, variant, return_sequences=True, name="carnn")([turns, user])  # h_1..h_{M-1}
    summary = HistoryAttention(empty_history, name="history_attention")([states, turns, user])  # h_his (eq. 8)
    constant = CandidateIds(int(ids.shape[0]), int(ids.shape[1]), name="candidate_ids")
    candidates = PositionEncoder(position_encoding, name="candidate_encoder")(input_encoder(constant(context)))  # eq. 9
    logits = CandidateScorer(projection, name="candidate_scores")([summary, candidates])
    probabilities = keras.layers.Activation("softmax", dtype="float32", name=OUTPUT_LAYER)(logits)  # eq. 10
    model = keras.Model({"history": history, "context": context}, probabilities, name=name)
    constant.set_ids(ids)
    return model


def _scoring_parts(model, who):
    """The layers eq. 9-10 use and the history summary `h_his` (eq. 8) as a model of the inputs."""
    try:
        embedding = model.get_layer(EMBEDDING_LAYER)
        encoder = model.get_layer("candidate_encoder")
        scorer = model.get_layer("candidate_scores")
    except ValueError as error:
        raise ValueError(f"{who} takes a CARNN dialog model (build_carnn_dialog): {error}") from None
    summary = keras.Model(model.inputs, scorer.input[0], name=f"{model.name}_summary")

    def encode(candidate_ids):  # eq. 9, J the unpadded length
        return encoder(embedding(candidate_ids), mask=keras.ops.not_equal(candidate_ids, 0))

    def probabilities(inputs, vectors):  # eq. 10, in float32 as the model's output layer
        logits = scorer([summary(inputs, training=False), vectors])
        return keras.ops.softmax(keras.ops.cast(logits, "float32"), axis=-1)

    return encode, probabilities


def score_candidates(model):
    """The CARNN dialog model scoring candidate responses given at call time (eq. 9-10 over any candidate set).

    `build_carnn_dialog` keeps the task's candidate set in the model (`CandidateIds`); this function reuses the
    same layers (the history summary `h_his` up to eq. 8, the shared word embedding, the candidate Position
    Encoder of eq. 9 and the scorer of eq. 10) with the candidates' ids as an argument, so a served model can
    choose among the candidates of one turn (the export's `respond` signature takes their texts). Given the
    task's own candidate ids it computes exactly the model's output.

    Args:
        model: a model of `build_carnn_dialog` (its layers `word_embedding`, `candidate_encoder`,
            `candidate_scores`).

    Returns:
        `fn(inputs, candidate_ids) -> float32 [batch, C]`: `inputs` the model's inputs (`history` int32
        `[batch, turns, length]`, `context` int32 `[batch, length]`), `candidate_ids` int32 `[C, length]` (0 is
        padding), the softmax over the `C` candidates of eq. 10 for each example.

    Raises:
        ValueError: the model lacks one of those layers (another family's model).
    """
    encode, probabilities = _scoring_parts(model, "score_candidates")

    def score(inputs, candidate_ids):
        return probabilities(inputs, encode(candidate_ids))

    return score


def serving_forward(model):
    """The CARNN dialog model as an export serves it: its output, with the fixed candidate set encoded once.

    The model encodes its whole candidate set (eq. 9, `[C, units]`) at every call although it depends only on the
    weights; served with frozen weights, it is computed here once and the export holds it as a constant, so a
    turn costs the history's encoding and one `[units] x [units, C]` product (tf2onnx folds the same constant
    when it converts the model).

    Args:
        model: a model of `build_carnn_dialog` with its trained weights (later changes to the weights are not
            seen by the returned function).

    Returns:
        `fn(inputs) -> float32 [batch, C]`, equal to `model(inputs, training=False)`.

    Raises:
        ValueError: the model lacks one of the layers of `score_candidates`, or its `candidate_ids`.
    """
    encode, probabilities = _scoring_parts(model, "serving_forward")
    try:
        ids = model.get_layer("candidate_ids").ids
    except ValueError as error:
        raise ValueError(f"serving_forward takes a CARNN dialog model (build_carnn_dialog): {error}") from None
    vectors = keras.ops.convert_to_numpy(encode(keras.ops.convert_to_tensor(ids)))

    def forward(inputs):
        return probabilities(inputs, vectors)

    return forward
