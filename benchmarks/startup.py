"""How long a command takes before it does its work: `runs` (reads summaries only: no torch, no model), `fit --help`
(the parser of the model, the data and the Trainer), and `fit` up to its first training step (a one-step fit, one
validation batch: the imports, the data, the run folder, the Trainer, then its end). Each is a fresh process, timed
whole; the median of `--repeats`, with the range.

    python -m benchmarks.startup --repeats 5
"""

import argparse
import tempfile
from pathlib import Path

from benchmarks.common import DEFAULT, project, spread, timed

ONE_STEP = ["--trainer.max_steps=1", "--trainer.limit_val_batches=1", "--trainer.num_sanity_val_steps=0", "--quiet"]
COMMANDS = {
    "runs": ["runs"],
    "fit --help": ["fit", "--help"],
    "fit, to its first step": ["fit", "--config", str(DEFAULT), *ONE_STEP],
}


def main(args: list[str] | None = None) -> dict[str, list[float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args(args)
    seconds: dict[str, list[float]] = {name: [] for name in COMMANDS}
    with tempfile.TemporaryDirectory() as work:
        for _ in range(options.repeats):  # each command once a round: drift in load falls on all of them
            for name, command in COMMANDS.items():
                seconds[name].append(timed(project(*command), Path(work))[0])
    for name, values in seconds.items():
        print(f"{name:24s} {spread(values)} s")
    return seconds


if __name__ == "__main__":
    main()
