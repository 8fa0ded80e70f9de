"""The contextual language model of the CARNN paper (Tran, Lai, Haffari, Zukerman, Bui & Bui, NAACL 2018,
section 4.2, eq. 11-13, Figure 3), with its context-free twin and a plain LSTM language model.

- `ContextualLanguageModel`: `kind="contextual"` (the previous sentence, encoded by a context-free nCARNN, is the
  context of the current sentence's CARNN LM; eq. 12's label head and eq. 13's multi-task loss), `"no_context"`
  (the same LM with a zero context), `"lstm"` (a plain LSTM LM of the same hidden size);
- `token_nll`, `perplexity`, `evaluate_perplexity`: per-token perplexity over real (unpadded) tokens;
- `data`: dialog bAbI task 6 as sentences (every user and bot utterance), each with its previous utterance as
  context and the speaker as the per-sentence label (`prepare`, `read_split`, `SentenceSplit`).

The paper's datasets (Switchboard, Penn Discourse Treebank) cannot be obtained here; the benchmark
(`benchmarks/contextual_lm.py`) trains on dialog bAbI task 6 instead. Not a zoo entry: its inputs (previous
sentence, current sentence) and its perplexity evaluation are not a ranking or response-selection task.
"""

from keras_match.models.contextual_lm import data
from keras_match.models.contextual_lm.model import KINDS
from keras_match.models.contextual_lm.model import ContextualLanguageModel
from keras_match.models.contextual_lm.model import ZeroContext
from keras_match.models.contextual_lm.model import evaluate_perplexity
from keras_match.models.contextual_lm.model import perplexity
from keras_match.models.contextual_lm.model import token_nll

__all__ = ["ContextualLanguageModel", "ZeroContext", "KINDS", "token_nll", "perplexity", "evaluate_perplexity",
           "data"]
