"""Pieces every matching-model builder shares: token-id inputs, the matching features, and `matching_model`, the
shared head every builder ends with (pair representation + pair features -> prediction layers -> output layer).
The input encoder, which every builder starts with, is `keras_match.encoders`."""

from __future__ import annotations

import functools
import inspect

import keras


def token_inputs(*names):
    """One model input per name: int32 token ids `[batch, length]` (0 = padding), in the order given (a pair
    model's are `token_inputs("question", "answer")`, the pair preprocessor's token-id inputs).

    Lengths are left unknown so batches can be trimmed to their longest text.
    """
    return tuple(keras.Input(shape=(None,), dtype="int32", name=name) for name in names)


def matching_features(xq, xa):
    """`[xq; xa; xq * xa; xq - xa]`, the pair representation of MCAN eq. 15 (and many matching models)."""
    product = keras.layers.Multiply(name="pair_product")([xq, xa])
    difference = keras.layers.Subtract(name="pair_difference")([xq, xa])
    return keras.layers.Concatenate(name="pair_features")([xq, xa, product, difference])


def feature_input(num_features):
    """The optional third model input `features`, float32 `[batch, num_features]` (pair features computed by the
    preprocessor, e.g. the four word-overlap features), or None when `num_features` is 0.

    Raises:
        ValueError: `num_features` is not a non-negative integer.
    """
    if isinstance(num_features, bool) or not isinstance(num_features, int) or num_features < 0:
        raise ValueError(f"num_features must be a non-negative integer, got {num_features!r}")
    if not num_features:
        return None
    return keras.Input(shape=(num_features,), dtype="float32", name="features")


def output_head(x, head="softmax", num_classes=None, regularizer=None):
    """The model's output layer, one of the heads of `keras_match.heads` (the score contract).

    Args:
        x: float tensor `[batch, d]`, the pair representation after the prediction layers.
        head: `"softmax"`: 2-class softmax over (not relevant, relevant), float32 `[batch, 2]` (MCAN eq. 16,
            CTRN); `"score"`: a raw linear score `[batch, 1]`; `"classification"`: softmax over `num_classes`
            labels, `[batch, num_classes]`.
        num_classes: the number of labels of a classification head (>= 2).
        regularizer: kernel regularizer of the output layer.

    Returns:
        The output tensor, from a layer named `keras_match.heads.OUTPUT_LAYERS[head]`; float32 whatever the
        model's precision (the layer computes in float32 under `mixed_bfloat16` too).

    Raises:
        ValueError: unknown head, or a classification head without `num_classes >= 2`.
    """
    from keras_match import heads

    units = heads.check_head(head, num_classes)
    activation = None if head == "score" else "softmax"
    # float32 under every precision: a bfloat16 score has 8 mantissa bits, so close candidates would tie and the
    # softmax and the loss would round (`keras_match.precision`); the input is cast up, nothing else changes
    return keras.layers.Dense(
        units, activation=activation, kernel_regularizer=regularizer, dtype="float32",
        name=heads.OUTPUT_LAYERS[head]
    )(x)


def matching_model(inputs, x, *, features=None, prediction=None, head="softmax", num_classes=None,
                   regularizer=None, name=None):
    """The shared head that ends a builder: the representation `x` (with the pair features), the prediction
    layers, the output layer and the `keras.Model` (the input encoder's `finish` then runs in
    `keras_match.encoders.takes_input_encoder`).

    Args:
        inputs: dict of the model's token-id inputs (`keras.Input`s).
        x: float tensor `[batch, d]`, the pair representation the family computed.
        features: the `features` input (`feature_input`) or None; concatenated to `x` (undropped, as CTRN
            concatenates its word-overlap features "before the dense layers") and added to the inputs.
        prediction: the family's prediction layers, a function `[batch, d'] -> [batch, h]` (None: none).
        head, num_classes, regularizer: the output head (`output_head`).
        name: the model's name.

    Returns:
        The `keras.Model` from `inputs` (plus `features`) to the head's output.
    """
    inputs = dict(inputs)
    if features is not None:
        inputs["features"] = features
        x = keras.layers.Concatenate(name="pair_and_features")([x, features])
    if prediction is not None:
        x = prediction(x)
    return keras.Model(inputs, output_head(x, head, num_classes, regularizer), name=name)


class MatchingHead:
    """The head every pair builder ends with, its settings checked once: the optional pair features input, the
    family's prediction layers and the output layer of `keras_match.heads` (the score contract).

    Args:
        head: `"softmax"` (2-class softmax over (not relevant, relevant), float32 `[batch, 2]`), `"score"` (a raw
            ranking score `[batch, 1]`) or `"classification"` (softmax over `num_classes` labels).
        num_classes: int >= 2, the number of labels of a classification head (None otherwise).
        num_features: int >= 0, the number of extra pair features (`keras_match.text.features`: word overlap, BM25);
            with `num_features > 0` the model has a third input `"features"`, float32 `[batch, num_features]`,
            concatenated undropped to the pair representation before the prediction layers (as CTRN
            concatenates its word-overlap features "before the dense layers").

    Raises:
        ValueError: an unknown head, a classification head without `num_classes >= 2`, or `num_features` not a
            non-negative integer.
    """

    def __init__(self, head="softmax", num_classes=None, num_features=0):
        from keras_match import heads

        self.units = heads.check_head(head, num_classes)
        self.head, self.num_classes, self.num_features = head, num_classes, num_features
        self.features = feature_input(num_features)

    def model(self, inputs, x, *, prediction=None, regularizer=None, name=None):
        """The `keras.Model` from `inputs` (plus `features`) to the output: `matching_model` with this head."""
        return matching_model(inputs, x, features=self.features, prediction=prediction, head=self.head,
                              num_classes=self.num_classes, regularizer=regularizer, name=name)


def takes_matching_head(default="softmax"):
    """Decorates a builder whose argument `head` is a `MatchingHead`, so that it is called with the head's settings
    `head` (a name, default `default`), `num_classes` and `num_features`, as the zoo's settings give them; a
    `MatchingHead` passed as `head` is used as it is."""

    def decorate(builder):
        signature = inspect.signature(builder)
        parameters = []
        for parameter in signature.parameters.values():
            if parameter.name == "head":
                parameters += [parameter.replace(default=default),
                               inspect.Parameter("num_classes", inspect.Parameter.KEYWORD_ONLY, default=None),
                               inspect.Parameter("num_features", inspect.Parameter.KEYWORD_ONLY, default=0)]
            else:
                parameters.append(parameter)
        keyword_only = [p for p in parameters if p.kind == inspect.Parameter.KEYWORD_ONLY]
        others = [p for p in parameters if p.kind != inspect.Parameter.KEYWORD_ONLY]

        @functools.wraps(builder)
        def build(*args, head=default, num_classes=None, num_features=0, **kwargs):
            if not isinstance(head, MatchingHead):
                head = MatchingHead(head, num_classes, num_features)
            elif num_classes is not None or num_features:
                raise ValueError(f"{builder.__name__}: num_classes and num_features are the MatchingHead's; give "
                                 "them to it, not beside it")
            return builder(*args, head=head, **kwargs)

        build.__signature__ = signature.replace(parameters=others + keyword_only)
        return build

    return decorate


# ---------------------------------------------------------------------------------------------- explanations


def explained_pair(texts, options, family, takes):
    """The one (question, answer) pair a family's `explain` shows, from `keras-match explain`'s `texts`.

    Raises:
        ValueError: an option in `options` is set that the family does not take (`takes`, the flag it does take),
            or `texts` holds other than one question and one answer.
    """
    unknown = sorted(key for key, value in options.items() if value is not None)
    if unknown:
        raise ValueError(f"explain: a {family} run takes {takes}, not {', '.join('--' + k for k in unknown)}")
    if any(len(texts.get(key, ())) != 1 for key in ("question", "answer")):
        raise ValueError("explain shows one pair: give one --question and one --answer")
    return texts["question"][0], texts["answer"][0]


def describe_output(values, label_names=None) -> str:
    """A model's output for one pair as `explain` prints it: a ranker's `score 0.1234`, a classifier's
    `probabilities entailment 0.700, ...`."""
    if len(values) == 1:
        return f"score {values[0]:.4f}"
    return "probabilities " + ", ".join(f"{name} {p:.3f}" for name, p in zip(label_names, values))
