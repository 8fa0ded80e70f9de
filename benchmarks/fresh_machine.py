"""A fresh machine's first use of the benchmarks, with `benchmarks/github_mirror.py` standing in for GitHub: an
empty user cache, no `$KERAS_MATCH_DATA`, then `keras-match data download NAME` per dataset (every original
fetched through `keras.utils.get_file`, the derived files built and checked). Prints JSON (and writes it to
`--out`): per dataset the wall time, files and bytes fetched, files built and size on disk.

    python benchmarks/fresh_machine.py --data-dir ../shared/data --out benchmarks/results/data/fresh_machine.json

`--main-job` then runs README's main job (`keras-match train mcan_fm --dataset trecqa-clean --epochs 5`) on the
fresh cache, for its wall time (minutes), its peak memory (the largest resident set of the command's process)
and its dev / test figures. `--table FILE` prints the dataset table of docs/data.md from a result file
(`--table FILE --main-job`: the main job's row); a file without provenance is refused.
"""

import argparse
import json
import os
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

MAIN_JOB = ["train", "mcan_fm", "--dataset", "trecqa-clean", "--epochs", "5"]


def folder_size(root):
    files = [p for p in pathlib.Path(root).rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def keras_match(args, env, cwd):
    """Run the `keras-match` command; `(seconds, stdout)`; exits on failure with its stderr."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "keras_match.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"keras-match {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return round(time.perf_counter() - start, 1), done.stdout


def read(path):
    """A result file of this script, its provenance checked.

    Raises:
        OSError, ValueError: unreadable, not JSON, or without provenance (the message names the file).
    """
    from keras_match.artifacts import provenance

    result = json.loads(pathlib.Path(path).read_text())
    provenance.check(result, path)
    return result


def table(path):
    """The dataset table of docs/data.md (markdown) from a result file of this script and
    `keras_match.datasets.sources`:
    per dataset its origin, license, files fetched / built, megabytes fetched, size on disk and the wall time of
    `keras-match data download NAME` on an empty cache; then the totals."""
    from keras_match.datasets import sources

    result = read(path)
    lines = ["| dataset | origin (pinned commits) | license | files fetched / built | MB fetched | size on disk | "
             "wall s |", "|---|---|---|---|---:|---:|---:|"]
    for name, row in result["datasets"].items():
        source = sources.source(name)
        lines.append(f"| `{name}` | {source.origin} | {source.license} | {row['files_fetched']} / "
                     f"{row['files_built']} | {row['bytes_fetched'] / 1e6:.1f} | {row['bytes_on_disk'] / 1e6:.1f} MB | "
                     f"{row['seconds']:.1f} |")
    total = result["total"]
    lines.append(f"| all | | | {total['files_fetched']:.0f} / {total['files_built']:.0f} | "
                 f"{total['bytes_fetched'] / 1e6:.1f} | {total['bytes_on_disk'] / 1e6:.1f} MB | "
                 f"{total['seconds']:.1f} |")
    return "\n".join(lines)


def main_job_table(path):
    """README's main-job row (markdown): its command, wall time and peak memory on the machine of the result
    file, and the run's dev / test MAP."""
    result = read(path)
    job = result.get("main_job")
    if not job:
        raise ValueError(f"{path}: no main job (run with --main-job)")
    machine = result["provenance"]["machine"]
    minutes, seconds = divmod(round(job["seconds"]), 60)
    return "\n".join([
        "| command | cores | wall time | peak memory | epochs | dev MAP | test MAP / MRR / P@1 |",
        "|---|---:|---|---:|---:|---:|---|",
        f"| `{job['command']}` | {machine['threads']} | {minutes} min {seconds} s | "
        f"{job['peak_rss_mb'] / 1024:.1f} GB | {job['epochs_run']} | {job['dev']['map']:.3f} | "
        f"{job['test']['map']:.3f} / {job['test']['mrr']:.3f} / {job['test']['p@1']:.3f} |"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", default=None, metavar="FILE",
                        help="print the dataset table (docs/data.md) from a result file")
    parser.add_argument("--data-dir", help="the data folder the stand-in server serves from")
    parser.add_argument("--datasets", nargs="+", default=None, help="default: every dataset")
    parser.add_argument("--main-job", action="store_true", help="also run README's main job on the fresh cache")
    parser.add_argument("--out", default=None, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.table:
        try:
            print(main_job_table(args.table) if args.main_job else table(args.table))
        except (OSError, ValueError) as error:
            raise SystemExit(str(error)) from None
        return
    if not args.data_dir:
        parser.error("--data-dir is required")

    import github_mirror

    from keras_match.artifacts import provenance
    from keras_match.datasets import sources

    started = time.time()
    names = args.datasets or list(sources.SOURCES)
    result = {"datasets": {}}
    with tempfile.TemporaryDirectory() as home, github_mirror.serve(args.data_dir) as (url, handler):
        cache = pathlib.Path(home) / "cache"
        env = {key: value for key, value in os.environ.items() if key != "KERAS_MATCH_DATA"}
        env.update(KERAS_MATCH_CACHE=str(cache), KERAS_MATCH_GITHUB_URL=url, TF_CPP_MIN_LOG_LEVEL="3")
        for name in names:
            before = len(handler.requests)
            seconds, out = keras_match(["data", "download", name], env, home)
            fetched = handler.requests[before:]
            files, size = folder_size(cache / "data")
            previous = sum(d["files_on_disk"] for d in result["datasets"].values())
            previous_size = sum(d["bytes_on_disk"] for d in result["datasets"].values())
            result["datasets"][name] = {
                "seconds": seconds,
                "files_fetched": len(fetched),
                "bytes_fetched": sum(len(handler.files[path]) for path in fetched),
                "files_built": out.count("\nbuilt ") + out.startswith("built "),
                "files_on_disk": files - previous,
                "bytes_on_disk": size - previous_size,
                "last_line": out.strip().splitlines()[-1],
            }
            print(f"{name}: {result['datasets'][name]}", file=sys.stderr, flush=True)
        result["total"] = {key: round(sum(d[key] for d in result["datasets"].values()), 1)
                           for key in ("seconds", "files_fetched", "bytes_fetched", "files_built", "files_on_disk",
                                       "bytes_on_disk")}
        if args.main_job:
            run_dir = pathlib.Path(home) / "run"
            seconds, out = keras_match([*MAIN_JOB, "--run-dir", str(run_dir)], env, home)
            metrics = json.loads((run_dir / "metrics.json").read_text())
            result["main_job"] = {"command": "keras-match " + " ".join(MAIN_JOB), "seconds": seconds,
                                  # the largest resident set of any child so far: the training command's (the
                                  # downloads before it are smaller), kilobytes on Linux
                                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024),
                                  "epochs_run": metrics["epochs_run"], "best_epoch": metrics["best_epoch"],
                                  "dev": metrics["dev"], "test": metrics["test"],
                                  "run_provenance": metrics.get("provenance"),
                                  "output": out.strip().splitlines()[-3:]}
    result["provenance"] = provenance.collect(
        started, command=provenance.command_line(["benchmarks/fresh_machine.py", *(argv or sys.argv[1:])]),
        served_from=str(args.data_dir))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        pathlib.Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
