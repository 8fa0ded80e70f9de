"""Where a result came from: the command, the code, the packages, the machine and the time of a run.

Every run's `metrics.json` and every result file a benchmark script writes carries a `provenance` object:

```
{"command": "keras-match train mcan_fm --dataset trecqa-clean --epochs 5",
 "code": {"keras_match": "0.1.0", "commit": "5241c94...", "dirty": false, "changed": []},
 "versions": {"python": "3.11.7", "tensorflow": "2.21.0", "keras": "3.15.1", "numpy": "2.4.1"},
 "machine": {"cpu": "Intel(R) Xeon(R) ...", "cores": 2, "threads": 2, "platform": "Linux-..."},
 "started": "2026-11-24T23:40:01+00:00", "finished": "2026-11-24T23:49:12+00:00",
 ...: the caller's facts (seed, settings, data files and vectors with their sha256)}
```

`check` refuses a result without these keys (the table scripts call it).
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path

REQUIRED = ("command", "code", "versions", "machine", "started", "finished")
"""The keys every provenance object has."""

_ROOT = Path(__file__).resolve().parents[2]
"""The checkout's root (this file is `keras_match/artifacts/provenance.py`): `CODE_PATHS` are relative to it."""


def timestamp(seconds=None) -> str:
    """An ISO 8601 UTC time (now, or of `time.time()`-style `seconds`), to the second."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc) if seconds is not None else \
        datetime.datetime.now(datetime.timezone.utc)
    return moment.replace(microsecond=0).isoformat()


_COMMAND: list[str | None] = [None]


def set_command(argv) -> None:
    """Record the `keras-match` command being run (`keras_match.cli.main` calls it with its arguments, so a run
    started in-process says its own command rather than the host program's)."""
    _COMMAND[0] = shlex.join(["keras-match", *argv])


def command_line(argv=None) -> str:
    """The command as typed: the `keras-match` command being run (`set_command`), else this process's:
    `keras-match ...` for the console script, `python ARGV...` otherwise. A script of this checkout given by its
    absolute path (`benchmarks/ablation.py` starts `reproduce.py` so) is named from the checkout's root
    (`python benchmarks/reproduce.py ...`), the command a clone runs; other paths are kept as given."""
    if argv is None and _COMMAND[0] is not None:
        return _COMMAND[0]
    argv = list(sys.argv if argv is None else argv)
    if argv and (Path(argv[0]).name in ("keras-match", "cli.py")
                 or Path(argv[0]).parts[-2:] == ("cli", "__main__.py")):
        return shlex.join(["keras-match", *argv[1:]])
    if argv and argv[0] == "-m":
        return shlex.join(["python", *argv])
    if argv and Path(argv[0]).is_absolute() and Path(argv[0]).resolve().is_relative_to(_ROOT):
        argv[0] = Path(argv[0]).resolve().relative_to(_ROOT).as_posix()
    return shlex.join(["python", *argv]) if argv else ""


CODE_PATHS = ("keras_match", "zoo", "tuning", "benchmarks", "setup.cfg", "setup.py", "pyproject.toml")
"""The tracked paths whose changes change what a run computes (`benchmarks/results/` aside: a benchmark that
rewrites its committed results does not change the code that computes them; README and tests compute nothing)."""


def code() -> dict:
    """keras-match's version (the imported package's) and, in a git checkout, its commit, whether a file of
    `CODE_PATHS` differs from it or is not in it (`dirty`: changed, added or untracked, ignored files aside) and
    which (`changed`, at most 20)."""
    from keras_match import __version__

    info = {"keras_match": __version__, "commit": None, "dirty": None, "changed": None}
    try:
        commit = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10)
        if commit.returncode == 0:
            status = subprocess.run(["git", "-C", str(_ROOT), "status", "--porcelain", "--untracked-files=all", "--",
                                     *CODE_PATHS, ":(exclude)benchmarks/results"],
                                    capture_output=True, text=True, timeout=10)
            changed = sorted(line[3:] for line in status.stdout.splitlines() if line.strip())
            info.update(commit=commit.stdout.strip(), dirty=bool(changed), changed=changed[:20])
    except (OSError, subprocess.SubprocessError):
        pass  # no git: the version alone
    return info


def versions() -> dict:
    """The versions of Python and of the packages that compute the figures."""
    found = {"python": platform.python_version()}
    for name in ("tensorflow", "keras", "numpy"):
        module = sys.modules.get(name)
        if module is None:
            try:
                from importlib import metadata

                found[name] = metadata.version(name)
            except Exception:  # not installed
                found[name] = None
        else:
            found[name] = getattr(module, "__version__", None)
    return found


def machine() -> dict:
    """The CPU model, its cores, the cores this process may use, its bfloat16 units (`keras_match.precision`),
    TensorFlow's thread settings, the platform and the load average (a timing measured beside other work says
    so)."""
    cpu = platform.processor() or None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    info = {"cpu": cpu, "cores": os.cpu_count(),
            "threads": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count(),
            "platform": platform.platform()}
    from keras_match.precision import bfloat16_units

    info["bfloat16_units"] = bfloat16_units()  # whether mixed_bfloat16 runs on native units or emulated
    if hasattr(os, "getloadavg"):  # how busy the machine was when the result ended (runnable processes, 1 / 15 min)
        one, _, fifteen = os.getloadavg()
        info["load_average"] = {"1min": round(one, 2), "15min": round(fifteen, 2)}
    tf = sys.modules.get("tensorflow")
    if tf is not None:  # 0 = TensorFlow's default (every core)
        info["tf_intra_op_threads"] = tf.config.threading.get_intra_op_parallelism_threads()
        info["tf_inter_op_threads"] = tf.config.threading.get_inter_op_parallelism_threads()
    return info


def collect(started: float, command: str | None = None, **facts) -> dict:
    """The provenance of a result that began at `started` (`time.time()`) and ends now.

    Args:
        started: when the work began.
        command: the command line (default: this process's, see `command_line`).
        **facts: the caller's own facts (seed, settings, data files, vectors ...), kept as given.

    Returns:
        A JSON-ready dict with `REQUIRED` keys and `facts`.
    """
    return {"command": command if command is not None else command_line(), "code": code(), "versions": versions(),
            "machine": machine(), "started": timestamp(started), "finished": timestamp(), **facts}


def check(result: dict, where) -> dict:
    """`result["provenance"]`, which must hold every `REQUIRED` key.

    Raises:
        ValueError: no provenance, or a key missing (names `where`, the result file).
    """
    found = result.get("provenance") if isinstance(result, dict) else None
    if not isinstance(found, dict):
        raise ValueError(f"{where}: no provenance (command, code, versions, machine, time): a result file must say "
                         "what made it; rerun the command that writes it")
    missing = [key for key in REQUIRED if key not in found]
    if missing:
        raise ValueError(f"{where}: provenance without {missing}; rerun the command that writes it")
    return found


def require(result: dict, where) -> dict:
    """`check` for a command that prints a table: the refusal is a `SystemExit` with the message (exit 1)."""
    try:
        return check(result, where)
    except ValueError as error:
        raise SystemExit(str(error)) from None


def print_table(path, table) -> None:
    """Print `table(result, path)`, the markdown of the result file at `path` (a benchmark's `--table FILE`).

    Raises:
        SystemExit: the file cannot be read, is not JSON or not of the script's form ("not a JSON file of this
            script"), or has no provenance (`table` calls `require`); the message names `path`.
    """
    import json

    try:
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        text = table(result, path)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as error:
        raise SystemExit(f"--table {path}: not a JSON file of this script ({error!r})") from None
    print(text)
