"""Multi-cast attention (MCAN eq. 7-9, section 2.3)."""

import keras
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.co_attention import POOLED_CASTS
from keras_match.layers.co_attention import CoAttention
from keras_match.layers.intra_attention import IntraAttention
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import pass_pair_masks
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.layers.masked_ops import zero_padded
from keras_match.models.mcan.compression import compression_class

CASTS = ("alignment", "max", "mean", "intra")
OPERATORS = ("concat", "multiply", "subtract")


@keras.saving.register_keras_serializable(package="keras_match")
class MultiCastAttention(keras.layers.Layer):
    """Casts four attentions over a (q, d) pair into 12 scalar features per word.

    Implements section 2.3 of Tay et al. (2018). Four attention casts give, for each word `x` of q (and of d),
    a representation `x_bar`:

    1. `alignment`: co-attention alignment pooling (eq. 5): `x_bar` is the soft-aligned part of the other text
       (the "exchanged semantics" of section 2.3.1);
    2. `max`: max-pooling co-attention (eq. 3): `x_bar` is the text's pooled vector, the same for every word
       (`pooled_casts="broadcast"`), or the word scaled by its attention weight, `a_i x_i`
       (`pooled_casts="weighted"`, the authors' code; see `CoAttention`);
    3. `mean`: mean-pooling co-attention (eq. 4), likewise;
    4. `intra`: intra-attention (eq. 6) of the text with itself.

    Casts 1-3 come from one `CoAttention` (one `F`, one affinity matrix shared by the three;
    `shared_affinity=True`, the default) or from one `CoAttention` each, with its own `F` and affinity matrix
    (`shared_affinity=False`, section 2.3.2's "we do not share parameters across multiple attention casts"
    applied to eq. 2 as well); cast 4 from one `IntraAttention` applied to q and to d separately with the same
    weights (siamese). Each cast gives three features per word (eq. 7-9):

        f_c = F_c([x_bar; x]),   f_m = F_c(x_bar * x),   f_s = F_c(x_bar - x)

    with `F_c` a compression function (eq. 10-12: `"sm"`, `"nn"` or `"fm"`). Following "we do not share
    parameters across multiple attention casts", there are 12 compression functions (4 casts x 3 operators),
    none shared between casts or operators; each is shared by the q side and the d side. The feature vector of
    a word is `z in R^12`, in this order:

        [align_c, align_m, align_s, max_c, max_m, max_s, mean_c, mean_m, mean_s, intra_c, intra_m, intra_s]

    (`self.compressions[k]` computes feature `k`; `CASTS` and `OPERATORS` in this module name them). The caller
    concatenates `z` to the word representation (`w_tilde = [w; z]`, section 2.3.3).

    Args:
        compression: `"sm"`, `"nn"` or `"fm"` (case-insensitive), the compression function `F_c`.
            Defaults to `"fm"`.
        attention_units: int or None, output size of the co-attention and intra-attention `F`. `None` means the
            input dim.
        fm_factors: int, factors `k` of the FM compression (ignored for `"sm"` / `"nn"`). Defaults to 10.
        activation: activation of the attention `F` layers. Defaults to `"relu"`.
        kernel_regularizer: optional regularizer of every kernel (attention `F`s, NN / FM compressions).
        pooled_casts: `"broadcast"` (default) or `"weighted"`, see above.
        scaled_affinity: divide both affinity matrices (eq. 2 and 6) by `sqrt(units)`. Defaults to False.
        shared_affinity: one co-attention `F` for the alignment, max and mean casts (True, the default) or one
            per cast (False), see above.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[q, d]`, float tensors `[batch, len_q, dim]` and `[batch, len_d, dim]` (the same `dim`).
        mask: `None` or `[q_mask, d_mask]`, bool `[batch, len_q]` / `[batch, len_d]` (True = real token);
            picked up automatically from Keras masks.

    Returns:
        `(zq, zd)`: float tensors `[batch, len_q, 12]` and `[batch, len_d, 12]` (the layer's compute dtype).

    Precision:
        Under `mixed_bfloat16` the attentions' matmuls and the three operators (eq. 7-9) run in bfloat16; what
        bfloat16 would lose runs in float32 inside the sublayers: the masked softmaxes and means of `CoAttention`
        / `IntraAttention`, and the FM compression's eq. 12 (`FactorizationMachine`). Padded positions stay
        exactly 0.

    Masking:
        Padded words take part in no attention (see `CoAttention`, `IntraAttention`), and the features of
        padded positions are exactly 0, so nothing leaks into a following LSTM. Empty texts give finite
        (zero-padded) output. The masks are returned unchanged: `zq` carries `q_mask`, `zd` carries `d_mask`.

    Weights:
        `co_attention` (2) + `intra_attention` (2) + the 12 compressions (0 each for sm, 2 for nn, 3 for fm):
        4, 28 or 40 trainable weights; 4 more with `shared_affinity=False` (`co_attention`, named
        `alignment_co_attention`, serves the alignment cast, and `max_co_attention`, `mean_co_attention` the
        others). For `dim = 50`, `attention_units=None`, `fm_factors=10` that is
        5,100 / 5,912 / 13,912 parameters.

    Raises:
        ValueError: at construction for an unknown `compression` or `pooled_casts`, or an `attention_units` /
            `fm_factors` that is not a positive integer; at build if the inputs are not a pair of rank-3 tensors
            with the same defined last dimension; at call if `mask` is not a pair.

    Examples:

    ```python
    q_ids = keras.Input((None,), dtype="int32")
    d_ids = keras.Input((None,), dtype="int32")
    embedding = keras.layers.Embedding(10000, 300, mask_zero=True)
    highway = Highway(units=50)
    q, d = highway(embedding(q_ids)), highway(embedding(d_ids))  # masks flow through
    zq, zd = MultiCastAttention(compression="fm")([q, d])       # [batch, len_q, 12], [batch, len_d, 12]
    q_tilde = keras.layers.Concatenate()([q, zq])                # w~ = [w; z], still masked
    ```

    Reference:
        - [Tay, Tuan, Hui. Multi-Cast Attention Networks. KDD 2018](https://arxiv.org/abs/1806.00778),
          section 2.3, eq. 7-12.
    """

    def __init__(
        self,
        compression="fm",
        attention_units=None,
        fm_factors=10,
        activation="relu",
        kernel_regularizer=None,
        pooled_casts="broadcast",
        scaled_affinity=False,
        shared_affinity=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        one_of("pooled_casts", pooled_casts, POOLED_CASTS)
        compression_class(compression)  # raises ValueError for an unknown name
        positive_int("attention_units", attention_units, allow_none=True)
        positive_int("fm_factors", fm_factors)
        self.compression = compression
        self.attention_units = attention_units
        self.fm_factors = fm_factors
        self.activation = keras.activations.get(activation)
        self.kernel_regularizer = keras.regularizers.get(kernel_regularizer)
        self.pooled_casts = pooled_casts
        self.scaled_affinity = bool(scaled_affinity)
        self.shared_affinity = bool(shared_affinity)
        self.supports_masking = True

    def _compression_kwargs(self):
        key = self.compression.lower()
        if key == "sm":
            return {}
        if key == "nn":
            return {"kernel_regularizer": self.kernel_regularizer}
        return {"factors": self.fm_factors, "kernel_regularizer": self.kernel_regularizer}

    def build(self, input_shape):
        q_shape, d_shape = check_pair_shape(input_shape, self.name)
        dim = q_shape[-1]
        units = dim if self.attention_units is None else self.attention_units
        attention_kwargs = {
            "units": units,
            "activation": self.activation,
            "kernel_regularizer": self.kernel_regularizer,
            "scaled_affinity": self.scaled_affinity,
            "dtype": self.dtype_policy,
        }
        # The attribute names are the paths of the weights in a saved model: `co_attention` as before, and with
        # `shared_affinity=False` `co_attention` serves the alignment cast and two more layers the others.
        def co_attention(name):
            layer = CoAttention(name=name, pooled_casts=self.pooled_casts, **attention_kwargs)
            layer.build([q_shape, d_shape])
            return layer

        self.co_attention = co_attention("co_attention" if self.shared_affinity else "alignment_co_attention")
        if not self.shared_affinity:
            self.max_co_attention = co_attention("max_co_attention")
            self.mean_co_attention = co_attention("mean_co_attention")
        self.intra_attention = IntraAttention(name="intra_attention", **attention_kwargs)
        self.intra_attention.build(q_shape)
        compressions = []
        for cast in CASTS:
            for operator in OPERATORS:
                layer = compression_class(self.compression)(
                    name=f"{cast}_{operator}_compression",
                    dtype=self.dtype_policy,
                    **self._compression_kwargs(),
                )
                width = 2 * dim if operator == "concat" else dim
                layer.build(q_shape[:-1] + (width,))
                compressions.append(layer)
        self.compressions = compressions

    def _casted_features(self, x, x_bars, mask):
        features = []
        for cast_index, x_bar in enumerate(x_bars):
            f_c, f_m, f_s = self.compressions[3 * cast_index : 3 * cast_index + 3]
            features.append(f_c(ops.concatenate([x_bar, x], axis=-1)))  # eq. 7
            features.append(f_m(x_bar * x))  # eq. 8
            features.append(f_s(x_bar - x))  # eq. 9
        return zero_padded(ops.concatenate(features, axis=-1), mask)

    def call(self, inputs, mask=None):
        q, d = inputs
        q_mask, d_mask = split_pair_masks(mask)
        if self.shared_affinity:  # one affinity matrix, pooled three ways
            shared = self.co_attention([q, d], mask=[q_mask, d_mask])
            co = [shared[cast] for cast in CASTS[:3]]
        else:
            layers = (self.co_attention, self.max_co_attention, self.mean_co_attention)
            co = [layer([q, d], mask=[q_mask, d_mask])[cast] for layer, cast in zip(layers, CASTS[:3])]
        q_bars = [x_bar for x_bar, _ in co] + [self.intra_attention(q, mask=q_mask)]
        d_bars = [x_bar for _, x_bar in co] + [self.intra_attention(d, mask=d_mask)]
        zq = self._casted_features(q, q_bars, q_mask)
        zd = self._casted_features(d, d_bars, d_mask)
        return zq, zd

    def compute_mask(self, inputs, mask=None):
        return pass_pair_masks(mask)

    def compute_output_shape(self, input_shape):
        q_shape, d_shape = (tuple(s) for s in input_shape)
        features = len(CASTS) * len(OPERATORS)
        return (q_shape[:-1] + (features,), d_shape[:-1] + (features,))

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "compression": self.compression,
                "attention_units": self.attention_units,
                "fm_factors": self.fm_factors,
                "activation": keras.activations.serialize(self.activation),
                "kernel_regularizer": keras.regularizers.serialize(self.kernel_regularizer),
                "pooled_casts": self.pooled_casts,
                "scaled_affinity": self.scaled_affinity,
                "shared_affinity": self.shared_affinity,
            }
        )
        return config
