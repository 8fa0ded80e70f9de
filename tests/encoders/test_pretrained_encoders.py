"""Named, pinned pretrained encoders (`keras_match.encoders.pretrained`): the registry against the shared folder's
SOURCE.md, where `locate` looks, the sha256 check (cached), the one-line errors, and first-use fetching from a real
HTTP server on 127.0.0.1 laid out as the Hugging Face Hub (`<repo>/resolve/<revision>/<file>`). No other host is
contacted, and keras-hub is not needed here."""

import contextlib
import importlib
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest
from conftest import REPO, benchmark_module

from keras_match.datasets import ChecksumError, DownloadError, MissingDataError
from keras_match.datasets.download import OK
from keras_match.encoders import pretrained as registry
from keras_match.encoders.pretrained import locate, verify

dl = importlib.import_module("keras_match.datasets.download")  # the module (datasets.download is the function)
MINILM = registry.pretrained("minilm-l6")


def _encoders_dir():
    env = os.environ.get("KERAS_MATCH_ENCODERS")
    return pathlib.Path(env) if env else REPO.parent / "shared" / "models"


@pytest.fixture(scope="module")
def encoders_dir():
    """The shared pretrained-encoder folder (`../shared/models` or `$KERAS_MATCH_ENCODERS`); tests skip without."""
    path = _encoders_dir()
    if not (path / MINILM.folder / "config.json").is_file():
        pytest.skip(f"the pretrained encoders folder is not at {path} (no {MINILM.folder}/; set "
                    "KERAS_MATCH_ENCODERS)")
    return path


@pytest.fixture(autouse=True)
def _isolated_environment(monkeypatch, tmp_path):
    """No test reads the shared folder through the environment unless it says so, reaches the Hub, or writes to
    the real user cache."""
    monkeypatch.delenv("KERAS_MATCH_ENCODERS", raising=False)
    monkeypatch.setenv("KERAS_MATCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("KERAS_MATCH_HF_URL", "http://127.0.0.1:9/tests-never-reach-hugging-face")


def all_files(root):
    return sorted(str(p.relative_to(root)) for p in pathlib.Path(root).rglob("*") if p.is_file() or p.is_symlink())


def copy_encoder(encoders_dir, root, skip=()):
    """A copy of the pinned files in `root/<folder>/` (the 91 MB weights as a symbolic link), without `skip`."""
    for file in MINILM.files:
        if file.origin_path in skip:
            continue
        source, target = encoders_dir / file.path, root / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        if file.origin_path == "model.safetensors":
            target.symlink_to(source)
        else:
            shutil.copyfile(source, target)
    return root / MINILM.folder


@contextlib.contextmanager
def hub_mirror(encoders_dir, only=None):
    """benchmarks/github_mirror.py's handler serving the pinned files as `/<repo>/resolve/<revision>/<file>`:
    yields `(url, handler)`; `handler.faults[path] = "damage"` serves one byte changed, `handler.requests` lists
    the paths asked for."""
    base = benchmark_module("github_mirror").GitHubRaw
    handler = type("Hub", (base,), {"files": {}, "faults": {}, "requests": []})
    for file in MINILM.files:
        if only is None or file.origin_path in only:
            handler.files[hub_path(file)] = (encoders_dir / file.path).read_bytes()
    with benchmark_module("github_mirror").running(handler) as url:
        yield url, handler


def hub_path(file):
    return f"/{file.repo}/resolve/{file.revision}/{file.origin_path}"


# ---- the registry -----------------------------------------------------------------------------------------------


def test_minilm_is_pinned_with_its_license_size_and_parameters(monkeypatch):
    assert registry.names() == ["minilm-l6"]
    assert (MINILM.repo, MINILM.folder) == ("sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2")
    assert re.fullmatch(r"[0-9a-f]{40}", MINILM.revision) and MINILM.revision == registry.MINILM_L6_REVISION
    assert MINILM.license.startswith("Apache-2.0") and MINILM.parameters == 22_713_216
    assert (MINILM.hidden_dim, MINILM.num_layers) == (384, 6)
    keras_hub_reads = {"config.json", "model.safetensors", "vocab.txt", "tokenizer_config.json"}
    names = [file.origin_path for file in MINILM.files]
    assert keras_hub_reads | {"special_tokens_map.json", "tokenizer.json"} <= set(names) and len(set(names)) == 8
    assert MINILM.size == 91_567_744
    monkeypatch.delenv("KERAS_MATCH_HF_URL")
    config = next(file for file in MINILM.files if file.origin_path == "config.json")
    assert config.url() == ("https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/resolve/"
                            "1110a243fdf4706b3f48f1d95db1a4f5529b4d41/config.json")
    monkeypatch.setenv("KERAS_MATCH_HF_URL", "http://mirror.example/hf/")
    assert config.url() == ("http://mirror.example/hf/sentence-transformers/all-MiniLM-L6-v2/resolve/"
                            f"{MINILM.revision}/config.json")
    with pytest.raises(ValueError, match=r"unknown pretrained encoder 'bert-base'; valid: \['minilm-l6'\]"):
        locate("bert-base")


def test_the_digests_are_those_of_source_md_and_the_shared_folder(encoders_dir):
    source = (encoders_dir / MINILM.folder / "SOURCE.md").read_text()
    lines = [line.split() for line in source.splitlines() if re.fullmatch(r"[0-9a-f]{64}  \S+", line)]
    listed = {name: digest for digest, name in lines}
    for file in MINILM.files:
        assert listed[file.origin_path] == file.sha256, file.origin_path
        assert (encoders_dir / file.path).stat().st_size == file.size, file.origin_path
    assert [state for _, state, _ in verify("minilm-l6", encoders_dir)] == [OK] * len(MINILM.files)


# ---- where it is looked for -------------------------------------------------------------------------------------


def test_argument_then_environment_then_user_cache(encoders_dir, tmp_path, monkeypatch):
    copy = copy_encoder(encoders_dir, tmp_path / "copy")
    assert registry.resolve_encoders_dir() == tmp_path / "cache" / "encoders"
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(encoders_dir))
    assert locate("minilm-l6") == encoders_dir / "all-MiniLM-L6-v2"
    assert locate("minilm-l6", tmp_path / "copy") == copy
    monkeypatch.setenv("KERAS_MATCH_ENCODERS", "")
    assert registry.resolve_encoders_dir() == tmp_path / "cache" / "encoders"
    assert not (tmp_path / "cache").exists()


def test_a_missing_file_in_an_explicit_folder_is_one_line_and_nothing_is_written(encoders_dir, tmp_path,
                                                                                  monkeypatch):
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root, skip=["vocab.txt"])
    before = all_files(root)
    for where in ({"encoders_dir": root}, {}):
        if not where:
            monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(root))
        with pytest.raises(MissingDataError) as info:
            locate("minilm-l6", **where)
        message = str(info.value)
        assert isinstance(info.value, FileNotFoundError)
        assert info.value.filename == str(root / MINILM.folder / "vocab.txt")
        assert "\n" not in message
        assert message.startswith(f"the pretrained encoder minilm-l6 is incomplete in {root} (no "
                                  "all-MiniLM-L6-v2/vocab.txt)")
        assert f"locate('minilm-l6', '{root}', download_missing=True)" in message
    assert all_files(root) == before


def test_a_second_locate_does_not_hash_the_files_again(encoders_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(dl, "_DIGESTS", {})  # what earlier tests in this worker hashed must not count here
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root)
    hashed = []
    real = dl.sha256_of
    monkeypatch.setattr(dl, "sha256_of", lambda path: hashed.append(pathlib.Path(path).name) or real(path))
    locate("minilm-l6", root)
    assert sorted(hashed) == sorted(pathlib.Path(file.origin_path).name for file in MINILM.files)
    hashed.clear()  # a second folder whose weights link to the same file: the file is known by what it resolves to
    copy_encoder(encoders_dir, tmp_path / "copy2")
    locate("minilm-l6", tmp_path / "copy2")
    assert "model.safetensors" not in hashed and "vocab.txt" in hashed
    hashed.clear()
    locate("minilm-l6", root)
    assert hashed == []
    vocab = root / MINILM.folder / "vocab.txt"  # a rewritten file is hashed anew
    vocab.write_bytes(vocab.read_bytes())
    os.utime(vocab, ns=(1, 1))
    locate("minilm-l6", root)
    assert hashed == ["vocab.txt"]


def test_a_damaged_file_is_one_line_naming_it_both_digests_and_what_to_do(encoders_dir, tmp_path):
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root)
    target = root / MINILM.folder / "tokenizer_config.json"
    data = bytearray(target.read_bytes())
    data[10] ^= 1
    target.write_bytes(bytes(data))
    actual = dl.sha256_of(target)
    expected = "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
    with pytest.raises(ChecksumError) as info:
        locate("minilm-l6", root)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{target} is damaged: sha256 {actual}, expected {expected} (the pinned "
                              "tokenizer_config.json of sentence-transformers/all-MiniLM-L6-v2 at revision "
                              "1110a243fdf4)")
    assert f"locate('minilm-l6', '{root}', download_missing=True) fetches it" in message
    assert message.endswith(f"copy it from {MINILM.files[3].url()}") and "tokenizer_config" in MINILM.files[3].path
    assert (info.value.expected, info.value.actual) == (expected, actual)
    states = {name: state for name, state, _ in verify("minilm-l6", root)}
    assert states["tokenizer_config.json"] == "damaged" and list(states.values()).count(OK) == 7


# ---- fetching ---------------------------------------------------------------------------------------------------


def test_first_use_fetches_every_file_into_the_user_cache(encoders_dir, tmp_path, monkeypatch, capsys):
    with hub_mirror(encoders_dir) as (url, handler):
        monkeypatch.setenv("KERAS_MATCH_HF_URL", url)
        folder = locate("minilm-l6")
        assert folder == tmp_path / "cache" / "encoders" / "all-MiniLM-L6-v2"
        assert sorted(handler.requests) == sorted(hub_path(file) for file in MINILM.files)
        out = capsys.readouterr().out
        assert (f"minilm-l6: fetching 8 file(s) (91.6 MB) of sentence-transformers/all-MiniLM-L6-v2 at revision "
                f"1110a243fdf4 into {folder}") in out
        assert all_files(tmp_path / "cache" / "encoders") == sorted(file.path for file in MINILM.files)
        assert locate("minilm-l6") == folder and len(handler.requests) == 8  # present: not fetched again


def test_missing_files_of_a_folder_are_fetched_from_a_mirror(encoders_dir, tmp_path, monkeypatch):
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root, skip=["vocab.txt", "1_Pooling/config.json"])
    with hub_mirror(encoders_dir, only=["vocab.txt", "1_Pooling/config.json"]) as (url, handler):
        monkeypatch.setenv("KERAS_MATCH_HF_URL", url)
        assert locate("minilm-l6", root, download_missing=True) == root / MINILM.folder
        assert len(handler.requests) == 2
    assert [state for _, state, _ in verify("minilm-l6", root)] == [OK] * 8
    assert all_files(root) == sorted(file.path for file in MINILM.files)  # no staging folder left


def test_wrong_bytes_from_the_mirror_keep_nothing_and_the_next_call_retries(encoders_dir, tmp_path, monkeypatch):
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root, skip=["vocab.txt", "tokenizer_config.json", "modules.json"])
    before = all_files(root)
    vocab = next(file for file in MINILM.files if file.origin_path == "vocab.txt")
    with hub_mirror(encoders_dir) as (url, handler):
        monkeypatch.setenv("KERAS_MATCH_HF_URL", url)
        handler.faults[hub_path(vocab)] = "damage"
        with pytest.raises(ChecksumError) as info:
            locate("minilm-l6", root, download_missing=True)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"all-MiniLM-L6-v2/vocab.txt fetched from {vocab.url()} is damaged or truncated "
                                  "(231,508 bytes, sha256 ")
        assert "expected 07eced375cec..." in message and "nothing was kept" in message
        assert all_files(root) == before  # neither the damaged file nor a partial one nor a staging folder
        handler.faults.clear()
        locate("minilm-l6", root, download_missing=True)
    assert [state for _, state, _ in verify("minilm-l6", root)] == [OK] * 8


def test_an_unreachable_origin_is_one_line_pointing_at_the_mirror_variable(encoders_dir, tmp_path, monkeypatch):
    port = benchmark_module("github_mirror").unused_port()
    monkeypatch.setenv("KERAS_MATCH_HF_URL", f"http://127.0.0.1:{port}")
    root = tmp_path / "copy"
    copy_encoder(encoders_dir, root, skip=["special_tokens_map.json"])
    before = all_files(root)
    with pytest.raises(DownloadError) as info:
        locate("minilm-l6", root, download_missing=True)
    message = str(info.value)
    assert "\n" not in message and not isinstance(info.value, ChecksumError)
    assert message.startswith("cannot fetch all-MiniLM-L6-v2/special_tokens_map.json from "
                              f"http://127.0.0.1:{port}/sentence-transformers/all-MiniLM-L6-v2/resolve/")
    assert "refused" in message.lower() and "KERAS_MATCH_HF_URL" in message and "KERAS_MATCH_ENCODERS" in message
    assert "GITHUB" not in message and "--data-dir" not in message
    assert all_files(root) == before


def test_every_command_that_loads_a_model_locates_the_encoders_in_its_encoders_dir(encoders_dir, tmp_path,
                                                                                   monkeypatch, capsys):
    """`--encoders-dir DIR` of train, tune, evaluate, explain, predict, export and preset is where the command's
    encoders are located (over $KERAS_MATCH_ENCODERS); a folder that is not there is one usage line, exit
    status 2, and the command does not run."""
    from keras_match import cli

    copy = copy_encoder(encoders_dir, tmp_path / "copy")
    seen = {}

    def command(args):  # in place of each command: where it would locate the encoder
        seen[args.command] = (registry.resolve_encoders_dir(), locate("minilm-l6"))
        return 0

    argvs = {"train": ["train", "ctrn_minilm"], "tune": ["tune", "ctrn_minilm", "--dir", str(tmp_path / "t")],
             "evaluate": ["evaluate", "RUN", "--dataset", "wikiqa"], "explain": ["explain", "RUN"],
             "predict": ["predict", "RUN", "--question", "q", "--answer", "a"], "export": ["export", "RUN", "--to", "x"],
             "preset": ["preset", "RUN", "--to", "x"]}
    for name, argv in argvs.items():
        monkeypatch.setattr(cli, f"_cmd_{name}", command)
        monkeypatch.setenv("KERAS_MATCH_ENCODERS", str(tmp_path / "elsewhere"))  # the option wins over it
        assert cli.main(argv + ["--encoders-dir", str(tmp_path / "copy")]) == 0
        assert seen.pop(name) == (tmp_path / "copy", copy), name
        assert os.environ["KERAS_MATCH_ENCODERS"] == str(tmp_path / "elsewhere"), name  # as it was, after the command
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        cli.main(["predict", "RUN", "--encoders-dir", str(tmp_path / "nowhere"), "--question", "q"])
    error = capsys.readouterr().err
    assert info.value.code == 2 and not seen
    assert error.count("\n") == 1 and "argument --encoders-dir: " in error and "nowhere is not a folder" in error


# ---- keras-hub stays out of a plain import ----------------------------------------------------------------------


def test_importing_the_package_does_not_import_keras_hub(encoders_dir):
    code = (
        "import sys\n"
        "import keras_match, keras_match.encoders, keras_match.serving\n"
        "from keras_match.encoders import TransformerEncoder, locate\n"
        f"locate('minilm-l6', {str(encoders_dir)!r})\n"
        f"TransformerEncoder('minilm-l6', encoders_dir={str(encoders_dir)!r})  # its layer is not made yet\n"
        "print(sorted(name for name in sys.modules if name.split('.')[0] in ('keras_hub', 'safetensors')))\n"
    )
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                            cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().splitlines()[-1] == "[]"
