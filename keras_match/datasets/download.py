"""Fetch every benchmark from its public originals and build the derived files, all verified by sha256.

A dataset's files (`keras_match.datasets.sources`) are its **originals**, fetched unmodified from a pinned commit
of a public GitHub repository (`https://raw.githubusercontent.com/OWNER/REPO/COMMIT/PATH`, or the same path under
`$KERAS_MATCH_GITHUB_URL`), and its **derived** files (TrecQA's and SemEval-2016's TSV / qrels files), built from
the originals exactly as the data folder's `SOURCE.md` files describe (`keras_match.datasets.builders`).

`download(name)` fetches what is missing or damaged and builds what is missing or damaged; `verify(name)` reports
every file as OK / missing / damaged; `ensure(name, files)` is what the loaders call: it fetches on first use into
the user cache and checks each file they read against its pinned digest.

Nothing partial is ever left where a loader looks: each transfer (`keras.utils.get_file`, with its progress bar and
sha256 check) goes to a private folder inside the data directory (`.keras_match-download-*`, removed on every
path), and a file is moved into place (`os.replace`) only once its sha256 is the pinned one; a built file is
written the same way after its digest is checked. A failed command therefore leaves no file a later command could
take for data, and the next command retries.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib
import os
import shutil
import tempfile
from pathlib import Path

from keras_match.datasets import sources
from keras_match.datasets.paths import ENV_DATA, cache_dir, env_value, file_identity, resolve_data_dir

_CHUNK = 1 << 16

OK, MISSING, DAMAGED = "OK", "missing", "damaged"
"""The states `verify` reports."""


class DataError(RuntimeError):
    """A benchmark's data cannot be used: missing, damaged, or it could not be fetched or built (exit status 1)."""


class DownloadError(DataError):
    """An original could not be fetched (network, HTTP status, refused connection, truncated transfer)."""


class ChecksumError(DownloadError):
    """A fetched or built file does not have its pinned sha256; nothing was written.

    Attributes:
        url: where the bytes came from (a URL, or the path of a file on disk).
        expected, actual: the pinned and the measured hex sha256.
    """

    def __init__(self, url: str, expected: str, actual: str, what: str = ""):
        self.url, self.expected, self.actual = url, expected, actual
        super().__init__(what or f"sha256 mismatch for {url}: expected {expected}, got {actual}")


class MissingDataError(DataError, FileNotFoundError):
    """A benchmark file is not in the data directory (and was not fetched: an explicit data directory, or
    `download=False`). Also a `FileNotFoundError`; its `filename` is the path looked for."""

    def __init__(self, message: str, path):
        DataError.__init__(self, message)
        self.filename = str(path)
        self.strerror = message

    def __str__(self):
        return self.strerror


def names() -> list[str]:
    """The datasets that can be fetched (`keras-match data download NAME`)."""
    return list(sources.SOURCES)


def sha256_of(path) -> str:
    """The lowercase hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


# ---- the state of a data directory ---------------------------------------------------------------------------

def locate_file(root, entry: sources.DataFile) -> tuple[Path | None, str | None]:
    """The present form of a file (plain, else the data folder's `.gz` copy) and its pinned digest.

    Returns:
        `(path, sha256)`, or `(None, None)` when no form is present.
    """
    for relative, digest in entry.forms():
        path = Path(root) / relative
        if path.is_file():
            return path, digest
    return None, None


_DIGESTS: dict[tuple, str] = {}
"""sha256 of files already hashed by this process, by `paths.file_identity` (resolved path, inode, size,
modification time): a loader's check after `ensure`'s, or a build's after a download's, does not read the file
again, nor does a link to a file already hashed; a rewritten file is hashed anew."""


def _cached_sha256(path: Path) -> str:
    key = file_identity(path)
    if key not in _DIGESTS:
        _DIGESTS[key] = sha256_of(path)
    return _DIGESTS[key]


def file_state(root, entry: sources.DataFile) -> tuple[str, Path]:
    """`(OK | MISSING | DAMAGED, path)` of one file (the plain path when missing)."""
    path, digest = locate_file(root, entry)
    if path is None:
        return MISSING, Path(root) / entry.path
    return (OK if _cached_sha256(path) == digest else DAMAGED), path


def verify(name: str, data_dir=None) -> list[tuple[str, str, Path]]:
    """Check every file of a dataset against its pinned sha256.

    Args:
        name: a dataset of `names()`.
        data_dir: the data directory (default `$KERAS_MATCH_DATA`, else the user cache).

    Returns:
        `(relative path, state, path)` per file, originals first; `state` is `"OK"`, `"missing"` or `"damaged"`.

    Raises:
        ValueError: unknown dataset.
    """
    root = resolve_data_dir(data_dir)
    return [(entry.path, *file_state(root, entry)) for entry in sources.source(name).files]


# ---- fetching and building -----------------------------------------------------------------------------------

def fetch_hint() -> str:
    """What to do when the origins cannot be reached."""
    return (f"offline or behind a proxy? set ${sources.ENV_GITHUB_URL} to a mirror of raw.githubusercontent.com "
            f"(OWNER/REPO/COMMIT/PATH), or --data-dir / ${ENV_DATA} to a folder that holds the data")


@contextlib.contextmanager
def _staging(root: Path):
    """A private folder inside `root` for transfers in progress, removed on every path."""
    root.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(dir=root, prefix=".keras_match-download-"))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def fetch(entry: sources.Original, root, staging: Path) -> Path:
    """Fetch one original into `root / entry.path`, verified against its sha256.

    The transfer is `keras.utils.get_file` (progress bar, sha256 check) into `staging`; the file is moved into
    place only when its digest is the pinned one.

    Returns:
        The path written.

    Raises:
        DownloadError: the transfer failed (the message names the file and the URL).
        ChecksumError: the bytes received are not the pinned ones (damaged or truncated); nothing is written.
    """
    import keras

    url = entry.url()
    part = staging / f"{len(list(staging.iterdir()))}-{Path(entry.path).name}"
    try:
        keras.utils.get_file(part.name, url, cache_dir=str(staging), cache_subdir="")
    except BaseException as error:
        part.unlink(missing_ok=True)
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        reason = " ".join(str(error).split()) or type(error).__name__
        raise DownloadError(f"cannot fetch {entry.path} from {url}: {reason}; {fetch_hint()}") from None
    actual = sha256_of(part)
    if actual != entry.sha256:
        size = part.stat().st_size
        part.unlink()
        raise ChecksumError(url, entry.sha256, actual,
                            f"{entry.path} fetched from {url} is damaged or truncated ({size:,} bytes, sha256 "
                            f"{actual[:12]}..., expected {entry.sha256[:12]}...); nothing was kept: run the "
                            "command again, or check the mirror")
    destination = Path(root) / entry.path
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.replace(part, destination)
    return destination


def original_bytes(root, entry: sources.Original) -> bytes:
    """An original's bytes as at its origin, from its plain file in `root` or the data folder's `.gz` copy
    (gunzipped).

    Raises:
        AttributeError: neither form is present (check `file_state` first).
    """
    path, _ = locate_file(root, entry)
    data = path.read_bytes()
    return gzip.decompress(data) if path.name.endswith(".gz") and not entry.path.endswith(".gz") else data


def build(name: str, data_dir=None, *, log=print) -> list[Path]:
    """Build a dataset's derived files from its originals (which must be present and intact).

    Every built file's sha256 is checked against the pinned one before any is written (each atomically).

    Returns:
        The paths written (empty for a dataset without derived files).

    Raises:
        MissingDataError: an original is missing or damaged.
        ChecksumError: a built file differs from the pinned one (names the file; nothing of it is written).
        keras_match.datasets.base.DataFormatError: an original is malformed (the builder names file and line).
    """
    source = sources.source(name)
    if not source.builder:
        return []
    root = resolve_data_dir(data_dir)
    module, function = source.builder.split(":")
    builder = getattr(importlib.import_module(module), function)
    originals = {entry.path: entry for entry in source.originals}
    for entry in source.originals:
        if file_state(root, entry)[0] != OK:
            raise MissingDataError(f"{name}: the original {entry.path} is missing or damaged in {root}; fetch it "
                                   f"with `{fetch_command(name, root)}`", root / entry.path)
    built = builder(lambda path: original_bytes(root, originals[path]))
    for entry in source.derived:  # every file is checked before any is written
        actual = hashlib.sha256(built[entry.path]).hexdigest()
        if actual != entry.sha256:
            raise ChecksumError(entry.path, entry.sha256, actual,
                                f"{name}: the built {entry.path} differs from the pinned file (sha256 "
                                f"{actual[:12]}..., expected {entry.sha256[:12]}...); nothing was written; please "
                                "report this")
    written = []
    for entry in source.derived:
        data = built[entry.path]
        destination = root / entry.path
        destination.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=destination.parent, prefix=f".{destination.name}.", suffix=".part")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            os.replace(temporary, destination)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        rows = data.count(b"\n") - (1 if entry.path.endswith(".tsv") else 0)
        log(f"built {entry.path} ({rows:,} {'rows' if entry.path.endswith('.tsv') else 'lines'})")
        written.append(destination)
    return written


def download(name: str, data_dir=None, *, log=print) -> dict:
    """Fetch a dataset's missing or damaged originals, then build its missing or damaged derived files.

    Args:
        name: a dataset of `names()` (`"trecqa"`, `"semeval2016"`, `"wikiqa"`, `"sick"`, `"snli"`, `"msrp"`,
            `"dialog-babi"`).
        data_dir: the target directory (default `$KERAS_MATCH_DATA`, else the user cache).
        log: where the progress lines go (`print`; `get_file` draws its own progress bar per file).

    Returns:
        `{"data_dir", "fetched": [paths], "built": [paths], "bytes_fetched"}`.

    Raises:
        ValueError: unknown dataset.
        DownloadError / ChecksumError: a transfer failed or gave other bytes (one line: file, URL, what to do);
            the files fetched before it are kept (they are intact), nothing partial is.
        keras_match.datasets.base.DataFormatError: an original is malformed.
    """
    source = sources.source(name)
    root = resolve_data_dir(data_dir)
    fetched, built, size = [], [], 0
    stale = [entry for entry in source.originals if file_state(root, entry)[0] != OK]
    if stale:
        log(f"{name}: fetching {len(stale)} original file(s) into {root}")
        with _staging(root) as staging:
            for entry in stale:
                path = fetch(entry, root, staging)
                fetched.append(path)
                size += path.stat().st_size
    if any(file_state(root, entry)[0] != OK for entry in source.derived):
        built = build(name, root, log=log)
    if fetched or built:
        log(f"{name}: {len(source.files)} files ready in {root} ({len(fetched)} fetched, {size:,} bytes; "
            f"{len(built)} built)")
    return {"data_dir": str(root), "fetched": fetched, "built": built, "bytes_fetched": size}


# ---- what the loaders call -----------------------------------------------------------------------------------

def fetch_command(name: str, root: Path) -> str:
    """The command that fetches a dataset into `root`."""
    where = "" if root == cache_dir() else f" --data-dir {root}"
    return f"keras-match data download {name}{where}"


def _entries(name: str, relative_files) -> list[sources.DataFile]:
    entries = {entry.path: entry for entry in sources.source(name).files}
    return [entries.get(relative) or sources.DataFile(relative, "") for relative in relative_files]


def ensure(name: str, relative_files, data_dir=None, download_missing=None) -> Path:
    """The data directory, with every file a loader reads present (see `check_intact` for their digests).

    Args:
        name: the dataset (a key of `keras_match.datasets.sources.SOURCES`).
        relative_files: the files the loader reads (plain names; a `.gz` copy is found too).
        data_dir: an explicit data directory, or None (`$KERAS_MATCH_DATA`, else the user cache).
        download_missing: fetch and build what is missing or damaged first; `None` (default): only when the data
            directory is the user cache (an explicit folder is never written to unasked).

    Returns:
        The resolved data directory.

    Raises:
        MissingDataError: a file is missing; one line naming the dataset, the folder and the fetch command.
        DownloadError: fetching failed.
    """
    root = resolve_data_dir(data_dir)
    wanted = _entries(name, relative_files)
    if download_missing is None:
        download_missing = data_dir in (None, "") and not env_value(ENV_DATA)
    if download_missing and any(file_state(root, entry)[0] != OK for entry in wanted if entry.sha256):
        download(name, root)
    for entry in wanted:
        if all(not (root / relative).is_file() for relative, _ in entry.forms()):
            raise MissingDataError(f"{name} is missing from {root} (no {entry.path}); fetch it with "
                                   f"`{fetch_command(name, root)}`", root / entry.path)
    return root


def check_intact(name: str, root, relative_files) -> None:
    """Check the files a loader has read against their pinned sha256 (after reading, so that a malformed file is
    reported by the reader with its line, and one that parses but differs, e.g. cut at a line end or with a label
    changed, is reported here).

    Raises:
        ChecksumError: a file's sha256 is not the pinned one; names it and the command that restores it.
    """
    for entry in _entries(name, relative_files):
        if entry.sha256:
            state, path = file_state(root, entry)
            if state == DAMAGED:
                raise ChecksumError(str(path), entry.sha256, "",
                                    f"{path} is damaged: its content differs from the pinned file (sha256); restore "
                                    f"it with `{fetch_command(name, Path(root))}`")
