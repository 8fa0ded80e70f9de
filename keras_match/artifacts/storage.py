"""Writing files so that a failure never leaves a partial file in place, and says which path failed and why.

Every file a run or an export writes goes through `atomic_write`: the content is written to a temporary name
beside the target (`.staged-NAME`, which keeps the target's suffix: Keras and h5py choose their format by it) and
renamed over the target only when complete. `os.replace` within one folder is atomic on POSIX, so a reader, or a
process resumed after a kill, sees either the old file or the new one, never a mixture. A write that fails (a full
disk, a read-only or forbidden folder, a file-size limit) removes the temporary file and raises `WriteError`,
whose one-line message names the target path and the system's reason. HDF5 files (Keras weights) are made in
memory and reach the disk in Python's own write (`write_hdf5`): the HDF5 library meets a full disk badly.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import os
import pathlib

__all__ = ["WriteError", "DamagedRunError", "MissingRunFileError", "atomic_write", "staged_path", "write_text",
           "MemoryFile", "write_hdf5", "read_json", "describe_os_error", "remedy", "writing", "check_writable_folder",
           "folders_made_for", "checked_folder", "STATE_FILE", "read_state"]


class WriteError(OSError):
    """A file could not be written; the message names the path, the reason and what to do."""


_REMEDIES = {
    errno.ENOSPC: "free space on that disk or write elsewhere",
    errno.EDQUOT: "free space within the disk quota or write elsewhere",
    errno.EFBIG: "the file exceeds the process's file-size limit (ulimit -f): raise it or write elsewhere",
    errno.EROFS: "the file system is read-only: write elsewhere",
    errno.EACCES: "no permission to write there: write elsewhere or change the folder's permissions",
    errno.EPERM: "no permission to write there: write elsewhere or change the folder's permissions",
}


def _errno_of(error):
    """The errno of an OSError; h5py's errors hold it only in their text ("... errno = 28, error message = ...")."""
    code = getattr(error, "errno", None)
    if code is None:
        text = str(error)
        code = next((c for c in _REMEDIES if f"errno = {c}," in text or os.strerror(c) in text), None)
    return code


def describe_os_error(error: BaseException) -> str:
    """The system's reason in `error` as a few words (`"No space left on device"`), for any OSError, including
    h5py's."""
    code = _errno_of(error)
    if code is not None:
        return os.strerror(code)
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def remedy(error: BaseException) -> str:
    """What to do about a failed write, from its errno."""
    return _REMEDIES.get(_errno_of(error), "check the path and the disk")


class DamagedRunError(ValueError):
    """A file of a run directory is damaged (truncated, not what it should hold); the message names it."""


class MissingRunFileError(DamagedRunError, FileNotFoundError):
    """A file the run wrote is gone: a damaged run, and a `FileNotFoundError` whose `filename` is the file."""

    def __init__(self, message: str, path):
        DamagedRunError.__init__(self, message)
        self.filename = str(path)
        self.errno = errno.ENOENT
        self.strerror = message

    def __str__(self):
        return self.strerror


def read_json(path, remedy="retrain the run or restore the file"):
    """The JSON object in `path`.

    Raises:
        FileNotFoundError: no such file.
        DamagedRunError: the file is not a JSON object (truncated, say); the message names it and `remedy`.
    """
    path = pathlib.Path(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        value = json.loads(text)
    except ValueError as error:
        raise DamagedRunError(f"{path} is damaged (not valid JSON: {error}); {remedy}") from None
    if not isinstance(value, dict):
        raise DamagedRunError(f"{path} is damaged (a JSON {type(value).__name__}, not an object); {remedy}")
    return value


@contextlib.contextmanager
def writing(target, also=()):
    """Turns an OSError (and the exception types in `also`, such as TensorFlow's `tf.errors.OpError`) raised
    while the block writes `target` into a `WriteError` naming `target`; the block cleans up its own partial
    output (a temporary folder it removes)."""
    try:
        yield
    except (WriteError, FileExistsError):
        raise
    except (OSError, *also) as error:
        raise WriteError(f"cannot write {target}: {describe_os_error(error)}; {remedy(error)}") from None


def check_writable_folder(path, option: str) -> pathlib.Path:
    """Make sure `path` is a folder this process can write (made if missing; a probe file is written and removed),
    before a command does any work for it.

    Args:
        path: the folder.
        option: the command-line option that named it, for the message (`"--dir"`).

    Returns:
        `path` as a `pathlib.Path`.

    Raises:
        ValueError: `path` is an existing file, not a folder (a usage error).
        WriteError: the folder cannot be made or written (read-only file system, no permission, full disk).
    """
    path = pathlib.Path(path)
    if path.exists() and not path.is_dir():
        raise ValueError(f"{option} {path} is a file, not a folder: give a folder (new or holding earlier results)")
    probe = path / f".write-probe-{os.getpid()}"
    with writing(path):
        path.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    return path


@contextlib.contextmanager
def folders_made_for(path):
    """The block makes the folder `path` (with its missing parents) and writes into it: if the block fails, the
    folders it made are removed again while they are still empty, so a refused or failed command leaves no empty
    folder behind; a folder that holds work done is kept.

    Yields:
        `path` as a `pathlib.Path`.
    """
    path = pathlib.Path(path)
    made = [folder for folder in (path, *path.parents) if not folder.exists()]  # the deepest first
    try:
        yield path
    except BaseException:
        for folder in made:
            try:
                folder.rmdir()
            except OSError:  # not empty (or gone)
                break
        raise


@contextlib.contextmanager
def checked_folder(path, option: str):
    """`check_writable_folder(path, option)` for the work of the block, whose failure leaves no empty folder
    (`folders_made_for`): a command refused after the check (a setting, the data) leaves nothing behind.

    Yields:
        `path` as a `pathlib.Path`.

    Raises:
        ValueError, WriteError: as `check_writable_folder`.
    """
    with folders_made_for(path) as folder:
        check_writable_folder(folder, option)
        yield folder


def staged_path(path) -> pathlib.Path:
    """The temporary name `atomic_write` writes `path`'s content to: `.staged-NAME` in the same folder."""
    path = pathlib.Path(path)
    return path.with_name(f".staged-{path.name}")


def atomic_write(path, write) -> pathlib.Path:
    """Calls `write(staged)` to write the content to a temporary name, then renames it to `path`.

    Args:
        path: the target file (its folder must exist).
        write: a function of one path argument that writes the whole content there (`model.save_weights`, ...).

    Returns:
        `path` as a `pathlib.Path`.

    Raises:
        WriteError: writing or renaming failed with an OSError (also h5py's); the temporary file is removed and
            `path` is as it was.
    """
    path = pathlib.Path(path)
    staged = staged_path(path)
    try:
        write(staged)
        os.replace(staged, path)
    except OSError as error:
        try:
            staged.unlink(missing_ok=True)
        except OSError:
            pass
        raise WriteError(f"cannot write {path}: {describe_os_error(error)}; {remedy(error)}") from None
    return path


class MemoryFile(io.BytesIO):
    """An HDF5 file made in memory (`write_hdf5`), named like the file it becomes: Keras's `save_weights` takes it
    as its path (its `str` is that name, which ends in `.weights.h5` as Keras requires) and writes into it, as
    `h5py.File(memory_file, mode)` does.

    Args:
        name: the name of the file it becomes (`"epoch-3.weights.h5"`).
    """

    def __init__(self, name: str):
        super().__init__()
        self.name = str(name)

    def __str__(self):
        return self.name


def write_hdf5(path, write) -> pathlib.Path:
    """Writes an HDF5 file (Keras weights) made in memory by `write`, then to `path` through `atomic_write`.

    The HDF5 library meets a write that fails (a full disk) inside itself and keeps the half-written file open:
    h5py then prints "Can't decrement id ref count" tracebacks whenever the file object is freed, and the process
    can end in a segmentation fault at exit. Made in memory, the file reaches the disk only in Python's own write,
    whose failure is one `WriteError` like any other file's.

    Args:
        path: the target file (its folder must exist).
        write: a function of one `MemoryFile` argument (named `path`'s name) that writes the whole HDF5 content
            into it: `model.save_weights`, or a function that opens it with `h5py.File(memory_file, "w")`.

    Returns:
        `path` as a `pathlib.Path`.

    Raises:
        WriteError: writing or renaming failed with an OSError; the temporary file is removed and `path` is as it
            was.
    """
    path = pathlib.Path(path)
    memory = MemoryFile(path.name)
    write(memory)
    return atomic_write(path, lambda staged: pathlib.Path(staged).write_bytes(memory.getbuffer()))


def write_text(path, text: str) -> pathlib.Path:
    """Writes `text` (UTF-8, `\\n` line endings) to `path` through `atomic_write`."""
    return atomic_write(path, lambda staged: pathlib.Path(staged).write_text(text, encoding="utf-8", newline="\n"))


STATE_FILE = "state.json"
"""The checkpoint's commit record in `state_dir`: written last, by an atomic rename, so it only ever names
complete weight files."""

_RESTART = "delete the run folder's checkpoints/ to restart the run"


def read_state(state_dir) -> dict:
    """The checkpoint record (`state.json`) in `state_dir`, or `{}` without one.

    Raises:
        DamagedRunError: it is damaged (the message names it and says what to do).
    """
    path = pathlib.Path(state_dir) / STATE_FILE
    return read_json(path, _RESTART) if path.exists() else {}


@contextlib.contextmanager
def flocked(path, busy=None):
    """Holds the advisory lock of the file `path` (`flock`, which the system releases when the process ends,
    however it ends), with this process's id written in it. When another process holds it, `busy(holder)` is
    called with that process's id (it may raise: the lock is then not waited for), and the lock is waited for.
    """
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            taken = True
        except BlockingIOError:
            taken = False
        if not taken:  # outside the except block: what `busy` raises carries no BlockingIOError context
            handle.seek(0)
            if busy is not None:
                busy(handle.read().strip() or "?")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle, fcntl.LOCK_UN)
