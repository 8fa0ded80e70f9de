"""A learning rate of its own for a pretrained backbone's layers (`keras_match.optimizers`, training setting
`backbone_learning_rate`): the backbone's variables are updated at their rate and the body's at `learning_rate`,
as two optimizers of the same class would (checked against Adam's and SGD's update rules written out here, and
against two Nadam optimizers, whose state steps once a step), in `fit` as in `apply`; a schedule's new rate scales
both, the optimizer survives a `.keras` round trip, and a model whose backbone does not train, or an optimizer with
weight decay, is refused in one line."""

import json

import keras
import numpy as np
import pytest

from keras_match import cli, optimizers, zoo
from keras_match.artifacts import runs
from keras_match.encoders import transformer


def _toy():
    """Two Dense layers: `backbone` stands for the pretrained part, `body` for the matching body."""
    inputs = keras.Input((3,))
    hidden = keras.layers.Dense(4, name="backbone")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2, name="body")(hidden))
    rng = np.random.default_rng(0)
    model.set_weights([rng.normal(size=w.shape).astype("float32") for w in model.get_weights()])
    return model


def _backbone_paths(model):
    return [v.path for v in model.trainable_variables if v.path.startswith("backbone/")]


def _adam_reference(values, grads_per_step, rates, beta_1=0.9, beta_2=0.999, epsilon=1e-7):
    """Adam (Kingma & Ba 2015, Algorithm 1, in Keras's epsilon-hat form) on each variable at its own rate."""
    values = [v.astype(np.float64) for v in values]
    m = [np.zeros_like(v) for v in values]
    s = [np.zeros_like(v) for v in values]
    for t, grads in enumerate(grads_per_step, start=1):
        for i, g in enumerate(grads):
            m[i] = beta_1 * m[i] + (1 - beta_1) * g
            s[i] = beta_2 * s[i] + (1 - beta_2) * g * g
            alpha = rates[i] * np.sqrt(1 - beta_2 ** t) / (1 - beta_1 ** t)
            values[i] = values[i] - alpha * m[i] / (np.sqrt(s[i]) + epsilon)
    return values


def test_the_backbone_and_the_body_follow_adams_rule_each_at_its_own_rate():
    model = _toy()
    paths = _backbone_paths(model)
    optimizer = optimizers.TWINS["adam"](learning_rate=1e-2, backbone_rate=0.05, backbone_paths=paths)
    optimizer.build(model.trainable_variables)
    start = [v.numpy() for v in model.trainable_variables]
    rng = np.random.default_rng(1)
    steps = [[rng.normal(size=v.shape).astype("float32") for v in model.trainable_variables] for _ in range(3)]
    for grads in steps:
        optimizer.apply(grads, model.trainable_variables)
    rates = [1e-2 * 0.05 if v.path in paths else 1e-2 for v in model.trainable_variables]
    assert sorted(set(rates)) == [5e-4, 1e-2]  # both groups are present
    for variable, expected in zip(model.trainable_variables, _adam_reference(start, steps, rates)):
        np.testing.assert_allclose(variable.numpy(), expected, rtol=1e-5, atol=1e-6, err_msg=variable.path)


def test_nadam_steps_its_state_once_a_step_as_two_nadams_one_per_group_would():
    model, reference = _toy(), _toy()
    paths = _backbone_paths(model)
    optimizer = optimizers.TWINS["nadam"](learning_rate=1e-2, backbone_rate=0.1, backbone_paths=paths)
    groups = [[v for v in reference.trainable_variables if (v.path in paths) == backbone] for backbone in (0, 1)]
    plain = [keras.optimizers.Nadam(learning_rate=1e-2), keras.optimizers.Nadam(learning_rate=1e-3)]
    rng = np.random.default_rng(2)
    for _ in range(3):
        grads = {v.path: rng.normal(size=v.shape).astype("float32") for v in model.trainable_variables}
        optimizer.apply([grads[v.path] for v in model.trainable_variables], model.trainable_variables)
        for nadam, group in zip(plain, groups):
            nadam.apply([grads[v.path] for v in group], group)
    for variable, expected in zip(model.trainable_variables, reference.trainable_variables):
        np.testing.assert_allclose(variable.numpy(), expected.numpy(), rtol=0, atol=1e-6, err_msg=variable.path)


def test_fit_moves_the_backbone_by_its_rate_and_the_body_by_the_optimizers():
    x, y = np.random.default_rng(3).normal(size=(8, 3)).astype("float32"), np.zeros((8, 2), "float32")
    moved = {}
    for kind in ("plain", "twin"):
        model = _toy()
        start = {v.path: v.numpy() for v in model.trainable_variables}
        twin = optimizers.TWINS["sgd"]
        optimizer = (keras.optimizers.SGD(learning_rate=0.1) if kind == "plain" else
                     twin(learning_rate=0.1, backbone_rate=0.25, backbone_paths=_backbone_paths(model)))
        model.compile(optimizer=optimizer, loss="mse")
        model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False)  # one step from the same weights
        moved[kind] = {v.path: start[v.path] - v.numpy() for v in model.trainable_variables}
    for path, step in moved["plain"].items():
        factor = 0.25 if path.startswith("backbone/") else 1.0
        assert np.abs(step).max() > 1e-4, path
        np.testing.assert_allclose(moved["twin"][path], factor * step, rtol=1e-4, atol=1e-7, err_msg=path)


def test_an_optimizer_with_weight_decay_is_refused():
    with pytest.raises(ValueError, match=r"BackboneRateAdamW has weight decay 0.004, which would apply at the "
                                         r"body's rate to the backbone too"):
        optimizers.TWINS["adamw"](learning_rate=1e-3, backbone_rate=0.1, backbone_paths=["backbone/kernel"])
    assert "multioptimizer" not in optimizers.TWINS and "lossscaleoptimizer" not in optimizers.TWINS


def test_a_new_learning_rate_scales_the_backbones_by_the_same_ratio():
    model = _toy()
    paths = _backbone_paths(model)
    optimizer = optimizers.TWINS["sgd"](learning_rate=0.1, backbone_rate=0.5, backbone_paths=paths)
    grads = [np.ones(v.shape, "float32") for v in model.trainable_variables]
    for rate in (0.1, 0.01):  # a schedule (lr_decay's LearningRateScheduler) sets the optimizer's rate
        optimizer.learning_rate = rate
        before = [v.numpy() for v in model.trainable_variables]
        optimizer.apply(grads, model.trainable_variables)
        for variable, old in zip(model.trainable_variables, before):
            step = rate * (0.5 if variable.path in paths else 1.0)
            np.testing.assert_allclose(old - variable.numpy(), step, rtol=0, atol=1e-6, err_msg=variable.path)


def test_the_optimizer_comes_back_from_its_config_and_from_a_keras_file(tmp_path):
    model = _toy()
    paths = _backbone_paths(model)
    optimizer = optimizers.TWINS["adamax"](learning_rate=3e-4, backbone_rate=0.1, backbone_paths=paths,
                                           clipnorm=1.0)
    config = optimizer.get_config()
    again = type(optimizer).from_config(config)
    assert again.get_config() == config and again.backbone_paths == paths and again.backbone_rate == 0.1
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(np.ones((4, 3), "float32"), np.zeros((4, 2), "float32"), epochs=1, verbose=0)
    model.save(tmp_path / "model.keras")
    loaded = keras.models.load_model(tmp_path / "model.keras")
    assert type(loaded.optimizer).__name__ == "BackboneRateAdamax"
    assert loaded.optimizer.backbone_paths == paths and loaded.optimizer.backbone_rate == pytest.approx(0.1)
    assert set(paths) < {v.path for v in loaded.trainable_variables}  # they name the loaded model's variables
    assert loaded.optimizer.clipnorm == 1.0


@pytest.mark.parametrize("rate, paths, wanted", [(0, [], "backbone_rate: expected a number > 0, got 0"),
                                                 (True, [], "backbone_rate: expected a number > 0"),
                                                 (1.0, ["a/kernel", "a/kernel"], "a variable path is given twice")])
def test_a_bad_rate_or_path_list_is_refused(rate, paths, wanted):
    with pytest.raises(ValueError, match=wanted):
        optimizers.TWINS["adam"](learning_rate=1e-3, backbone_rate=rate, backbone_paths=paths)


@pytest.mark.parametrize("value", [0, -1e-5, "fast", True])
def test_a_bad_backbone_learning_rate_names_the_setting(value):
    with pytest.raises(ValueError) as error:
        zoo.resolve("compare_aggregate_mult_minilm", backbone_learning_rate=value)
    message = str(error.value)
    assert message.startswith("setting backbone_learning_rate=") and "null or a number > 0" in message
    assert "\n" not in message


def _built(name, encoders_dir, monkeypatch, **settings):
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(encoders_dir))
    resolved = zoo.resolve(name, **settings)
    return resolved, zoo.build(resolved)


def test_the_optimizer_of_an_entry_over_a_backbone_trains_exactly_its_trainable_layers_at_the_setting(
        encoders_dir, monkeypatch):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    settings, model = _built("compare_aggregate_mult_minilm", encoders_dir, monkeypatch, backbone_trainable=1,
                             learning_rate=3e-4, backbone_learning_rate=2e-5, units=8)
    optimizer = zoo.optimizer(settings, model)
    states = transformer.backbone_layers(model)[0]
    assert optimizer.backbone_paths == [v.path for v in states.trainable_variables]
    assert optimizer.backbone_paths and set(optimizer.backbone_paths) < {v.path for v in model.trainable_variables}
    assert optimizer.backbone_rate == pytest.approx(2e-5 / 3e-4)
    assert float(optimizer.learning_rate) == pytest.approx(3e-4)
    # without the setting: the plain optimizer of the entry's class (Adamax), at one rate
    plain = zoo.optimizer(zoo.resolve("compare_aggregate_mult_minilm", backbone_trainable=1), model)
    assert type(plain) is keras.optimizers.Adamax and type(optimizer).__name__ == "BackboneRateAdamax"
    assert isinstance(optimizer, keras.optimizers.Adamax)


@pytest.mark.parametrize("name, extra", [("compare_aggregate_mult_minilm", {}),  # its backbone is frozen
                                         ("compare_aggregate_mult", {})])  # it reads word vectors
def test_a_model_whose_backbone_does_not_train_refuses_the_setting(name, extra, encoders_dir, monkeypatch):
    settings, model = _built(name, encoders_dir, monkeypatch, backbone_learning_rate=2e-5, units=8,
                             vocab_size=50, **extra)
    with pytest.raises(ValueError, match=r"^backbone_learning_rate: no layer of a pretrained backbone trains"):
        zoo.optimizer(settings, model)


def test_a_run_with_a_backbone_rate_trains_records_it_and_loads(data_dir, tmp_path, encoders_dir, monkeypatch):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(encoders_dir))
    run_dir = tmp_path / "run"
    assert cli.main(["train", "compare_aggregate_mult_minilm", "--dataset", "trecqa-clean", "--data-dir",
                     str(data_dir), "--max-train-questions", "3", "--epochs", "1", "--set", "units=8",
                     "--set", "backbone_trainable=1", "--set", "backbone_learning_rate=1e-5",
                     "--run-dir", str(run_dir)]) == 0
    config = json.loads((run_dir / "config.json").read_text())
    assert config["settings"]["training"]["backbone_learning_rate"] == 1e-5
    run = runs.load_run(run_dir)  # the model file (listwise: the matching model inside the trained ListScorer)
    assert np.isfinite(run.score(["who wrote hamlet ?"], ["hamlet is a play by shakespeare ."])).all()


def test_zoo_load_compiles_an_entry_with_its_backbone_rate(encoders_dir, monkeypatch):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(encoders_dir))
    model = zoo.load("compare_aggregate_mult_minilm", backbone_trainable=1, backbone_learning_rate=1e-5, units=8)
    assert type(model.optimizer).__name__ == "BackboneRateAdamax"
    assert model.optimizer.backbone_paths == [v.path for v in transformer.backbone_layers(model)[0].trainable_variables]
