"""Where every benchmark file comes from: its public original at a pinned commit, or how it is built from those.

Each dataset's `Source` lists

* its **originals**: files taken unmodified from a public GitHub repository at a pinned commit
  (`https://raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH`), each with the sha256 of the bytes at that origin;
* its **derived** files: the TSV / qrels files the data curators built from those originals (TrecQA, SemEval-2016),
  each with the sha256 pinned in the data folder's `SOURCE.md`, and the builder that makes them
  (`keras_match.datasets.builders`).

A file is kept at `path`, relative to the data directory, with the layout of the project's data folder. Where the
data folder stores a gzip'd copy of a plain original (`trecqa/jacana/TRAIN.xml.gz`, `msrp/*.txt.gz`, ...), `path`
names the plain file and `gzip_sha256` pins the data folder's `.gz` copy: either form is accepted (the plain
original is what a download or a build writes; gzip output differs between gzip implementations, so a `.gz` is
never rebuilt). The digests are those of the data folder's `SOURCE.md` files.

`$KERAS_MATCH_GITHUB_URL` (default `https://raw.githubusercontent.com`) replaces the URL prefix: a mirror of
GitHub's raw files laid out as `OWNER/REPO/COMMIT/PATH`, or a local server in tests.
"""

from __future__ import annotations

import dataclasses
import os

GITHUB_RAW = "https://raw.githubusercontent.com"
"""The default prefix of every origin URL."""

ENV_GITHUB_URL = "KERAS_MATCH_GITHUB_URL"
"""Environment variable replacing `GITHUB_RAW` (a mirror of GitHub's raw files, `OWNER/REPO/COMMIT/PATH`)."""


def github_base() -> str:
    """The URL prefix of origins: `$KERAS_MATCH_GITHUB_URL` without a trailing `/`, else `GITHUB_RAW`."""
    value = os.environ.get(ENV_GITHUB_URL, "").strip()
    return (value or GITHUB_RAW).rstrip("/")


@dataclasses.dataclass(frozen=True)
class DataFile:
    """A file of a dataset, kept at `path` (relative to the data directory, `/`-separated).

    Args:
        path: where the file is kept; a `.gz` copy at `path + ".gz"` is accepted when `gzip_sha256` is set.
        sha256: the hex sha256 of the file's bytes.
        gzip_sha256: the sha256 of the data folder's gzip'd copy (`path + ".gz"`), or `None`.
    """

    path: str
    sha256: str
    gzip_sha256: str | None = None

    def forms(self) -> tuple[tuple[str, str], ...]:
        """`(path, sha256)` of each accepted form, the plain file first."""
        forms = ((self.path, self.sha256),)
        return forms + (((self.path + ".gz", self.gzip_sha256),) if self.gzip_sha256 else ())


@dataclasses.dataclass(frozen=True)
class Original(DataFile):
    """A file stored unmodified at its public origin.

    Args:
        repo: `OWNER/NAME` of the GitHub repository.
        commit: the pinned commit (40 hex digits).
        origin_path: the file's path inside the repository.
    """

    repo: str = ""
    commit: str = ""
    origin_path: str = ""

    def url(self) -> str:
        """The origin URL, under `github_base()`."""
        return f"{github_base()}/{self.repo}/{self.commit}/{self.origin_path}"


@dataclasses.dataclass(frozen=True)
class Derived(DataFile):
    """A file built from a dataset's originals (its bytes are pinned as exactly as an original's)."""


@dataclasses.dataclass(frozen=True)
class Source:
    """Everything a dataset is made of.

    Args:
        name: the dataset (`keras_match.datasets.names()`).
        originals: the files fetched from their origins.
        derived: the files built from the originals, by `builder`.
        builder: `"module:function"` of the builder (`keras_match.datasets.builders`), or `None`.
        license: the terms, in a few words (README's dataset table).
        origin: the origin repositories, in a few words.
    """

    name: str
    originals: tuple[Original, ...]
    derived: tuple[Derived, ...] = ()
    builder: str | None = None
    license: str = ""
    origin: str = ""

    @property
    def files(self) -> tuple[DataFile, ...]:
        """Every file of the dataset, originals first."""
        return self.originals + self.derived


def _originals(repo, commit, entries, folder="", origin_folder=""):
    """`Original`s of one repository and commit: `entries` are `(name, sha256[, gzip_sha256[, origin name]])`."""
    return tuple(
        Original(f"{folder}{name}", sha256, gzip_sha256, repo=repo, commit=commit,
                 origin_path=f"{origin_folder}{origin or name}")
        for name, sha256, gzip_sha256, origin in ((*entry, None, None)[:4] for entry in entries)
    )


def _derived(folder, entries):
    """`Derived` files kept in `folder`: `entries` are `(name, sha256)` or `(name, sha256, gzip_sha256)`."""
    return tuple(Derived(folder + name, *digests) for name, *digests in entries)


def _source(name, license, *repositories, derived=(), builder=None):
    """The `Source` of dataset `name`: its originals from `repositories`, each the arguments of `_originals`
    (`(repo, commit, entries, folder, origin_folder)`); its `origin` names those repositories in order, with
    " (built here)" when it has a builder."""
    originals = sum((_originals(*repository) for repository in repositories), ())
    origin = ", ".join(dict.fromkeys(repo for repo, *_ in repositories)) + (" (built here)" if builder else "")
    return Source(name, originals, derived, builder, license, origin)


# One `_source(name, license, *repositories, derived=..., builder=...)` a dataset; a repository is
# `(OWNER/NAME, commit, files, folder kept in, folder in the repository)`, each file
# `(name, sha256[, sha256 of the data folder's .gz copy[, name in the repository]])`.
SOURCES: dict[str, Source] = {source.name: source for source in (
    # ---- TrecQA (trecqa/SOURCE.md) ------------------------------------------------------------------------------
    _source(
        "trecqa", "none stated; TREC / NIST-derived, research use",
        ("castorini/data", "056cbbcbf997cc0b35032430110c5e5e5525700a", (
            ("TRAIN.xml", "8c36007a23b754807344f08b52bc1baeaa6fa5dc85b8ad49f340cc8acc438b66",
             "7adcbff121e0c2f9dd36527ab126199e35597ecd8ac482ed981518bbe798c436"),
            ("DEV.xml", "87f6ed5818fcb885dc8e8206c83cce658d7187118d1e093d841629a08d9291bc",
             "2e8b82650c340cd19c1eb3111bb8406b94c6730ec86f536e122b08b542cfe272"),
            ("TEST.xml", "fb96ee795015c98299fe78f1e697eb9e74789b1db6b1bbc0203416dedc0c467f",
             "f0e580ce6fbae5d91ed3a59afea2bf4b56c6a71b21e11da3fc8bbe213e230888"),
        ), "trecqa/jacana/", "TrecQA/data/"),
        ("xuchen/jacana", "5e9464acebc7bf423d352477c55ff5fa063b0f03", (
            ("Train1-2393.Question.POSInput.gz",
             "936ff1200b2744ccad0ba0f933c83e8d7a90cebbe8cffb4ab606863bc7dca731"),
            ("Train1-2393.Positive-M.POSInput.cleaned.gz",
             "1cefd5ce75510ef0acff6ddb324709e573f010d8ab6924396025dedc260c72ea"),
            ("Train1-2393.Negative-M.POSInput.gz",
             "f88592c2e3243bfac34ebc962559419e5959da460c78c672fa19783d09c99302"),
        ), "trecqa/jacana/train2393_raw/", "tree-edit-data/answerSelectionExperiments/training/1-2393/"),
        ("castorini/NCE-CNN-Torch", "9f57a6aa1be493d0bc385a75a690378c9b951b4f", (
            ("a.toks", "ddfe89eca7669047edff80fed60023ff30a14344564a7a21eedcc1ede5237eec",
             "246eaaadc36c3285db61f3483c0160537c861abf32274e257730a7cef79a6da8"),
            ("id.txt", "f78db231a6674ad298e9401e5602041ee0a594a1bbdcf3c5a235d502dc7ab49b"),
            ("sim.txt", "942f03ad4a2cfa46abfca2f879cfaf478308f50c1eefa0713844cd470cf44bff"),
        ), "trecqa/castorini_nce_train-all/", "data/TrecQA/train-all/"),
        derived=_derived("trecqa/", (
            ("tsv/train-all.tsv", "e2028c8691217d3e43bb8ed693e67e18f643805304fb33a3d5ff9793c06319a0",
             "b26d7627215a7d5bd6372c00a5d604eab9e3b3f9be7bc50e1ebfc9eb8bce06df"),
            ("tsv/train.tsv", "51e42e48fcb786b851842d7ad185ca9e11ab0ed51119da9055aa6a7d21a64a96"),
            ("tsv/raw-dev.tsv", "79fb07e56369ce99bea04a2c4b5bb33f58a2fb6c39a73d025781cbb3892adc9b"),
            ("tsv/raw-test.tsv", "52be2526d5da9b30f586d96a1faf9cb981406af3a9914ae16b7ab7abb9b85b1b"),
            ("tsv/clean-dev.tsv", "d19e58f7a2f22e9ad2e3a57326edc0938dd1f34908b3c7b81e6a70668940f497"),
            ("tsv/clean-test.tsv", "b0202f69c9c636a279cf4bf6d7b6a21e5c009bcd0b6fcb73152d4240d5333f15"),
            ("qrels/train-all.qrels", "92fde621e06d729096f1c0e7d0eac104c547f2063af4e428e9493a9401d1e6b5"),
            ("qrels/train.qrels", "fdd4dfa374dbd83ccc3bd2afcda5257d0359d9907ee636f8aa8bd521fc9fc0e5"),
            ("qrels/raw-dev.qrels", "1a160049d557277fbca73cc4e570619cc6f97b64a0acb09446fafce3158a9117"),
            ("qrels/raw-test.qrels", "c372f5684221616c97c0534f62681c5bbf1e431b11f21adbc2322047f9112b22"),
            ("qrels/clean-dev.qrels", "9214a62fa67e889e6f3dd37a3bc89ac496e00bf2141d54959b08d6765146cf0f"),
            ("qrels/clean-test.qrels", "27d847abf29b8ab239033fc09f34643f460f5a3e71c631f9e3028982c40cfe79"),
        )),
        builder="keras_match.datasets.builders.trecqa:build",
    ),
    # ---- WikiQA (wikiqa/SOURCE.md) ------------------------------------------------------------------------------
    _source(
        "wikiqa", "Microsoft Research Data License (research only)",
        ("rohantilva/Google-Like-Question-Answering-System", "33b4bc236eebccb53dcfb396bfcccf3f88cf48dd", (
            ("WikiQA-train.tsv.gz", "a176cfb7e9f9a6c838ba5556e1b9214cbfaee0dfd18d6d5de0f627a69d597e5a"),
            ("WikiQA-dev.tsv.gz", "588f6976ccb1ba9ad27359573dd55bbd95d31c65effa47b396bce1382477fb6e"),
            ("WikiQA-test.tsv.gz", "c8085521a6ce28a2405f10c394d53e0b2a0cb59ed5178a7f145228fd2d94c4bc"),
            ("LICENSE.pdf", "0a7f8a724eb30c1ff1f322d007693b4a0c79a9025ee525c605dfe88dc44eac89"),
        ), "wikiqa/", "data/WikiQA/"),
        ("l11x0m7/Question_Answering_Models", "b53c33db08a51f8e5f8c774eb65ec29c75942c66", (
            ("README.txt", "8eaf9607c12263fd393cefb101e434f53436c021812c67a12bcd9fe5100fc23f"),
            ("WikiQA-train.ref", "aed4d2e086c1b8736b30c6914934a81bff997f2259f1c80a70f41d1575ecde7d"),
            ("WikiQA-dev.ref", "ea76242babd382499c6a1490f2a799c7a7420f6d9828c3b488e19c82db36f01e"),
            ("WikiQA-test.ref", "a91e7aa065c350d9935a98de880c8a53825747c553a416b28ad3e1ba5a677d42"),
            ("WikiQA-dev-filtered.ref", "f79cb9958ed6ed5fd734d4b8957aa3398c33a4cd204469a25b020f7c72fc36da"),
            ("WikiQA-test-filtered.ref", "b54e30ce1311138309a9417b8ea018b9d26b58404f835d321338182ff0dabbe4"),
        ), "wikiqa/", "cQA/data/WikiQA/raw/"),
    ),
    # ---- SemEval-2016 Task 3, subtask A (semeval2016_task3_cqa/SOURCE.md) ---------------------------------------
    _source(
        "semeval2016", "free for general research use (cite Nakov et al.)",
        ("fanmengdan/SemEval2016-CQA", "dd2767d9a5f540651aafa4aa982fb16a0f377aef", (
            ("SemEval2016-Task3-CQA-QL-train-part2.xml",
             "f23adef31cc3558dddc12bdb18e2b512672f3a1aa4360e2bc9a0465c5eb6689d",
             "cc139ab30219a2e62d5fa2fd15d2f25249d767ababa443beab94c59a3d00bf26"),
            ("SemEval2016-Task3-CQA-QL-dev.xml",
             "2ce404e1830df58e28cc3a2271990d3d3b113b33735d294f2ddd583cd7bd051e",
             "ce734aad95f14343f95fd8f27d1a42f233a436442b789bd47c289965c36f0fa9"),
        ), "semeval2016_task3_cqa/xml/", "SemEval2016/"),
        ("whiskeyromeo/CommunityQuestionAnswering", "6408cbaacd24212a6998ccd85c1e23199b005c56", (
            ("SemEval2015-Task3-CQA-QL-dev-reformatted-excluding-2016-questions-cleansed.xml",
             "93417473e2f43c644fb6289525e1977f5c8d255f3bace6fbfbdf952e66c15f87",
             "f1962a7c936b3314ee1ae55a8a34a4c06daf2bc22a38b8a48c543d658fcadbd2"),
            ("SemEval2015-Task3-CQA-QL-test-reformatted-excluding-2016-questions-multiline.xml",
             "94a08d1e956b07042a7dc58a103162aa1fb01355eab2887e5e7352c882ee493e",
             "11ef2eea6537f87af62383ae6fe0aea78557e2c80c7f7dca9a0dca981801ce3f"),
        ), "semeval2016_task3_cqa/xml/", "Data/train-more-for-subtaskA-from-2015/"),
        derived=_derived("semeval2016_task3_cqa/subtaskA/", (
            ("train-part2.tsv", "88ac157082a1a9fc79acc0250f577ebb94e1829d4cc9346a9722f629baf91664"),
            ("train-part2.qrels", "98c4a161fb54ea1c611a74e93b4b3c2620573dac1e46083426d22b154bb8d7b6"),
            ("dev.tsv", "82fc2a06c22e558f2f247f96c05c599537dec134bb92bd23f9c2a58ef5b47426"),
            ("dev.qrels", "6ad8bdeb777a54fb2dd8b23aa640724eb5481b80cdb96d5f08de9354b6d1c413"),
            ("train-2015.tsv", "48ab2a031b2ec3521badd8e1a1e99a0f782c41cec4dc61ac8335d42744caded0"),
            ("train-2015.qrels", "ebcf7cf7943fb33d9abc517c117246ccfeb3ba74b95491ab338e57c6217339ec"),
        )),
        builder="keras_match.datasets.builders.semeval:build",
    ),
    # ---- SICK, SemEval-2014 Task 1 files (sick/SOURCE.md) -------------------------------------------------------
    _source(
        "sick", "CC BY-NC-SA 3.0",
        ("brmson/dataset-sts", "e1d3375f5b3bc24f21aa4e46f96eb379e9fc1081", (
            ("SICK_train.txt", "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e"),
            ("SICK_trial.txt", "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56"),
            ("SICK_test_annotated.txt", "2b8aa806658d6fc23c6824c83776c2d4fee7556000817b5ec0f982861413b7d0"),
            ("readme.txt", "4ff14a2b07603f2214c2803a6e012048c795be5ba4e5d1d33b87d7210f633bf7"),
        ), "sick/semeval2014_task1/", "data/sts/sick2014/"),
    ),
    # ---- SNLI 1.0 dev / test (snli/SOURCE.md) -------------------------------------------------------------------
    _source(
        "snli", "CC BY-SA 4.0",
        ("uclnlp/inferbeddings", "80492a7aebcdcac21e758514c8af403d77e8594a", (
            ("snli_1.0_dev.jsonl.gz", "e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d"),
            ("snli_1.0_test.jsonl.gz", "ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5"),
        ), "snli/", "data/snli/"),
    ),
    # ---- MSRP (msrp/SOURCE.md) ----------------------------------------------------------------------------------
    _source(
        "msrp", "MSR Shared Source License (non-commercial)",
        ("lanwuwei/SPM_toolkit", "ba1dd0043573c380d1dda875abc441f4e984033a", (
            ("msr_paraphrase_train.txt", "f3d26d73bb3510032f80836e2e81cf32c71863f8dd6151aa80a125c2c799a557",
             "c752ce9b61c2090a6f578fd651fd5227e3932f4a31d002826f932ec57e5cf55a", "train/msr_paraphrase_train.txt"),
            ("msr_paraphrase_test.txt", "51a1f197d8786712d2f0d97700f5be653b7488a96cde00e158159350d23e3d90",
             "20ccc1309163adfd143b66298db672499cee378a5bc87c936608dde5eea41444", "test/msr_paraphrase_test.txt"),
        ), "msrp/", "PWIM/data/msrp/"),
        ("brmson/dataset-sts", "e1d3375f5b3bc24f21aa4e46f96eb379e9fc1081", (
            # the license requires keeping LICENCE.html with the data
            ("LICENCE.html", "dcfa8f5fd4ab9fdf4526f9ce0882327e8ee8d792b39f58783de53255a48d933c"),
            ("README.html", "61d3c7c52b56c54a4d48a2373016a67763f82ed5cc28772d627d47d46e729df2"),
        ), "msrp/", "data/para/msr/"),
    ),
    # ---- Dialog bAbI tasks 1-6 (dialog_babi/SOURCE.md) ----------------------------------------------------------
    _source(
        "dialog-babi", "CC BY 3.0 (Facebook)",
        ("tsajed/chatbot-MemN2N-tensorflow", "68b6bed9d3a71021e871607ebf90da1f3789c861", (
            ("LICENSE.txt", "ae7c5f7078ce6b7c38f0e40da66e4f8c6aa45d933eb9e899997b0104f63ac2fe"),
            *((f"dialog-babi-{name}.txt", plain, gz) for name, plain, gz in (
                ("candidates", "719f9c94e69fb22c03401588fd01079c284571e940f03185d63751de94057bc0",
                 "9d957adc62e757a5e6db01097cdc0e798be38e7b1131ade8536604651c22d395"),
                ("kb-all", "26eac3e259b4c84e8babaed71deefc960637989963d789feafeb30112f5f53b2",
                 "6a88a28fe578581a5955246248473b0e1dce72623ade2d953dea34cc06a0ad3f"),
                ("task1-API-calls-dev", "ab73b5f54248dfc8aa6fdee8cc3909e09afab9591686f7a6e306d274c6bbf10a",
                 "2efb54ed74f9492ab6449e5aeb6aa3a89832c801bb8d1a577c43a5762671e565"),
                ("task1-API-calls-trn", "8eef6011ab86e886eb218e5859ee1015fdcdd8088aba53bd83b2c055671b9575",
                 "ce4c0338526f8937b4b6ce97c09fe2c5f9821fc105d2dc372067d8f6e55fbf83"),
                ("task1-API-calls-tst-OOV", "71a294d91bef207b26f9c29981a501d20b4392262f6873bb4f9c18ffee522c60",
                 "95bd28528d14e3373088fff1aa72b4278414176c018b5f7b2d2f1f05bd427b01"),
                ("task1-API-calls-tst", "21a3ed26c483ec205d268fa3919f9c48cde48c34e26f79b2f96bd6f4edb60583",
                 "4e51d45e545de688f13f2fcf3e0604b82a8f940ff88d4d147573a0cf11bdb4f4"),
                ("task2-API-refine-dev", "7825f7c3f48bab3f48f398ef0e40a9689fa40c3979a199df615bc7aad5db11c4",
                 "99f34816fb743109934e384e77ca5e5efbb419341e0a51067a9f8153b86462a0"),
                ("task2-API-refine-trn", "2bd2d0ee376077878754ad4bf0892ca192658f4f0359ef92b18163ba20eeb568",
                 "033f4f12624de89de9ee98fe2f8ff4549d2458bab0052e68e46e387aa4599692"),
                ("task2-API-refine-tst-OOV", "9fd9ab3b3522ebba0ce0e76416ba9ba57634edd67f88005af8198063c854fc15",
                 "4a205716cc46c8a8aa489b6c39b8b61eafe8b98fd02a5913da740193905cedba"),
                ("task2-API-refine-tst", "2d79edb4bcfa120e9e293ddba52b790f109c1648be8c491442a26e6a9a286b40",
                 "3327a791fa1007fe3edbcca6b7899d85f3dda1230a2fee2424118d83c8616134"),
                ("task3-options-dev", "f2b28ff18f3aa0664924862d185bee0ba29b76981f1cc36c5fb80598cc642985",
                 "699b0e966388b2e8fafb7793ba5985d96d219099249053b99ff1da782a997bf6"),
                ("task3-options-trn", "3e53cf51a2346b7090f9cd5c3a83397b4b63d0c9e1780a6789b6a24781abdead",
                 "b18d2e65c8576e0d4b6c32cf3336a2e43eab1a1b5f58b887fd30de1002633794"),
                ("task3-options-tst-OOV", "8b9c68288f4240874e63da8720b136fee2a7e2dc4d38c97174acecfdb36e0adb",
                 "0660ea75cf1d6584b95171e32b566e9df70c5d8c9e1d9a36cf543645b60bcc9c"),
                ("task3-options-tst", "bf3cf65eb059a422fd3839fe2706f62171a0b196ed5216d555843ed0c78a2c40",
                 "63375af7c790f5558d7f1de097f0f23442bba3cc35ebc6ec26dbae5cf2bf457a"),
                ("task4-phone-address-dev", "956969c043b7476944f5dee93e4fb0f6899917c62522bc336948a3d40ad127e4",
                 "a49771d55c11d27700e1b6789036c6d8de49c6fa56095ad3a017162ed498965d"),
                ("task4-phone-address-trn", "5c9471e4e0992412de71e2427d03152f1198238ada99d1a463550486bd14f551",
                 "68ae34b7e150beccfeab68428b5cbf90710329e5b3074269a01ccfdc5bfba981"),
                ("task4-phone-address-tst-OOV", "504db67af3dad160b9c4af3d8c4e25ac8136408a161a0f4005f648402d194e59",
                 "a310e532c167a05dca601eed14642d428ad0392362efe595b58909afd9318581"),
                ("task4-phone-address-tst", "19fa3c011d4bc90e6e6d299644f7203a5a613f448a7d127eb866fe58512adbb3",
                 "b0d75fc88ea41ffa2665383d6c2383beaf678d7c33aa3f759e880a2587e0b3b1"),
                ("task5-full-dialogs-dev", "1b5c95aee4b3120872af02840537508f9c585daea95e893c1ee7bc85c320d0e3",
                 "08f514c566c4e63d1e98608dfc8f83c032615f62b815463e001a54169b0bad43"),
                ("task5-full-dialogs-trn", "4200d60e301a94ba5a3f0675179d0f5f51ea1ac52d8cc855cd62a2e7e2a6b2d9",
                 "4e38d04cb4528ea9815b73a311c823bff625863c7df7435a3da3b5b2bc034185"),
                ("task5-full-dialogs-tst-OOV", "e009111ff20308c0abdb3356d2449f140939ded022623578b2e1e4263b1a8350",
                 "e61641d069376d08cb2e04a47bf60d7aed1a8ff5a49209a167dd5746a0ae3d8b"),
                ("task5-full-dialogs-tst", "584d16f1931de4793a983fbf0bfbfc3adb5f2feff974005eaddf7459debce8af",
                 "4032fafad4f44b0703ff404bcad42521d6920ce0d3246fd27b2c16736ad8dfc8"),
                ("task6-dstc2-candidates", "0ad2c7f9f8a34ee4d700ea6e1ac5dd3b0c4b1af4a3233b018b62c8c3c235827d",
                 "a69e7269f11f7329d044d92b10dc40606268203fd24b4efaf0c0de71d0c981db"),
                ("task6-dstc2-dev", "24e8827b8889ef9bc9f1a0c625cef2ca6e3b7097f765ce71d186e2bdef27074b",
                 "48ceb60fcaf2dbf2956573ddc47c6ff6f5a34a65db75d2eb242d540e288290e6"),
                ("task6-dstc2-trn", "bd7c5728825edba23e308cba5b9b24412ea363cd54c3d2fd6a99854447585852",
                 "c9a64d52ea677081a1fad7bfbf7162f1e39151c429c59484bdca5d003f6350d3"),
                ("task6-dstc2-tst", "794890f7190c77af0ed0d5855f6c9ed015671a9790ec44ec3f29ff5455da24ff",
                 "9632558b6bd7407d8267545d2cb717460a9772d3ca3c7acab3465fad7e607592"),
            )),
        ), "dialog_babi/", "data/dialog-bAbI-tasks/"),
        ("HLTCHKUST/Mem2Seq", "4224ccf9e14956115cfdc98814d340d9bd7b953e", (
            ("README.txt", "3ee02157e234ac565f869d8116d31b883b6a93cbb12b5808031faf214097bb69"),
            ("dialog-babi-task6-dstc2-kb.txt", "cae1e86f50c4bc40d0cc1b5429ea0fa6245a83d99ce6a68b120634b373328552"),
        ), "dialog_babi/", "data/dialog-bAbI-tasks/"),
    ),
)}
"""Every dataset's `Source`, by name."""


def source(name: str) -> Source:
    """The `Source` of dataset `name`.

    Raises:
        ValueError: unknown dataset; the message lists the valid names.
    """
    try:
        return SOURCES[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; valid: {sorted(SOURCES)}") from None
