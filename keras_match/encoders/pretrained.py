"""Named, pinned pretrained encoders: where their files come from, what they are, and where they are kept.

`PRETRAINED` maps a name (`"minilm-l6"`) to a `PretrainedEncoder`: the Hugging Face repository and the revision its
files are fetched from, each file's sha256 and size, the license and the parameter count. `locate(name)` returns
the folder holding those files, as keras-hub's `BertBackbone.from_preset(folder)` and
`BertTokenizer.from_preset(folder)` read it, every file checked against its pinned digest.

The encoders directory holds one folder per encoder, named as upstream names it::

    <encoders_dir>/all-MiniLM-L6-v2/{config.json, model.safetensors, vocab.txt, tokenizer_config.json, ...}

It is the `encoders_dir` argument, else `$KERAS_MATCH_ENCODERS` (the project's shared folder `../shared/models` in
tests and CI), else the user cache `encoders/` beside the datasets' `data/` (`$KERAS_MATCH_CACHE/encoders`, else
`~/.cache/keras_match/encoders`). Files missing from the user cache are fetched on first use from
`https://huggingface.co/<repo>/resolve/<revision>/<file>` (or the same path under `$KERAS_MATCH_HF_URL`, a mirror)
with the datasets' machinery (`keras_match.datasets.download`): `keras.utils.get_file` with its progress bar, into
a private staging folder, moved into place only once the sha256 is the pinned one, so nothing partial is ever
left where a loader looks. An explicit folder (argument or environment variable) is never written to unless
`download_missing=True`. The digests are cached per file path, inode, size and modification time, so a second load
in the same process does not hash the 91 MB weights again.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from keras_match.datasets.download import DAMAGED, MISSING, OK, ChecksumError, DownloadError, MissingDataError
from keras_match.datasets.download import _cached_sha256, _staging, fetch, fetch_hint, file_state
from keras_match.datasets.paths import cache_dir, env_value
from keras_match.datasets.sources import DataFile

__all__ = ["PretrainedEncoder", "EncoderFile", "PRETRAINED", "names", "pretrained", "locate", "verify",
           "encoders_cache_dir", "resolve_encoders_dir", "hf_base", "ENV_ENCODERS", "ENV_HF_URL", "HUGGING_FACE",
           "MINILM_L6_REVISION"]

ENV_ENCODERS = "KERAS_MATCH_ENCODERS"
"""Environment variable naming the encoders directory (a folder holding `<upstream folder name>/`)."""

ENV_HF_URL = "KERAS_MATCH_HF_URL"
"""Environment variable replacing `HUGGING_FACE` in every origin URL (a mirror laid out as
`<repo>/resolve/<revision>/<file>`, or a local server in tests)."""

HUGGING_FACE = "https://huggingface.co"
"""The default prefix of every origin URL."""

MINILM_L6_REVISION = "1110a243fdf4706b3f48f1d95db1a4f5529b4d41"
"""The pinned commit of `sentence-transformers/all-MiniLM-L6-v2` on the Hugging Face Hub.

Established from public code that pins this revision together with the files' digests: several independent
projects quote, for this commit, `model.safetensors` sha256 53aa5117... and `tokenizer.json` sha256 be50c362...
(the sha256 of the shared folder's files), and the git blob ids of `config.json`, `tokenizer_config.json`,
`special_tokens_map.json`, `tokenizer.json`, `vocab.txt`, `modules.json` and `1_Pooling/config.json` (72b987fd...,
c79f2b6a..., e7b03750..., cb202bfe..., fb140275..., 952a9b81..., d1514c31...), which are the blob ids
(`git hash-object`) of the shared folder's files. Not checked against the Hub itself (no network access to it
here); the sha256 check of every fetched file guards against a wrong pin. The shared folder's `README.md` is not
upstream's at this commit (10,454 bytes against 10,502), so it is not one of the pinned files."""


def hf_base() -> str:
    """The URL prefix of origins: `$KERAS_MATCH_HF_URL` without a trailing `/`, else `HUGGING_FACE`."""
    return (env_value(ENV_HF_URL) or HUGGING_FACE).rstrip("/")


@dataclasses.dataclass(frozen=True)
class EncoderFile(DataFile):
    """One file of a pretrained encoder, kept at `path` (`<folder>/<file>`, relative to the encoders directory).

    A `keras_match.datasets.sources.DataFile`, so the datasets' digest cache and transfer (`file_state`, `fetch`)
    serve it unchanged.

    Args:
        path: where the file is kept, relative to the encoders directory.
        sha256: the hex sha256 of the file's bytes.
        repo: the Hugging Face repository, `OWNER/NAME`.
        revision: the pinned commit (40 hex digits).
        origin_path: the file's path inside the repository.
        size: the file's size in bytes.
    """

    repo: str = ""
    revision: str = ""
    origin_path: str = ""
    size: int = 0

    def url(self) -> str:
        """The origin URL, under `hf_base()`: `<base>/<repo>/resolve/<revision>/<origin_path>`."""
        return f"{hf_base()}/{self.repo}/resolve/{self.revision}/{self.origin_path}"


@dataclasses.dataclass(frozen=True)
class PretrainedEncoder:
    """A pretrained encoder the zoo can load by name.

    Args:
        name: the zoo's name (`"minilm-l6"`).
        repo: the Hugging Face repository, `OWNER/NAME`.
        folder: the folder's name in the encoders directory (upstream's repository name).
        revision: the pinned commit of `repo`.
        files: the pinned files: those keras-hub reads (`config.json`, `model.safetensors`, `vocab.txt`,
            `tokenizer_config.json`), the tokenizer's other files and the sentence-transformers pooling settings.
        license: the terms, in a few words.
        parameters: the backbone's parameter count (keras-hub's `BertBackbone.count_params()`).
        hidden_dim: the width of the per-token states.
        num_layers: the number of transformer layers.
        pad_id: the WordPiece id of `[PAD]`.
        cls_id: the WordPiece id of `[CLS]`.
        sep_id: the WordPiece id of `[SEP]`.
        description: what it is, one sentence.
        reference: the papers.
    """

    name: str
    repo: str
    folder: str
    revision: str
    files: tuple[EncoderFile, ...]
    license: str
    parameters: int
    hidden_dim: int
    num_layers: int
    pad_id: int = 0
    cls_id: int = 101
    sep_id: int = 102
    description: str = ""
    reference: str = ""

    @property
    def weights_sha256(self):
        """The sha256 of its weights file (`model.safetensors`), which names these weights (state cache, presets)."""
        return {f.origin_path: f.sha256 for f in self.files}.get("model.safetensors")

    @property
    def size(self) -> int:
        """The bytes of all pinned files."""
        return sum(entry.size for entry in self.files)

    @property
    def origin(self) -> str:
        """The repository at its pinned revision, as a URL (independent of `$KERAS_MATCH_HF_URL`)."""
        return f"{HUGGING_FACE}/{self.repo}/tree/{self.revision}"


def _files(repo, revision, folder, entries):
    return tuple(EncoderFile(f"{folder}/{name}", sha256, repo=repo, revision=revision, origin_path=name, size=size)
                 for name, size, sha256 in entries)


_MINILM_L6 = PretrainedEncoder(
    name="minilm-l6",
    repo="sentence-transformers/all-MiniLM-L6-v2",
    folder="all-MiniLM-L6-v2",
    revision=MINILM_L6_REVISION,
    files=_files("sentence-transformers/all-MiniLM-L6-v2", MINILM_L6_REVISION, "all-MiniLM-L6-v2", (
        # read by keras-hub 0.32: BertBackbone.from_preset (config.json, model.safetensors) and
        # BertTokenizer.from_preset (config.json, tokenizer_config.json, vocab.txt)
        ("config.json", 612, "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
        ("model.safetensors", 90_868_376, "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
        ("vocab.txt", 231_508, "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ("tokenizer_config.json", 350, "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
        # the tokenizer's other files (Hugging Face tokenizers, other WordPiece implementations)
        ("special_tokens_map.json", 112, "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
        ("tokenizer.json", 466_247, "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        # the sentence-transformers pipeline (mean pooling, then L2 normalisation); keras-hub's BertTextEmbedder
        # reads both
        ("modules.json", 349, "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
        ("1_Pooling/config.json", 190, "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
    )),
    license="Apache-2.0 (the model card's front matter)",
    parameters=22_713_216,
    hidden_dim=384,
    num_layers=6,
    description=("all-MiniLM-L6-v2: a 6-layer, 384-wide, 12-head uncased BERT-family encoder (MiniLM-L6-H384) "
                 "trained by sentence-transformers as a sentence embedder (mean pooling, L2 normalisation) on "
                 "about 1 billion text pairs; WordPiece vocabulary of 30,522 tokens, at most 512 positions."),
    reference=("Wang et al., MiniLM: Deep Self-Attention Distillation for Task-Agnostic Compression of "
               "Pre-Trained Transformers, NeurIPS 2020; Reimers & Gurevych, Sentence-BERT: Sentence Embeddings "
               "using Siamese BERT-Networks, EMNLP 2019."),
)

PRETRAINED: dict[str, PretrainedEncoder] = {_MINILM_L6.name: _MINILM_L6}
"""Every pretrained encoder by name."""


def names() -> list[str]:
    """The names of the pretrained encoders (`locate(name)`, `TransformerEncoder(name)`)."""
    return list(PRETRAINED)


def pretrained(name: str) -> PretrainedEncoder:
    """The registry entry of `name`.

    Raises:
        ValueError: unknown name (the message lists the valid ones).
    """
    try:
        return PRETRAINED[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown pretrained encoder {name!r}; valid: {names()}") from None


def encoders_cache_dir() -> Path:
    """The user cache of encoders: `encoders/` beside the datasets' cache (`$KERAS_MATCH_CACHE/encoders`, else
    `~/.cache/keras_match/encoders`). It may not exist yet."""
    return cache_dir().parent / "encoders"


def resolve_encoders_dir(encoders_dir=None) -> Path:
    """The encoders directory: the argument, else `$KERAS_MATCH_ENCODERS`, else `encoders_cache_dir()` (empty
    values count as unset). Not checked for existence."""
    if encoders_dir is not None and str(encoders_dir) != "":
        return Path(encoders_dir).expanduser()
    env = env_value(ENV_ENCODERS)
    return Path(env).expanduser() if env else encoders_cache_dir()


def verify(name: str, encoders_dir=None) -> list[tuple[str, str, Path]]:
    """Check every pinned file of an encoder against its sha256 (digests cached per path, size and mtime).

    Returns:
        `(file, state, path)` per pinned file; `state` is `"OK"`, `"missing"` or `"damaged"`.

    Raises:
        ValueError: unknown name.
    """
    entry = pretrained(name)
    root = resolve_encoders_dir(encoders_dir)
    return [(file.origin_path, *file_state(root, file)) for file in entry.files]


def _fetch_hint() -> str:
    return (f"offline or behind a proxy? set ${ENV_HF_URL} to a mirror of {HUGGING_FACE} "
            f"(<repo>/resolve/<revision>/<file>), or ${ENV_ENCODERS} / encoders_dir to a folder that holds the "
            "encoder's folder")


def _fetch(entry: PretrainedEncoder, root: Path, stale, log) -> None:
    size = sum(file.size for file in stale)
    log(f"{entry.name}: fetching {len(stale)} file(s) ({size / 1e6:.1f} MB) of {entry.repo} at revision "
        f"{entry.revision[:12]} into {root / entry.folder}")
    with _staging(root) as staging:
        for file in stale:
            try:
                fetch(file, root, staging)
            except ChecksumError:
                raise
            except DownloadError as error:  # the datasets' hint names their variables; give the encoders' own
                raise DownloadError(str(error).replace(fetch_hint(), _fetch_hint())) from None


def locate(name: str, encoders_dir=None, download_missing=None, *, log=print) -> Path:
    """The folder holding a pretrained encoder's pinned files, each checked against its sha256.

    Args:
        name: a name of `names()` (`"minilm-l6"`).
        encoders_dir: a folder holding `<upstream folder name>/` (e.g. `../shared/models`), or None:
            `$KERAS_MATCH_ENCODERS`, else the user cache (`encoders_cache_dir()`).
        download_missing: fetch missing or damaged files from the origin (`$KERAS_MATCH_HF_URL` replaces
            `https://huggingface.co`); `None` (default): only when the folder is the user cache (an explicit
            folder is never written to unasked).
        log: where the progress lines go (`print`; `keras.utils.get_file` draws its own progress bar per file).

    Returns:
        `<encoders_dir>/<folder>` (`.../all-MiniLM-L6-v2`), ready for keras-hub's `from_preset`.

    Raises:
        ValueError: unknown name.
        MissingDataError (a `FileNotFoundError`): a file is missing and is not fetched; one line naming the file,
            the folder and how to fetch it.
        ChecksumError: a file's sha256 is not the pinned one (not fetched again), or a fetched file's bytes are not
            the pinned ones (nothing of it is kept); one line naming the file, both sha256 and what to do.
        DownloadError: a transfer failed (one line: file, URL, how to point at a mirror).

    Examples:
    >>> folder = locate("minilm-l6", "../shared/models")  # doctest: +SKIP
    >>> folder.name  # doctest: +SKIP
    'all-MiniLM-L6-v2'
    """
    entry = pretrained(name)
    root = resolve_encoders_dir(encoders_dir)
    if download_missing is None:
        download_missing = encoders_dir in (None, "") and not env_value(ENV_ENCODERS)
    states = [(file, *file_state(root, file)) for file in entry.files]
    stale = [file for file, state, _ in states if state != OK]
    if stale and download_missing:
        _fetch(entry, root, stale, log)
        states = [(file, *file_state(root, file)) for file in entry.files]
    how = (f"keras_match.encoders.locate({name!r}, {str(root)!r}, download_missing=True) fetches it from "
           f"{entry.origin}")
    for file, state, path in states:
        if state == MISSING:
            raise MissingDataError(f"the pretrained encoder {name} is incomplete in {root} (no {file.path}); "
                                   f"{how}", path)
        if state == DAMAGED:
            actual = _cached_sha256(path)
            raise ChecksumError(str(path), file.sha256, actual,
                                f"{path} is damaged: sha256 {actual}, expected {file.sha256} (the pinned "
                                f"{file.origin_path} of {entry.repo} at revision {entry.revision[:12]}); {how}, "
                                f"or copy it from {file.url()}")
    return root / entry.folder

