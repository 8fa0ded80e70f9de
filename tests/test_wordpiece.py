"""Tests for keras_match.text.wordpiece (`WordPieceEncoder`) and the WordPiece pair preprocessor
(`PairPreprocessor(tokenizer="minilm-l6")`).

The reference is Hugging Face `tokenizers` reading the encoder's own `tokenizer.json` (what sentence-transformers
runs for all-MiniLM-L6-v2). The encoder folder comes from `$KERAS_MATCH_ENCODERS` (default `../shared/models`),
the texts from `$KERAS_MATCH_DATA` (TrecQA and WikiQA); tests that need either skip without it.

Every disagreement with the reference that these tests know of is one of the documented differences of the
module docstring of `keras_match.text.wordpiece` and is asserted as such here: literal special tokens in a text,
invalid UTF-8, and code points that Unicode added or re-categorised after the reference's character tables (none
below U+0600; probed over every code point while writing the module: 684 code points of 146 ranges, such as
Quranic annotation marks U+08CA-U+08E2, Latin Extended-D U+A7C0-U+A7DC, Supplemental Punctuation U+2E43-U+2E5D,
recent Indic signs, scripts of the supplementary planes).
"""

import gc
import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf

from keras_match import datasets, text, zoo
from keras_match.artifacts.runs import Run
from keras_match.encoders import pretrained
from keras_match.preprocessors.base import CONFIG_FILE
from keras_match.preprocessors.pair import (
    FREQUENCIES_FILE,
    VOCABULARY_FILE,
    WORDS,
    PairPreprocessor,
    PairSettings,
    tokenizer_names,
)
from keras_match.serving import export
from keras_match.text.features import OverlapFeatures
from keras_match.text.wordpiece import CJK_RANGES, WordPieceEncoder

REPO = pathlib.Path(__file__).resolve().parents[1]
os.environ.setdefault(pretrained.ENV_ENCODERS, str(REPO.parent / "shared" / "models"))

NAME = "minilm-l6"
CLS, SEP, UNK = 101, 102, 100
VOCAB_SIZE = 30522


# ---------------------------------------------------------------------------------------------------------------
# Fixtures
# ---------------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def folder():
    """The all-MiniLM-L6-v2 folder, every pinned file checked (skips without it)."""
    try:
        return pretrained.locate(NAME)
    except FileNotFoundError as error:
        pytest.skip(f"the pretrained encoder is not available: {error}")


@pytest.fixture(scope="module")
def encoder(folder):
    return WordPieceEncoder.from_pretrained(NAME)


@pytest.fixture(scope="module")
def reference(folder):
    """Hugging Face's tokenizer of the folder, without its stored truncation (128) and padding."""
    tokenizers = pytest.importorskip("tokenizers")
    tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


@pytest.fixture(scope="module")
def real_texts(data_dir):
    """Every distinct question and answer text of TrecQA (clean, all splits) and WikiQA (all splits)."""
    texts = []
    for name, variant in (("trecqa", "clean"), ("wikiqa", None)):
        for split in datasets.load(name, variant, data_dir).splits.values():
            pairs = split.pairs()
            texts += pairs.questions.tolist() + pairs.answers.tolist()
    return list(dict.fromkeys(texts))


@pytest.fixture(scope="module")
def pairs(data_dir):
    """Real TrecQA pairs: the first 20 training questions' candidates."""
    return datasets.load("trecqa", "clean", data_dir)["train"].head(20).pairs()


@pytest.fixture(scope="module")
def training_texts(pairs):
    return list(dict.fromkeys(pairs.questions.tolist())) + pairs.answers[:300].tolist()


@pytest.fixture(scope="module")
def sample(pairs):
    """30 held-out real pairs, an empty question, a blank answer and a text of 2,000 words."""
    index = np.linspace(300, len(pairs) - 1, 30).astype(int)
    long = " ".join(pairs.answers[index].tolist() * 10)
    questions = pairs.questions[index].tolist() + ["", pairs.questions[0], long]
    answers = pairs.answers[index].tolist() + [pairs.answers[0], " \t\n ", long]
    return {"question": questions, "answer": answers}


def reference_ids(reference, texts, max_length=None):
    """The reference's ids (`[CLS] ... [SEP]`), cut to `max_length` and padded with 0 when given."""
    if max_length is None:
        return [encoding.ids for encoding in reference.encode_batch(texts)]
    reference.enable_truncation(max_length)
    reference.enable_padding(length=max_length)
    try:
        return [encoding.ids for encoding in reference.encode_batch(texts)]
    finally:
        reference.no_truncation()
        reference.no_padding()


def reference_words(reference, texts):
    """The words the reference's normaliser and pre-tokenizer make (what WordPiece splits)."""
    return [[word for word, _ in reference.pre_tokenizer.pre_tokenize_str(reference.normalizer.normalize_str(t))]
            for t in texts]


def ids_of(encoder, texts, batch=8192):
    """`[CLS] + tokenize + [SEP]` of each text, untruncated, as lists."""
    return [[CLS] + row + [SEP] for start in range(0, len(texts), batch)
            for row in encoder.tokenize(texts[start:start + batch]).to_list()]


SPECIAL_LITERALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def explained(text_):
    """Why a text may be tokenized otherwise than by the reference (a documented difference), or None."""
    if any(literal in text_ for literal in SPECIAL_LITERALS):
        return "a literal special token"
    if any(ord(c) >= 0x600 and not any(low <= ord(c) <= high for low, high in COMMON_RANGES) for c in text_):
        return "a code point outside the ranges checked to agree (test_common_code_points_agree)"
    return None


COMMON_RANGES = ((0x0000, 0x05FF), (0x2000, 0x2BFF), (0x3000, 0x9FFF), (0xAC00, 0xD7A3), (0xF900, 0xFFFF),
                 (0x1F300, 0x1FAFF))
"""Latin, Greek, Cyrillic, Armenian, Hebrew, general punctuation and symbols, CJK, kana, Hangul, compatibility and
full-width forms, emoji: every code point of these agrees with the reference (`test_common_code_points_agree`)."""


# ---------------------------------------------------------------------------------------------------------------
# The encoder against the reference
# ---------------------------------------------------------------------------------------------------------------


def test_real_texts_agree_with_the_reference(encoder, reference, real_texts):
    """Every distinct TrecQA and WikiQA text (75,890): at least 99.9% must give the reference's ids, and every
    text that does not must be a documented difference. Measured: all of them agree."""
    assert len(real_texts) > 70_000
    expected = reference_ids(reference, real_texts)
    actual = ids_of(encoder, real_texts)
    disagreeing = [t for t, a, e in zip(real_texts, actual, expected) if a != e]
    assert 1 - len(disagreeing) / len(real_texts) >= 0.999, disagreeing[:5]
    assert [t for t in disagreeing if explained(t) is None] == []


def test_truncated_and_padded_ids_agree_with_the_reference(encoder, reference, real_texts):
    texts = real_texts[::25]  # 3,036 texts of every length
    for max_length in (2, 16, 64):
        np.testing.assert_array_equal(encoder.encode(texts, max_length).numpy(),
                                      reference_ids(reference, texts, max_length), err_msg=str(max_length))


def test_common_code_points_agree(encoder, reference):
    """Every code point of the common scripts, between two letters and alone, gives the reference's words."""
    points = [c for low, high in COMMON_RANGES for c in range(low, high + 1) if not 0xD800 <= c <= 0xDFFF]
    texts = [f"A{chr(c)}b" for c in points] + [chr(c) for c in points]
    expected = reference_words(reference, texts)
    actual = [[w.decode("utf-8") for w in row] for row in encoder.words(texts).to_list()]
    differing = [(hex(ord(t[1] if len(t) > 1 else t)), e, a) for t, e, a in zip(texts, expected, actual) if e != a]
    assert differing == []


@pytest.mark.parametrize("text_", [
    "Zürich café: qui a écrit « Hamlet » ? naïve façade coöperate",
    "ΟΔΟΣ Σ σ ς ΣΑΣ",  # the reference lower-cases each capital sigma alone, to σ
    "İstanbul ß ﬁ ² Ｆｕｌｌ-width Ǆ ǅ",
    "a\x0bb a\x0cb a\x85b a\u2028b c\u200bd e\u00adf \ufeffbom \x00nul tab\tnew\nline\rcr",
    "日本語のテキスト 한국어 中文字符",
    "emoji 👍🏽 family 👨‍👩‍👧",
    "don't U.S.A. e-mail $1,000.50 -LRB- `` '' ... --",
    "x" * 100, "x" * 101, "é" * 100, "é" * 101, "ж" * 101,  # a word of more than 100 characters is [UNK]
    "teapot Teapotdome zzqxv",
    "", "   \t ",
], ids=lambda t: repr(t[:12]))
def test_tricky_texts_agree_with_the_reference(encoder, reference, text_):
    assert ids_of(encoder, [text_]) == reference_ids(reference, [text_])


def test_the_cjk_ranges_are_the_references(encoder, reference):
    edges = [c for low, high in CJK_RANGES for c in (low, high)] + [0x2B820, 0x2B91F, 0x2B81F, 0x2B920]
    texts = [f"a{chr(c)}b" for c in edges]
    ours = [[w.decode() for w in row] for row in encoder.words(texts).to_list()]
    assert ours == reference_words(reference, texts)


def test_documented_difference_literal_special_tokens(encoder, reference):
    """The reference reads `[SEP]` in a text as the special token; here a text can never make a special id."""
    text_ = "what is [SEP] and [CLS] ?"
    assert reference_ids(reference, [text_])[0].count(SEP) == 2
    ours = ids_of(encoder, [text_])[0]
    assert ours.count(SEP) == 1 and ours.count(CLS) == 1 and ours[-1] == SEP
    assert explained(text_) == "a literal special token"


def test_invalid_utf8_is_the_reference_on_replaced_text(encoder, reference):
    raw = [b"caf\xe9 \xff\xfe hamlet", b"\xc3\xa9t\xc3\xa9 \x80", b"\xe6\x97\xa5\xe6\x9c"]
    decoded = [t.decode("utf-8", "replace") for t in raw]
    assert ids_of(encoder, raw) == reference_ids(reference, decoded)
    np.testing.assert_array_equal(encoder.encode(raw, 8), reference_ids(reference, decoded, 8))


# ---------------------------------------------------------------------------------------------------------------
# The encoder's own contract
# ---------------------------------------------------------------------------------------------------------------


def test_cls_sep_truncation_and_padding(encoder):
    pieces = encoder.tokenize(["the cat sat on the mat"]).to_list()[0]
    assert len(pieces) == 6 and CLS not in pieces and SEP not in pieces
    assert encoder.encode(["the cat sat on the mat"], 10).numpy().tolist() == [[CLS, *pieces, SEP, 0, 0]]
    assert encoder.encode(["the cat sat on the mat"], 8).numpy().tolist() == [[CLS, *pieces, SEP]]
    assert encoder.encode(["the cat sat on the mat"], 5).numpy().tolist() == [[CLS, *pieces[:3], SEP]]
    assert encoder.encode(["the cat sat on the mat"], 2).numpy().tolist() == [[CLS, SEP]]
    assert encoder.encode(["", " \t\n "], 4).numpy().tolist() == [[CLS, SEP, 0, 0]] * 2
    empty = encoder.encode(tf.constant([], tf.string), 4)
    assert empty.shape == (0, 4) and empty.dtype == tf.int32


def test_very_long_inputs(encoder, reference):
    long = " ".join(["Shakespeare wrote Hamlet , the teapot dome scandal broke in 1923 ."] * 1000)  # 12,000 words
    one_word = "a" * 100_000
    ids = encoder.encode([long, one_word], 64).numpy()
    assert ids.shape == (2, 64)
    assert ids[:, 0].tolist() == [CLS, CLS] and ids[0, -1] == SEP
    assert ids[1, :3].tolist() == [CLS, UNK, SEP] and not ids[1, 3:].any()
    np.testing.assert_array_equal(ids, reference_ids(reference, [long, one_word], 64))


def test_bad_arguments(encoder, folder, tmp_path):
    for bad in (1, 0, 2.0, True, None):
        with pytest.raises(ValueError, match="max_length must be an integer >= 2"):
            encoder.encode(["a"], bad)
    with pytest.raises(TypeError, match="wrap a single text in a list"):
        encoder.encode("a single text", 4)
    with pytest.raises(ValueError, match="must be a 1-D array"):
        encoder.encode([["a", "b"]], 4)
    tokens = encoder.vocabulary
    with pytest.raises(ValueError, match="pad_token '\\[PAD\\]' has id 1"):
        WordPieceEncoder([tokens[1], tokens[0], *tokens[2:]])
    with pytest.raises(ValueError, match="lacks the cls_token"):
        WordPieceEncoder([t for t in tokens if t != "[CLS]"])
    with pytest.raises(ValueError, match="line 3 = 'a b' contains whitespace"):
        (tmp_path / "vocab.txt").write_text("[PAD]\n[UNK]\na b\n", encoding="utf-8")
        WordPieceEncoder.from_file(tmp_path / "vocab.txt")
    with pytest.raises(ValueError, match="duplicates line 2"):
        WordPieceEncoder(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[UNK]"])
    with pytest.raises(FileNotFoundError, match="tokenizer_config.json not found"):
        shutil.copyfile(folder / "vocab.txt", tmp_path / "vocab.txt")
        WordPieceEncoder.from_folder(tmp_path)


def test_from_folder_reads_tokenizer_config(encoder, folder, tmp_path):
    assert (encoder.lowercase, encoder.strip_accents, encoder.split_cjk) == (True, True, True)
    assert encoder.special_ids == {"padding": 0, "unknown": UNK, "cls": CLS, "sep": SEP}
    assert encoder.vocab_size == len(encoder) == VOCAB_SIZE and encoder.name == NAME
    shutil.copyfile(folder / "vocab.txt", tmp_path / "vocab.txt")
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(dict(config, do_lower_case=False)))
    cased = WordPieceEncoder.from_folder(tmp_path)
    assert (cased.lowercase, cased.strip_accents) == (False, False)
    assert cased.normalize(["Zürich"]).numpy().tolist() == ["Zürich".encode()]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(dict(config, tokenizer_class="RobertaTokenizer")))
    with pytest.raises(ValueError, match="tokenizer_class 'RobertaTokenizer'"):
        WordPieceEncoder.from_folder(tmp_path)


def test_save_vocabulary_is_vocab_txt_byte_for_byte(encoder, folder, tmp_path):
    encoder.save_vocabulary(tmp_path / "vocabulary.txt")
    assert (tmp_path / "vocabulary.txt").read_bytes() == (folder / "vocab.txt").read_bytes()
    restored = WordPieceEncoder.from_config(encoder.get_config(), tmp_path / "vocabulary.txt")
    assert restored.get_config() == encoder.get_config()
    texts = ["Who wrote Hamlet?", "Zürich 日本"]
    np.testing.assert_array_equal(restored.encode(texts, 12), encoder.encode(texts, 12))
    assert encoder.lookup(["[CLS]", "##pot", "not-a-token"]).numpy().tolist() == [CLS, 11008, UNK]


def test_graph_and_dataset_give_the_eager_ids(encoder, real_texts):
    texts = real_texts[:100]
    eager = encoder.encode(texts, 32).numpy()
    function = tf.function(lambda t: encoder.encode(t, 32), input_signature=[tf.TensorSpec([None], tf.string)])
    np.testing.assert_array_equal(function(tf.constant(texts)), eager)
    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(7).map(lambda t: encoder.encode(t, 32))
    np.testing.assert_array_equal(np.concatenate(list(dataset.as_numpy_iterator())), eager)


# ---------------------------------------------------------------------------------------------------------------
# The WordPiece pair preprocessor
# ---------------------------------------------------------------------------------------------------------------


def wordpiece_preprocessor(encoder, overlap=None, **kwargs):
    return PairPreprocessor(encoder, max_question_length=16, max_answer_length=48, tokenizer=NAME,
                            overlap_features=overlap is not None, bm25_feature=overlap is not None,
                            document_frequencies=overlap, **kwargs)


def test_ids_and_features(encoder, training_texts, sample):
    overlap = OverlapFeatures.build(training_texts)
    preprocessor = wordpiece_preprocessor(encoder, overlap)
    words = PairPreprocessor(text.TextEncoder.build(training_texts), 16, 48, overlap_features=True,
                             bm25_feature=True, document_frequencies=overlap)
    inputs, expected = preprocessor(sample), words(sample)
    assert preprocessor.vocab_size == VOCAB_SIZE
    assert preprocessor.model_arguments() == {"vocab_size": VOCAB_SIZE, "num_features": 5}
    np.testing.assert_array_equal(inputs["question"], encoder.encode(sample["question"], 16))
    np.testing.assert_array_equal(inputs["answer"], encoder.encode(sample["answer"], 48))
    assert inputs["answer"].shape == (len(sample["answer"]), 48) and inputs["answer"].dtype == tf.int32
    # the pair features are the word preprocessor's, value for value
    np.testing.assert_array_equal(inputs["features"].numpy(), expected["features"].numpy())
    assert np.ptp(inputs["features"].numpy()[:, 0]) > 0


def test_from_training_builds_no_vocabulary_but_the_frequencies(pairs, training_texts):
    texts = {"question": pairs.questions[:300], "answer": pairs.answers[:300]}
    settings = PairSettings(tokenizer=NAME, overlap_features=True, max_question_length=20, max_answer_length=40)
    preprocessor = PairPreprocessor.from_training(texts, settings)
    words = PairPreprocessor.from_training(texts, PairSettings(overlap_features=True))
    assert isinstance(preprocessor.encoder, WordPieceEncoder) and preprocessor.vocab_size == VOCAB_SIZE
    assert (preprocessor.tokenizer, preprocessor.sequence_lengths()) == (NAME, {"question": 20, "answer": 40})
    assert open(preprocessor.overlap.path).read() == open(words.overlap.path).read()
    assert PairPreprocessor.default_model_arguments(settings) == {"vocab_size": VOCAB_SIZE, "num_features": 4}
    with pytest.raises(ValueError, match="fixed WordPiece vocabulary"):
        PairPreprocessor.from_training(texts, settings, extra_words=["hamlet"])


def test_get_config_round_trip(encoder, training_texts, sample, tmp_path):
    preprocessor = wordpiece_preprocessor(encoder, OverlapFeatures.build(training_texts))
    config = preprocessor.get_config()
    assert config["tokenizer"] == NAME and config["vocabulary"] is None
    assert config["wordpiece"] == encoder.get_config()
    json.dumps(config)
    preprocessor.save_assets(tmp_path)
    restored = PairPreprocessor.from_config(config)
    restored.load_assets(tmp_path)
    assert restored.get_config() == config
    for key, value in preprocessor(sample).items():
        np.testing.assert_array_equal(restored(sample)[key], value, err_msg=key)


def test_save_and_load_need_no_encoder_folder(encoder, training_texts, sample, folder, tmp_path, monkeypatch):
    preprocessor = wordpiece_preprocessor(encoder, OverlapFeatures.build(training_texts))
    expected = {key: value.numpy() for key, value in preprocessor(sample).items()}
    saved = tmp_path / "run"
    preprocessor.save(saved)
    assert {p.name for p in saved.iterdir()} == {CONFIG_FILE, VOCABULARY_FILE, FREQUENCIES_FILE}
    assert (saved / VOCABULARY_FILE).read_bytes() == (folder / "vocab.txt").read_bytes()
    monkeypatch.setenv(pretrained.ENV_ENCODERS, str(tmp_path / "no-encoders-here"))
    moved = tmp_path / "moved"
    shutil.move(saved, moved)
    loaded = PairPreprocessor.load(moved)
    shutil.rmtree(moved)
    gc.collect()
    assert loaded.get_config() == preprocessor.get_config()
    for key, value in loaded(sample).items():
        np.testing.assert_array_equal(value, expected[key], err_msg=key)


def test_a_damaged_vocabulary_is_named(encoder, tmp_path):
    wordpiece_preprocessor(encoder).save(tmp_path)
    lines = (tmp_path / VOCABULARY_FILE).read_text(encoding="utf-8").split("\n")
    lines[2000], lines[2001] = lines[2001], lines[2000]
    (tmp_path / VOCABULARY_FILE).write_text("\n".join(lines), encoding="utf-8")
    with pytest.raises(ValueError, match=f"{tmp_path / VOCABULARY_FILE} is not the WordPiece vocabulary of "):
        PairPreprocessor.load(tmp_path)


def test_describe(encoder):
    facts = wordpiece_preprocessor(encoder).describe()
    assert facts["tokenizer"] == NAME and facts["vocab_size"] == VOCAB_SIZE
    assert facts["ids"] == {"padding": 0, "unknown": UNK, "cls": CLS, "sep": SEP}
    assert facts["wordpiece"]["lowercase"] is True and facts["wordpiece"]["suffix_indicator"] == "##"
    assert facts["vocabulary_file"] == VOCABULARY_FILE
    json.dumps(facts)


def test_words_stays_the_default(training_texts, sample):
    assert PairSettings().tokenizer == WORDS == PairSettings.from_dict({}, "test").tokenizer
    assert tokenizer_names() == [WORDS, NAME]
    preprocessor = PairPreprocessor(text.TextEncoder.build(training_texts), 16, 48)
    assert preprocessor.tokenizer == WORDS and preprocessor.wordpiece is None
    config = preprocessor.get_config()
    # the config of a word preprocessor is the one earlier versions wrote and read: no tokenizer keys
    assert "tokenizer" not in config and "wordpiece" not in config
    assert PairPreprocessor.from_config(config).tokenizer == WORDS
    assert PairPreprocessor.from_config(dict(config, tokenizer=WORDS, wordpiece=None)).tokenizer == WORDS


def test_errors(encoder, training_texts):
    with pytest.raises(ValueError, match=r"^unknown tokenizer 'bert'; valid: \['words', 'minilm-l6'\]") as error:
        PairPreprocessor(tokenizer="bert")
    assert "\n" not in str(error.value)
    with pytest.raises(ValueError, match=r"setting tokenizer=\"bert\": must be one of \['words', 'minilm-l6'\]"):
        PairSettings(tokenizer="bert")
    with pytest.raises(ValueError, match="needs tokenizer= its encoder's name"):
        PairPreprocessor(encoder)
    with pytest.raises(ValueError, match="not a word vocabulary"):
        PairPreprocessor(text.TextEncoder(["cat"]), tokenizer=NAME)
    with pytest.raises(ValueError, match="max_question_length must be at least 2"):
        PairPreprocessor(encoder, 1, 10, tokenizer=NAME)
    with pytest.raises(ValueError, match="needs tokenizer= a pretrained encoder's name"):
        PairPreprocessor(tokenizer=WORDS, wordpiece=encoder.get_config())
    with pytest.raises(ValueError, match="differ from wordpiece="):
        PairPreprocessor(encoder, tokenizer=NAME, wordpiece=dict(encoder.get_config(), split_cjk=False))
    with pytest.raises(ValueError, match="is not the WordPiece vocabulary of minilm-l6"):
        PairPreprocessor(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat"], tokenizer=NAME)
    with pytest.raises(ValueError, match="has no vocabulary"):
        PairPreprocessor(tokenizer=NAME)({"question": ["a"], "answer": ["b"]})
    words = PairPreprocessor(text.TextEncoder.build(training_texts), 16, 48)
    with pytest.raises(ValueError, match="cannot extend a 'minilm-l6' vocabulary from a 'words' one"):
        wordpiece_preprocessor(encoder).extend_vocabulary(words)
    assert wordpiece_preprocessor(encoder).extend_vocabulary(wordpiece_preprocessor(encoder)) == 0


# ---------------------------------------------------------------------------------------------------------------
# A run over WordPiece ids, exported and served by a process that imports only tensorflow and tensorflow_text
# ---------------------------------------------------------------------------------------------------------------

SERVER = textwrap.dedent(
    """
    import json, sys
    import tensorflow_text  # noqa: F401  (the tokenizer ops, as the TF Serving binary links them)
    import tensorflow as tf

    spec = json.load(open(sys.argv[1]))
    texts = lambda values: tf.constant([bytes.fromhex(v) for v in values])
    loaded = tf.saved_model.load(spec["path"])
    scores = loaded.signatures["serving_default"](question=texts(spec["questions"]), answer=texts(spec["answers"]))
    ranked = loaded.signatures["rank"](question=texts(spec["questions"][:1])[0], answers=texts(spec["answers"]))
    json.dump({"score": scores["score"].numpy().tolist(), "rank": ranked["scores"].numpy().tolist(),
               "modules": sorted({m.split(".")[0] for m in sys.modules} & {"keras_match", "keras_hub",
                                                                           "tokenizers"})},
              open(sys.argv[2], "w"))
    """
)


def randomize(model, seed=0):
    """Random weights (std 0.5), so that untrained scores spread and a wrong id shows."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        if str(weight.dtype).startswith("float"):
            values = np.abs(rng.normal(0.0, 0.5, tuple(weight.shape))) + 0.5 if "variance" in weight.path else \
                rng.normal(0.0, 0.5, tuple(weight.shape))
            weight.assign(values.astype(str(weight.dtype)))


def test_export_serves_the_runs_scores(encoder, pairs, tmp_path):
    model = zoo.load("mcan_fm", vocab_size=VOCAB_SIZE, compile=False, embedding_dim=8, lstm_units=8,
                     highway_units=8, fm_factors=2)
    randomize(model)
    run = Run(model=model, preprocessor=wordpiece_preprocessor(encoder), config={"zoo": "mcan_fm"})
    questions = pairs.questions[:40].tolist() + ["", "Zürich café 日本 😀", "x " * 500, b"caf\xe9 \xff hamlet"]
    answers = pairs.answers[:40].tolist() + ["the cat", "", "Ünïcödé ✓ 日本 " * 50, b"\xc3\xa9t\xc3\xa9 \x80"]
    expected = run.score(questions, answers)
    assert np.ptp(expected) > 0.05, "random weights should spread the scores"
    version = export.saved_model(run, tmp_path / "export")
    assert (version / "assets" / VOCABULARY_FILE).read_bytes() == pathlib.Path(
        pretrained.locate(NAME) / "vocab.txt").read_bytes()
    metadata = export.read_metadata(version)
    assert metadata["tokenizer"] == NAME and metadata["ids"]["cls"] == CLS and metadata["vocab_size"] == VOCAB_SIZE
    as_hex = [(t if isinstance(t, bytes) else t.encode("utf-8")).hex() for t in questions + answers]
    spec = {"path": str(version), "questions": as_hex[:len(questions)], "answers": as_hex[len(questions):]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    (tmp_path / "server.py").write_text(SERVER)
    process = subprocess.run([sys.executable, str(tmp_path / "server.py"), str(tmp_path / "spec.json"),
                              str(tmp_path / "out.json")], capture_output=True, text=True, cwd=tmp_path)
    assert process.returncode == 0, process.stderr[-3000:]
    served = json.loads((tmp_path / "out.json").read_text())
    assert served["modules"] == []  # tensorflow_text imports keras; nothing of this project or the reference
    np.testing.assert_allclose(served["score"], expected, atol=1e-5, rtol=0)
    ranked = run.score([questions[0]] * len(answers), answers)
    np.testing.assert_allclose(served["rank"], ranked, atol=1e-5, rtol=0)
