"""MeanMax pooling (MCAN eq. 14)."""

import keras
from keras import ops

from keras_match.layers.masked_ops import masked_max
from keras_match.layers.temporal_mean_pooling import TemporalMeanPooling


@keras.saving.register_keras_serializable(package="keras_match")
class MeanMaxPooling(TemporalMeanPooling):
    """Concatenated masked mean and masked max over time: `h = [mean_t h_t; max_t h_t]`.

    Implements the MeanMax operator of eq. 14 of Tay et al. (2018), which pools the LSTM hidden states
    `h_1 ... h_l` of a sentence into one vector. It is a `TemporalMeanPooling` that adds the max: the mean, its
    masking and precision and the input check are that layer's, restated briefly below.

    Args:
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Input shape:
        `[batch, time, dim]` float tensor.

    Output shape:
        `[batch, 2 * dim]`: the first `dim` features are the mean, the last `dim` the max. Same dtype as the
        input (the layer's compute dtype).

    Masking:
        With a mask (`[batch, time]`, True = real token), the mean (as `TemporalMeanPooling`: the sum divided by
        the number of real tokens) and the max are over real positions only, so padding never changes the
        result. A fully padded row (empty text) gives all zeros (no -inf, no NaN). The output carries no mask
        (time is reduced away). Without a mask every position counts.

    Precision:
        Under `mixed_bfloat16` the mean sums and counts in float32 and rounds to bfloat16 once (`masked_mean`); the
        max selects one of the values, exact in bfloat16 (the -1e9 fill is within its float32-sized range).

    Raises:
        ValueError: at build if the input is not rank 3 (the check of `TemporalMeanPooling`).

    Examples:

    ```python
    x = np.array([[[1.0, -1.0], [3.0, 5.0], [8.0, 9.0]]], "float32")  # [1, 3, 2]; the third step is padding
    MeanMaxPooling()(x, mask=np.array([[True, True, False]]))  # [[2.0, 2.0, 3.0, 5.0]]: mean, then max

    # Usually after a sequence-returning encoder; the mask comes along implicitly:
    h = keras.layers.LSTM(64, return_sequences=True)(masked_words)
    h = MeanMaxPooling()(h)         # [batch, 128]
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.4.1, eq. 14.
    """

    # Input checks, masking and the masked mean come from `TemporalMeanPooling`; this layer adds the max.

    def call(self, inputs, mask=None):
        mean = super().call(inputs, mask)
        maximum = masked_max(inputs, self._feature_mask(mask), axis=1)
        return ops.concatenate([mean, maximum], axis=-1)

    def compute_output_shape(self, input_shape):
        dim = input_shape[-1]
        return (input_shape[0], None if dim is None else 2 * dim)
