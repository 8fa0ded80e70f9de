"""Data-parallel training on several machines: `tf.distribute.MultiWorkerMirroredStrategy` through `TF_CONFIG`.

`keras-match train` reads the standard `TF_CONFIG` variable. With a cluster of two or more workers, every worker
runs the same command (each with its own `--run-dir`); each step's global batch (`batch_size`) is split between
the workers, the gradients are all-reduced, and every worker ends with the same weights. Without `TF_CONFIG`, or
with a cluster of one, training is the usual single-process training.

```json
{"cluster": {"worker": ["10.0.0.1:12345", "10.0.0.2:12345"]}, "task": {"type": "worker", "index": 0}}
```
"""

from __future__ import annotations

import contextlib
import json
import os

__all__ = ["strategy_from_environment", "scope", "cluster_description", "shard_by_data", "prepare_fit"]


def _cluster(raw):
    try:
        config = json.loads(raw)
    except ValueError as error:
        raise ValueError(f"TF_CONFIG is not valid JSON ({error}); it must be like "
                         '{"cluster": {"worker": ["host:port", ...]}, "task": {"type": "worker", "index": 0}}') from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise ValueError("TF_CONFIG needs a \"cluster\" object ({\"worker\": [\"host:port\", ...]})")
    cluster = config["cluster"]
    unknown = sorted(set(cluster) - {"chief", "worker"})
    if unknown:
        raise ValueError(f"TF_CONFIG: cluster jobs {unknown} are not supported by MultiWorkerMirroredStrategy; "
                         "use \"worker\" (and optionally one \"chief\")")
    task = config.get("task")
    if not isinstance(task, dict) or task.get("type") not in cluster:
        raise ValueError(f"TF_CONFIG: \"task\" must name a job of the cluster ({sorted(cluster)}) as "
                         "{\"type\": \"worker\", \"index\": N}")
    addresses = cluster[task["type"]]
    index = task.get("index")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(addresses):
        raise ValueError(f"TF_CONFIG: task index {index!r} is not one of the {len(addresses)} "
                         f"{task['type']} addresses")
    return cluster, task


def cluster_description():
    """`"worker 1 of 2"`-style text for the process of `TF_CONFIG`, or None without a multi-worker cluster.

    Raises:
        ValueError: `TF_CONFIG` is malformed (the message says what it must hold).
    """
    raw = os.environ.get("TF_CONFIG", "").strip()
    if not raw:
        return None
    cluster, task = _cluster(raw)
    size = sum(len(addresses) for addresses in cluster.values())
    if size < 2:
        return None
    return f"{task['type']} {task['index']} of a cluster of {size}"


def strategy_from_environment():
    """A `tf.distribute.MultiWorkerMirroredStrategy` when `TF_CONFIG` names a cluster of two or more, else None.

    Call it before any other TensorFlow operation of the process: the strategy configures the collective
    operations at start-up. It blocks until every worker of the cluster has started.

    Raises:
        ValueError: `TF_CONFIG` is malformed.
    """
    if cluster_description() is None:
        return None
    import tensorflow as tf

    return tf.distribute.MultiWorkerMirroredStrategy()


def scope(strategy):
    """`strategy.scope()`, or a context that does nothing for None."""
    return strategy.scope() if strategy is not None else contextlib.nullcontext()


def shard_by_data(dataset, strategy):
    """`dataset` for `strategy`'s workers: each global batch split between them (a generator has no files to
    split by, which is Keras' first choice); unchanged without a strategy."""
    if strategy is None:
        return dataset
    import tensorflow as tf

    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return dataset.with_options(options)


def prepare_fit(model, dataset, strategy):
    """Builds `model`'s training state (optimizer, loss, metrics) for `strategy` from one batch of `dataset`.

    Keras 3 (3.15 here) builds a model made in a strategy's scope from a batch that `fit` takes from the training
    iterator and averages over the workers with `strategy.reduce`. That fails for inputs given as a dict, as ours
    are (keras-team/keras#20329: "Attempt to convert a value ({'question': PerReplica...}) to a Tensor"), and the
    batch would be lost to training. So the state is built here, from a batch of a separate iterator over the same
    dataset, and `fit`'s own build is turned off for this model. Nothing happens without a strategy.
    """
    if strategy is None:
        return
    _reduce_scalar_logs_across_workers()
    batch = next(iter(dataset.take(1)))
    with strategy.scope():
        model._symbolic_build(data_batch=batch)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None


def _reduce_scalar_logs_across_workers():
    """Keras 3 (3.15 here) averages a training step's logs over the workers with `strategy.reduce("MEAN", v,
    axis=0)`, which fails for the scalar loss ("Invalid reduction dimension 0 for input with 0 dimensions",
    tensorflow/tensorflow#72388). A scalar is averaged with `axis=None` instead; everything else is left to Keras."""
    from keras.src.backend.tensorflow import trainer

    if getattr(trainer.reduce_per_replica, "keras_match_patch", False):
        return
    original = trainer.reduce_per_replica

    def reduce_per_replica(values, strategy, reduction):
        if reduction == "auto" and trainer._collective_all_reduce_multi_worker(strategy):
            import keras

            def mean(v):
                if len(v.shape) == 0:
                    return strategy.reduce("MEAN", v, axis=None)
                return original(v, strategy, reduction)

            return keras.tree.map_structure(mean, values)
        return original(values, strategy, reduction)

    reduce_per_replica.keras_match_patch = True
    trainer.reduce_per_replica = reduce_per_replica
