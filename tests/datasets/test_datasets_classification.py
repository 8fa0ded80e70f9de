"""The sentence-pair classification loaders (SICK, SNLI, MSRP) on the real data: counts from each folder's
SOURCE.md, known pairs and malformed copies of the real files (fetching them: test_datasets_download.py)."""

import gzip
import json
import shutil

import numpy as np
import pytest

from keras_match import datasets
from keras_match.datasets import ClassificationDataset, DataFormatError, MatchingDataset, PairSplit
from keras_match.datasets import msrp, sick, snli


NLI_LABELS = ("entailment", "neutral", "contradiction")


@pytest.fixture(scope="module")
def sick_ds(data_dir):
    return datasets.load("sick", data_dir=data_dir)


@pytest.fixture(scope="module")
def snli_ds(data_dir):
    return datasets.load("snli", data_dir=data_dir)


@pytest.fixture(scope="module")
def msrp_ds(data_dir):
    return datasets.load("msrp", data_dir=data_dir)


def per_class(split):
    return tuple(split.counts()["per_class"].values())


# -- counts (SOURCE.md figures) --------------------------------------------------------------------------------


def test_sick_counts(sick_ds):
    assert isinstance(sick_ds, ClassificationDataset) and sick_ds.task == "classification"
    assert sick_ds.name == "sick" and sick_ds.variant is None
    assert sick_ds.label_names == NLI_LABELS
    assert list(sick_ds.splits) == ["train", "dev", "test"]
    assert sick_ds.counts() == {
        "train": {"pairs": 4500, "per_class": {"entailment": 1299, "neutral": 2536, "contradiction": 665},
                  "dropped": {}},
        "dev": {"pairs": 500, "per_class": {"entailment": 144, "neutral": 282, "contradiction": 74}, "dropped": {}},
        "test": {"pairs": 4927, "per_class": {"entailment": 1414, "neutral": 2793, "contradiction": 720},
                 "dropped": {}},
    }
    assert sick_ds["dev"].source.endswith("sick/semeval2014_task1/SICK_trial.txt")
    assert sick_ds["test"].source.endswith("sick/semeval2014_task1/SICK_test_annotated.txt")


def test_snli_counts_drop_rows_without_gold_label(snli_ds):
    assert snli_ds.label_names == NLI_LABELS and list(snli_ds.splits) == ["dev", "test"]
    assert "train" not in snli_ds
    assert (snli_ds["dev"].num_pairs, per_class(snli_ds["dev"])) == (9842, (3329, 3235, 3278))
    assert (snli_ds["test"].num_pairs, per_class(snli_ds["test"])) == (9824, (3368, 3219, 3237))
    assert snli_ds["dev"].dropped == {"no gold label": 158}
    assert snli_ds["test"].dropped == {"no gold label": 176}
    assert snli_ds["dev"].source.endswith("snli/snli_1.0_dev.jsonl.gz")


def test_msrp_counts_and_dev_holdout(msrp_ds):
    assert msrp_ds.label_names == ("not_paraphrase", "paraphrase")
    assert list(msrp_ds.splits) == ["train", "dev", "test"]
    # the official train file: 4,076 pairs, 2,753 paraphrases; dev = its last 400 pairs
    assert (msrp_ds["train"].num_pairs, per_class(msrp_ds["train"])) == (3676, (1200, 2476))
    assert (msrp_ds["dev"].num_pairs, per_class(msrp_ds["dev"])) == (400, (123, 277))
    assert (msrp_ds["test"].num_pairs, per_class(msrp_ds["test"])) == (1725, (578, 1147))
    total = [a + b for a, b in zip(per_class(msrp_ds["train"]), per_class(msrp_ds["dev"]))]
    assert total == [1323, 2753]
    dev_meta = msrp_ds.metadata["dev"]
    assert dev_meta["pairs"] == 400 and dev_meta["train_pairs"] == 3676
    assert dev_meta["file_lines"] == (3678, 4077)  # header on line 1, pairs on lines 2..4077
    assert dev_meta["ids"] == (msrp_ds["dev"].ids[0], msrp_ds["dev"].ids[-1])
    assert "last 400 pairs" in dev_meta["rule"]
    assert msrp_ds["dev"].source == msrp_ds["train"].source == dev_meta["from"]
    assert not set(msrp_ds["dev"].ids) & set(msrp_ds["train"].ids)


def test_msrp_dev_is_the_end_of_the_train_file(msrp_ds, data_dir):
    full, lines = msrp.read_msrp_file("train", data_dir / "msrp" / "msr_paraphrase_train.txt.gz")
    assert full.num_pairs == 4076 and lines[0] == 2 and lines[-1] == 4077
    for field in ("ids", "first", "second", "labels"):
        joined = np.concatenate([getattr(msrp_ds["train"], field), getattr(msrp_ds["dev"], field)])
        assert list(joined) == list(getattr(full, field))


# -- known pairs -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "split,pair_id,first,second,label",
    [
        ("train", "1", "A group of kids is playing in a yard and an old man is standing in the background",
         "A group of boys in a yard is playing and a man is standing in the background", "neutral"),
        ("dev", "4", "The young boys are playing outdoors and the man is smiling nearby",
         "There is no boy playing outdoors and there is no man smiling", "contradiction"),
        ("test", "6", "There is no boy playing outdoors and there is no man smiling",
         "A group of kids is playing in a yard and an old man is standing in the background", "neutral"),
    ],
)
def test_sick_first_pairs(sick_ds, split, pair_id, first, second, label):
    s = sick_ds[split]
    assert (s.ids[0], s.first[0], s.second[0], s.label_names[s.labels[0]]) == (pair_id, first, second, label)


def test_sick_crlf_removed_and_relatedness(sick_ds):
    test = sick_ds["test"]  # the CRLF file
    assert not any("\r" in text for text in np.concatenate([test.first, test.second, test.ids]))
    relatedness = sick_ds.metadata["relatedness"]
    assert {name: scores.shape for name, scores in relatedness.items()} == {
        "train": (4500,), "dev": (500,), "test": (4927,)}
    assert relatedness["train"].dtype == np.float32
    assert relatedness["train"][0] == pytest.approx(4.5) and relatedness["test"][0] == pytest.approx(3.3)
    assert all(scores.min() == 1.0 and scores.max() == 5.0 for scores in relatedness.values())


@pytest.mark.parametrize(
    "split,pair_id,first,second,label",
    [
        ("dev", "4705552913.jpg#2r1n", "Two women are embracing while holding to go packages.",
         "The sisters are hugging goodbye while holding to go packages after just eating lunch.", "neutral"),
        ("test", "2677109430.jpg#1r1n",
         "This church choir sings to the masses as they sing joyous songs from the book at a church.",
         "The church has cracks in the ceiling.", "neutral"),
    ],
)
def test_snli_first_pairs(snli_ds, split, pair_id, first, second, label):
    s = snli_ds[split]
    assert (s.ids[0], s.first[0], s.second[0], s.label_names[s.labels[0]]) == (pair_id, first, second, label)


@pytest.mark.parametrize("split", ["dev", "test"])
def test_snli_matches_the_derived_tsv(snli_ds, data_dir, split):
    """The JSONL read here and the curators' TSV copy agree pair by pair once the "-" rows are dropped."""
    with gzip.open(data_dir / "snli" / "tsv" / f"snli_1.0_{split}.tsv.gz", "rt", encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    kept = [row for row in rows if row[2] != "-"]
    s = snli_ds[split]
    assert list(s.ids) == [row[0] for row in kept]
    assert list(s.first) == [row[3] for row in kept] and list(s.second) == [row[4] for row in kept]
    assert [s.label_names[i] for i in s.labels] == [row[2] for row in kept]
    assert len(rows) - len(kept) == s.dropped["no gold label"]


@pytest.mark.parametrize(
    "split,pair_id,first,second,label",
    [
        ("train", "702876-702977",
         'Amrozi accused his brother, whom he called "the witness", of deliberately distorting his evidence.',
         'Referring to him as only "the witness", Amrozi accused his brother of deliberately distorting his '
         "evidence.", "paraphrase"),
        ("dev", "1782659-1782732",
         "No dates have been set for the criminal or civil cases, but Shanley has pleaded not guilty.",
         "No dates have been set for either the civil trial or the criminal trial.", "not_paraphrase"),
        ("test", "1089874-1089925",
         "PCCW's chief operating officer, Mike Butcher, and Alex Arena, the chief financial officer, will report "
         "directly to Mr So.",
         "Current Chief Operating Officer Mike Butcher and Group Chief Financial Officer Alex Arena will report "
         "to So.", "paraphrase"),
    ],
)
def test_msrp_first_pairs_keep_quotes(msrp_ds, split, pair_id, first, second, label):
    s = msrp_ds[split]
    assert (s.ids[0], s.first[0], s.second[0], s.label_names[s.labels[0]]) == (pair_id, first, second, label)
    assert not s.ids[0].startswith("\ufeff")


# -- containers ------------------------------------------------------------------------------------------------


def test_pair_split_arrays_texts_and_head(sick_ds, snli_ds, msrp_ds):
    for ds in (sick_ds, snli_ds, msrp_ds):
        for split in ds.splits.values():
            n = split.num_pairs
            assert len(split) == n and split.label_names == ds.label_names
            for array in (split.ids, split.first, split.second):
                assert array.shape == (n,) and array.dtype == object
                assert all(type(x) is str for x in array)
            assert split.labels.shape == (n,) and split.labels.dtype == np.int32
            assert sum(split.counts()["per_class"].values()) == n
    split = sick_ds["train"]
    texts = split.texts()
    assert list(texts) == ["question", "answer"]
    assert texts["question"] is split.first and texts["answer"] is split.second
    short = split.head(10)
    assert isinstance(short, PairSplit) and short.num_pairs == 10 and split.num_pairs == 4500
    assert list(short.ids) == list(split.ids[:10]) and list(short.labels) == list(split.labels[:10])
    assert short.counts()["pairs"] == 10 and snli_ds["dev"].head(5).dropped == {"no gold label": 158}


def test_dataset_containers(sick_ds, snli_ds):
    assert "dev" in sick_ds and "validation" not in sick_ds
    with pytest.raises(KeyError) as info:
        snli_ds["train"]
    assert "'snli'" in str(info.value) and "'train'" in str(info.value) and "['dev', 'test']" in str(info.value)
    assert ClassificationDataset.task == "classification" and MatchingDataset.task == "ranking"
    assert sick_ds.num_classes == 3
    with pytest.raises(ValueError, match="label_names"):
        ClassificationDataset("x", {"dev": snli_ds["dev"]}, ("not_paraphrase", "paraphrase"))


def test_pair_split_checks_its_arrays():
    strings = np.array(["a", "b"], dtype=object)
    with pytest.raises(ValueError, match="differ in length"):
        PairSplit("x", strings, strings, strings[:1], np.array([0, 1]), ("no", "yes"))
    with pytest.raises(ValueError, match="indices"):
        PairSplit("x", strings, strings, strings, np.array([0, 2]), ("no", "yes"))
    empty = PairSplit("x", strings[:0], strings[:0], strings[:0], np.array([], dtype=np.int32), ("no", "yes"))
    assert empty.counts() == {"pairs": 0, "per_class": {"no": 0, "yes": 0}, "dropped": {}}


# -- loading by name, options ----------------------------------------------------------------------------------


def test_names_include_classification_sets():
    assert datasets.names()[-3:] == ["sick", "snli", "msrp"]
    assert {"ClassificationDataset", "PairSplit"} <= set(datasets.__all__)


def test_load_by_name_from_the_environment(data_dir, monkeypatch):
    monkeypatch.setenv("KERAS_MATCH_DATA", str(data_dir))
    for name, sizes in [("sick", [4500, 500, 4927]), ("snli", [9842, 9824]), ("msrp", [3676, 400, 1725])]:
        ds = datasets.load(name)
        assert ds.name == name and ds.metadata["data_dir"] == str(data_dir)
        assert [split.num_pairs for split in ds.splits.values()] == sizes


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"name": "sick", "variant": "sick-release"}, "valid: [None]"),
        ({"name": "sick", "train_split": "trial"}, "['train']"),
        ({"name": "snli", "variant": "tsv"}, "valid: [None]"),
        ({"name": "snli", "train_split": "train"}, "no training split"),
        ({"name": "msrp", "variant": "mrpc"}, "valid: [None]"),
        ({"name": "msrp", "train_split": "dev"}, "['train']"),
    ],
)
def test_unknown_options_are_rejected(tmp_path, kwargs, message):
    with pytest.raises(ValueError) as info:
        datasets.load(data_dir=tmp_path, **kwargs)
    assert message in str(info.value) and repr(kwargs["name"]) in str(info.value)


@pytest.mark.parametrize(
    "name,missing",
    [
        ("sick", "sick/semeval2014_task1/SICK_train.txt"),
        ("snli", "snli/snli_1.0_dev.jsonl.gz"),
        ("msrp", "msrp/msr_paraphrase_train.txt"),
    ],
)
def test_missing_file_says_how_to_provide_data(tmp_path, name, missing):
    with pytest.raises(FileNotFoundError) as info:
        datasets.load(name, data_dir=tmp_path)
    assert info.value.filename == str(tmp_path / missing)
    assert str(info.value) == (f"{name} is missing from {tmp_path} (no {missing}); fetch it with "
                               f"`keras-match data download {name} --data-dir {tmp_path}`")


# -- malformed files (copies of the real files' layout) --------------------------------------------------------


def raw_lines(path):
    """The real file's lines as bytes, line endings and BOM kept."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    return data.splitlines(keepends=True)


def broken_copy(source, target, line, replace):
    """Copy ``source`` (its first 20 lines) to ``target`` with 1-based ``line`` rewritten by ``replace``
    (a function of the decoded line without its ending); same compression, BOM and line endings."""
    lines = raw_lines(source)[:20]
    old = lines[line - 1]
    ending = b"\r\n" if old.endswith(b"\r\n") else b"\n"
    lines[line - 1] = replace(old[: -len(ending)].decode("utf-8")).encode("utf-8") + ending
    data = b"".join(lines)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data) if target.suffix == ".gz" else data)
    return target


def fields_edit(index, value=None, drop=False):
    def replace(text):
        fields = text.split("\t")
        if drop:
            del fields[index:]
        else:
            fields[index] = value
        return "\t".join(fields)

    return replace


def json_edit(key, value=None, drop=False):
    def replace(text):
        obj = json.loads(text)
        if drop:
            del obj[key]
        else:
            obj[key] = value
        return json.dumps(obj)

    return replace


def check_error(error, path, line, field, message):
    assert error.path == str(path) and error.line == line and error.field == field
    text = str(error)
    assert str(path) in text and f"line {line}" in text and repr(field) in text and message in text


SICK_CASES = [
    ("unknown label", fields_edit(4, "ENTAILS"), "entailment_judgment",
     "unknown label 'ENTAILS'; valid: ['ENTAILMENT', 'NEUTRAL', 'CONTRADICTION']"),
    ("missing column", fields_edit(4, drop=True), "entailment_judgment", "missing column 'entailment_judgment'"),
    ("two missing columns", fields_edit(3, drop=True), "relatedness_score", "found 3"),
    ("empty sentence", fields_edit(2, "  "), "sentence_B", "empty sentence"),
    ("non-integer id", fields_edit(0, "7a"), "pair_ID", "expected an integer"),
    ("bad score", fields_edit(3, "high"), "relatedness_score", "expected a number in [1, 5]"),
    ("score out of range", fields_edit(3, "5.5"), "relatedness_score", "[1, 5]"),
]


@pytest.mark.parametrize("case,edit,field,message", SICK_CASES, ids=[c[0] for c in SICK_CASES])
@pytest.mark.parametrize("source", ["SICK_train.txt", "SICK_test_annotated.txt"])  # LF and CRLF
def test_sick_malformed_lines(data_dir, tmp_path, source, case, edit, field, message):
    path = broken_copy(data_dir / "sick" / "semeval2014_task1" / source, tmp_path / source, 6, edit)
    with pytest.raises(DataFormatError) as info:
        sick.read_sick_split("train", path)
    check_error(info.value, path, 6, field, message)


def test_sick_duplicate_id_and_missing_header_column(data_dir, tmp_path):
    source = data_dir / "sick" / "semeval2014_task1" / "SICK_trial.txt"
    path = broken_copy(source, tmp_path / "dup.txt", 3, fields_edit(0, "4"))
    with pytest.raises(DataFormatError) as info:
        sick.read_sick_split("dev", path)
    check_error(info.value, path, 3, "pair_ID", "duplicate pair id '4' (first on line 2)")
    path = broken_copy(source, tmp_path / "header.txt", 1, lambda text: text.replace("entailment_judgment", "label"))
    with pytest.raises(DataFormatError) as info:
        sick.read_sick_split("dev", path)
    check_error(info.value, path, 1, "entailment_judgment", "header lacks column 'entailment_judgment'")


@pytest.mark.parametrize("content,message", [(b"", "empty file"), (b"\n", "empty file"), (None, "no data rows")])
def test_sick_file_without_pairs(data_dir, tmp_path, content, message):
    if content is None:  # the real header alone
        content = raw_lines(data_dir / "sick" / "semeval2014_task1" / "SICK_trial.txt")[0]
    path = tmp_path / "SICK_trial.txt"
    path.write_bytes(content)
    with pytest.raises(DataFormatError, match=message) as info:
        sick.read_sick_split("dev", path)
    assert str(path) in str(info.value)


def test_sick_load_reports_the_broken_file(data_dir, tmp_path):
    real = data_dir / "sick" / "semeval2014_task1"
    copy = tmp_path / "sick" / "semeval2014_task1"
    broken_copy(real / "SICK_train.txt", copy / "SICK_train.txt", 1, lambda text: text)  # 19 good pairs
    broken = broken_copy(real / "SICK_trial.txt", copy / "SICK_trial.txt", 4, fields_edit(4, "entailment"))
    shutil.copy(real / "SICK_test_annotated.txt", copy / "SICK_test_annotated.txt")
    with pytest.raises(DataFormatError) as info:
        datasets.load("sick", data_dir=tmp_path)
    check_error(info.value, broken, 4, "entailment_judgment", "unknown label 'entailment'")
    # well-formed but not the benchmark's bytes (19 of 4,500 training pairs): refused as damaged, never a silent
    # smaller benchmark; the same copy reads as user data
    broken.write_bytes(b"".join(raw_lines(real / "SICK_trial.txt")[:20]))
    with pytest.raises(datasets.ChecksumError, match="SICK_train.txt is damaged"):
        datasets.load("sick", data_dir=tmp_path)
    assert sick.read_sick_split("train", copy / "SICK_train.txt")[0].num_pairs == 19


SNLI_CASES = [
    ("unknown label", json_edit("gold_label", "entails"), "gold_label",
     "unknown label 'entails'; valid: ['entailment', 'neutral', 'contradiction', '-']"),
    ("missing key", json_edit("sentence2", drop=True), "sentence2", "missing key 'sentence2'"),
    ("empty sentence", json_edit("sentence1", ""), "sentence1", "empty sentence"),
    ("null label", json_edit("gold_label", None), "gold_label", "expected a string"),
    ("empty id", json_edit("pairID", " "), "pairID", "empty id"),
    ("duplicate id", json_edit("pairID", "4705552913.jpg#2r1n"), "pairID", "duplicate pair id"),
]


@pytest.mark.parametrize("case,edit,field,message", SNLI_CASES, ids=[c[0] for c in SNLI_CASES])
def test_snli_malformed_lines(data_dir, tmp_path, case, edit, field, message):
    path = broken_copy(data_dir / "snli" / "snli_1.0_dev.jsonl.gz", tmp_path / "snli_1.0_dev.jsonl.gz", 3, edit)
    with pytest.raises(DataFormatError) as info:
        snli.read_snli_split("dev", path)
    check_error(info.value, path, 3, field, message)


def test_snli_small_copy_counts_dropped_rows(data_dir, tmp_path):
    path = broken_copy(data_dir / "snli" / "snli_1.0_dev.jsonl.gz", tmp_path / "dev.jsonl", 2,
                       json_edit("gold_label", "-"))
    split = snli.read_snli_split("dev", path)
    assert split.num_pairs == 19 and split.dropped == {"no gold label": 1}
    assert split.ids[0] == "4705552913.jpg#2r1n"  # line 1; line 2 dropped


MSRP_CASES = [
    ("unknown label", fields_edit(0, "2"), "Quality", "unknown label 2; valid: [0, 1]"),
    ("non-integer label", fields_edit(0, "yes"), "Quality", "expected an integer >= 0, got 'yes'"),
    ("missing column", fields_edit(4, drop=True), "#2 String", "missing column '#2 String'"),
    ("empty sentence", fields_edit(3, ""), "#1 String", "empty sentence"),
    ("non-integer id", fields_edit(2, "A2108831"), "#2 ID", "expected an integer"),
]


@pytest.mark.parametrize("case,edit,field,message", MSRP_CASES, ids=[c[0] for c in MSRP_CASES])
def test_msrp_malformed_lines(data_dir, tmp_path, case, edit, field, message):
    source = data_dir / "msrp" / "msr_paraphrase_test.txt.gz"
    path = broken_copy(source, tmp_path / "msr_paraphrase_test.txt.gz", 5, edit)
    with pytest.raises(DataFormatError) as info:
        msrp.read_msrp_file("test", path)
    check_error(info.value, path, 5, field, message)


def test_msrp_load_reports_the_broken_file(data_dir, tmp_path):
    real = data_dir / "msrp"
    copy = tmp_path / "msrp"
    copy.mkdir()
    shutil.copy(real / "msr_paraphrase_train.txt.gz", copy / "msr_paraphrase_train.txt.gz")
    broken = broken_copy(real / "msr_paraphrase_test.txt.gz", copy / "msr_paraphrase_test.txt.gz", 2,
                         fields_edit(0, "1.0"))
    with pytest.raises(DataFormatError) as info:
        datasets.load("msrp", data_dir=tmp_path)
    check_error(info.value, broken, 2, "Quality", "expected an integer >= 0, got '1.0'")
    # the BOM and CRLF of the real layout are handled; a train file too short for the dev hold-out is an error
    short = broken_copy(real / "msr_paraphrase_train.txt.gz", copy / "msr_paraphrase_train.txt.gz", 1, str)
    assert raw_lines(short)[0].startswith(b"\xef\xbb\xbfQuality\t") and raw_lines(short)[1].endswith(b"\r\n")
    broken_copy(real / "msr_paraphrase_test.txt.gz", copy / "msr_paraphrase_test.txt.gz", 1, str)
    with pytest.raises(DataFormatError, match="more than 400"):
        datasets.load("msrp", data_dir=tmp_path)
