"""The stack sampler of `benchmarks/suite_profile.py`, loaded by every Python process started with this folder on
`PYTHONPATH` (Python imports `sitecustomize` at start-up) while `KERAS_MATCH_SAMPLE_DIR` names a folder.

A daemon thread looks at the main thread's stack every `INTERVAL` seconds and counts each function on it once
(inclusive counts: a function's count is the number of samples in which it was running or waiting on a callee).
The counts are written to `<folder>/<pid>.json` every 20 s and at exit, so a process that is killed leaves its
last 20 s out. The sampler takes the GIL for each look: pure-Python code runs about 5-20 % slower under it, code
inside TensorFlow's or ONNX Runtime's own threads not at all. Nothing happens without the variable."""

import atexit
import collections
import json
import os
import sys
import threading
import time

INTERVAL = 0.01
_folder = os.environ.get("KERAS_MATCH_SAMPLE_DIR")


def _start(folder):
    main = threading.main_thread().ident
    counts = collections.Counter()
    state = {"samples": 0, "started": time.time()}
    path = os.path.join(folder, f"{os.getpid()}.json")

    def name(code):
        file = code.co_filename
        for marker in ("site-packages/", "lib/python3."):
            at = file.find(marker)
            if at >= 0:
                file = file[at + len(marker):]
                if marker == "lib/python3.":
                    file = "python/" + file.split("/", 1)[-1]
                break
        else:
            if os.path.isabs(file):
                try:
                    file = os.path.relpath(file)
                except ValueError:
                    pass
        return f"{file}:{code.co_name}"

    def dump():
        record = {"pid": os.getpid(), "argv": [str(arg)[:200] for arg in sys.argv[:6]],
                  "samples": state["samples"], "seconds": round(time.time() - state["started"], 3),
                  "worker": os.environ.get("PYTEST_XDIST_WORKER"), "counts": dict(counts.most_common(5000))}
        staged = path + ".tmp"
        with open(staged, "w", encoding="utf-8") as file:
            json.dump(record, file)
        os.replace(staged, path)

    def safe_dump():
        try:
            dump()
        except Exception:  # a full disk, a test's patched `open`: the profile is lost, the process is not disturbed
            pass

    def sample():
        written = time.time()
        while True:
            time.sleep(INTERVAL)
            frame = sys._current_frames().get(main)
            seen = set()
            while frame is not None:
                seen.add(name(frame.f_code))
                frame = frame.f_back
            if seen:
                counts.update(seen)
                state["samples"] += 1
            if time.time() - written > 20:
                written = time.time()
                safe_dump()

    threading.Thread(target=sample, name="keras-match-sampler", daemon=True).start()
    atexit.register(safe_dump)


if _folder:
    _start(_folder)
