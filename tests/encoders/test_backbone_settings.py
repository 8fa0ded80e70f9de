"""The zoo's backbone settings (`keras_match.zoo.BACKBONE_SETTINGS`): every pair family's entry takes
`backbone=minilm-l6` (with `backbone_layers`, `backbone_trainable`) and is then built over a `TransformerEncoder`
without any change to its body; bad values are one-line errors naming the setting; dialog families refuse it."""


import numpy as np
import pytest

from keras_match import zoo
from keras_match.encoders import TRANSFORMER_LAYER

ENTRY = "compare_aggregate_mult"
SMALL = {"units": 8}


def test_every_pair_entry_takes_the_backbone_settings_and_the_word_vectors_stay_the_default():
    for name in zoo.names():
        takes = zoo.family_of(name).preprocessor == "pair"
        if not takes:  # a dialog family: it says so, and what to use instead
            with pytest.raises(ValueError, match=rf"zoo entry '{name}': the {zoo.family_of(name).name} family reads "
                               r"no pretrained backbone \(setting\(s\) \['backbone'\]\).* use its word vectors"):
                zoo.resolve(name, backbone="minilm-l6")
            continue
        if zoo.family_of(name).name == "encoder_rankers":  # the transformer itself
            assert zoo.resolve(name).model["backbone"] == "minilm-l6", name
        elif name.endswith("_minilm"):  # a transformer-input variant: over MiniLM, its word-vector entry is not
            assert zoo.resolve(name).model["backbone"] == "minilm-l6", name
            word_entry = name[:-len("_minilm")]
            assert word_entry not in zoo.names() or zoo.resolve(word_entry).model.get("backbone") is None, name
        else:  # the paper families read their word vectors unless asked
            assert zoo.resolve(name).model.get("backbone") is None, name
        settings = zoo.resolve(name, backbone="minilm-l6", backbone_layers="mix", backbone_trainable=2)
        assert (settings.model["backbone"], settings.model["backbone_layers"],
                settings.model["backbone_trainable"]) == ("minilm-l6", "mix", 2), name


@pytest.mark.parametrize(
    "key, value, wanted",
    [("backbone", "bert-huge", "null (the word vectors) or a pretrained encoder: minilm-l6"),
     ("backbone", 3, "null (the word vectors) or a pretrained encoder"),
     ("backbone_layers", "first", "last or mix"),
     ("backbone_trainable", -1, "frozen, all or an integer k >= 0"),
     ("backbone_trainable", True, "frozen, all or an integer k >= 0"),
     ("backbone_trainable", "some", "frozen, all or an integer k >= 0")],
)
def test_a_bad_backbone_value_names_the_setting_and_what_it_must_be(key, value, wanted):
    with pytest.raises(ValueError) as error:
        zoo.resolve(ENTRY, **{key: value})
    message = str(error.value)
    assert message.startswith(f"setting {key}=") and wanted in message and "\n" not in message


def test_a_backbone_entry_builds_its_body_over_the_transformer_with_the_pretrained_weights(encoders_dir,
                                                                                          monkeypatch):
    pytest.importorskip("keras_hub", reason="the transformers extra (keras-hub) is not installed")
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(encoders_dir))
    settings = zoo.resolve(ENTRY, backbone="minilm-l6", backbone_trainable=1, **SMALL)
    model = zoo.build(settings)
    layer = model.get_layer(TRANSFORMER_LAYER)
    assert [w.path for w in model.weights if w.path.startswith("word_embedding")] == []  # no word vectors
    assert layer.trainable_layers == 1
    embedding = layer.backbone.get_layer("token_embedding").embeddings
    assert tuple(embedding.shape) == (30522, 384)
    assert not np.allclose(embedding.numpy().std(), 0.02, atol=2e-3)  # pretrained, not keras-hub's N(0, 0.02)
    ids = np.array([[101, 2040, 2626, 102, 0, 0]], "int32")
    scores = model({"question": ids, "answer": np.array([[101, 7471, 2626, 7389, 102, 0]], "int32")},
                   training=False)
    assert np.isfinite(np.asarray(scores)).all()
    word_model = zoo.build(zoo.resolve(ENTRY, **SMALL), vocab_size=50)
    assert "word_embedding" in [layer.name for layer in word_model.layers]


def test_a_backbone_tokenizes_with_its_own_wordpiece_vocabulary_and_refuses_another_tokenizer():
    """Word ids fed to a WordPiece backbone would train on nonsense without a word of warning: the backbone sets
    the preprocessor's tokenizer, and a different one asked for is one line naming the setting."""
    assert zoo.resolve(ENTRY).preprocessing.tokenizer == "words"
    assert zoo.resolve(ENTRY, backbone="minilm-l6").preprocessing.tokenizer == "minilm-l6"
    assert zoo.resolve(ENTRY, backbone="minilm-l6", tokenizer="minilm-l6").preprocessing.tokenizer == "minilm-l6"
    with pytest.raises(ValueError) as error:
        zoo.resolve(ENTRY, backbone="minilm-l6", tokenizer="words")
    message = str(error.value)
    assert message.startswith('setting tokenizer="words": must be minilm-l6') and "\n" not in message


def test_the_command_line_takes_a_backbone_by_its_bare_name():
    from keras_match.cli.commands import _parse_settings

    assert _parse_settings(ENTRY, ["backbone=minilm-l6", "backbone_layers=mix", "backbone_trainable=2"]) == {
        "backbone": "minilm-l6", "backbone_layers": "mix", "backbone_trainable": 2}
    assert _parse_settings(ENTRY, ["backbone_trainable=frozen", "backbone=null"]) == {
        "backbone_trainable": "frozen", "backbone": None}
