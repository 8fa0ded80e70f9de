"""The frozen backbone's state cache (`keras_match.encoders.state_cache`): a cached batch gives the states the
backbone computes, a batch with an unknown text is computed, training over the cache moves the weights as
training without it, an interrupted build resumes, and the recipe attaches it only where it may."""


import keras
import numpy as np
import pytest

from keras_match.encoders import InputEncoder, TransformerEncoder, state_cache
from keras_match.encoders.transformer import TRANSFORMER_LAYER, tokenizer

TEXTS = ["what is the capital of france ?", "paris is the capital and largest city of france .",
         "the weather is lovely today .", "who wrote hamlet ?", "hamlet is a tragedy by william shakespeare .",
         "a man is eating food ."]


@pytest.fixture(scope="module")
def ids(encoders_dir):
    """`[CLS] text [SEP]` ids of TEXTS, right-padded with 0 to 20 columns."""
    split = tokenizer("minilm-l6", encoders_dir)
    out = np.zeros((len(TEXTS), 20), "int32")
    for i, text in enumerate(TEXTS):
        row = [101, *np.asarray(split(text)).tolist(), 102]
        out[i, :len(row)] = row
    return out


def pooled_model(encoders_dir, learning_rate=0.1, **settings):
    """`ids -> masked mean of the encoder's states -> Dense(1)`, finished, compiled."""
    encoder = TransformerEncoder("minilm-l6", encoders_dir=encoders_dir, **settings)
    (inputs,) = InputEncoder.token_inputs("ids")
    pooled = keras.layers.GlobalAveragePooling1D()(encoder(inputs))
    model = keras.Model(inputs, keras.layers.Dense(1, name="score")(pooled))
    encoder.finish(model)
    model.compile(optimizer=keras.optimizers.SGD(learning_rate), loss="mse")
    return model


def states_of(model, ids):
    layer = model.get_layer(TRANSFORMER_LAYER)
    return keras.ops.convert_to_numpy(layer(keras.ops.convert_to_tensor(ids)))


@pytest.mark.parametrize("trainable", ["frozen", 2])
def test_cached_states_are_the_computed_ones(encoders_dir, ids, trainable, tmp_path):
    model = pooled_model(encoders_dir, trainable=trainable)
    expected = states_of(model, ids)
    cache = state_cache.attach(model, [ids[:4], ids[2:4, :15]], cache_root=tmp_path, verbose=False)
    assert len(cache) == 4 and cache.depth == (6 if trainable == "frozen" else 4)  # distinct texts, frozen layers
    width = int((ids[:4] != 0).sum(axis=1).max())
    # every text cached (a batch trimmed to its longest text, and one with extra padding); one unknown: computed
    for batch in (ids[:4, :width], ids[:4], ids):
        real = batch != 0
        np.testing.assert_allclose(states_of(model, batch)[real], expected[:len(batch), :batch.shape[1]][real],
                                   atol=2e-5)


def test_a_cached_batch_reads_the_cache_and_a_batch_with_an_unknown_text_computes(encoders_dir, ids, tmp_path):
    model = pooled_model(encoders_dir)
    layer = model.get_layer(TRANSFORMER_LAYER)
    expected = states_of(model, ids)
    cache = state_cache.StateCache.build(layer, [ids[:4]], cache_root=tmp_path, verbose=False)
    shifted = state_cache.StateCache(cache.keys, cache.starts, cache.lengths, np.asarray(cache.states) + 1.0,
                                     cache.depth)
    layer.attach_cache(shifted)
    real = ids[:4] != 0
    np.testing.assert_allclose(states_of(model, ids[:4])[real], expected[:4][real] + 1.0, atol=2e-5)
    np.testing.assert_allclose(states_of(model, ids)[ids != 0], expected[ids != 0], atol=2e-5)
    layer.detach_cache()
    np.testing.assert_allclose(states_of(model, ids[:4])[real], expected[:4][real], atol=2e-5)


def test_training_over_the_cache_moves_the_weights_as_without_it(encoders_dir, ids, tmp_path):
    targets = np.linspace(-1, 1, len(ids)).reshape(-1, 1).astype("float32")
    weights = []
    for cached in (False, True):
        keras.utils.set_random_seed(3)
        model = pooled_model(encoders_dir, learning_rate=0.01, trainable=1)
        if cached:
            state_cache.attach(model, [ids], cache_root=tmp_path, verbose=False)
        model.fit(ids, targets, batch_size=3, epochs=2, shuffle=False, verbose=0)
        weights.append(model.get_weights())
    moved = [not np.allclose(a, b) for a, b in zip(weights[0], pooled_model(encoders_dir, trainable=1).get_weights())]
    assert sum(moved) > 2  # the top layer and the score trained
    for a, b in zip(*weights):  # the states of other batch shapes differ by round-off (~1e-7), four steps later
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)


def test_an_interrupted_build_resumes_and_a_finished_one_is_read(encoders_dir, ids, tmp_path, monkeypatch):
    model = pooled_model(encoders_dir)
    layer = model.get_layer(TRANSFORMER_LAYER)
    monkeypatch.setattr(state_cache, "_TEXTS_PER_BATCH", 1)
    monkeypatch.setattr(state_cache, "_SAVE_EVERY", 1)
    calls = []
    frozen_function = state_cache._frozen_function

    def failing(layer):
        below = frozen_function(layer)

        def call(token_ids):
            calls.append(1)
            if len(calls) == 4:
                raise KeyboardInterrupt
            return below(token_ids)

        return call

    monkeypatch.setattr(state_cache, "_frozen_function", failing)
    with pytest.raises(KeyboardInterrupt):
        state_cache.StateCache.build(layer, [ids], cache_root=tmp_path, verbose=False)
    (folder,) = tmp_path.iterdir()
    assert not (folder / "states.npy").exists() and (folder / "states.npy.partial").exists()
    calls.clear()
    cache = state_cache.StateCache.build(layer, [ids], cache_root=tmp_path, verbose=False)
    assert len(calls) == len(TEXTS) - 3  # the three finished texts are not computed again
    expected = states_of(pooled_model(encoders_dir), ids)
    for row, key in zip(ids, state_cache.text_keys(ids).numpy()):
        index = int(np.searchsorted(cache.keys, key))
        start, length = cache.starts[index], cache.lengths[index]
        np.testing.assert_allclose(cache.states[start:start + length], expected[list(map(tuple, ids)).index(
            tuple(row))][:length], atol=2e-5)
    calls.clear()
    state_cache.StateCache.build(layer, [ids], cache_root=tmp_path, verbose=False)
    assert calls == []  # read from the cache folder


@pytest.mark.parametrize("settings", [{"layers": "mix"}, {"trainable": "all"}])
def test_only_a_frozen_part_of_the_last_layer_states_is_cached(encoders_dir, ids, settings, tmp_path):
    model = pooled_model(encoders_dir, **settings)
    assert state_cache.cacheable_layer(model) is None
    assert state_cache.attach(model, [ids], cache_root=tmp_path) is None
    with pytest.raises(ValueError, match="only a frozen part of layers='last' states can be cached"):
        state_cache.StateCache.build(model.get_layer(TRANSFORMER_LAYER), [ids], cache_root=tmp_path)


@pytest.mark.parametrize("setting", [True, False])
def test_the_recipe_caches_the_training_and_dev_texts_unless_told_not_to(encoders_dir, data_dir, setting,
                                                                          monkeypatch):
    from keras_match.training.recipe import Recipe

    attached = []
    monkeypatch.setattr(state_cache, "attach", lambda model, arrays, **kw: attached.append((model, arrays)))
    recipe = Recipe.prepare("mcan_fm_minilm", "trecqa-clean", data_dir=data_dir, max_train_questions=2,
                            state_cache=setting, lstm_units=8, highway_units=4, fm_factors=2)
    fitting = recipe.fitting(recipe.preprocessor())
    if not setting:
        assert attached == []
        return
    ((model, arrays),) = attached
    assert model is fitting.model
    inputs = [split[name] for split in (fitting.train_inputs, fitting.dev_inputs) for name in ("answer", "question")]
    assert len(arrays) == 4 and all(np.array_equal(a, b) for a, b in zip(arrays, inputs))


def test_a_build_waits_for_another_process_building_the_same_states_and_reads_them(encoders_dir, ids, tmp_path,
                                                                                    monkeypatch):
    """While another process holds the folder's lock, a build waits; when that process has written the states
    and released the lock, the build reads them instead of computing them again."""
    import fcntl
    import threading

    layer = pooled_model(encoders_dir).get_layer(TRANSFORMER_LAYER)
    first = state_cache.StateCache.build(layer, [ids], cache_root=tmp_path, verbose=False)
    (folder,) = tmp_path.iterdir()
    finished = (folder / "states.npy").read_bytes()
    (folder / "states.npy").unlink()
    computed = []
    monkeypatch.setattr(state_cache, "_compute", lambda *args: computed.append(args))
    other = open(folder / state_cache.LOCK_FILE, "a+")  # another open file description: flock conflicts
    fcntl.flock(other, fcntl.LOCK_EX)
    result = {}
    waiting = threading.Thread(target=lambda: result.setdefault(
        "cache", state_cache.StateCache.build(layer, [ids], cache_root=tmp_path, verbose=False)))
    waiting.start()
    waiting.join(timeout=2)
    assert waiting.is_alive() and not computed  # it waits for the lock
    (folder / "states.npy").write_bytes(finished)  # the other process finishes ...
    fcntl.flock(other, fcntl.LOCK_UN)  # ... and ends
    other.close()
    waiting.join(timeout=60)
    assert not waiting.is_alive() and computed == []
    np.testing.assert_array_equal(result["cache"].states, first.states)
