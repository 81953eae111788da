"""Ask the fake NVML as many machines in one process: ``python -m tests.fakenvml.batch ANSWERS_DIR``.

For each ``NAME.txt`` answer file in the folder (sorted), point the fake library at it and run
envdoctor's real NVML worker (:func:`envdoctor.host.nvml_worker.collect`, through nvidia-ml-py);
print one JSON object ``{NAME: answers}``.  The fake re-reads its answers at every ``nvmlInit``, so
one interpreter start serves a whole parametrised test (the library path must already be on
``LD_LIBRARY_PATH``: the loader reads it at start-up).
"""

from __future__ import annotations

import json
import os
import sys


def main(folder: str) -> int:
    from envdoctor.host import nvml_worker

    out = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".txt"):
            os.environ["FAKE_NVML_ANSWERS"] = os.path.join(folder, name)
            out[name[:-4]] = nvml_worker.collect()
    sys.stdout.write(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
