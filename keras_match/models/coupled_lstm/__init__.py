"""The Coupled-LSTMs family (Liu, Qiu, Zhou, Chen & Huang, EMNLP 2016): its layers.

- `CoupledLSTM2D`: one basic block (section 4.2): loosely (LC-LSTMs, eq. 5-8) or tightly (TC-LSTMs, eq. 9-11)
  coupled LSTMs over the `n x m` grid of a sentence pair, from one or all four corners (section 4.2.1), summed
  (eq. 13); computed as a wavefront over anti-diagonals (`n + m - 1` steps of one `tf.while_loop`);
- `DynamicPooling2D`: max over a `p x q` partition of each example's true grid (section 4.3).

The builder, the zoo presets and the search space come with the rest of issue 32; until then this folder
registers no zoo family.
"""

from keras_match.models.coupled_lstm.coupled_lstm import CoupledLSTM2D
from keras_match.models.coupled_lstm.dynamic_pooling import DynamicPooling2D

__all__ = ["CoupledLSTM2D", "DynamicPooling2D"]
