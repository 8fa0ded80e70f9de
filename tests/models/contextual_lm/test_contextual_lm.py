"""The contextual language model (Tran et al. 2018, section 4.2, eq. 11-13), its context-free twin, the LSTM LM, the
perplexity and the dialog bAbI task 6 sentence corpus."""

import math

import keras
import numpy as np
import pytest

from keras_match.datasets import DataFormatError
from keras_match.datasets import dialog_babi
from keras_match.models.contextual_lm import ContextualLanguageModel
from keras_match.models.contextual_lm import data
from keras_match.models.contextual_lm import evaluate_perplexity
from keras_match.models.contextual_lm import perplexity
from keras_match.models.contextual_lm import token_nll

V, HIDDEN = 11, 6

# Two sentences of different lengths (padding at the end), previous sentences of different lengths, one empty.
X = {"previous": np.array([[4, 5, 6], [7, 0, 0], [0, 0, 0]], np.int32),
     "tokens": np.array([[2, 8, 9, 10, 0], [2, 5, 0, 0, 0], [2, 4, 6, 7, 1]], np.int32)}
Y = {"next_word": np.array([[8, 9, 10, 3, 0], [5, 3, 0, 0, 0], [4, 6, 7, 1, 3]], np.int32),
     "label": np.array([1, 0, -1], np.int32)}


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def carnn_reference(e, c, cell, variant):
    """Eq. 3 / 5 / 6 stepped in NumPy over `e [M, d]` (real steps only) with context `c [dc]`; all states."""
    w = {v.path.split("/")[-1]: np.asarray(v) for v in cell.weights}
    units = w["gate_bias"].shape[0] // 2
    h, states = np.zeros(units), []
    for e_m in e:
        logits = e_m @ w["input_kernel"] + c @ w["context_kernel"] + w["gate_bias"]
        if variant == "n":
            logits = logits + h @ w["recurrent_kernel"]
        g_u, g_f = sigmoid(logits[:units]), sigmoid(logits[units:])
        e_bar = e_m if variant == "s" else e_m @ w["projection_kernel"] + w["projection_bias"]
        h = g_u * (g_f * e_bar) + (1.0 - g_u) * h
        states.append(h)
    return np.array(states), h


def lstm_reference(e, layer):
    """keras.layers.LSTM (gates i, f, c, o; tanh / sigmoid) stepped in NumPy over `e [M, d]`."""
    kernel, recurrent, bias = (np.asarray(v) for v in layer.cell.weights)
    u = recurrent.shape[0]
    h, c, states = np.zeros(u), np.zeros(u), []
    for e_m in e:
        z = e_m @ kernel + h @ recurrent + bias
        i, f, g, o = sigmoid(z[:u]), sigmoid(z[u:2 * u]), np.tanh(z[2 * u:3 * u]), sigmoid(z[3 * u:])
        c = f * c + i * g
        h = o * np.tanh(c)
        states.append(h)
    return np.array(states)


def reference_outputs(model, x):
    """The model's logits computed in NumPy from its weights, at the real positions of each row."""
    table = np.asarray(model.get_layer("embedding").embeddings)
    dense = model.get_layer("next_word_logits")
    w_l, b_l = np.asarray(dense.kernel), np.asarray(dense.bias)
    rows, labels = [], []
    for previous, tokens in zip(x["previous"], x["tokens"]):
        e = table[tokens[tokens != 0]]
        if model.kind == "lstm":
            h = lstm_reference(e, model.get_layer("language_model"))
        else:
            c = np.zeros(1)
            if model.kind == "contextual":
                encoder = model.get_layer("context_encoder")
                _, c = carnn_reference(table[previous[previous != 0]], np.zeros(1), encoder.cell, "n")  # eq. 11
                head = model.get_layer("label_logits")
                labels.append(c @ np.asarray(head.kernel) + np.asarray(head.bias))  # eq. 12
            h, _ = carnn_reference(e, c, model.get_layer("language_model").cell, model.variant)  # eq. 11
        rows.append(h @ w_l + b_l)  # W^(l) h_m + b^(l)
    return rows, labels


def small(kind, variant="i", **kwargs):
    keras.utils.set_random_seed(1)
    model = ContextualLanguageModel(V, hidden=HIDDEN, kind=kind, variant=variant, **kwargs)
    # Unit-scale embeddings (the default init is +-0.05), so every path moves the logits visibly.
    embedding = model.get_layer("embedding")
    embedding.embeddings.assign(np.random.default_rng(0).normal(size=embedding.embeddings.shape))
    return model


MODELS = [("contextual", "n"), ("contextual", "i"), ("contextual", "s"), ("no_context", "i"), ("lstm", "i")]


@pytest.mark.parametrize("kind,variant", MODELS)
def test_model_matches_numpy_reference_with_masks(kind, variant):
    model = small(kind, variant)
    out = model(X)
    assert out["next_word"].shape == (3, 5, V) and keras.backend.standardize_dtype(out["next_word"].dtype) == "float32"
    assert ("label" in out) == (kind == "contextual")
    rows, labels = reference_outputs(model, X)
    logits = np.asarray(out["next_word"])
    for i, expected in enumerate(rows):
        np.testing.assert_allclose(logits[i, : len(expected)], expected, rtol=1e-4, atol=1e-5)
    if kind == "contextual":
        np.testing.assert_allclose(np.asarray(out["label"]), np.array(labels), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(labels[2], np.asarray(model.get_layer("label_logits").bias), atol=1e-6)  # c = 0
    # Extra padding changes nothing at the real positions.
    padded = {k: np.pad(v, [(0, 0), (0, 3)]) for k, v in X.items()}
    np.testing.assert_allclose(np.asarray(model(padded)["next_word"])[:, :5][X["tokens"] != 0],
                               logits[X["tokens"] != 0], rtol=1e-5, atol=1e-6)


def test_perplexity_against_hand_calculation():
    # Probabilities over 3 words: (1/2, 1/4, 1/4). Targets: word 1 (p = 1/4), word 0 (p = 1/2), then padding.
    logits = np.log(np.array([[[0.5, 0.25, 0.25]] * 3], np.float32))
    targets = np.array([[1, 0, 0]], np.int32)  # id 0 is padding, so the third position is not a token
    nll, real = token_nll(logits, targets)
    np.testing.assert_allclose(np.asarray(real), [[1, 0, 0]])  # target id 0 is padding: only the first counts
    targets = np.array([[1, 2, 0]], np.int32)  # p = 1/4, 1/4: mean NLL ln 4, perplexity 4
    nll, real = token_nll(logits, targets)
    assert perplexity(float(np.sum(nll)), float(np.sum(real))) == pytest.approx(4.0, rel=1e-6)
    logits = np.log(np.array([[[0.1, 0.5, 0.4]] * 3], np.float32))
    nll, real = token_nll(logits, np.array([[1, 2, 0]], np.int32))  # p = 1/2, 2/5
    assert perplexity(float(np.sum(nll)), float(np.sum(real))) == pytest.approx(math.sqrt(2 * 2.5), rel=1e-6)
    with pytest.raises(ValueError, match="at least one real token"):
        perplexity(0.0, 0)


def test_evaluate_perplexity_is_the_mean_nll_over_real_tokens():
    model = small("contextual", "i")
    logits = np.asarray(model(X)["next_word"], np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    targets = Y["next_word"]
    picked = np.take_along_axis(logp, targets[..., None], -1)[..., 0]
    expected = math.exp(-picked[targets != 0].mean())
    # Two batches of different widths: the average is over tokens, not over batches.
    batches = [({"previous": X["previous"][:2], "tokens": X["tokens"][:2, :4]},
                {"next_word": targets[:2, :4], "label": Y["label"][:2]}),
               ({"previous": X["previous"][2:], "tokens": X["tokens"][2:]},
                {"next_word": targets[2:], "label": Y["label"][2:]})]
    result = evaluate_perplexity(model, batches)
    assert result["tokens"] == int((targets != 0).sum()) == 11
    assert result["perplexity"] == pytest.approx(expected, rel=1e-5)
    assert 0.0 <= result["label_accuracy"] <= 1.0


@pytest.mark.parametrize("alpha", [0.5, 0.3])  # 0.3: alpha and 1 - alpha swapped would differ
def test_loss_is_equation_13(alpha):
    model = small("contextual", "s", alpha=alpha)
    out = model(X)
    logits = np.asarray(out["next_word"], np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(logp, Y["next_word"][..., None], -1)[..., 0]
    real = Y["next_word"] != 0
    word = -(picked * real).sum(1) / real.sum(1)  # L_w^t: mean over the sentence's words
    label_logits = np.asarray(out["label"], np.float64)
    label_logp = label_logits - np.log(np.exp(label_logits).sum(-1, keepdims=True))
    label = np.array([-label_logp[0, 1], -label_logp[1, 0], 0.0])  # no previous sentence: no label term
    expected = np.mean(alpha * word + (1 - alpha) * label)
    assert float(model.compute_loss(X, Y, out)) == pytest.approx(expected, rel=1e-5)
    lstm = small("lstm")
    lstm_out = lstm(X)
    logits = np.asarray(lstm_out["next_word"], np.float64)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    picked = np.take_along_axis(logp, Y["next_word"][..., None], -1)[..., 0]
    assert float(lstm.compute_loss(X, {"next_word": Y["next_word"]}, lstm_out)) == pytest.approx(
        np.mean(-(picked * real).sum(1) / real.sum(1)), rel=1e-5)


@pytest.mark.parametrize("kind", ["contextual", "no_context", "lstm"])
def test_context_is_used_only_by_the_contextual_model(kind):
    model = small(kind, "n")
    other = dict(X, previous=np.array([[9, 9, 9], [4, 5, 0], [6, 0, 0]], np.int32))
    a, b = np.asarray(model(X)["next_word"]), np.asarray(model(other)["next_word"])
    real = X["tokens"] != 0
    if kind == "contextual":
        assert np.abs(a[real] - b[real]).max() > 1e-3
    else:
        np.testing.assert_array_equal(a, b)


def test_training_steps_reach_every_weight_and_lower_the_loss():
    import tensorflow as tf

    model = small("contextual", "n")
    optimizer = keras.optimizers.Adam(0.05)
    unused = {model.get_layer("context_encoder").cell.context_kernel.path}  # it multiplies the zero context
    losses = []
    for step in range(3):
        with tf.GradientTape() as tape:
            loss = model.compute_loss(X, Y, model(X, training=True))
        grads = tape.gradient(loss, model.trainable_weights)
        if step == 0:
            for weight, grad in zip(model.trainable_weights, grads):
                norm = 0.0 if grad is None else float(tf.norm(tf.convert_to_tensor(grad)))
                assert (norm == 0.0) == (weight.path in unused), weight.path
        optimizer.apply(grads, model.trainable_weights)
        losses.append(float(loss))
    assert losses[-1] < losses[0]
    assert model.unused_parameters() == 2 * HIDDEN
    assert small("no_context").unused_parameters() == 2 * HIDDEN and small("lstm").unused_parameters() == 0


@pytest.mark.parametrize("kind,variant", [("contextual", "n"), ("lstm", "i")])
def test_config_and_keras_file_round_trip(kind, variant, tmp_path):
    model = small(kind, variant, alpha=0.3)
    config = model.get_config()
    assert config["kind"] == kind and config["alpha"] == 0.3 and config["hidden"] == HIDDEN
    clone = ContextualLanguageModel.from_config(config)
    assert clone.get_config() == config
    assert [w.shape for w in clone.weights] == [w.shape for w in model.weights]
    path = tmp_path / "lm.keras"
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, ContextualLanguageModel) and loaded.get_config() == config
    expected, got = model(X), loaded(X)
    assert set(expected) == set(got)
    for key in expected:
        np.testing.assert_array_equal(np.asarray(expected[key]), np.asarray(got[key]))


def test_invalid_settings():
    with pytest.raises(ValueError, match="kind"):
        ContextualLanguageModel(V, kind="bigram")
    with pytest.raises(ValueError, match="embedding_dim"):
        ContextualLanguageModel(V, hidden=8, variant="s", embedding_dim=4)
    with pytest.raises(ValueError, match="alpha"):
        ContextualLanguageModel(V, alpha=1.5)


# ---- data -------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus(data_dir):
    return data.prepare(data_dir, min_count=2, max_length=30)


def test_task6_sentences(corpus):
    counts = corpus.metadata["counts"]
    assert {name: counts[name]["sentences"] for name in counts} == {"train": 24920, "dev": 7024, "test": 19888}
    assert {name: counts[name]["dialogs"] for name in counts} == {"train": 1618, "dev": 500, "test": 1117}
    assert counts["train"]["truncated"] == 0
    vocabulary = corpus.encoder.vocabulary
    assert vocabulary[:2] == [data.BOS_TOKEN, data.EOS_TOKEN] and corpus.vocabulary_size == len(vocabulary) + 2
    assert corpus.encoder.token_counts[vocabulary[-1]] >= 2 and "api_call" in vocabulary
    train = corpus["train"]
    n = len(train)
    assert train.tokens.shape == train.targets.shape == (n, 31) and train.previous.shape == (n, 30)
    assert (train.tokens[:, 0] == data.BOS).all()
    lengths = (train.tokens != 0).sum(1)
    # Targets are the inputs shifted by one, then </s>.
    assert (train.targets[np.arange(n), lengths - 1] == data.EOS).all()
    np.testing.assert_array_equal(train.targets[:, :-1][train.tokens[:, 1:] != 0], train.tokens[:, 1:][
        train.tokens[:, 1:] != 0])
    # The first dialog: the bot's welcome (the user's <SILENCE> left out), then the user's request.
    first = ["Hello , welcome to the Cambridge restaurant system . You can ask for restaurants by area , price range "
             "or food type . How may I help you ?", "i want a moderately priced restaurant in the west part of town"]
    words = corpus.encoder.encode(first, 30).numpy()
    np.testing.assert_array_equal(train.tokens[0, 1:], words[0])
    np.testing.assert_array_equal(train.previous[0], 0)
    np.testing.assert_array_equal(train.previous[1], words[0])  # the previous sentence is the context
    assert train.label[0] == -1 and train.label[1] == 1 and train.speaker[0] == 1 and train.speaker[1] == 0
    # Labels: the previous sentence's speaker, -1 exactly at the start of each dialog.
    starts = np.r_[True, train.dialog[1:] != train.dialog[:-1]]
    np.testing.assert_array_equal(train.label == -1, starts)
    np.testing.assert_array_equal(train.label[~starts], train.speaker[np.flatnonzero(~starts) - 1])
    # Words outside the training vocabulary are [UNK] (id 1) in dev and test; none is padding inside a sentence.
    assert corpus["test"].counts()["unk"] > 0
    x, y = next(corpus["dev"].batches(64, shuffle=True, seed=3))
    assert x["tokens"].shape == y["next_word"].shape and x["tokens"].shape[1] == (y["next_word"] != 0).sum(1).max()


def test_malformed_line_names_file_and_line(tmp_path):
    candidates = dialog_babi.CandidateSet(["hello what can i do", "api_call R_cuisine west moderate"])
    good = tmp_path / "good.txt"
    good.write_text("1 <SILENCE>\thello what can i do\n2 west part of town\tapi_call R_cuisine west moderate\n"
                    "3 the_place R_phone the_place_phone\n")
    sentences = data.read_split("train", good, candidates)
    assert [s.text for s in sentences] == ["hello what can i do", "west part of town",
                                           "api_call R_cuisine west moderate"]
    assert [s.previous_speaker for s in sentences] == [None, "bot", "user"]
    bad = tmp_path / "bad.txt"
    bad.write_text("1 <SILENCE>\thello what can i do\n2west part of town\tapi_call R_cuisine west moderate\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt, line 2") as error:
        data.read_split("train", bad, candidates)
    assert error.value.line == 2 and str(bad) in str(error.value)

