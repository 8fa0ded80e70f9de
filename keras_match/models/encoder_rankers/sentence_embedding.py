"""The bi-encoder's sentence embedding: the masked mean of per-token states, L2-normalised (sentence-transformers'
Pooling and Normalize modules, as all-MiniLM-L6-v2's `modules.json` chains them)."""

from __future__ import annotations

import keras
from keras import ops

from keras_match.layers.checks import sequence_shape
from keras_match.layers.masked_ops import masked_mean

__all__ = ["SentenceEmbedding"]


@keras.saving.register_keras_serializable(package="keras_match")
class SentenceEmbedding(keras.layers.Layer):
    """One vector per text: the mean of its real tokens' states, divided by its L2 norm.

    `e = m / max(||m||_2, epsilon)` with `m = sum_t mask_t h_t / sum_t mask_t`: sentence-transformers' mean
    pooling (`1_Pooling/config.json`: `pooling_mode_mean_tokens`) followed by its `Normalize` module, the sentence
    embedding all-MiniLM-L6-v2 was trained to give (Reimers & Gurevych 2019, section 3: MEAN pooling). The dot
    product of two such embeddings is their cosine similarity.

    Args:
        normalize: bool, divide by the L2 norm (True: the sentence-transformers pipeline); False gives the plain
            masked mean.
        epsilon: float > 0, the smallest norm divided by (PyTorch's `F.normalize` default, 1e-12), so that an
            all-padding row gives a zero vector rather than NaN.
        **kwargs: `keras.layers.Layer` arguments (`name`, `dtype`). The zoo's bi-encoder makes it with
            `dtype="float32"`: under `mixed_bfloat16` the states arrive in bfloat16 and the mean, the norm and the
            embedding are computed in float32 (a bfloat16 cosine keeps 8 significant bits, and close candidates
            would tie).

    Call arguments:
        inputs: float `[batch, time, dim]`, per-token states.
        mask: optional bool `[batch, time]`, True at real tokens (the Keras mask the input encoder attaches).

    Returns:
        `[batch, dim]` in the layer's compute dtype, no mask: unit vectors (zero for a row with no real token).
        Padded positions never change the result; without a mask every position counts.

    Raises:
        ValueError: at build, an input that is not rank 3; `epsilon` not a number > 0.

    Examples:
    >>> states = np.random.rand(2, 5, 3).astype("float32")
    >>> mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], bool)
    >>> SentenceEmbedding()(states, mask=mask).shape  # unit rows; row 0 pools its first 3 states
    TensorShape([2, 3])

    Reference:
        Reimers & Gurevych, Sentence-BERT: Sentence Embeddings using Siamese BERT-Networks, EMNLP 2019, section 3
        (MEAN pooling); the sentence-transformers modules `Pooling` and `Normalize` of all-MiniLM-L6-v2.
    """

    def __init__(self, normalize=True, epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon > 0:
            raise ValueError(f"epsilon must be a number > 0, got {epsilon!r}")
        self.normalize = bool(normalize)
        self.epsilon = float(epsilon)
        self.supports_masking = True

    def build(self, input_shape):
        sequence_shape(self, input_shape, defined_dim=False)

    def call(self, inputs, mask=None):
        inputs = ops.cast(inputs, self.compute_dtype)
        mean = masked_mean(inputs, None if mask is None else ops.expand_dims(ops.cast(mask, "bool"), -1), axis=1)
        if not self.normalize:
            return mean
        norm = ops.sqrt(ops.sum(ops.square(mean), axis=-1, keepdims=True))
        return mean / ops.maximum(norm, ops.cast(self.epsilon, mean.dtype))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], input_shape[-1])

    def get_config(self):
        config = super().get_config()
        config.update(normalize=self.normalize, epsilon=self.epsilon)
        return config
