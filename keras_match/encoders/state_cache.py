"""The frozen backbone's states, computed once per text and reused by every epoch: `StateCache`.

A frozen pretrained transformer (`TransformerEncoder(trainable="frozen")`, or the frozen lower layers of a
top-k fine-tuning) gives a text the same states in every epoch, and a TrecQA question is shared by about 40
candidates. Training over it (`keras_match.training`, the `state_cache` training setting) therefore computes
those states once: `StateCache.build` runs the backbone's frozen part over every distinct text of the training
and dev splits, in length order, and keeps the states; `TransformerStates.attach_cache` makes the layer look a
batch's texts up by their ids (a 64-bit fingerprint of each text's non-padding ids) and gather their states when
every text of the batch is cached, and compute them as before otherwise. The model, its weights, its config and
its outputs are those of the model without a cache (to float32 round-off: the same ops on other batch
shapes); only the time differs.

The states are kept in the user cache (`$KERAS_MATCH_CACHE/states`, else `~/.cache/keras_match/states`), one
folder per (encoder, its weights' sha256, the frozen depth, precision, the set of texts), written batch by batch
so an interrupted build resumes where it stopped; another run (a seed, a search trial) on the same texts reads
it without computing anything. A build holds the folder's lock (`.lock`, an advisory `flock` released however the
process ends): a second process that needs the same states while they are computed waits for them and reads them.
Never committed: it is derived from the encoder's weights and the data.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
from pathlib import Path

import keras
import numpy as np

from keras_match.artifacts import storage
from keras_match.datasets.paths import cache_dir

__all__ = ["StateCache", "text_keys", "states_cache_dir", "cacheable_layer", "attach"]

FORMAT = 1
_TEXTS_PER_BATCH = 64
_SAVE_EVERY = 50  # batches between two commits of a build's progress


def states_cache_dir() -> Path:
    """`$KERAS_MATCH_CACHE/states`, else `~/.cache/keras_match/states` (it may not exist yet)."""
    return cache_dir().parent / "states"


def text_keys(token_ids):
    """Each text's 64-bit key: a fingerprint of its non-padding ids (the same ids, padded to any length, give the
    same key).

    Args:
        token_ids: int tensor or array `[n, length]`, 0 = padding.

    Returns:
        int64 tensor `[n]`.
    """
    import tensorflow as tf

    ids = tf.cast(token_ids, tf.int64)
    texts = tf.strings.reduce_join(tf.strings.as_string(tf.ragged.boolean_mask(ids, ids != 0)), axis=-1,
                                   separator=",")
    return tf.strings.to_hash_bucket_fast(texts, np.iinfo(np.int64).max)


def _distinct_texts(arrays):
    """`(keys, rows)`: the distinct texts of int arrays `[n_i, length_i]` (0 = padding), keys sorted, and each
    text's ids without padding."""
    found = {}
    for array in arrays:
        array = np.asarray(array)
        for start in range(0, len(array), 8192):
            chunk = array[start:start + 8192]
            keys = text_keys(chunk).numpy()
            unique, first = np.unique(keys, return_index=True)
            for key, index in zip(unique.tolist(), first.tolist()):
                row = chunk[index]
                row = row[row != 0].astype(np.int32)
                known = found.setdefault(key, row)
                if known is not row and not np.array_equal(known, row):
                    raise ValueError("two texts share a 64-bit state-cache key; train with state_cache=false")
    keys = np.array(sorted(found), dtype=np.int64)
    return keys, [found[key] for key in keys.tolist()]


def cacheable_layer(model):
    """The model's `TransformerStates` layer if its frozen part can be cached (`layers="last"`, not
    `trainable="all"`), else None."""
    from keras_match.encoders.transformer import TRANSFORMER_LAYER

    try:
        layer = model.get_layer(TRANSFORMER_LAYER)
    except ValueError:
        return None
    return layer if layer.caches else None


class StateCache:
    """The states that a `TransformerStates` layer's frozen part gives each of a set of texts.

    Attributes:
        keys: int64 `[n]`, the texts' keys (`text_keys`), sorted.
        starts, lengths: int64 `[n]`, where each text's states start in `states` and how many tokens it has.
        states: float32 `[total tokens, hidden_dim]` (a memory-mapped file of the user cache).
        depth: how many transformer layers the states went through (the layer's frozen ones).
        folder: where they are kept.
    """

    def __init__(self, keys, starts, lengths, states, depth, folder=None):
        self.keys, self.starts, self.lengths = keys, starts, lengths
        self.states, self.depth, self.folder = states, int(depth), folder
        self._graph = None

    def __len__(self):
        return len(self.keys)

    @classmethod
    def build(cls, layer, arrays, *, cache_root=None, verbose=True) -> StateCache:
        """The states of every distinct text of `arrays` under `layer`'s frozen part, from the user cache or
        computed now (and kept there; an interrupted build resumes).

        Args:
            layer: a `TransformerStates` layer with `caches` true, its pretrained weights in place.
            arrays: int arrays `[n_i, length_i]` of token ids (0 = padding), e.g. a split's questions and answers.
            cache_root: where the folders are (default `states_cache_dir()`).
            verbose: print a line and a progress bar while computing.

        Raises:
            ValueError: the layer's states cannot be cached (`layers="mix"` or `trainable="all"`).
        """
        if not layer.caches:
            raise ValueError(f"{layer.name}: only a frozen part of layers='last' states can be cached "
                             f"(layers={layer.layers!r}, trainable_layers={layer.trainable_layers!r})")
        keys, rows = _distinct_texts(arrays)
        lengths = np.array([len(row) for row in rows], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        depth = layer.num_layers - layer.trained_layers
        folder = Path(cache_root or states_cache_dir()) / _digest(layer, depth, keys)
        states_path = folder / "states.npy"
        if not states_path.exists():
            with _building(folder, verbose):
                if not states_path.exists():  # another process may have finished them while this one waited
                    _compute(layer, rows, starts, lengths, folder, verbose)
        states = np.load(states_path, mmap_mode="r")
        return cls(keys, starts, lengths, states, depth, folder)

    # ---- in the graph ---------------------------------------------------------------------------------------

    def tensors(self):
        """The lookup table, the states variable and the offsets as TensorFlow objects (made on first use)."""
        if self._graph is None:
            import tensorflow as tf

            with tf.init_scope():
                table = tf.lookup.StaticHashTable(
                    tf.lookup.KeyValueTensorInitializer(tf.constant(self.keys),
                                                        tf.range(len(self.keys), dtype=tf.int64)), -1)
                self._graph = {
                    "table": table,
                    "states": tf.Variable(np.asarray(self.states), trainable=False, name="cached_states"),
                    "starts": tf.constant(self.starts), "lengths": tf.constant(self.lengths),
                }
        return self._graph

    def states_or(self, token_ids, compute, dtype):
        """The cached states of `token_ids` (int `[batch, length]`) when every text of the batch is cached, else
        `compute()`; `[batch, length, hidden_dim]` in `dtype`, zeros at padding."""
        import tensorflow as tf

        graph = self.tensors()
        rows = graph["table"].lookup(text_keys(token_ids))

        def cached():
            found = tf.maximum(rows, 0)
            positions = tf.range(tf.shape(token_ids, out_type=tf.int64)[1])[None, :]
            inside = positions < tf.gather(graph["lengths"], found)[:, None]
            index = tf.where(inside, tf.gather(graph["starts"], found)[:, None] + positions, 0)
            states = tf.gather(graph["states"], index) * tf.cast(inside, tf.float32)[..., None]
            return tf.cast(states, dtype)

        return tf.cond(tf.reduce_all(rows >= 0), cached, lambda: tf.cast(compute(), dtype))


def _digest(layer, depth, keys) -> str:
    from keras_match.encoders.pretrained import pretrained

    weights = None
    if layer.encoder is not None:
        weights = pretrained(layer.encoder).weights_sha256
    if weights is None:  # a backbone of no pinned encoder: its own weights
        digest = hashlib.sha256()
        for weight in layer.backbone.weights:
            digest.update(np.asarray(weight).tobytes())
        weights = digest.hexdigest()
    described = json.dumps({"format": FORMAT, "encoder": layer.encoder, "weights": weights, "depth": depth,
                            "dtype": layer.dtype_policy.name,
                            "architecture": {k: v for k, v in layer.get_config().items()
                                             if k in ("vocabulary_size", "num_layers", "hidden_dim")}},
                           sort_keys=True)
    digest = hashlib.sha256(described.encode())
    digest.update(np.ascontiguousarray(keys).tobytes())
    return f"{layer.encoder or 'backbone'}-d{depth}-{digest.hexdigest()[:24]}"


LOCK_FILE = ".lock"


def _building(folder, verbose):
    """Holds `folder/.lock` while the states are computed; waits (saying for which process) while another holds it."""
    folder.mkdir(parents=True, exist_ok=True)

    def waiting(holder):
        if verbose:
            print(f"waiting for process {holder}, which computes these states into {folder}", flush=True)

    return storage.flocked(folder / LOCK_FILE, busy=waiting)


def _compute(layer, rows, starts, lengths, folder, verbose):
    """Writes `folder/states.npy`: the frozen part's states of every text, batch by batch into a partial file
    (`progress.json` counts the finished batches), renamed into place when complete."""
    folder.mkdir(parents=True, exist_ok=True)
    partial, progress_path = folder / "states.npy.partial", folder / "progress.json"
    order = np.argsort(lengths, kind="stable")
    batches = [order[i:i + _TEXTS_PER_BATCH] for i in range(0, len(order), _TEXTS_PER_BATCH)]
    shape = (int(lengths.sum()), layer.hidden_dim)
    done = 0
    if partial.exists() and progress_path.exists():
        progress = json.loads(progress_path.read_text())
        if progress.get("batches") == len(batches) and tuple(progress.get("shape", ())) == shape:
            done = int(progress["done"])
    if not done:
        _reserve(partial, shape)
    states = np.lib.format.open_memmap(partial, mode="r+", dtype=np.float32, shape=shape)
    below = _frozen_function(layer)
    if verbose:
        print(f"computing the frozen {layer.encoder or 'backbone'} states of {len(rows):,} texts "
              f"({shape[0]:,} tokens, {layer.num_layers - layer.trained_layers} layers) into {folder}"
              + (f", resuming after batch {done}" if done else ""), flush=True)
    bar = keras.utils.Progbar(len(batches), unit_name="batch") if verbose else None
    for number, batch in enumerate(batches):
        if number < done:
            continue
        width = int(lengths[batch].max())
        ids = np.zeros((len(batch), width), dtype=np.int32)
        for i, text in enumerate(batch):
            ids[i, :lengths[text]] = rows[text]
        output = below(ids).numpy().astype(np.float32)
        for i, text in enumerate(batch):
            states[starts[text]:starts[text] + lengths[text]] = output[i, :lengths[text]]
        if (number + 1) % _SAVE_EVERY == 0 or number == len(batches) - 1:
            states.flush()
            progress = {"batches": len(batches), "shape": list(shape), "done": number + 1}
            storage.write_text(progress_path, json.dumps(progress))
        if bar is not None:
            bar.update(number + 1)
    del states
    os.replace(partial, folder / "states.npy")
    progress_path.unlink(missing_ok=True)


def _reserve(path, shape):
    """Writes the `.npy` file `path` of float32 `shape` with its blocks reserved on the disk (`posix_fallocate`).
    The states are written through a memory map, and a mapped page that finds the disk full kills the process
    with a bus error (SIGBUS) where no Python error can be raised; reserved, a full disk is found here.

    Raises:
        keras_match.artifacts.storage.WriteError: the disk cannot hold the file (no partial file is left).
    """
    try:
        with storage.writing(path):
            np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=shape)  # the header; the rest sparse
            with open(path, "r+b") as handle:
                try:
                    os.posix_fallocate(handle.fileno(), 0, os.fstat(handle.fileno()).st_size)
                except OSError as error:
                    if error.errno not in (errno.EOPNOTSUPP, errno.EINVAL):  # a file system that cannot reserve
                        raise
    except storage.WriteError:
        path.unlink(missing_ok=True)
        raise


def _frozen_function(layer):
    """`ids -> the frozen part's states`, one traced function for every batch shape."""
    import tensorflow as tf

    return tf.function(layer.frozen_states, input_signature=[tf.TensorSpec([None, None], tf.int32)])


def attach(model, arrays, *, cache_root=None, verbose=True):
    """Attaches a `StateCache` of the texts of `arrays` to the model's transformer layer when it can be cached
    (`cacheable_layer`). Returns the cache, or None (nothing to cache)."""
    layer = cacheable_layer(model)
    if layer is None:
        return None
    cache = StateCache.build(layer, arrays, cache_root=cache_root, verbose=verbose)
    layer.attach_cache(cache)
    for function in ("train_function", "test_function", "predict_function"):  # traced without the cache
        setattr(model, function, None)
    return cache

