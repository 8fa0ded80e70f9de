"""Temporal mean pooling (the CTRN paper's "Temporal Mean Pooling Layer")."""

import keras
from keras import ops

from keras_match.layers.checks import sequence_shape
from keras_match.layers.masked_ops import masked_mean


@keras.saving.register_keras_serializable(package="keras_match")
class TemporalMeanPooling(keras.layers.Layer):
    """Masked mean over time of a sequence of hidden states: `x = mean_t h_t`.

    The temporal mean pooling layer of Tay et al. (2018): "a simple element-wise average of all output hidden
    vectors" of each CTRN (or QRNN) cell, giving one vector per text.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Input shape:
        `[batch, time, dim]` float tensor.

    Output shape:
        `[batch, dim]`, same dtype as the input.

    Masking:
        With a mask (`[batch, time]`, True = real token) the mean is over real positions only, so padding never
        changes the result; a fully padded row (empty text) gives zeros, not NaN (unlike
        `keras.layers.GlobalAveragePooling1D`). The output carries no mask. Without a mask every position counts.

    Precision:
        Under `mixed_bfloat16` the sum and the count run in float32 and the mean is rounded to bfloat16 once
        (`masked_mean`): a bfloat16 sum would round at every term, and a bfloat16 count is exact only up to 256.

    Raises:
        ValueError: at build if the input is not rank 3.

    Examples:

    ```python
    x = np.random.rand(2, 5, 3).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    TemporalMeanPooling()(x, mask=mask)  # [2, 3]; row 0 averages its first 3 positions

    hq, ha = CTRN(512)([q, a])           # masks come along implicitly
    pool = TemporalMeanPooling()
    xq, xa = pool(hq), pool(ha)          # [batch, 512] each
    ```

    Reference:
        - [Tay, Luu, Hui. Cross Temporal Recurrent Networks for Ranking Question Answer Pairs. AAAI 2018](
          https://arxiv.org/abs/1711.07656), section "Temporal Mean Pooling Layer".
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def build(self, input_shape):
        sequence_shape(self, input_shape, defined_dim=False)

    def call(self, inputs, mask=None):
        return masked_mean(inputs, self._feature_mask(mask), axis=1)

    @staticmethod
    def _feature_mask(mask):
        """The `[batch, time]` padding mask as bool `[batch, time, 1]`, to broadcast over features."""
        return None if mask is None else ops.expand_dims(ops.cast(mask, "bool"), -1)

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        return super().get_config()
