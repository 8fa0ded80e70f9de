"""Tests of keras_match.text: tokenization, TextEncoder, vocabulary files, graph/SavedModel use, GloVe loading."""

import csv
import gc
import gzip
import hashlib
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_match.text import OOV_ID, PAD_ID, TextEncoder, load_embeddings, tokenize
from keras_match import text
from keras_match.text import tokenizer, vocabulary


def toks(texts, **kwargs):
    """Tokens as lists of Python str."""
    return [[t.decode("utf-8") for t in row] for row in tokenize(texts, **kwargs).to_list()]


def read_tsv(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


# ---------------------------------------------------------------------------------------------------------------
# Tokenization
# ---------------------------------------------------------------------------------------------------------------


def test_tokenize_pretokenized_trecqa_text():
    assert toks(["What is the teapot dome scandal ?"]) == [
        ["what", "is", "the", "teapot", "dome", "scandal", "?"]]
    assert toks(["He did n't say `` yes '' -LRB- U.S. 's -RRB- -LSB- a -RSB- -LCB- b -RCB- ."]) == [
        ["he", "did", "n't", "say", '"', "yes", '"', "(", "u.s.", "'s", ")", "[", "a", "]", "{", "b", "}", "."]]


def test_tokenize_raw_wikiqa_text():
    assert toks(["How are glacier caves formed?"]) == [["how", "are", "glacier", "caves", "formed", "?"]]
    assert toks(["I don't know Mr. Smith's e-mail; the U.S. paid $1,000 (about 3.5%)."]) == [
        ["i", "do", "n't", "know", "mr.", "smith", "'s", "e-mail", ";", "the", "u.s.", "paid", "$", "1,000",
         "(", "about", "3.5", "%", ")", "."]]
    assert toks(["CAN'T won't they're I'd we'll you've I'm it’s"]) == [
        ["ca", "n't", "wo", "n't", "they", "'re", "i", "'d", "we", "'ll", "you", "'ve", "i", "'m", "it", "'s"]]


def test_raw_and_ptb_forms_give_the_same_tokens():
    raw = 'He said, "I don\'t know (really)."'
    ptb = "He said , `` I do n't know -LRB- really -RRB- . ''"
    raw_tokens, ptb_tokens = toks([raw, ptb])
    assert raw_tokens == ["he", "said", ",", '"', "i", "do", "n't", "know", "(", "really", ")", ".", '"']
    assert sorted(raw_tokens) == sorted(ptb_tokens)  # only the order of '.' and '"' differs


def test_tokenize_punctuation_and_numbers():
    assert toks(["end.Next (biology), a,b ... -- x/y 50% #1 & co"]) == [
        ["end.next", "(", "biology", ")", ",", "a", ",", "b", "...", "--", "x", "/", "y", "50", "%", "#", "1",
         "&", "co"]]
    assert toks(["1,000,000 3.14 10:30 1/2 1990s -5 e.g. a.m. U.S said."]) == [
        ["1,000,000", "3.14", "10:30", "1/2", "1990s", "-", "5", "e.g.", "a.m.", "u.s", "said", "."]]
    # Abbreviations keep their period only before a non-word character; other words never do.
    assert toks(["F. Scott met Dr. Who in Jan. at St.Louis, no. it."]) == [
        ["f.", "scott", "met", "dr.", "who", "in", "jan.", "at", "st.louis", ",", "no", ".", "it", "."]]


def test_tokenize_lowercase_and_case_kept():
    assert toks(["The ÉCOLE in ZÜRICH"]) == [["the", "école", "in", "zürich"]]
    assert toks(["The ÉCOLE Don't -LRB-"], lowercase=False) == [["The", "ÉCOLE", "Do", "n't", "("]]


def test_tokenize_non_ascii_and_empty():
    texts = ["Zürich café naïve", "北京大学 is 中文", "", "   \t\n ", "zero\u200bwidth\u00a0nbsp \ufeffbom"]
    rows = toks(texts)
    assert rows == [
        ["zürich", "café", "naïve"],
        ["北", "京", "大", "学", "is", "中", "文"],
        [],
        [],
        ["zero", "width", "nbsp", "bom"],
    ]


def test_tokenize_input_types_agree():
    texts = ["How are glacier caves formed?", "", "Zürich"]
    expected = tokenize(texts).to_list()
    assert tokenize(np.array(texts, dtype=object)).to_list() == expected
    assert tokenize(np.array(texts)).to_list() == expected  # numpy <U array
    assert tokenize(tf.constant(texts)).to_list() == expected
    assert tokenize(tuple(texts)).to_list() == expected
    assert tokenize([t.encode("utf-8") for t in texts]).to_list() == expected
    assert tokenize([]).shape[0] == 0


def test_tokenize_rejects_bad_input():
    with pytest.raises(TypeError, match="single text"):
        tokenize("a string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        tokenize(["ok", None])
    with pytest.raises(ValueError, match="1-D"):
        tokenize(np.array([["a", "b"]], dtype=object))
    with pytest.raises(ValueError, match="shape"):
        tokenize(tf.constant([["a"]]))
    with pytest.raises(TypeError, match="dtype"):
        tokenize(tf.constant([1, 2]))


def test_rows_of_texts_convert_and_name_the_bad_element():
    """`as_string_batch(rank=2)`: a history of turns [batch, k], from lists, arrays or tensors; every error names
    the input and the element's [row, column]."""
    rows = [["hello", "a table for two"], ["", "Zürich".encode("utf-8")]]
    for given in (rows, np.array(rows, dtype=object), tf.constant(rows)):
        converted = text.as_string_batch(given, rank=2, name="history")
        assert converted.dtype == tf.string and converted.shape == (2, 2)
        assert converted.numpy()[1, 1].decode("utf-8") == "Zürich"
    assert text.as_string_batch([], rank=2).shape == (0, 0)
    with pytest.raises(TypeError, match=r"history\[1, 0\] is NoneType"):
        text.as_string_batch([["a", "b"], [None, "c"]], rank=2, name="history")
    with pytest.raises(ValueError, match=r"history must be a 2-D array \[batch, k\], got shape \(2,\)"):
        text.as_string_batch([["a"], ["b", "c"]], rank=2, name="history")  # rows of unequal lengths
    with pytest.raises(ValueError, match=r"history must be a tf.string tensor of shape \[batch, k\]"):
        text.as_string_batch(tf.constant(["a", "b"]), rank=2, name="history")
    with pytest.raises(TypeError, match=r"context\[0\] is int"):
        text.as_string_batch([3], name="context")


def test_tokenize_real_rows(data_dir):
    trec = read_tsv(data_dir / "trecqa" / "tsv" / "clean-test.tsv")[:50]
    wiki = read_tsv(data_dir / "wikiqa" / "WikiQA-dev.tsv.gz")[:50]
    rows = toks([r["answer"] for r in trec] + [r["Sentence"] for r in wiki])
    assert all(rows)
    tokens = {t for row in rows for t in row}
    assert all(t == t.lower() and t.strip() == t and t for t in tokens)
    assert not {"-lrb-", "-rrb-", "``", "''"} & tokens
    # "The inch- thick chaplain handbook includes a five -page primer on Wicca , described as `` a ..."
    assert toks([trec[1]["answer"]])[0][:15] == ["the", "inch", "-", "thick", "chaplain", "handbook", "includes", "a",
                                                 "five", "-", "page", "primer", "on", "wicca", ","]


TRICKY = ["How are glacier caves formed?", "", "   \t ", "Zürich café naïve", "北京大学 is 中文", b"caf\xe9 \xff\xfe x",
          "He did n't pay $ 1,000 -LRB- U.S. -RRB- .", "I don't know Mr. Smith's e-mail.", "``quoted''", "zero\u200bwidth"]


@pytest.mark.parametrize("lowercase", [True, False])
def test_eager_tokens_from_the_cache_equal_the_graphs(lowercase, data_dir):
    """Eager `tokenize` (a text's tokens kept after its first call) gives exactly what the TF ops give in a graph
    (`tf.function`, as the exported SavedModel tokenizes), on a first call and again from the cache."""
    trec = read_tsv(data_dir / "trecqa" / "tsv" / "clean-dev.tsv")[:300]
    texts = TRICKY + [r["answer"] for r in trec] + TRICKY[:3]  # repeats within one call too
    graph = tf.function(lambda batch: tokenize(batch, lowercase=lowercase),
                        input_signature=[tf.TensorSpec([None], tf.string)])
    expected = graph(text.as_string_batch(texts))
    tokenizer.clear_token_cache()
    for _ in range(2):
        got = tokenize(texts, lowercase=lowercase)
        assert got.row_splits.dtype == expected.row_splits.dtype and got.shape.as_list() == [len(texts), None]
        assert got.to_list() == expected.to_list()


def test_a_text_met_before_is_not_run_through_the_ops_again(monkeypatch):
    calls = []
    original = tokenizer._regex_tokenize

    def counting(batch, **kwargs):
        calls.append(sorted(batch.numpy().tolist()))
        return original(batch, **kwargs)

    monkeypatch.setattr(tokenizer, "_regex_tokenize", counting)
    tokenizer.clear_token_cache()
    first = tokenize(["the cat", "a dog", "the cat"]).to_list()
    assert calls == [[b"a dog", b"the cat"]]  # each distinct text once
    assert tokenize(["a dog", "The cat", "the cat".encode("utf-8")]).to_list() == [first[1], first[0], first[0]]
    assert calls == [[b"a dog", b"the cat"], [b"The cat"]]  # only the text not met before
    tokenize(["a dog"], lowercase=False)  # the case kept: other tokens, another entry
    assert calls[-1] == [b"a dog"] and len(calls) == 3
    tokenizer.clear_token_cache()
    tokenize(["a dog"])
    assert len(calls) == 4


def test_a_full_token_cache_is_emptied_and_still_answers(monkeypatch):
    monkeypatch.setattr(tokenizer, "TOKEN_CACHE_TEXTS", 3)
    tokenizer.clear_token_cache()
    assert tokenize(["one", "two"]).to_list() == [[b"one"], [b"two"]]
    assert len(tokenizer._TOKENS) == 2
    assert tokenize(["three", "four"]).to_list() == [[b"three"], [b"four"]]  # 4 > 3: emptied, then these two
    assert sorted(tokenizer._TOKENS) == [(True, b"four"), (True, b"three")]
    assert tokenize(["a", "b c", "d", "e"]).to_list() == [[b"a"], [b"b", b"c"], [b"d"], [b"e"]]  # more than fit
    assert sorted(tokenizer._TOKENS) == []
    tokenizer.clear_token_cache()


# ---------------------------------------------------------------------------------------------------------------
# TextEncoder
# ---------------------------------------------------------------------------------------------------------------


def test_encoder_ids_padding_truncation_oov():
    enc = TextEncoder(["the", "cat", "sat", "zürich", "北"])
    assert enc.vocab_size == 7 and len(enc) == 7
    assert enc.vocabulary == ["the", "cat", "sat", "zürich", "北"]
    ids = enc.encode(["The cat sat on the mat .", "cat", "", "dog bird", "Zürich 北京"], max_length=5)
    assert ids.dtype == tf.int32 and ids.shape == (5, 5)
    assert ids.numpy().tolist() == [
        [2, 3, 4, 1, 2],  # truncated to 5: 'mat' and '.' dropped
        [3, 0, 0, 0, 0],  # padded at the end
        [0, 0, 0, 0, 0],  # empty text: all padding
        [1, 1, 0, 0, 0],  # unknown words
        [5, 6, 1, 0, 0],  # non-ASCII
    ]
    assert PAD_ID == 0 and OOV_ID == 1
    assert enc.encode([], max_length=3).shape == (0, 3)
    long = enc.encode(["cat " * 100], max_length=1)
    assert long.numpy().tolist() == [[3]]


@pytest.mark.parametrize("bad", [0, -1, 2.5, True, None, "5"])
def test_encode_rejects_bad_max_length(bad):
    with pytest.raises(ValueError, match="max_length"):
        TextEncoder(["a"]).encode(["a"], max_length=bad)


@pytest.mark.parametrize(
    "vocabulary, message",
    [
        (["a", "[UNK]"], r"vocabulary\[1\].*reserved"),
        (["[PAD]"], r"vocabulary\[0\].*reserved"),
        (["a", "b", "a"], r"vocabulary\[2\].*duplicates vocabulary\[0\]"),
        (["a", ""], r"vocabulary\[1\] is an empty string"),
        (["a", "b c"], r"vocabulary\[1\].*whitespace"),
        (["a", "b", "c\n"], r"vocabulary\[2\].*whitespace"),
        (["a\t"], r"vocabulary\[0\].*whitespace"),
        (["a", 3], r"vocabulary\[1\] is int"),
        ([], "empty"),
    ],
)
def test_encoder_rejects_bad_vocabulary(vocabulary, message):
    with pytest.raises(ValueError, match=message):
        TextEncoder(vocabulary)


def test_encoder_warns_about_upper_case_words_when_lower_casing():
    with pytest.warns(UserWarning, match=r"vocabulary\[1\] = 'Cat'"):
        TextEncoder(["the", "Cat"])
    cased = TextEncoder(["the", "Cat"], lowercase=False)
    assert cased.encode(["Cat cat"], max_length=2).numpy().tolist() == [[3, 1]]


def test_build_orders_by_count_then_token_and_filters():
    texts = ["b a c", "a b", "d a", "C"]  # a:3 b:2 c:2 d:1
    enc = TextEncoder.build(texts)
    assert enc.vocabulary == ["a", "b", "c", "d"]
    assert enc.token_counts == {"a": 3, "b": 2, "c": 2, "d": 1}
    assert TextEncoder.build(list(reversed(texts))).vocabulary == enc.vocabulary  # order-independent
    assert TextEncoder.build(texts, min_count=2).vocabulary == ["a", "b", "c"]
    assert TextEncoder.build(texts, max_tokens=2).vocabulary == ["a", "b"]
    assert TextEncoder.build(texts, min_count=2, max_tokens=10).vocabulary == ["a", "b", "c"]
    assert TextEncoder.build(iter(texts), batch_size=1).vocabulary == enc.vocabulary  # generator, tiny batches
    assert TextEncoder.build(np.array(texts, dtype=object)).vocabulary == enc.vocabulary
    assert TextEncoder.build(texts, lowercase=False).vocabulary == ["a", "b", "C", "c", "d"]


def test_build_errors():
    with pytest.raises(ValueError, match="min_count"):
        TextEncoder.build(["a"], min_count=0)
    with pytest.raises(ValueError, match="max_tokens"):
        TextEncoder.build(["a"], max_tokens=0)
    with pytest.raises(ValueError, match="min_count=5"):
        TextEncoder.build(["a b"], min_count=5)
    with pytest.raises(TypeError):
        TextEncoder.build("a b")
    with pytest.raises(TypeError, match=r"texts\[0\]"):
        TextEncoder.build([3])


def test_the_vector_words_are_tokenized_once_per_list_and_give_the_same_vocabulary(monkeypatch):
    """`extra_words` (a frozen-vector run's 400,000 GloVe words) are tested against the tokenizer once per word list
    and lower-casing: a second build or trained-preset load reuses them, with the same words appended."""
    vector_words = ["the", "cat", "Dog", "new york", "café", "<pad>", "", "cat", "sat", "mat", "don't", "日本"]
    calls = []
    original = tokenizer.tokenize

    def counting(texts, **kwargs):
        calls.append(len(texts))
        return original(texts, **kwargs)

    monkeypatch.setattr(vocabulary, "tokenize", counting)  # the name vocabulary calls
    monkeypatch.setattr(vocabulary, "_PRODUCIBLE_CACHE", type(vocabulary._PRODUCIBLE_CACHE)())
    # each word alone, as the uncached rule: the tokenizer gives it back as one token
    alone = [w for w in dict.fromkeys(vector_words) if w and w not in text.RESERVED_TOKENS
             and [t.decode("utf-8") for t in original([w]).to_list()[0]] == [w]]
    assert "new york" not in alone and "Dog" not in alone and "cat" in alone  # split / lower-cased / kept

    first = TextEncoder.build(["a cat sat", "the mat"], extra_words=vector_words)
    assert first.vocabulary == ["a", "cat", "mat", "sat", "the"] + [w for w in alone if w not in first.vocabulary[:5]]
    tokenizer_calls = len(calls)
    second = TextEncoder.build(["the dog"], extra_words=list(vector_words))  # an equal list, another object
    assert len(calls) == tokenizer_calls + 1  # the training texts only; the vector words came from the cache
    assert second.vocabulary == ["dog", "the"] + [w for w in alone if w not in ("dog", "the")]
    assert text.with_vector_words(["mat"], vector_words) == ["mat"] + [w for w in alone if w != "mat"]
    assert len(calls) == tokenizer_calls + 1
    # another list, or the same list without lower-casing, is tokenized again
    assert text.with_vector_words([], vector_words[:-1]) == [w for w in alone if w != "日本"]
    assert text.with_vector_words([], vector_words, lowercase=False) == \
        [w for w in dict.fromkeys(vector_words) if w in alone or w == "Dog"]
    assert len(calls) == tokenizer_calls + 3


def test_build_on_real_data_is_deterministic(data_dir):
    rows = read_tsv(data_dir / "trecqa" / "tsv" / "clean-dev.tsv")
    texts = list(dict.fromkeys(t for r in rows for t in (r["question"], r["answer"])))
    first = TextEncoder.build(texts, min_count=2)
    second = TextEncoder.build(texts[::-1], min_count=2)
    assert first.vocabulary == second.vocabulary
    assert first.vocabulary[:3] == ["the", ",", "."]
    counts = [first.token_counts[w] for w in first.vocabulary]
    assert counts == sorted(counts, reverse=True) and min(counts) >= 2


def test_vocabulary_file_round_trip(tmp_path):
    enc = TextEncoder(["the", "zürich", "n't", "北"])
    path = enc.save_vocabulary(tmp_path / "vocab.txt")
    assert open(path, "rb").read() == "the\nzürich\nn't\n北\n".encode("utf-8")
    loaded = TextEncoder.from_file(path)
    assert loaded.vocabulary == enc.vocabulary and loaded.vocabulary_path == os.path.abspath(path)
    texts = ["the Zürich n't 北 x", ""]
    np.testing.assert_array_equal(loaded.encode(texts, 6), enc.encode(texts, 6))
    assert enc.get_config() == {"lowercase": True}
    cased = TextEncoder.from_config({"lowercase": False}, path)
    assert cased.lowercase is False and cased.get_config() == {"lowercase": False}
    assert cased.encode(["THE the"], 2).numpy().tolist() == [[1, 2]]
    # A file without a final newline reads the same.
    (tmp_path / "no_newline.txt").write_bytes(b"the\nzebra")
    assert TextEncoder.from_file(tmp_path / "no_newline.txt").vocabulary == ["the", "zebra"]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"the\r\ncat\r\n", r"line 1 \(vocabulary\[0\]\).*CRLF"),
        (b"the\ncat\nthe\n", r"line 3 \(vocabulary\[2\]\).*duplicates"),
        (b"the\n\ncat\n", r"line 2 \(vocabulary\[1\]\) is an empty string"),
        (b"the\n[UNK]\n", r"line 2.*reserved"),
        (b"the\n\xff\n", r"line 2.*UTF-8"),
        (b"", "empty"),
    ],
)
def test_from_file_errors(tmp_path, content, message):
    path = tmp_path / "vocab.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        TextEncoder.from_file(path)


def test_owned_vocabulary_file_lives_with_the_encoder():
    enc = TextEncoder(["a", "b"])
    path = enc.vocabulary_path
    assert open(path, encoding="utf-8").read() == "a\nb\n"
    del enc
    gc.collect()
    assert not os.path.exists(path)


def test_encode_in_tf_data_and_tf_function_matches_eager():
    enc = TextEncoder(["what", "is", "the", "teapot", "dome", "scandal", "?", "zürich"])
    texts = ["What is the teapot dome scandal ?", "", "Zürich is big", "unknown words only", "the " * 20]
    eager = enc.encode(texts, max_length=6).numpy()

    dataset = tf.data.Dataset.from_tensor_slices(texts).batch(2).map(lambda t: enc.encode(t, max_length=6))
    from_dataset = np.concatenate([batch.numpy() for batch in dataset])
    np.testing.assert_array_equal(from_dataset, eager)

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def encode_fn(batch):
        return enc.encode(batch, max_length=6)

    traced = encode_fn(tf.constant(texts))
    assert traced.shape == (5, 6) and traced.dtype == tf.int32
    np.testing.assert_array_equal(traced.numpy(), eager)
    assert encode_fn.get_concrete_function().structured_outputs.shape.as_list() == [None, 6]


def test_saved_model_carries_the_vocabulary_as_an_asset(tmp_path):
    import keras

    vocab_path = tmp_path / "source" / "vocab.txt"
    vocab_path.parent.mkdir()
    TextEncoder(["how", "are", "glacier", "caves", "formed", "?", "zürich"]).save_vocabulary(vocab_path)
    enc = TextEncoder.from_file(vocab_path)
    texts = ["How are glacier caves formed?", "", "Zürich caves -LRB- x -RRB-"]
    expected = enc.encode(texts, max_length=5).numpy()

    archive = keras.export.ExportArchive()
    archive.track(enc.table)
    archive.add_endpoint(
        "encode",
        lambda batch: enc.encode(batch, max_length=5),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    export_dir = tmp_path / "export"
    archive.write_out(str(export_dir), verbose=False)
    os.remove(vocab_path)  # the loaded model must use its own copy
    assert (export_dir / "assets" / "vocab.txt").read_text(encoding="utf-8").split() == enc.vocabulary

    loaded = tf.saved_model.load(str(export_dir))
    got = loaded.encode(tf.constant(texts))
    np.testing.assert_array_equal(got.numpy(), expected)
    assert expected.tolist()[0] == [2, 3, 4, 5, 6]


# ---------------------------------------------------------------------------------------------------------------
# GloVe
# ---------------------------------------------------------------------------------------------------------------

TINY_GLOVE = "the 0.1 0.2 0.3\ncat -1 0.5 2e-1\nzürich 1.5 -2.5 3\ndog 9 9 9\n"


def test_load_embeddings_tiny_file_exact_rows(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TINY_GLOVE, encoding="utf-8")
    enc = TextEncoder(["cat", "zürich", "missing", "the"])
    matrix, report = load_embeddings(path, enc)
    assert matrix.dtype == np.float32 and matrix.shape == (6, 3)
    np.testing.assert_array_equal(matrix[0], 0.0)
    np.testing.assert_array_equal(matrix[1], 0.0)
    np.testing.assert_array_equal(matrix[2], np.array([-1, 0.5, 0.2], np.float32))
    np.testing.assert_array_equal(matrix[3], np.array([1.5, -2.5, 3], np.float32))
    np.testing.assert_array_equal(matrix[5], np.array([0.1, 0.2, 0.3], np.float32))
    assert 0 < np.abs(matrix[4]).max() < 0.6  # random normal, std 0.1
    assert report == {"vocabulary": 4, "found": 3, "coverage": 0.75, "token_coverage": None, "dim": 3,
                      "training_words": None, "training_coverage": None, "path": str(path),
                      "sha256": hashlib.sha256(TINY_GLOVE.encode("utf-8")).hexdigest(),
                      "missing_examples": ["missing"]}

    again, _ = load_embeddings(path, ["cat", "zürich", "missing", "the"], seed=0)  # a word list works too
    np.testing.assert_array_equal(again, matrix)
    other_seed, _ = load_embeddings(path, enc, seed=1)
    assert not np.array_equal(other_seed[4], matrix[4])
    np.testing.assert_array_equal(other_seed[[0, 1, 2, 3, 5]], matrix[[0, 1, 2, 3, 5]])

    gz_path = tmp_path / "tiny.txt.gz"
    with gzip.open(gz_path, "wt", encoding="utf-8") as f:
        f.write("4 3\n" + TINY_GLOVE)  # with a word2vec-style header
    from_gz, gz_report = load_embeddings(gz_path, enc, dim=3)
    np.testing.assert_array_equal(from_gz, matrix)
    assert gz_report["found"] == 3


def test_load_embeddings_token_coverage_from_build(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TINY_GLOVE, encoding="utf-8")
    enc = TextEncoder.build(["the cat the", "the bird", "rare"], min_count=1)  # the:3 bird:1 cat:1 rare:1
    _, report = load_embeddings(path, enc)
    assert report["found"] == 2 and report["coverage"] == 0.5
    assert report["token_coverage"] == pytest.approx(4 / 6)


def test_load_embeddings_missing_zero_gives_zero_rows_and_keeps_the_found_ones(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TINY_GLOVE, encoding="utf-8")
    words = ["cat", "zürich", "missing", "the", "absent"]
    random_rows, _ = load_embeddings(path, words)
    zero_rows, report = load_embeddings(path, words, missing="zero")
    np.testing.assert_array_equal(zero_rows[[4, 6]], 0.0)
    assert np.abs(random_rows[[4, 6]]).max() > 0
    np.testing.assert_array_equal(zero_rows[[2, 3, 5]], random_rows[[2, 3, 5]])
    assert report["missing_examples"] == ["missing", "absent"]
    with pytest.raises(ValueError, match="missing must be one of .*'zeros'"):
        load_embeddings(path, words, missing="zeros")


def test_load_embeddings_first_duplicate_wins_and_spacing_is_tolerated(tmp_path):
    path = tmp_path / "dup.txt"
    path.write_text("cat 1 2 3\ncat 7 8 9\nthe  4\t5 6 \n", encoding="utf-8")
    matrix, report = load_embeddings(path, ["cat", "the"])
    assert matrix[2:].tolist() == [[1, 2, 3], [4, 5, 6]]
    assert report["found"] == 2


def test_load_embeddings_random_rows_have_std_point_one(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TINY_GLOVE, encoding="utf-8")
    words = [f"w{i}" for i in range(3000)]
    matrix, report = load_embeddings(path, words)
    assert report["found"] == 0 and report["coverage"] == 0.0
    assert np.std(matrix[2:]) == pytest.approx(0.1, rel=0.05)
    assert abs(np.mean(matrix[2:])) < 0.01


@pytest.mark.parametrize(
    "content, message",
    [
        ("the 0.1 0.2 0.3\ncat 1 2 3\ndog 1 2\n", r"bad\.txt, line 3: expected a word and 3 values, found 2"),
        ("the 0.1 0.2 0.3\n\ncat 1 2 3 4\n", r"bad\.txt, line 3: .*found 4"),
        ("the 0.1 0.2 0.3\ncat 1 x 3\n", r"bad\.txt, line 2: a value of b'cat' is not a number"),
        ("the\n", r"bad\.txt, line 1: a word without values"),
        ("the 0.1 0.2 0.3\ncat 1  2\n", r"bad\.txt, line 2: .*found 2"),
        ("", r"bad\.txt: no vectors"),
    ],
)
def test_load_embeddings_malformed(tmp_path, content, message):
    path = tmp_path / "bad.txt"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        load_embeddings(path, ["the", "cat"])


def test_load_embeddings_dim_mismatch(tmp_path):
    path = tmp_path / "tiny.txt"
    path.write_text(TINY_GLOVE, encoding="utf-8")
    with pytest.raises(ValueError, match="expected dim=50"):
        load_embeddings(path, ["the"], dim=50)


def test_load_embeddings_real_glove_on_trecqa_clean_test(data_dir):
    glove = data_dir / "glove" / "glove.6B.50d.filtered.txt.gz"
    rows = read_tsv(data_dir / "trecqa" / "tsv" / "clean-test.tsv")
    texts = list(dict.fromkeys(t for r in rows for t in (r["question"], r["answer"])))
    enc = TextEncoder.build(texts)
    matrix, report = load_embeddings(glove, enc)
    assert report["dim"] == 50 and matrix.shape == (enc.vocab_size, 50) and matrix.dtype == np.float32
    assert report["coverage"] > 0.95, report
    assert report["token_coverage"] > 0.98, report
    the = enc.vocabulary.index("the") + 2
    assert matrix[the, :3].tolist() == pytest.approx([0.418, 0.24968, -0.41242])
    np.testing.assert_array_equal(matrix[:2], 0.0)
    # Cross-check a few rows against a plain parse of the file.
    wanted = {"the", "?", "n't", "(", "said", "'s", "1,000"}
    assert wanted <= set(enc.vocabulary)
    checked = 0
    with gzip.open(glove, "rt", encoding="utf-8") as f:
        for line in f:
            word, *values = line.split(" ")
            if word in wanted:
                np.testing.assert_array_equal(matrix[enc.vocabulary.index(word) + 2], np.array(values, np.float32))
                checked += 1
    assert checked == len(wanted)
