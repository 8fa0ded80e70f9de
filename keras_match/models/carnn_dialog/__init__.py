"""The CARNN dialog family: end-to-end response selection with the Context-dependent Additive Recurrent Neural Net
(Tran, Lai, Haffari, Zukerman, Bui & Bui, NAACL 2018, section 4.1, Figure 2).

- `HistoryAttention`: eq. 8, the residual `h_m + e_m` and attention over the history with the context;
- `CandidateScorer`: eq. 10's `h_his^T e_y` for every candidate (optionally through a learned matrix);
- `CandidateIds`: the task's fixed candidate set as a constant of the model (a non-trainable int32 weight);
- `build_carnn_dialog`: embeddings, Position Encoder utterances (`keras_match.layers.PositionEncoder`), a CARNN
  (`keras_match.layers.CARNN`, n / i / s) over the history with the last user utterance as context, eq. 8 and a
  softmax over the candidates (eq. 9-10);
- `score_candidates`: the same model choosing among candidates given at call time (the export's `respond`);
- `serving_forward`: the model as exported, its fixed candidate set encoded once;
- `vote`: the paper's "CARNN voting", a majority vote of finished runs.

Its models read `keras_match.preprocessors.DialogPreprocessor` (`"dialog"`). Zoo entries `carnn_dialog_n`,
`carnn_dialog_i`, `carnn_dialog_s` (`zoo/carnn_dialog/`, dialog bAbI task 6), search space
`tuning/carnn_dialog.json`.
"""

from keras_match import families
from keras_match.models.carnn_dialog.builder import build_carnn_dialog
from keras_match.models.carnn_dialog.builder import score_candidates
from keras_match.models.carnn_dialog.builder import serving_forward
from keras_match.models.carnn_dialog.layers import EMPTY_HISTORY
from keras_match.models.carnn_dialog.layers import CandidateIds
from keras_match.models.carnn_dialog.layers import CandidateScorer
from keras_match.models.carnn_dialog.layers import HistoryAttention
from keras_match.models.carnn_dialog.vote import vote
from keras_match.settings import POSITIVE_INT
from keras_match.settings import Rule

__all__ = ["build_carnn_dialog", "score_candidates", "serving_forward", "HistoryAttention", "CandidateScorer", "CandidateIds", "vote", "FAMILY"]


def _one_of(choices):
    return Rule(lambda v: v in choices, "one of " + ", ".join(choices))


FAMILY = families.register(families.Family(
    name="carnn_dialog",
    builders={"carnn_dialog": build_carnn_dialog},
    preprocessor="dialog",
    score_candidates=score_candidates,
    serving_forward=serving_forward,
    rules={
        "units": POSITIVE_INT,
        "variant": _one_of(("n", "i", "s")),
        "position_encoding": _one_of(("paper", "memn2n_code")),
        "empty_history": _one_of(EMPTY_HISTORY),
        "projection": Rule(lambda v: isinstance(v, bool), "true or false"),
        "pretrained_embeddings": Rule(lambda v: isinstance(v, bool), "true or false"),
    },
))
