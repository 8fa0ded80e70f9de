"""The Coupled-LSTMs family (Liu, Qiu, Zhou, Chen & Huang, EMNLP 2016).

- `CoupledLSTM2D`: one basic block (section 4.2): loosely (LC-LSTMs, eq. 5-8) or tightly (TC-LSTMs, eq. 9-11)
  coupled LSTMs over the `n x m` grid of a sentence pair, from one or all four corners (section 4.2.1), summed
  (eq. 13); computed as a wavefront over anti-diagonals (`n + m - 1` steps of one `tf.while_loop`); optionally
  one weight set for all directions (`share_directions`) and for LC's two LSTMs (`share_streams`);
- `DynamicPooling2D`: max over a `p x q` partition of each example's true grid (section 4.3);
- `build_coupled_lstm`: embeddings, stacked blocks, dynamic pooling, a fully connected layer, the head;
- `explain`: the paper's Figure 3 (chosen neurons over the grid of a pair, `keras-match explain`) and its
  interpretable neurons (`interpretable_neurons`).

Zoo entries `lc_lstm*` and `tc_lstm*` (`zoo/coupled_lstm/`), search space `tuning/coupled_lstm.json` (the paper's
grid, section 6.1).
"""

from keras_match import families
from keras_match.models.coupled_lstm.builder import build_coupled_lstm
from keras_match.models.coupled_lstm.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm.dynamic_pooling import DynamicPooling2D
from keras_match.models.coupled_lstm.explain import grid_activations
from keras_match.models.coupled_lstm.explain import interpretable_neurons
from keras_match.models.coupled_lstm.explain import plot_explanation
from keras_match.settings import POSITIVE_INT
from keras_match.settings import Rule

__all__ = ["CoupledLSTM2D", "DynamicPooling2D", "build_coupled_lstm", "grid_activations", "interpretable_neurons",
           "FAMILY"]

FAMILY = families.register(families.Family(
    name="coupled_lstm",
    builders={"coupled_lstm": build_coupled_lstm},
    rules={
        "coupling": Rule(lambda v: v in ("loose", "tight"), '"loose" (LC-LSTMs) or "tight" (TC-LSTMs)'),
        "blocks": POSITIVE_INT,
        "directions": Rule(lambda v: not isinstance(v, bool) and v in (1, 4), "1 or 4"),
        "units": POSITIVE_INT,
        "dense_units": POSITIVE_INT,
        "pooling": Rule(lambda v: isinstance(v, (list, tuple)) and len(v) == 2
                        and all(not isinstance(k, bool) and isinstance(k, int) and k >= 1 for k in v),
                        "two positive integers [p, q]"),
        "share_weights": Rule(lambda v: isinstance(v, bool), "true or false"),
    },
    explain=plot_explanation,
    explain_options={"neurons": {"nargs": "+", "metavar": "K",
                                 "help": "the channels to plot, or 'interpretable' (the four whose largest "
                                 "activations fall most often on equal words, over the run's dev split; reads "
                                 "--data-dir); default: the four of the largest activation on the pair"}},
))
