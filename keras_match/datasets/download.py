"""Fetch benchmark files into the data directory, verified by sha256.

Every dataset has a manifest (:data:`MANIFESTS`): the files the loaders and the evaluation read, each with its
path relative to the data directory and the sha256 of its bytes (from the data folder's ``SOURCE.md``).

Where a file is fetched from, first match wins:

1. the ``base_url`` argument, then the ``KERAS_MATCH_DATA_URL`` environment variable: a mirror of the data
   directory, each file at ``base_url + "/" + relative_path`` (``http(s)://`` or ``file://``);
2. the file's public origin: a raw GitHub URL at the repository, commit and path listed in the dataset's
   ``SOURCE.md``, for the files stored there unmodified: WikiQA's files, SICK's SemEval-2014 files and readme,
   SNLI's JSONL files, and MSRP's ``LICENCE.html`` / ``README.html``. The TrecQA and SemEval TSV / qrels files
   were derived by the data curators and MSRP's corpus files were gzip'd by them: those exist nowhere else, and
   without a mirror they cannot be downloaded.

Each file is written to a temporary file next to its destination, checked against its sha256 and only then
moved into place (``os.replace``), so an interrupted or corrupt download never leaves a partial file behind.
Only the standard library (``urllib``) is used.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from keras_match.datasets.paths import ENV_DATA_URL, env_value, resolve_data_dir

TIMEOUT = 60
"""Seconds before a stalled connection is abandoned."""

_CHUNK = 1 << 16


class DownloadError(RuntimeError):
    """A file could not be downloaded (no source, network or HTTP error)."""


class ChecksumError(DownloadError):
    """A downloaded file does not have the expected sha256; nothing was written."""

    def __init__(self, url: str, expected: str, actual: str):
        self.url, self.expected, self.actual = url, expected, actual
        super().__init__(f"sha256 mismatch for {url}: expected {expected}, got {actual}")


@dataclasses.dataclass(frozen=True)
class RemoteFile:
    """One file of a dataset.

    Args:
        path: the path relative to the data directory, ``/``-separated.
        sha256: the hex sha256 of the file's bytes.
        origin: the public URL of the unmodified original, or ``None`` when the file has none.
    """

    path: str
    sha256: str
    origin: str | None = None


def _github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


_WIKIQA_SOURCES = {  # repository, commit, folder (wikiqa/SOURCE.md)
    "corpus": (
        "rohantilva/Google-Like-Question-Answering-System",
        "33b4bc236eebccb53dcfb396bfcccf3f88cf48dd",
        "data/WikiQA",
    ),
    "qrels": ("l11x0m7/Question_Answering_Models", "b53c33db08a51f8e5f8c774eb65ec29c75942c66", "cQA/data/WikiQA/raw"),
}


def _wikiqa(name: str, sha256: str, source: str) -> RemoteFile:
    repo, commit, folder = _WIKIQA_SOURCES[source]
    return RemoteFile(f"wikiqa/{name}", sha256, _github(repo, commit, f"{folder}/{name}"))


_DATASET_STS = ("brmson/dataset-sts", "e1d3375f5b3bc24f21aa4e46f96eb379e9fc1081")  # sick/ and msrp/SOURCE.md
_INFERBEDDINGS = ("uclnlp/inferbeddings", "80492a7aebcdcac21e758514c8af403d77e8594a")  # snli/SOURCE.md


MANIFESTS: dict[str, tuple[RemoteFile, ...]] = {
    "trecqa": tuple(
        RemoteFile(f"trecqa/{path}", sha256)
        for path, sha256 in (
            ("tsv/train-all.tsv.gz", "b26d7627215a7d5bd6372c00a5d604eab9e3b3f9be7bc50e1ebfc9eb8bce06df"),
            ("tsv/train.tsv", "51e42e48fcb786b851842d7ad185ca9e11ab0ed51119da9055aa6a7d21a64a96"),
            ("tsv/clean-dev.tsv", "d19e58f7a2f22e9ad2e3a57326edc0938dd1f34908b3c7b81e6a70668940f497"),
            ("tsv/clean-test.tsv", "b0202f69c9c636a279cf4bf6d7b6a21e5c009bcd0b6fcb73152d4240d5333f15"),
            ("tsv/raw-dev.tsv", "79fb07e56369ce99bea04a2c4b5bb33f58a2fb6c39a73d025781cbb3892adc9b"),
            ("tsv/raw-test.tsv", "52be2526d5da9b30f586d96a1faf9cb981406af3a9914ae16b7ab7abb9b85b1b"),
            ("qrels/train-all.qrels", "92fde621e06d729096f1c0e7d0eac104c547f2063af4e428e9493a9401d1e6b5"),
            ("qrels/train.qrels", "fdd4dfa374dbd83ccc3bd2afcda5257d0359d9907ee636f8aa8bd521fc9fc0e5"),
            ("qrels/clean-dev.qrels", "9214a62fa67e889e6f3dd37a3bc89ac496e00bf2141d54959b08d6765146cf0f"),
            ("qrels/clean-test.qrels", "27d847abf29b8ab239033fc09f34643f460f5a3e71c631f9e3028982c40cfe79"),
            ("qrels/raw-dev.qrels", "1a160049d557277fbca73cc4e570619cc6f97b64a0acb09446fafce3158a9117"),
            ("qrels/raw-test.qrels", "c372f5684221616c97c0534f62681c5bbf1e431b11f21adbc2322047f9112b22"),
        )
    ),
    "wikiqa": tuple(
        _wikiqa(name, sha256, source)
        for name, sha256, source in (
            ("WikiQA-train.tsv.gz", "a176cfb7e9f9a6c838ba5556e1b9214cbfaee0dfd18d6d5de0f627a69d597e5a", "corpus"),
            ("WikiQA-dev.tsv.gz", "588f6976ccb1ba9ad27359573dd55bbd95d31c65effa47b396bce1382477fb6e", "corpus"),
            ("WikiQA-test.tsv.gz", "c8085521a6ce28a2405f10c394d53e0b2a0cb59ed5178a7f145228fd2d94c4bc", "corpus"),
            ("LICENSE.pdf", "0a7f8a724eb30c1ff1f322d007693b4a0c79a9025ee525c605dfe88dc44eac89", "corpus"),
            ("README.txt", "8eaf9607c12263fd393cefb101e434f53436c021812c67a12bcd9fe5100fc23f", "qrels"),
            ("WikiQA-train.ref", "aed4d2e086c1b8736b30c6914934a81bff997f2259f1c80a70f41d1575ecde7d", "qrels"),
            ("WikiQA-dev.ref", "ea76242babd382499c6a1490f2a799c7a7420f6d9828c3b488e19c82db36f01e", "qrels"),
            ("WikiQA-test.ref", "a91e7aa065c350d9935a98de880c8a53825747c553a416b28ad3e1ba5a677d42", "qrels"),
            ("WikiQA-dev-filtered.ref", "f79cb9958ed6ed5fd734d4b8957aa3398c33a4cd204469a25b020f7c72fc36da", "qrels"),
            ("WikiQA-test-filtered.ref", "b54e30ce1311138309a9417b8ea018b9d26b58404f835d321338182ff0dabbe4", "qrels"),
        )
    ),
    "semeval2016": tuple(
        RemoteFile(f"semeval2016_task3_cqa/subtaskA/{path}", sha256)
        for path, sha256 in (
            ("train-part2.tsv", "88ac157082a1a9fc79acc0250f577ebb94e1829d4cc9346a9722f629baf91664"),
            ("dev.tsv", "82fc2a06c22e558f2f247f96c05c599537dec134bb92bd23f9c2a58ef5b47426"),
            ("train-part2.qrels", "98c4a161fb54ea1c611a74e93b4b3c2620573dac1e46083426d22b154bb8d7b6"),
            ("dev.qrels", "6ad8bdeb777a54fb2dd8b23aa640724eb5481b80cdb96d5f08de9354b6d1c413"),
        )
    ),
    "sick": tuple(
        RemoteFile(f"sick/semeval2014_task1/{name}", sha256, _github(*_DATASET_STS, f"data/sts/sick2014/{name}"))
        for name, sha256 in (
            ("SICK_train.txt", "266cf8047149bd1d68138dd30439f3122bff30069740ac6705bb6197d9f1b48e"),
            ("SICK_trial.txt", "5a88cfb62f8c6bd2a3cce0f2421ba2cb8c2be5ab4a800f6f01e2c64aafb7db56"),
            ("SICK_test_annotated.txt", "2b8aa806658d6fc23c6824c83776c2d4fee7556000817b5ec0f982861413b7d0"),
            ("readme.txt", "4ff14a2b07603f2214c2803a6e012048c795be5ba4e5d1d33b87d7210f633bf7"),  # the license
        )
    ),
    "snli": tuple(
        RemoteFile(f"snli/{name}", sha256, _github(*_INFERBEDDINGS, f"data/snli/{name}"))
        for name, sha256 in (
            ("snli_1.0_dev.jsonl.gz", "e5cfcc71b4846c40e06bae364a13312adeb434884e9a7cedf67037bdd212e39d"),
            ("snli_1.0_test.jsonl.gz", "ef5f0721f18e6aafd80f0d67aa2ef9784277aa08ba6a582c03fc381367282ac5"),
        )
    ),
    "msrp": (
        # gzip'd by the data curators (the decompressed bytes are the originals): no public origin of these bytes
        RemoteFile(
            "msrp/msr_paraphrase_train.txt.gz", "c752ce9b61c2090a6f578fd651fd5227e3932f4a31d002826f932ec57e5cf55a"
        ),
        RemoteFile(
            "msrp/msr_paraphrase_test.txt.gz", "20ccc1309163adfd143b66298db672499cee378a5bc87c936608dde5eea41444"
        ),
        # the license requires keeping LICENCE.html with the data
        *(
            RemoteFile(f"msrp/{name}", sha256, _github(*_DATASET_STS, f"data/para/msr/{name}"))
            for name, sha256 in (
                ("LICENCE.html", "dcfa8f5fd4ab9fdf4526f9ce0882327e8ee8d792b39f58783de53255a48d933c"),
                ("README.html", "61d3c7c52b56c54a4d48a2373016a67763f82ed5cc28772d627d47d46e729df2"),
            )
        ),
    ),
}


def manifest(name: str) -> tuple[RemoteFile, ...]:
    """The files of a dataset.

    Args:
        name: a dataset name (see :func:`keras_match.datasets.names`).

    Returns:
        The dataset's :class:`RemoteFile` entries.

    Raises:
        ValueError: unknown dataset; the message lists the valid names.
    """
    try:
        return MANIFESTS[name]
    except KeyError:
        raise ValueError(f"unknown dataset {name!r}; valid: {list(MANIFESTS)}") from None


def sha256_of(path) -> str:
    """The sha256 of a file's bytes.

    Args:
        path: the file.

    Returns:
        The lowercase hex digest.
    """
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(name: str, data_dir=None, base_url: str | None = None) -> list[Path]:
    """Download the missing files of a dataset into the data directory; present files are left alone.

    Args:
        name: the dataset (``"trecqa"``, ``"wikiqa"``, ``"semeval2016"``, ``"sick"``, ``"snli"``, ``"msrp"``).
        data_dir: the target directory; default ``$KERAS_MATCH_DATA``, else the user cache
            (see :func:`keras_match.datasets.resolve_data_dir`).
        base_url: URL of a mirror of the data directory; default ``$KERAS_MATCH_DATA_URL``, else each file's
            public origin (WikiQA, SICK, SNLI; for MSRP only the license and readme).

    Returns:
        The paths of the files downloaded (empty when nothing was missing).

    Raises:
        ValueError: unknown dataset.
        DownloadError: a missing file has no source (TrecQA, SemEval and MSRP without a mirror URL; raised
            before anything is fetched), or fetching a file failed.
        ChecksumError: a downloaded file has the wrong sha256 (its temporary file is deleted).
    """
    files = manifest(name)
    root = resolve_data_dir(data_dir)
    base = base_url or env_value(ENV_DATA_URL)
    base = base.rstrip("/") if base else None
    missing = [f for f in files if not (root / f.path).is_file()]
    sourceless = [f.path for f in missing if base is None and f.origin is None]
    if sourceless:
        raise DownloadError(
            f"{name}: no public download source for {sourceless}: these files were derived by the data curators "
            f"and exist only in copies of the data directory. Set {ENV_DATA_URL} (or pass base_url) to the URL of "
            f"a mirror of the data directory, or point data_dir / KERAS_MATCH_DATA at a local copy."
        )
    done = []
    for entry in missing:
        url = f"{base}/{entry.path}" if base else entry.origin
        done.append(fetch(url, root / entry.path, entry.sha256))
    return done


def fetch(url: str, destination, sha256: str) -> Path:
    """Download one URL to ``destination`` atomically, verifying its sha256.

    Args:
        url: the source URL (``http``, ``https`` or ``file``).
        destination: the final path; parent folders are created.
        sha256: the expected hex sha256.

    Returns:
        ``destination`` as a :class:`~pathlib.Path`.

    Raises:
        DownloadError: the request failed.
        ChecksumError: the bytes received do not match ``sha256``; nothing is left behind.
    """
    destination = Path(destination)
    destination.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=destination.parent, prefix=f".{destination.name}.", suffix=".part")
    try:
        digest = hashlib.sha256()
        with os.fdopen(handle, "wb") as out:
            try:
                with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                    for chunk in iter(lambda: response.read(_CHUNK), b""):
                        digest.update(chunk)
                        out.write(chunk)
            except (urllib.error.URLError, OSError, ValueError) as e:
                raise DownloadError(f"failed to download {url}: {e}") from e
        actual = digest.hexdigest()
        if actual != sha256.lower():
            raise ChecksumError(url, sha256.lower(), actual)
        os.replace(temporary, destination)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return destination


def verify(name: str, data_dir=None) -> list[Path]:
    """Check the present files of a dataset against their sha256.

    Args:
        name: the dataset.
        data_dir: the data directory (resolved as in :func:`download`).

    Returns:
        The files checked (missing files are skipped).

    Raises:
        ValueError: unknown dataset.
        ChecksumError: a file's sha256 differs (its ``url`` attribute is the local path).
    """
    root = resolve_data_dir(data_dir)
    checked = []
    for entry in manifest(name):
        path = root / entry.path
        if path.is_file():
            actual = sha256_of(path)
            if actual != entry.sha256:
                raise ChecksumError(str(path), entry.sha256, actual)
            checked.append(path)
    return checked
