"""The contextual language model of Tran et al. (NAACL 2018, section 4.2, eq. 11-13, Figure 3), its context-free
twin and a plain LSTM language model of the same size, with the per-token perplexity they are compared by.

Readings of the paper marked **[I]** are this implementation's where the paper is silent.
"""

from __future__ import annotations

import math
import weakref

import keras
import numpy as np
import tensorflow as tf
from keras import ops

from keras_match.layers.carnn import CARNN
from keras_match.layers.carnn import VARIANTS
from keras_match.layers.checks import one_of
from keras_match.layers.checks import positive_int
from keras_match.layers.masked_ops import HALF_DTYPES

__all__ = ["ContextualLanguageModel", "ZeroContext", "KINDS", "token_nll", "perplexity", "evaluate_perplexity"]

CONTEXTUAL, NO_CONTEXT, LSTM = "contextual", "no_context", "lstm"
KINDS = (CONTEXTUAL, NO_CONTEXT, LSTM)
"""The three models: `"contextual"` (eq. 11-13), `"no_context"` (the same CARNN LM with a zero context and no
previous-sentence encoder) and `"lstm"` (a plain LSTM LM, Mikolov-style RNNLM with an LSTM unit)."""


@keras.saving.register_keras_serializable(package="keras_match")
class ZeroContext(keras.layers.Layer):
    """A zero context `[batch, 1]` for a CARNN that has none (the context-free nCARNN of eq. 11, the context-free
    LM): `W_c c` is then 0 and the unit is eq. 3 without its context term.

    Call arguments:
        inputs: any tensor `[batch, ...]`; only its batch size is read.

    Returns:
        float zeros `[batch, 1]` in the layer's compute dtype.
    """

    def call(self, inputs):
        first = inputs[:, :1] if len(inputs.shape) == 2 else inputs[:, 0, :1]
        return ops.zeros_like(ops.cast(first, self.compute_dtype))

    def compute_mask(self, inputs, mask=None):
        return None

    def compute_output_shape(self, input_shape):
        return (input_shape[0], 1)


@keras.saving.register_keras_serializable(package="keras_match")
class ContextualLanguageModel(keras.Model):
    """A CARNN language model whose context is the previous sentence (Tran et al. 2018, section 4.2).

    `kind="contextual"` implements eq. 11-13:

        c_{t-1} = nCARNN(e_1^{t-1} .. e_{M_{t-1}}^{t-1})                      (eq. 11, no global context)
        h_1^t .. h_{M_t}^t = CARNN(e_1^t .. e_{M_t}^t, c_{t-1})               (eq. 11, variant n / i / s)
        w_{m+1}^t ~ softmax(W^(l) h_m^t + b^(l))                              (eq. 11)
        P(L_{t-1}) = softmax(W^(c) c_{t-1} + b^(c))                           (eq. 12)
        L_{l,w}^t = alpha L_w^t + (1 - alpha) L_l^{t-1}                       (eq. 13, alpha = 0.5)

    with `e` word embeddings, `L_w^t` the average log-loss of the current sentence's words and `L_l^{t-1}` the
    log-loss of the previous sentence's label. The previous-sentence encoder is `keras_match.layers.CARNN`
    (`variant="n"`, last state) fed a zero context `[batch, 1]` (`ZeroContext`): "a simplified version of the
    nCARNN, where the global context is absent" (eq. 3 with `W_c c = 0`); its context kernel `[1, 2u]` multiplies
    zeros, gets no gradient and is reported by `unused_parameters()`. The label head is used in training only
    (eq. 12: "only used to train the previous sentence encoder"); at test time the LM is the same computation.

    `kind="no_context"`: the same CARNN LM with a zero context (no previous-sentence encoder, no label head; the
    loss is `L_w^t`). `kind="lstm"`: `keras.layers.LSTM(hidden)` in place of the CARNN, no context, loss `L_w^t`.
    All three take the same inputs, so one batch feeds any of them; the two context-free ones ignore `previous`.

    Readings **[I]**: one word embedding (width `embedding_dim`) is shared by the previous-sentence encoder and
    the LM; `c_{t-1}` has the LM's width `hidden`; the first sentence of a dialog has an empty previous sentence,
    so `c_{t-1} = h_0 = 0` and its label term is dropped (label `-1`); `L_w^t` averages over the sentence's real
    target tokens (its words and `</s>`) and the batch loss is the mean of the per-sentence eq. 13 losses.

    Args:
        vocabulary_size: int, the number of token ids `V` (padding id 0 included), the width of the softmax.
        hidden: int, the hidden size `u` of every recurrent unit. Defaults to 256.
        kind: `"contextual"`, `"no_context"` or `"lstm"` (above). Defaults to `"contextual"`.
        variant: the LM's CARNN unit, `"n"` (eq. 3), `"i"` (eq. 5) or `"s"` (eq. 6); ignored by `"lstm"` (kept in
            the config). Defaults to `"i"`.
        num_labels: int, the number of per-sentence labels (eq. 12; speakers user / bot: 2). Defaults to 2.
        alpha: float in [0, 1], eq. 13's mixing weight. Defaults to 0.5 (the paper's).
        embedding_dim: int or None, the word-embedding width; None means `hidden` (sCARNN needs them equal:
            eq. 6 has no input projection).
        **kwargs: `keras.Model` arguments (`name`, `trainable`) and `dtype`, the dtype policy of every layer
            (default: Keras's global policy).

    Precision: under `mixed_bfloat16` the embeddings and the CARNNs compute in bfloat16 (the CARNNs keep their
    gates and states above bfloat16's precision, `keras_match.layers.CARNN`), but the plain LSTM (`kind="lstm"`)
    runs in float32, since its cell state rounded to bfloat16's 8-bit mantissa at every step would drift over a
    sentence, and the two logit layers (`W^(l)`, `W^(c)`) compute in float32, as every head: bfloat16 logits would
    round the log-loss and the perplexity.

    Inputs (a dict):
        `"previous"`: int32 `[batch, Tp]`, the previous sentence's token ids, 0 = padding (an all-zero row: no
            previous sentence).
        `"tokens"`: int32 `[batch, T]`, the current sentence's LM inputs `<s> w_1 .. w_M`, 0 = padding.

    Outputs (a dict):
        `"next_word"`: float32 logits `[batch, T, vocabulary_size]`: position `m` scores `w_{m+1}` (eq. 11's
            `W^(l) h_m + b^(l)`, before the softmax).
        `"label"` (contextual only): float32 logits `[batch, num_labels]` of `L_{t-1}` (eq. 12, before the softmax).

    Masking:
        Padding (id 0) is masked through `Embedding(mask_zero=True)`: the CARNNs skip padded steps (their outputs
        there are 0) and the LSTM carries its state; a padded batch gives the unpadded example's logits at real
        positions. `compute_loss` counts only targets `!= 0`.

    Training targets (the `y` of `fit`): a dict `{"next_word": int32 [batch, T] (w_1 .. w_M </s>, 0 = padding),
    "label": int32 [batch] (the previous sentence's label, -1 = none)}`; `"label"` may be left out for the
    context-free kinds. `compile` takes no loss: `compute_loss` is eq. 13.

    Raises:
        ValueError: an invalid `kind`, `variant`, size or `alpha`; `variant="s"` with `embedding_dim != hidden`.

    Examples:

    ```python
    model = ContextualLanguageModel(vocabulary_size=1000, hidden=64, kind="contextual", variant="i")
    model.compile(optimizer="adam")
    x = {"previous": np.array([[5, 6, 0]]), "tokens": np.array([[2, 7, 8, 9]])}
    y = {"next_word": np.array([[7, 8, 9, 3]]), "label": np.array([1])}
    model.fit(x, y, epochs=1)
    model(x)["next_word"].shape        # (1, 4, 1000)
    ```

    Reference:
    - Tran, Lai, Haffari, Zukerman, Bui, Bui. The Context-dependent Additive Recurrent Neural Net. NAACL-HLT
      2018, pp. 1274-1283: section 4.2 (eq. 11, 12, 13, Figure 3); the units of section 3 (eq. 3, 5, 6).
    - Ji, Haffari, Eisenstein. A Latent Variable Recurrent Neural Network for Discourse Relation Language Models.
      NAACL 2016 (the multi-task latent-variable setting eq. 12 follows).
    """

    def __init__(self, vocabulary_size, hidden=256, kind=CONTEXTUAL, variant="i", num_labels=2, alpha=0.5,
                 embedding_dim=None, **kwargs):
        positive_int("vocabulary_size", vocabulary_size)
        positive_int("hidden", hidden)
        one_of("kind", kind, KINDS)
        one_of("variant", variant, VARIANTS)
        positive_int("num_labels", num_labels)
        positive_int("embedding_dim", embedding_dim, allow_none=True)
        if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
            raise ValueError(f"`alpha` must be a number in [0, 1]. Received: alpha={alpha!r}")
        width = hidden if embedding_dim is None else embedding_dim
        if kind != LSTM and variant == "s" and width != hidden:
            raise ValueError(f"sCARNN (variant='s', eq. 6) has no input projection: `embedding_dim` must equal "
                             f"`hidden`. Received: embedding_dim={embedding_dim}, hidden={hidden}")

        # === Layers ===
        dtype = kwargs.pop("dtype", None)
        policy = keras.dtype_policies.get(dtype)  # None: the global policy, what every layer gets by default
        # Float32 for the LSTM's state and the logits under bfloat16 / float16 (the docstring's "Precision").
        precise = "float32" if policy.compute_dtype in HALF_DTYPES else policy
        embedding = keras.layers.Embedding(vocabulary_size, width, mask_zero=True, dtype=policy, name="embedding")
        if kind == LSTM:
            decoder = keras.layers.LSTM(hidden, return_sequences=True, dtype=precise, name="language_model")
        else:
            decoder = CARNN(hidden, variant, return_sequences=True, dtype=policy, name="language_model")
        # W^(l), b^(l) (eq. 11)
        output_layer = keras.layers.Dense(vocabulary_size, dtype=precise, name="next_word_logits")
        context_encoder = label_head = None
        if kind == CONTEXTUAL:
            context_encoder = CARNN(hidden, "n", return_sequences=False, dtype=policy,
                                    name="context_encoder")  # eq. 11
            label_head = keras.layers.Dense(num_labels, dtype=precise, name="label_logits")  # W^(c), b^(c) (eq. 12)

        # === Functional model ===
        previous = keras.Input(shape=(None,), dtype="int32", name="previous")
        tokens = keras.Input(shape=(None,), dtype="int32", name="tokens")
        e = embedding(tokens)  # [batch, T, width], masked where tokens == 0
        outputs = {}
        if kind == LSTM:
            h = decoder(e)
        else:
            if kind == CONTEXTUAL:
                e_previous = embedding(previous)
                no_context = ZeroContext(dtype=policy, name="no_global_context")(previous)
                c = context_encoder([e_previous, no_context])  # c_{t-1}
            else:
                c = ZeroContext(dtype=policy, name="zero_context")(tokens)
            h = decoder([e, c])  # h_1^t .. h_M^t (eq. 11)
        outputs["next_word"] = keras.layers.Activation("linear", dtype="float32", name="next_word")(output_layer(h))
        if kind == CONTEXTUAL:
            outputs["label"] = keras.layers.Activation("linear", dtype="float32", name="label")(label_head(c))
        super().__init__(inputs={"previous": previous, "tokens": tokens}, outputs=outputs, **kwargs)

        # === Config ===
        self.vocabulary_size = vocabulary_size
        self.hidden = hidden
        self.kind = kind
        self.variant = variant
        self.num_labels = num_labels
        self.alpha = float(alpha)
        self.embedding_dim = embedding_dim
        self._policy = policy  # the layers' (a functional Model keeps no policy of its own)

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self._policy),
            "vocabulary_size": self.vocabulary_size,
            "hidden": self.hidden,
            "kind": self.kind,
            "variant": self.variant,
            "num_labels": self.num_labels,
            "alpha": self.alpha,
            "embedding_dim": self.embedding_dim,
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def unused_parameters(self) -> int:
        """The weights that multiply the zero context (`[1, 2u]` context kernels): they never change the output."""
        names = [layer.name for layer in self.layers if isinstance(layer, CARNN)]
        layers = [self.get_layer(name) for name in names]
        return int(sum(layer.cell.context_kernel.shape[0] * layer.cell.context_kernel.shape[1] for layer in layers
                       if layer.cell.context_kernel.shape[0] == 1))

    def sentence_losses(self, y, y_pred):
        """Eq. 13 per example: `alpha L_w^t + (1 - alpha) L_l^{t-1}` (contextual), else `L_w^t`; float32 `[batch]`.

        `L_w^t` is the mean NLL over the example's real targets (0 where it has none); `L_l^{t-1}` is the label's
        NLL where `y["label"] >= 0`, else dropped (the first sentence of a dialog has no previous sentence).
        """
        targets = y["next_word"] if isinstance(y, dict) else y
        nll, real = token_nll(y_pred["next_word"], targets)
        count = ops.sum(real, axis=1)
        word_loss = ops.sum(nll, axis=1) / ops.maximum(count, 1.0)  # L_w^t
        if self.kind != CONTEXTUAL:
            return word_loss
        labels = ops.cast(ops.reshape(y["label"], (-1,)), "int32")
        has_label = ops.cast(labels >= 0, "float32")
        label_loss = keras.losses.sparse_categorical_crossentropy(
            ops.maximum(labels, 0), y_pred["label"], from_logits=True) * has_label  # L_l^{t-1} (eq. 12)
        return self.alpha * word_loss + (1.0 - self.alpha) * label_loss  # eq. 13

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        loss = ops.mean(self.sentence_losses(y, y_pred))
        if self.losses:
            loss = loss + ops.sum(self.losses)
        return loss


def token_nll(logits, targets):
    """Each target's negative log-likelihood under the logits, and which targets are real.

    Args:
        logits: float `[batch, T, V]` (`"next_word"`).
        targets: int `[batch, T]`, 0 = padding.

    Returns:
        `(nll, real)`: float32 `[batch, T]` each; `nll` is 0 at padded positions, `real` is 1.0 at real targets.
    """
    targets = ops.cast(targets, "int32")
    real = ops.cast(ops.not_equal(targets, 0), "float32")
    nll = keras.losses.sparse_categorical_crossentropy(targets, ops.cast(logits, "float32"), from_logits=True)
    return nll * real, real


def perplexity(nll_sum, count) -> float:
    """Per-token perplexity `exp(nll_sum / count)`: the exponential of the mean NLL (nats) over real tokens.

    Raises:
        ValueError: `count` is not positive.
    """
    if count <= 0:
        raise ValueError(f"perplexity needs at least one real token, got count={count}")
    return float(math.exp(float(nll_sum) / float(count)))


def evaluate_perplexity(model, batches) -> dict:
    """Per-token perplexity of a model over batches (`exp` of the mean NLL over every real target token).

    Args:
        model: a `ContextualLanguageModel`.
        batches: iterable of `(x, y)` as made by `keras_match.models.contextual_lm.data.SentenceSplit.batches`.

    Returns:
        `{"perplexity", "nll_sum", "tokens", "label_accuracy"}` (`label_accuracy`: eq. 12's prediction of the
        previous sentence's label, contextual models only, else None).
    """
    step = _evaluation_step(model)
    nll_sum, tokens, right, labelled = 0.0, 0, 0, 0
    for x, y in batches:
        labels = y.get("label") if isinstance(y, dict) else None
        s, n, r, m = step(x["previous"], x["tokens"], y["next_word"],
                          labels if labels is not None else np.full(len(y["next_word"]), -1, np.int32))
        nll_sum += float(s)
        tokens += int(n)
        right += int(r)
        labelled += int(m)
    return {"perplexity": perplexity(nll_sum, tokens), "nll_sum": nll_sum, "tokens": tokens,
            "label_accuracy": (right / labelled) if (model.kind == CONTEXTUAL and labelled) else None}


_STEPS = weakref.WeakKeyDictionary()
"""model -> its compiled evaluation step (one trace per model)."""


def _evaluation_step(model):
    cached = _STEPS.get(model)
    if cached is not None:
        return cached
    spec = tf.TensorSpec([None, None], tf.int32)
    owner = weakref.ref(model)  # the cached step must not keep its model alive (the cache's key)

    @tf.function(input_signature=[spec, spec, spec, tf.TensorSpec([None], tf.int32)])
    def step(previous, tokens, targets, labels):
        out = owner()({"previous": previous, "tokens": tokens}, training=False)
        nll, real = token_nll(out["next_word"], targets)
        if "label" in out:
            has = labels >= 0
            hit = tf.logical_and(has, tf.equal(tf.argmax(out["label"], -1, output_type=tf.int32), labels))
            right, labelled = tf.reduce_sum(tf.cast(hit, tf.int32)), tf.reduce_sum(tf.cast(has, tf.int32))
        else:
            right = labelled = tf.constant(0)
        return (tf.reduce_sum(tf.cast(nll, tf.float64)), tf.reduce_sum(tf.cast(real, tf.int64)), right, labelled)

    _STEPS[model] = step
    return step
