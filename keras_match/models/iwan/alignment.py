"""IWAN's alignment layer (Shen, Yang & Deng, EMNLP 2017): word-level similarity matrix, soft alignment and the
orthogonal decomposition of each word against its aligned vector."""

import keras
from keras import ops

from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.co_attention import affinity
from keras_match.layers.co_attention import alignment_pooling
from keras_match.layers.masked_ops import accumulation_dtype
from keras_match.layers.masked_ops import check_pair_shape
from keras_match.layers.masked_ops import pass_pair_masks
from keras_match.layers.masked_ops import split_pair_masks
from keras_match.layers.masked_ops import zero_padded

SIMILARITIES = ("dot", "cosine", "bilinear")
"""Word-level similarity functions of `DecompositionAlignment` (`"dot"`, the default, is our reading [I])."""

COMPARES = ("orthogonal", "concat_diff_prod")
"""How `DecompositionAlignment` compares a word with its aligned vector (`"orthogonal"`, the default [I])."""


@keras.saving.register_keras_serializable(package="keras_match")
class DecompositionAlignment(keras.layers.Layer):
    """IWAN's alignment layer: similarity matrix, soft alignment, orthogonal decomposition, per-word features.

    IWAN (Shen et al., 2017) confirms [R] that it builds a word-level similarity matrix between the two sentences
    and that an *alignment layer* turns how well each word is aligned into similarity evidence. The paper's full
    text was not available, so every equation below is a reconstruction [I] (`shared/papers/iwan_architecture.md`
    §2.3-2.5), written from the lexical decomposition of Wang, Mi & Ittycheriah (2016), which IWAN compares with:

    - similarity matrix [R existence, I form], `M_ij = h_i^s . h_j^t` (`similarity="dot"`, no weights; `"cosine"`
      uses unit vectors, `"bilinear"` `h_i^s W h_j^t` with `W` initialised to the identity);
    - soft alignment [I], each word's convex mixture of the other sentence's states, normalised over the other
      sentence's real words: `h~_i^s = sum_j softmax_j(M_i.) h_j^t`, `h~_j^t = sum_i softmax_i(M_.j) h_i^s`;
    - orthogonal decomposition [I] (`compare="orthogonal"`): the parallel ("matched") part
      `p_i = (h_i . h~_i) / (h~_i . h~_i + epsilon) h~_i` and the orthogonal ("unmatched") part `o_i = h_i - p_i`,
      so `h_i = p_i + o_i` with `p_i` orthogonal to `o_i` (up to `epsilon`);
    - per-word alignment feature [I, ours]: `f_i = ReLU(W_a [p_i; o_i] + b_a)`, one `W_a` for both sentences
      (blocks of one colour share parameters, Figure 1 [R]). `compare="concat_diff_prod"` is the notes'
      alternative [I]: `f_i = ReLU(W_a [h_i; h~_i; h_i * h~_i; |h_i - h~_i|] + b_a)`.

    The same weights serve both directions (S against T and T against S), so the layer is symmetric: swapping
    the inputs swaps the outputs.

    Args:
        units: int, the width of the alignment features `f` (the rows of `W_a`).
        similarity: `"dot"` (default), `"cosine"` or `"bilinear"`: the similarity matrix's `M_ij`.
        compare: `"orthogonal"` (default) or `"concat_diff_prod"`: what `W_a` reads per word.
        epsilon: float > 0, guards the decomposition's denominator (aligned vectors are near 0 early in
            training and are exactly 0 when the other sentence is empty). Defaults to 1e-6.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`).

    Call arguments:
        inputs: `[h_s, h_t]`, float tensors `[batch, m, d]` and `[batch, n, d]` (the same `d`), the context
            encoder's states of the two sentences.
        mask: `None` or `[mask_s, mask_t]`, bool `[batch, m]` / `[batch, n]` (True = real word), either may be
            `None`; picked up automatically from Keras masks.

    Returns:
        `(f_s, f_t)`: float `[batch, m, units]` and `[batch, n, units]`, the alignment features, carrying the
        input masks.

    Masking:
        Both softmaxes run over the partner's real words only (fill -1e9, weight exactly 0 at padding), so
        whatever sits at padded positions cannot leak; `f` is 0 at padded positions. An empty partner sentence
        gives `h~ = 0`, hence `p = 0`, `o = h`: every word is "unmatched", and all outputs stay finite.

    Precision:
        Under `mixed_bfloat16` the similarity matrix and `W_a` compute in bfloat16, the softmaxes normalise in
        float32 (`keras_match.layers.masked_ops.masked_softmax`), and the decomposition and the cosine's unit
        vectors are computed in float32 and rounded once: `o = h - p` cancels when `h` is nearly parallel to `h~`,
        and the ratio of two dot products (or an L2 norm) would otherwise carry every product's bfloat16 rounding.

    Weights:
        `W_a`: `projection/kernel [2d, units]` (`[4d, units]` for `"concat_diff_prod"`), `projection/bias
        [units]`; plus `bilinear [d, d]` for `similarity="bilinear"`: 2 or 3 trainable weights.

    Raises:
        ValueError: at construction if `units` is not a positive integer, `similarity` or `compare` is unknown or
            `epsilon` is not a positive number; at build if the inputs are not a pair of rank-3 tensors with the
            same defined last dimension; at call if `mask` is not a pair.

    Examples:

    ```python
    hs, ht = ContextEncoder("bilstm", units=100)([xs, xt])   # [batch, m, 200], [batch, n, 200]
    fs, ft = DecompositionAlignment(units=100)([hs, ht])    # [batch, m, 100], [batch, n, 100]
    ```

    Reference:
        - Shen, Yang, Deng. "Inter-Weighted Alignment Network for Sentence Pair Modeling." EMNLP 2017 (D17-1122):
          the similarity matrix and the alignment layer [R]; their equations are reconstructed [I].
        - Wang, Mi, Ittycheriah. "Sentence Similarity Learning by Lexical Decomposition and Composition." COLING
          2016 (arXiv:1602.07019), section 3 (the orthogonal decomposition).
    """

    def __init__(self, units, similarity="dot", compare="orthogonal", epsilon=1e-6, **kwargs):
        super().__init__(**kwargs)
        positive_int("units", units)
        one_of("similarity", similarity, SIMILARITIES)
        one_of("compare", compare, COMPARES)
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
            raise ValueError(f"`epsilon` must be a positive number. Received: epsilon={epsilon!r}")
        self.units = units
        self.similarity = similarity
        self.compare = compare
        self.epsilon = float(epsilon)
        self.supports_masking = True

    def build(self, input_shape):
        s_shape, _ = check_pair_shape(input_shape, self.name)
        dim = s_shape[-1]
        if self.similarity == "bilinear":
            self.bilinear = self.add_weight(name="bilinear", shape=(dim, dim), initializer="identity")
        parts = 2 if self.compare == "orthogonal" else 4
        self.projection = keras.layers.Dense(self.units, activation="relu", dtype=self.dtype_policy,
                                             name="projection")  # W_a, b_a
        self.projection.build(s_shape[:-1] + (parts * dim,))

    def _similarity(self, hs, ht):
        if self.similarity == "cosine":
            hs, ht = self._unit(hs), self._unit(ht)
        elif self.similarity == "bilinear":
            hs = ops.matmul(hs, self.bilinear)
        return affinity(hs, ht)  # M [batch, m, n]

    def _unit(self, x):
        dtype = x.dtype
        x = ops.cast(x, accumulation_dtype(dtype))  # the L2 norm in float32 under bfloat16 (a no-op in float32)
        return ops.cast(x / ops.sqrt(ops.sum(ops.square(x), axis=-1, keepdims=True) + self.epsilon), dtype)

    def decompose(self, h, aligned):
        """`(p, o)`: the parts of `h` parallel and orthogonal to `aligned` (both `[batch, time, d]`), in their
        dtype; computed in float32 for bfloat16 / float16 inputs."""
        dtype = h.dtype
        h, aligned = ops.cast(h, accumulation_dtype(dtype)), ops.cast(aligned, accumulation_dtype(dtype))
        coefficient = ops.sum(h * aligned, axis=-1, keepdims=True) / (
            ops.sum(aligned * aligned, axis=-1, keepdims=True) + self.epsilon)
        parallel = coefficient * aligned
        return ops.cast(parallel, dtype), ops.cast(h - parallel, dtype)

    def _features(self, h, aligned):
        if self.compare == "orthogonal":
            parts = self.decompose(h, aligned)
        else:
            parts = (h, aligned, h * aligned, ops.abs(h - aligned))
        return self.projection(ops.concatenate(parts, axis=-1))

    def call(self, inputs, mask=None):
        hs, ht = inputs
        mask_s, mask_t = split_pair_masks(mask)
        hs, ht = zero_padded(hs, mask_s), zero_padded(ht, mask_t)
        similarity = self._similarity(hs, ht)
        aligned_s, aligned_t = alignment_pooling(similarity, hs, ht, mask_s, mask_t)
        fs = zero_padded(self._features(hs, aligned_s), mask_s)
        ft = zero_padded(self._features(ht, aligned_t), mask_t)
        return fs, ft

    def compute_mask(self, inputs, mask=None):
        return pass_pair_masks(mask)

    def compute_output_shape(self, input_shape):
        s_shape, t_shape = (tuple(s) for s in input_shape)
        return s_shape[:-1] + (self.units,), t_shape[:-1] + (self.units,)

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units, "similarity": self.similarity, "compare": self.compare,
                       "epsilon": self.epsilon})
        return config
